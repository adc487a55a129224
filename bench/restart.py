#!/usr/bin/env python3
"""Spawn to first GET after a crash with unapplied writes in the log, and
after a clean stop; kvcache-server beside Redis reloading its AOF.

    python3 bench/restart.py            # 1,000,000 entries + 200,000 unapplied writes, 5 rounds: ~2-3 min
    python3 bench/restart.py --quick    # 200,000 + 40,000, 3 rounds: ~1 min

Preparation (untimed), each server on a free 127.0.0.1 port, pinned to core 0
with all its threads (`taskset -c 0`; this script, the client, runs on core 1):

  kvcache   kvcache-server --enable-debug-command yes (default persistence:
            appendonly yes, appendfsync everysec). SET --entries keys
            key:000000000000 ... (100-byte value "x..."), SAVE (everything
            applied to SQLite, the log cut) and wait until the memtable is
            empty; DEBUG WRITER PAUSE; overwrite the first --unapplied keys
            with "y..." (they stay in the memtable and the log only); kill -9.
  redis     redis-server --appendonly yes --appendfsync everysec --save ''
            --auto-aof-rewrite-percentage 0 (so its AOF holds every write):
            the same --entries SETs and --unapplied overwrites; kill -9.

Each server's directory is kept as a snapshot ("crash"). It is also started
once from that snapshot and stopped cleanly (SIGTERM: kvcache applies the log
and cuts it; Redis fsyncs its AOF), kept as a second snapshot ("clean").

Then --rounds rounds, servers interleaved (order rotated each round): copy a
snapshot to a fresh directory (untimed), spawn, and poll `GET` of the last
overwritten key every --poll-ms (through `-LOADING`) until it returns the
overwritten value; the time from the spawn is the restart time. Then DBSIZE
must be --entries and a key not overwritten must hold its first value.
Medians are reported.

Checks (exit status 3 if one does not hold; --no-check only reports):
  crash      kvcache's median first GET after the crash <= --target-ratio
             (0.25, issue 13) x Redis's AOF reload of the same writes
  clean      kvcache's median first GET after a clean stop <= --clean-max-ms (100)
  data       every restart returned the overwritten value, the first value of
             a key not overwritten, and DBSIZE = --entries
Exit status: 0 all checks hold, 1 harness failure, 2 bad arguments, 3 a
check failed or could not be measured, 130 interrupted.

Writes bench/restart.json and the "restart" section of BENCHMARKS.md
(--no-write: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

RESULTS_JSON = bl.REPO / "bench" / "restart.json"
VALUE_Y = b"y" * 100
OVERWRITE_TEMPLATE = b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$100\r\n" + VALUE_Y + b"\r\n"
REDIS_ARGS = bl.REDIS_AOF_EVERYSEC + ["--auto-aof-rewrite-percentage", "0"]
KVCACHE_ARGS = ["--enable-debug-command", "yes"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Restart time (spawn to first GET) of kvcache-server after kill -9 "
                                            "with unapplied writes in its log, and after a clean stop, beside "
                                            "redis-server reloading its AOF.", epilog=bl.EXIT_STATUS)
    p.add_argument("--quick", action="store_true", help="200,000 entries + 40,000 unapplied, 3 rounds (~1 min)")
    p.add_argument("--entries", type=int, help="keys stored and applied (default 1000000)")
    p.add_argument("--unapplied", type=int, help="overwrites left in the log only (default 200000)")
    p.add_argument("--rounds", type=int, help="restarts per server and case (default 5, quick 3)")
    p.add_argument("--poll-ms", type=float, default=0.5, help="pause between polls (default 0.5 ms)")
    p.add_argument("--start-timeout", type=float, default=300, help="longest wait for the first GET (s)")
    p.add_argument("--target-ratio", type=float, default=0.25,
                   help="crash case: kvcache / redis first-GET time needed (default 0.25, issue 13)")
    p.add_argument("--clean-max-ms", type=float, default=100,
                   help="clean case: kvcache's first GET within this many ms (default 100)")
    p.add_argument("--kvcache-args", default="", help="extra kvcache-server options")
    p.add_argument("--no-check", action="store_true", help="report the checks, never fail on them")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers to core 0 and the client to core 1")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/restart.json alone")
    args = p.parse_args(argv)
    args.entries = args.entries or (200_000 if args.quick else 1_000_000)
    args.unapplied = args.unapplied if args.unapplied is not None else (args.entries // 5)
    if not 0 < args.unapplied <= args.entries:
        p.error("--unapplied must be between 1 and --entries")
    args.rounds = args.rounds or (3 if args.quick else 5)
    return args


# --------------------------------------------------------------------------

def first_get(server: bl.Server, key: bytes, expected: bytes, poll: float, timeout: float) -> dict:
    """Spawns the server and polls until GET key returns expected. Times are
    from just before the spawn."""
    server.spawn()
    t0 = server.spawned_at
    deadline = t0 + timeout
    connected = None
    loading_replies = 0
    request = bl.encode("GET", key)
    while time.monotonic() < deadline:
        if not server.alive():
            raise bl.HarnessError(f"{server.name} exited during start: {server.log_tail()}")
        try:
            sock = socket.create_connection((bl.HOST, server.port), timeout=5)
        except OSError:
            time.sleep(poll)
            continue
        if connected is None:
            connected = time.monotonic() - t0
        client = bl.Client.__new__(bl.Client)
        client.sock, client.buf = sock, bytearray()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while time.monotonic() < deadline:
                sock.sendall(request)
                reply = client.read_reply(raise_errors=False)
                if reply == expected:
                    return {"first_get": time.monotonic() - t0, "first_connect": connected,
                            "loading_replies": loading_replies}
                if isinstance(reply, bl.RespError) and str(reply).startswith("LOADING"):
                    loading_replies += 1
                    time.sleep(poll)
                    continue
                return {"first_get": None, "first_connect": connected, "loading_replies": loading_replies,
                        "wrong_reply": repr(reply)[:200], "at": time.monotonic() - t0}
        except (OSError, ConnectionError):
            time.sleep(poll)
        finally:
            client.close()
    raise bl.HarnessError(f"{server.name}: no GET answer within {timeout:.0f} s of the spawn")


def overwrite(c: bl.Client, count: int, batch: int = 1000) -> None:
    for lo in range(0, count, batch):
        hi = min(count, lo + batch)
        c.sock.sendall(b"".join(OVERWRITE_TEMPLATE % n for n in range(lo, hi)))
        c.expect_ok(hi - lo)


def wait_loaded(server: bl.Server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with bl.Client(server.port, timeout=10) as c:
                if c.command("PING", raise_errors=False) == "PONG":
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise bl.HarnessError(f"{server.name} did not finish loading within {timeout:.0f} s")


def prepare(args, kind: str) -> dict:
    """Fills a server, leaves it crashed (kill -9) with the unapplied writes;
    returns the snapshots' directories and facts about them."""
    name = "kvcache" if kind == "kvcache" else "redis-aof-everysec"
    server = (bl.kvcache_server(name, KVCACHE_ARGS + shlex.split(args.kvcache_args)) if kind == "kvcache"
              else bl.redis_server(name, REDIS_ARGS))
    try:
        server.start()
    except bl.ServerFailed as error:
        raise bl.HarnessError(f"{name} did not start: {error}")
    facts: dict = {"argv": server.display_argv}
    t0 = time.monotonic()
    with bl.Client(server.port, timeout=600) as c:
        bl.pipelined_sets(c, 0, args.entries)
        facts["fill_seconds"] = round(time.monotonic() - t0, 2)
        if kind == "kvcache":
            t1 = time.monotonic()
            c.command("SAVE")
            bl.wait_idle([server], timeout=600)
            facts["save_seconds"] = round(time.monotonic() - t1, 2)
            c.command("DEBUG", "WRITER", "PAUSE")
        overwrite(c, args.unapplied)
        if c.command("DBSIZE") != args.entries:
            raise bl.HarnessError(f"{name}: DBSIZE is not {args.entries} after the fill")
        persistence = bl.info_fields(c, "persistence")
        if kind == "kvcache":
            facts["memtable_bytes_at_kill"] = int(persistence.get("memtable_bytes", 0))
            if facts["memtable_bytes_at_kill"] == 0:
                raise bl.HarnessError("kvcache: the memtable is empty after DEBUG WRITER PAUSE and the overwrites")
        else:
            time.sleep(1.5)  # everysec: the AOF is written (and fsynced) before the kill
    server.kill()
    crash = bl.make_tempdir(f"snap-{name}-crash-")
    shutil.rmtree(crash)
    shutil.copytree(server.dir, crash, symlinks=True)
    facts["crash_bytes"] = data_bytes(crash)
    facts["crash_log_bytes"] = bl.dir_size(os.path.join(crash, "appendonlydir"))
    # The clean snapshot: started from the crash once, stopped with SIGTERM.
    server.spawn()
    wait_loaded(server, args.start_timeout)
    t1 = time.monotonic()
    code = server.stop(timeout=600)
    facts["clean_stop_seconds"] = round(time.monotonic() - t1, 2)
    if code != 0:
        raise bl.HarnessError(f"{name} exited with {code} on SIGTERM: {server.log_tail()}")
    clean = bl.make_tempdir(f"snap-{name}-clean-")
    shutil.rmtree(clean)
    shutil.copytree(server.dir, clean, symlinks=True)
    shutil.rmtree(server.dir, ignore_errors=True)
    facts["clean_bytes"] = data_bytes(clean)
    facts["clean_log_bytes"] = bl.dir_size(os.path.join(clean, "appendonlydir"))
    bl.log(f"{name}: filled in {facts['fill_seconds']} s; crash snapshot {bl.mib(facts['crash_bytes'])} "
           f"(log {bl.mib(facts['crash_log_bytes'])}), clean snapshot {bl.mib(facts['clean_bytes'])} "
           f"(log {bl.mib(facts['clean_log_bytes'])})")
    return {"kind": kind, "name": name, "snapshots": {"crash": crash, "clean": clean}, "facts": facts}


