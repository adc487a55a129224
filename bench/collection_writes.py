#!/usr/bin/env python3
"""Writes to one large collection: RPUSH+LPOP on a list, ZADD on a sorted
set, HSET on a hash, each holding 1K or 100K elements; kvcache-server
beside redis-server (AOF everysec) under the same redis-benchmark load.

    python3 bench/collection_writes.py            # sizes 1000 and 100000, 5 rounds of ~3 s measurements: ~5-10 min
    python3 bench/collection_writes.py --quick    # 1 round of ~0.5 s measurements: ~1 min

Servers (free 127.0.0.1 ports, temporary directories, all threads pinned to
core 0 with `taskset -c 0`; redis-benchmark runs under `taskset -c 1`):

  kvcache   kvcache-server (default: appendonly yes, appendfsync everysec)
  redis     redis-server --appendonly yes --appendfsync everysec --save ''

For each size S (--sizes) every server first holds list:S (S elements
e:000000000000 ...), zset:S (members m:000000000000 ... with scores) and
hash:S (fields f:000000000000 ...). Loads, `redis-benchmark -c 50 -P 1`
(--clients, --pipeline), -r S so that every write touches an existing
member and the sizes stay S:

  list   `RPUSH list:S __rand_int__` and `LPOP list:S` at once, each from
         half the clients with the same -n; a server takes one command per
         connection per loop iteration, so the pushes and pops interleave
         and the list stays near S (its length after each measurement is
         recorded). RPUSH's rps and LPOP's rps are reported.
  zadd   `ZADD zset:S __rand_int__ m:__rand_int__` (a new score for a member)
  hset   `HSET hash:S f:__rand_int__ __rand_int__` (a new value for a field)

A calibration pass (warm-up) sizes -n to last about --seconds; then --rounds
rounds run every load on both servers, interleaved. Medians are reported,
with each server's 100K / 1K ratio: 1.00 means a write costs the same on a
large collection as on a small one.

Check (exit status 3 if it does not hold; --no-check only reports), issue
13's target for collections as live values: kvcache's RPUSH rps on the
largest list >= --list-ratio (0.8) x its RPUSH rps on the smallest ("RPUSH
on a 100k-element list costs about what it costs on a 1k one"). Until
collections are live values the server re-serializes the whole value per
write, and this check fails. ZADD and HSET are reported, not checked.
Exit status: 0 the check holds, 1 harness failure, 2 bad arguments, 3 the
check failed or could not be measured, 130 interrupted.

Writes bench/collection_writes.json and the "collections" section of BENCHMARKS.md
(--no-write: print only).

(Not named collections.py: bench/ is sys.path[0] for every script here, and a
bench/collections.py would stand in for the standard library's collections
wherever it is not already imported, e.g. under `python3 -S`.)
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

RESULTS_JSON = bl.REPO / "bench" / "collection_writes.json"
LOADS = ["list", "zadd", "hset"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="RPUSH+LPOP, ZADD and HSET on collections of 1K and 100K elements, "
                                            "kvcache-server beside redis-server (AOF everysec).",
                                epilog=bl.EXIT_STATUS)
    p.add_argument("--quick", action="store_true", help="1 round, ~0.5 s measurements (~1 minute)")
    p.add_argument("--sizes", default="1000,100000", help="comma-separated collection sizes (default 1000,100000)")
    p.add_argument("--loads", default=",".join(LOADS), help="comma-separated among " + ",".join(LOADS))
    p.add_argument("--rounds", type=int, help="interleaved rounds; medians reported (default 5, quick 1)")
    p.add_argument("--seconds", type=float, help="target length of a measurement (default 3, quick 0.5)")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c in all (default 50)")
    p.add_argument("--pipeline", type=int, default=1, help="redis-benchmark -P (default 1)")
    p.add_argument("--list-ratio", type=float, default=0.8,
                   help="the check: RPUSH rps on the largest list / on the smallest >= this (default 0.8)")
    p.add_argument("--timeout", type=float, default=300, help="longest one measurement may take (s)")
    p.add_argument("--kvcache-args", default="", help="extra kvcache-server options")
    p.add_argument("--no-check", action="store_true", help="report the check, never fail on it")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers to core 0 and the load to core 1")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true",
                   help="print only: leave BENCHMARKS.md and bench/collection_writes.json alone")
    args = p.parse_args(argv)
    args.sizes = sorted(int(x) for x in args.sizes.split(","))
    args.loads = [x.strip() for x in args.loads.split(",") if x.strip()]
    if any(x not in LOADS for x in args.loads):
        p.error("--loads takes " + ", ".join(LOADS))
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.seconds = args.seconds or (0.5 if args.quick else 3.0)
    return args


# --------------------------------------------------------------------------

def parts_of(load: str, size: int) -> list[tuple[str, list[str]]]:
    """(part name, command) pairs run at once for a load on size-S collections."""
    if load == "list":
        return [("RPUSH", ["RPUSH", f"list:{size}", "__rand_int__"]), ("LPOP", ["LPOP", f"list:{size}"])]
    if load == "zadd":
        return [("ZADD", ["ZADD", f"zset:{size}", "__rand_int__", "m:__rand_int__"])]
    return [("HSET", ["HSET", f"hash:{size}", "f:__rand_int__", "__rand_int__"])]


def fill(server: bl.Server, size: int) -> None:
    with bl.Client(server.port, timeout=300) as c:
        for kind, key in (("list", f"list:{size}"), ("zset", f"zset:{size}"), ("hash", f"hash:{size}")):
            c.command("DEL", key)
            # 10,000 elements a command: while collections are rewritten whole per write, filling
            # 100K in 1,000s costs kvcache a hundred rewrites of a growing value.
            for lo in range(0, size, 10_000):
                hi = min(size, lo + 10_000)
                if kind == "list":
                    args = ["RPUSH", key] + [f"e:{i:012d}" for i in range(lo, hi)]
                elif kind == "zset":
                    args = ["ZADD", key] + [x for i in range(lo, hi) for x in (str(i), f"m:{i:012d}")]
                else:
                    args = ["HSET", key] + [x for i in range(lo, hi) for x in (f"f:{i:012d}", str(i))]
                c.command(*args)
        got = (c.command("LLEN", f"list:{size}"), c.command("ZCARD", f"zset:{size}"), c.command("HLEN", f"hash:{size}"))
    if got != (size, size, size):
        raise bl.HarnessError(f"{server.name}: LLEN/ZCARD/HLEN {got} after filling {size} elements")


def measure(args, server: bl.Server, load: str, size: int, n: int) -> dict:
    parts = parts_of(load, size)
    clients = max(1, args.clients // len(parts))
    procs = []
    t0 = time.monotonic()
    for name, cmd in parts:
        argv = bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(server.port), "-c", str(clients),
                               "-P", str(args.pipeline), "-n", str(n), "-r", str(size), "--csv", *cmd])
        procs.append((name, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             stdin=subprocess.DEVNULL)))
    out: dict = {"n": n, "parts": {}, "loadavg": bl.loadavg(), "swift_build_running": bl.swift_build_running()}
    errors = []
    try:
        for name, proc in procs:
            try:
                stdout, stderr = proc.communicate(timeout=max(1.0, args.timeout - (time.monotonic() - t0)))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                errors.append(f"{name}: timed out after {args.timeout:.0f} s")
                continue
            rps = None
            for line in stdout.splitlines():
                cells = [x.strip('"') for x in line.split(",")]
                if len(cells) >= 2 and cells[0] != "test":
                    try:
                        rps = float(cells[1])
                    except ValueError:
                        pass
            if rps is None:
                errors.append(f"{name}: {(stderr.strip() or stdout.strip() or f'exit {proc.returncode}')[-200:]}")
            out["parts"][name] = rps
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    out["seconds"] = round(time.monotonic() - t0, 3)
    if errors:
        out["error"] = "; ".join(errors)
    if not server.alive():
        out["error"] = (out.get("error", "") + " server died: " + server.log_tail()).strip()
    else:
        with bl.Client(server.port, timeout=60) as c:
            key = {"list": f"list:{size}", "zadd": f"zset:{size}", "hset": f"hash:{size}"}[load]
            out["size_after"] = c.command({"list": "LLEN", "zadd": "ZCARD", "hset": "HLEN"}[load], key)
            if load == "list" and out["size_after"] != size:
                # Put the list back to S elements for the next measurement (untimed).
                if out["size_after"] > size:
                    c.command("LTRIM", key, out["size_after"] - size, -1)
                else:
                    need = size - out["size_after"]
                    for lo in range(0, need, 1000):
                        c.command("RPUSH", key, *[f"r:{i:012d}" for i in range(lo, min(need, lo + 1000))])
    return out


def calibrate(args, server: bl.Server, load: str, size: int) -> int:
    n = 500
    for _ in range(8):
        bl.wait_idle([server])
        r = measure(args, server, load, size, n)
        if "error" in r:
            return n
        if r["seconds"] >= min(0.5, args.seconds / 2):
            rate = n / r["seconds"]
            return max(200, int(rate * args.seconds))
        n = int(n * min(16, max(2, 0.75 / max(r["seconds"], 0.01))))
    return n


def main() -> int:
    args = parse_args()
    command = "python3 bench/collection_writes.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    bl.ensure_kvcache(build=not args.no_build)
    pinned = bl.setup_pinning(not args.no_pin)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()

    servers = [bl.kvcache_server("kvcache", shlex.split(args.kvcache_args)),
               bl.redis_server("redis-everysec", bl.REDIS_AOF_EVERYSEC)]
    for s in servers:
        try:
            s.start()
        except bl.ServerFailed as error:
            raise bl.HarnessError(f"{s.name} did not start: {error}")
        for size in args.sizes:
            t0 = time.monotonic()
            fill(s, size)
            bl.log(f"{s.name}: filled list, zset and hash of {size:,} in {time.monotonic() - t0:.1f} s")

    cases = [(load, size) for load in args.loads for size in args.sizes]
    sizes_n = {}
    for s in servers:
        for load, size in cases:
            sizes_n[(s.name, load, size)] = calibrate(args, s, load, size)
        bl.log(f"calibrated {s.name}: " + ", ".join(f"{l} {z}: n={sizes_n[(s.name, l, z)]}" for l, z in cases))

    runs = []
    for rnd in range(1, args.rounds + 1):
        order = servers if rnd % 2 else servers[::-1]
        for load, size in cases:
            for s in order:
                bl.wait_idle(servers)
                r = measure(args, s, load, size, sizes_n[(s.name, load, size)])
                r.update({"round": rnd, "server": s.name, "load": load, "size": size})
                runs.append(r)
                bl.log(f"round {rnd} {s.name:15s} {load:5s} size {size:>7,}: "
                       + ", ".join(f"{k} {v:,.0f}/s" if v else f"{k} n/a" for k, v in r["parts"].items())
                       + f" (size after {r.get('size_after')})" + (f" ERROR {r['error']}" if "error" in r else ""))

    def med(server: str, load: str, size: int, part: str) -> float | None:
        return bl.median([r["parts"].get(part) for r in runs
                          if r["server"] == server and r["load"] == load and r["size"] == size])

    small, large = args.sizes[0], args.sizes[-1]
    headers = ["load", "part"] + [f"{s.name} {z:,}" for s in servers for z in args.sizes] + \
              [f"{s.name} {large // 1000:,}K/{small // 1000:,}K" if small >= 1000 else f"{s.name} large/small"
               for s in servers] + ["kvcache / redis at " + f"{large:,}"]
    rows = []
    medians: dict = {}
    for load in args.loads:
        for part, _ in parts_of(load, small):
            m = {(s.name, z): med(s.name, load, z, part) for s in servers for z in args.sizes}
            medians[f"{load} {part}"] = {f"{k[0]} {k[1]}": v for k, v in m.items()}
            row = [load, part] + [bl.fmt_rps(m[(s.name, z)]) for s in servers for z in args.sizes]
            for s in servers:
                a, b = m[(s.name, large)], m[(s.name, small)]
                row.append("n/a" if a is None or not b else f"{a / b:.2f}")
            a, b = m[("kvcache", large)], m[("redis-everysec", large)]
            row.append("n/a" if a is None or not b else f"{a / b:.2f}")
            rows.append(row)

    checks = bl.Checks(enabled=not args.no_check)
    if "list" in args.loads and len(args.sizes) > 1:
        a, b = med("kvcache", "list", large, "RPUSH"), med("kvcache", "list", small, "RPUSH")
        ratio = a / b if a is not None and b else None
        checks.add(f"list: kvcache RPUSH on {large:,} elements >= {args.list_ratio}x RPUSH on {small:,}",
                   None if ratio is None else ratio >= args.list_ratio,
                   "not measured" if ratio is None else f"{ratio:.2f} ({a:,.0f} vs {b:,.0f} RPUSH/s)")
    else:
        checks.add("list: RPUSH large vs small", None, "not measured (needs --loads list and two --sizes)")

    drift = [f"{r['server']} {r['load']} {r['size']}: {r['size_after']}" for r in runs
             if r["load"] == "list" and r.get("size_after") is not None
             and abs(r["size_after"] - r["size"]) > max(100, r["size"] // 2)]
    print()
    print(f"Median rps over {args.rounds} round(s), redis-benchmark -c {args.clients} -P {args.pipeline}:")
    print(bl.text_table(headers, rows))
    if drift:
        print("the list drifted more than half its size during: " + "; ".join(drift))
    print(f"total {time.monotonic() - started:.0f} s")
    checks.report()

    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "settings": vars(args),
                                            "pinned": pinned, "runs": runs, "medians": medians,
                                            "n": {" ".join(map(str, k)): v for k, v in sizes_n.items()},
                                            "checks": checks.as_list()}, indent=1) + "\n")
        md = [
            "## Collections: writes to a large collection (`bench/collection_writes.py`)",
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary"))
            + ("  \n**Quick run (1 round, short measurements).** The full run is `python3 bench/collection_writes.py`."
               if args.quick else ""),
            "",
            f"Median requests/s over {args.rounds} round(s) of `redis-benchmark -c {args.clients} -P {args.pipeline}` "
            f"on a list, a sorted set and a hash of {' and '.join(f'{z:,}' for z in args.sizes)} elements: "
            "**list** runs `RPUSH list:S __rand_int__` and `LPOP list:S` at once (half the clients each, so "
            "the list stays near S); **zadd** `ZADD zset:S __rand_int__ m:__rand_int__` and **hset** "
            "`HSET hash:S f:__rand_int__ __rand_int__` with `-r S` (existing members: the sizes stay S). "
            "kvcache-server in its default mode, Redis with `--appendonly yes --appendfsync everysec`"
            + ("; each pinned to core 0, the load to core 1" if pinned else "") + ". The "
            f"{large // 1000:,}K/{small // 1000:,}K column is each server's rate on the large collection over "
            "its rate on the small one (1.00: a write costs the same whatever the size).",
            "",
            bl.markdown_table(headers, rows, "ll" + "r" * (len(headers) - 2)),
            "",
            checks.markdown(),
            "",
            "Raw numbers: [`bench/collection_writes.json`](bench/collection_writes.json).",
        ]
        bl.update_machine_section(info)
        bl.update_sections({"collections": "\n".join(md) + "\n"})
    return checks.exit_code()


if __name__ == "__main__":
    bl.main_wrapper(main)