def data_bytes(path: str) -> int:
    return sum(bl.file_size(os.path.join(root, f)) for root, _d, files in os.walk(path)
               for f in files if f != "server.log")


def restart_once(args, prepared: dict, case: str) -> dict:
    d = bl.make_tempdir(f"restart-{prepared['name']}-")
    shutil.rmtree(d)
    shutil.copytree(prepared["snapshots"][case], d, symlinks=True)
    name = prepared["name"]
    server = (bl.kvcache_server(name, KVCACHE_ARGS + shlex.split(args.kvcache_args), data_dir=d)
              if prepared["kind"] == "kvcache" else bl.redis_server(name, REDIS_ARGS, data_dir=d))
    probe = bl.bench_key(args.unapplied - 1)
    try:
        r = first_get(server, probe, VALUE_Y, args.poll_ms / 1000, args.start_timeout)
        r["loadavg"] = bl.loadavg()
        problems = []
        if r.get("wrong_reply"):
            problems.append(f"GET {probe.decode()} answered {r['wrong_reply']}")
        else:
            with bl.Client(server.port, timeout=60) as c:
                size = c.command("DBSIZE")
                kept = c.command("GET", bl.bench_key(args.entries - 1))
            if size != args.entries:
                problems.append(f"DBSIZE {size}, not {args.entries}")
            if kept != bl.VALUE_100:
                problems.append(f"GET {bl.bench_key(args.entries - 1).decode()} answered {kept!r:.60}")
        r["problems"] = problems
        r["rss"] = server.rss_fields().get("VmRSS")
    finally:
        server.kill()
        shutil.rmtree(d, ignore_errors=True)
    return r


def ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1000:.1f} ms"


def main() -> int:
    args = parse_args()
    command = "python3 bench/restart.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    bl.ensure_kvcache(build=not args.no_build)
    pinned = bl.setup_pinning(not args.no_pin)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()

    prepared = [prepare(args, "kvcache"), prepare(args, "redis")]
    cases = ["crash", "clean"]
    runs: list[dict] = []
    for rnd in range(1, args.rounds + 1):
        order = prepared if rnd % 2 else prepared[::-1]
        for case in cases:
            for p in order:
                r = restart_once(args, p, case)
                r.update({"round": rnd, "server": p["name"], "case": case})
                runs.append(r)
                bl.log(f"round {rnd} {case:5s} {p['name']:18s} first GET {ms(r['first_get'])} "
                       f"(connection {ms(r['first_connect'])}, {r['loading_replies']} LOADING replies)"
                       + (f" PROBLEMS: {'; '.join(r['problems'])}" if r["problems"] else ""))

    def med(server: str, case: str, field: str = "first_get") -> float | None:
        return bl.median([r[field] for r in runs if r["server"] == server and r["case"] == case])

    kv, rd = prepared[0]["name"], prepared[1]["name"]
    table = {}
    headers = ["case", "server", "data on disk", "log", "first GET (median)", "min–max", "first connection",
               "LOADING replies", "restarts"]
    rows = []
    for case in cases:
        for p in prepared:
            sel = [r for r in runs if r["server"] == p["name"] and r["case"] == case]
            gets = [r["first_get"] for r in sel if r["first_get"] is not None]
            table[f"{case} {p['name']}"] = {"median_first_get": med(p["name"], case),
                                            "median_first_connect": med(p["name"], case, "first_connect")}
            rows.append([case, p["name"], bl.mib(p["facts"][f"{case}_bytes"]), bl.mib(p["facts"][f"{case}_log_bytes"]),
                         ms(med(p["name"], case)),
                         f"{min(gets) * 1000:.1f}–{max(gets) * 1000:.1f} ms" if gets else "n/a",
                         ms(med(p["name"], case, "first_connect")),
                         f"{bl.median([r['loading_replies'] for r in sel]):.0f}", str(len(sel))])

    checks = bl.Checks(enabled=not args.no_check)
    kv_crash, rd_crash, kv_clean = med(kv, "crash"), med(rd, "crash"), med(kv, "clean")
    crash_ratio = kv_crash / rd_crash if kv_crash and rd_crash else None
    checks.add(f"crash: kvcache first GET <= {args.target_ratio}x Redis's AOF reload",
               None if crash_ratio is None else crash_ratio <= args.target_ratio,
               "not measured" if crash_ratio is None else
               f"{crash_ratio:.2f}x ({ms(kv_crash)} vs {ms(rd_crash)}, {args.entries:,} entries + "
               f"{args.unapplied:,} unapplied writes)")
    checks.add(f"clean: kvcache first GET <= {args.clean_max_ms:g} ms",
               None if kv_clean is None else kv_clean * 1000 <= args.clean_max_ms,
               "not measured" if kv_clean is None else f"{ms(kv_clean)}")
    problems = [f"{r['server']} {r['case']} round {r['round']}: {'; '.join(r['problems'])}"
                for r in runs if r["problems"]]
    checks.add("data: every restart holds every acknowledged write", not problems,
               "all restarts correct" if not problems else "; ".join(problems[:4]))

    print()
    print(bl.text_table(headers, rows))
    verdict = (f"after kill -9 with {args.unapplied:,} unapplied writes: kvcache's first GET takes "
               f"{crash_ratio:.2f}x Redis's AOF reload time" if crash_ratio is not None else "")
    if verdict:
        print(verdict)
    print(f"total {time.monotonic() - started:.0f} s")
    checks.report()

    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "entries": args.entries,
                                            "unapplied": args.unapplied, "pinned": pinned,
                                            "servers": {p["name"]: p["facts"] for p in prepared},
                                            "medians": table, "runs": runs, "checks": checks.as_list()},
                                           indent=1) + "\n")
        md = [
            "## Restart: spawn to first GET (`bench/restart.py`)",
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary"))
            + ("  \n**Quick run (reduced size).** The full run is `python3 bench/restart.py`." if args.quick else ""),
            "",
            f"Each server stores {args.entries:,} keys with 100-byte values, then {args.unapplied:,} of them are "
            "overwritten and the process is killed with SIGKILL. kvcache first applies the "
            f"{args.entries:,} to SQLite (`SAVE`), then holds its writer (`DEBUG WRITER PAUSE`), so the "
            f"{args.unapplied:,} overwrites are only in its log; Redis (`--auto-aof-rewrite-percentage 0`) "
            f"has all {args.entries + args.unapplied:,} writes in its AOF. **crash**: restart from that "
            "state; **clean**: from the state after one restart and a SIGTERM (kvcache's log then empty). "
            f"The time runs from the spawn to the first `GET {bl.bench_key(args.unapplied - 1).decode()}` "
            f"that returns the overwritten value, polling every {args.poll_ms:g} ms through `-LOADING`; "
            f"median of {args.rounds} restarts per case, servers interleaved, each from a fresh copy of the "
            "state (so the OS page cache is warm: a restart, not a cold boot)"
            + (", servers pinned to core 0" if pinned else "") + ". Servers: "
            + "; ".join(f"`{p['name']}`: `{' '.join(shlex.quote(a) for a in p['facts']['argv'])}`" for p in prepared)
            + ".",
            "",
            bl.markdown_table(headers, rows, "llrrrrrrr"),
            "",
        ]
        if verdict:
            md += [verdict[0].upper() + verdict[1:] + f" (target ≤ {args.target_ratio}×).", ""]
        loads = [r["loadavg"] for r in runs if r.get("loadavg") is not None]
        if loads:
            md += [f"1-minute load average during the restarts: median {bl.median(loads):.1f}, range "
                   f"{min(loads):.1f}–{max(loads):.1f} (2 cores: well above 2, other work shared them).", ""]
        md += [checks.markdown(details=False),
               "", "Raw numbers: [`bench/restart.json`](bench/restart.json)."]
        bl.update_machine_section(info)
        bl.update_sections({"restart": "\n".join(md) + "\n"})
    return checks.exit_code()


if __name__ == "__main__":
    bl.main_wrapper(main)
