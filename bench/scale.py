#!/usr/bin/env python3
"""Put throughput of kvcache-server while a cache grows past its capacity.

    python3 bench/scale.py                 # 1M puts, capacity for 800K entries, then growth (<= 300 s)
    python3 bench/scale.py --quick         # 200K puts, capacity for 160K, <= 60 s

Starts kvcache-server (default mode; --server-args adds options) on a free
127.0.0.1 port in a temporary directory, gives cache db0 a capacity of
--capacity-entries entries (`CONFIG SET cache "db0 <bytes>"`, 116 content
bytes per entry: a 16-byte key `key:000000000042` and a 100-byte value), and
writes new keys key:0, key:1, ... from one connection, --pipeline SETs per
round trip. After each window (the first --first-window puts, then every
--window) it prints the window's puts/s, the server's RSS (VmRSS) and the
size of db0.sqlite (+ its WAL). Eviction (fifo) starts near the end, once the
cache holds --capacity-entries entries.

Then (phase 2, unless --no-grow) it lifts the capacity and keeps writing new
keys until the cache file is --grow-factor times the RSS budget
(sqlite-cache-size + memory-tier-size, from CONFIG GET) or --max-seconds
(for the whole run) is up, to show RSS staying flat with a file far larger
than the memory the server uses.

Reports throughput at the end of phase 1 vs the first window, whether RSS
stayed flat, writes bench/scale.json and the "scale" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

RESULTS_JSON = bl.REPO / "bench" / "scale.json"
ENTRY_BYTES = 16 + 100  # key:%012d + 100-byte value, no metadata


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="kvcache-server put throughput, RSS and file size as a cache grows "
                                            "to --entries with eviction near the end, then beyond.")
    p.add_argument("--quick", action="store_true", help="200K puts, capacity 160K, windows of 20K, <= 60 s")
    p.add_argument("--entries", type=int, help="puts in phase 1 (default 1000000)")
    p.add_argument("--capacity-entries", type=int, help="cache capacity, in entries (default 80%% of --entries)")
    p.add_argument("--window", type=int, help="puts per window (default 50000, quick 20000)")
    p.add_argument("--first-window", type=int, default=10000, help="puts in the first window (default 10000)")
    p.add_argument("--pipeline", type=int, default=1000, help="SETs per round trip (default 1000)")
    p.add_argument("--grow-factor", type=float, default=10, help="phase 2 target: file = this × RSS budget (default 10)")
    p.add_argument("--no-grow", action="store_true", help="skip phase 2")
    p.add_argument("--max-seconds", type=float, help="bound for the whole run (default 300, quick 60)")
    p.add_argument("--server-args", default="", help="extra kvcache-server options, e.g. '--durability everysec'")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/scale.json alone")
    args = p.parse_args(argv)
    args.entries = args.entries or (200_000 if args.quick else 1_000_000)
    args.capacity_entries = args.capacity_entries or int(args.entries * 0.8)
    args.window = args.window or (20_000 if args.quick else 50_000)
    args.max_seconds = args.max_seconds or (60 if args.quick else 300)
    return args


def config_get(c: bl.Client, name: str) -> str | None:
    reply = c.command("CONFIG", "GET", name)
    if isinstance(reply, list) and len(reply) >= 2:
        return reply[1].decode()
    return None


def keyspace_field(c: bl.Client, field: str, db: str = "db0") -> int | None:
    info = c.command("INFO", "keyspace").decode()
    for line in info.splitlines():
        if line.startswith(db + ":"):
            for part in line.split(":", 1)[1].split(","):
                k, _, v = part.partition("=")
                if k == field:
                    try:
                        return int(v)
                    except ValueError:
                        return None
    return None


def main() -> int:
    args = parse_args()
    command = "python3 bench/scale.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    bl.ensure_kvcache(build=not args.no_build)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()
    deadline = started + args.max_seconds

    server = bl.kvcache_server("kvcache", shlex.split(args.server_args))
    try:
        server.start()
    except bl.ServerFailed as error:
        raise bl.HarnessError(f"kvcache-server did not start: {error}")
    db_file = os.path.join(server.dir, "db0.sqlite")

    def file_bytes() -> tuple[int, int]:
        return bl.file_size(db_file), bl.file_size(db_file + "-wal")

    c = bl.Client(server.port, timeout=120)
    page_cache = int(config_get(c, "sqlite-cache-size") or 16 << 20)
    tier = int(config_get(c, "memory-tier-size") or 0)
    budget = page_cache + tier
    capacity = args.capacity_entries * ENTRY_BYTES
    c.command("CONFIG", "SET", "cache", f"db0 {capacity}")
    c.command("SELECT", 0)
    rss0 = server.rss_bytes()
    bl.log(f"kvcache-server pid {server.pid}, port {server.port}, dir {server.dir}")
    bl.log(f"capacity {capacity:,} bytes (~{args.capacity_entries:,} entries of {ENTRY_BYTES} bytes); "
           f"RSS budget {bl.mib(budget)} (sqlite-cache-size {bl.mib(page_cache)} + memory-tier-size {bl.mib(tier)}); "
           f"RSS at start {bl.mib(rss0)}")

    windows: list[dict] = []
    header = f"{'phase':>5} {'puts':>10} {'keys':>10} {'evicted':>9} {'puts/s':>10} {'RSS':>11} {'file':>11} {'wal':>10}"
    print(header)

    def window(phase: int, lo: int, hi: int) -> dict:
        t0 = time.monotonic()
        bl.pipelined_sets(c, lo, hi, args.pipeline)
        dt = time.monotonic() - t0
        size, wal = file_bytes()
        row = {"phase": phase, "puts_total": hi, "puts": hi - lo, "seconds": round(dt, 3),
               "rps": (hi - lo) / dt if dt > 0 else None, "rss": server.rss_bytes(), "file": size, "wal": wal,
               "keys": c.command("DBSIZE"), "evicted": keyspace_field(c, "evicted"),
               "swift_build_running": bl.swift_build_running(), "loadavg": bl.loadavg()}
        windows.append(row)
        print(f"{phase:>5} {hi:>10,} {row['keys']:>10,} {row['evicted'] or 0:>9,} {row['rps']:>10,.0f} "
              f"{bl.mib(row['rss']):>11} {bl.mib(size):>11} {bl.mib(wal):>10}", flush=True)
        if not server.alive():
            raise bl.HarnessError("kvcache-server died: " + server.log_tail())
        return row

    # Phase 1: grow to --entries, eviction firing past --capacity-entries.
    n = 0
    complete = True
    bounds = [min(args.first_window, args.entries)]
    while bounds[-1] < args.entries:
        bounds.append(min(args.entries, bounds[-1] + args.window))
    for hi in bounds:
        if time.monotonic() > deadline:
            complete = False
            bl.log(f"--max-seconds reached after {n:,} puts: phase 1 incomplete")
            break
        window(1, n, hi)
        n = hi
    phase1 = [w for w in windows if w["phase"] == 1]

    # Phase 2: no capacity; keep writing until the file is grow-factor × the budget.
    grow_target = args.grow_factor * budget
    phase2_reached = None
    if not args.no_grow and complete and budget > 0:
        c.command("CONFIG", "SET", "cache", "db0 0")
        bl.log(f"phase 2: capacity lifted; writing until db0.sqlite is {bl.mib(grow_target)} "
               f"({args.grow_factor:g} × the RSS budget) or {args.max_seconds:.0f} s in all")
        step = max(args.window, 100_000)
        while time.monotonic() < deadline:
            size, wal = file_bytes()
            if size >= grow_target:
                break
            window(2, n, n + step)
            n += step
        phase2_reached = file_bytes()[0] >= grow_target

    total_seconds = time.monotonic() - started
    c.close()
    code = server.stop()

    # Summary.
    first = phase1[0] if phase1 else None
    second = phase1[1] if len(phase1) > 1 else None
    last = phase1[-1] if phase1 else None
    mid = phase1[len(phase1) // 2] if phase1 else None
    end = windows[-1] if windows else None
    ratio_first = last["rps"] / first["rps"] if first and last and first["rps"] else None
    ratio_second = last["rps"] / second["rps"] if second and last and second["rps"] else None
    rss_max = max((w["rss"] or 0) for w in windows) if windows else None
    growth = (end["rss"] - mid["rss"]) if end and mid and end["rss"] and mid["rss"] else None
    flat = growth is not None and growth <= max(16 << 20, 0.15 * mid["rss"])
    evicted_end = last["evicted"] if last else None
    wal_max = max((w["wal"] or 0) for w in windows) if windows else 0
    file_max = max((w["file"] or 0) for w in windows) if windows else 0
    # A WAL far past the file means checkpoints are not keeping up (or not running).
    wal_runaway = wal_max > max(64 << 20, 2 * file_max)
    summary = {
        "budget": budget, "capacity_bytes": capacity, "rss_start": rss0, "rss_max": rss_max,
        "rss_mid_phase1": mid["rss"] if mid else None, "rss_end": end["rss"] if end else None,
        "rss_growth_mid_to_end": growth, "rss_flat": flat,
        "rps_first_window": first["rps"] if first else None, "rps_second_window": second["rps"] if second else None,
        "rps_last_phase1_window": last["rps"] if last else None,
        "ratio_last_vs_first": ratio_first, "ratio_last_vs_second": ratio_second,
        "phase1_complete": complete, "phase2_reached_target": phase2_reached,
        "file_end": end["file"] if end else None, "keys_end_phase1": last["keys"] if last else None,
        "evicted_end_phase1": evicted_end, "wal_max": wal_max, "wal_runaway": wal_runaway, "total_seconds": round(total_seconds, 1), "exit_code": code,
    }
    print()
    if first and last:
        print(f"puts/s at {first['puts_total']:,} puts: {first['rps']:,.0f}; "
              f"at {last['puts_total']:,} puts: {last['rps']:,.0f} -> ratio {ratio_first:.2f}"
              + (f" (vs the {second['puts_total']:,} window: {ratio_second:.2f})" if ratio_second else ""))
        print(f"phase 1 end: {last['keys']:,} keys, {evicted_end or 0:,} evicted, file {bl.mib(last['file'])}")
    print(f"RSS: start {bl.mib(rss0)}, mid phase 1 {bl.mib(summary['rss_mid_phase1'])}, end {bl.mib(summary['rss_end'])}, "
          f"max {bl.mib(rss_max)}; budget {bl.mib(budget)} -> {'flat' if flat else 'NOT flat'} "
          f"(growth mid->end {bl.mib(growth)}; flat means <= max(16 MiB, 15%))")
    if end:
        print(f"final file {bl.mib(end['file'])} = {end['file'] / budget:.1f} × the RSS budget, "
              f"{end['file'] / (end['rss'] or 1):.1f} × the RSS; phase 2 target "
              f"{'reached' if phase2_reached else 'not reached' if phase2_reached is False else 'skipped'}")
    if wal_runaway:
        print(f"WARNING: the WAL reached {bl.mib(wal_max)}, {wal_max / max(file_max, 1):.0f}× the cache file: "
              "checkpoints are not keeping up with the writes (or not running)")
    print(f"total {total_seconds:.0f} s; server exit code {code}")

    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "settings": vars(args),
                                            "summary": summary, "windows": windows}, indent=1) + "\n")
        rows = [[str(w["phase"]), f"{w['puts_total']:,}", f"{w['keys']:,}", f"{w['evicted'] or 0:,}",
                 bl.fmt_rps(w["rps"]), bl.mib(w["rss"]), bl.mib(w["file"]), bl.mib(w["wal"])] for w in windows]
        md = [
            "## Scale: puts while a cache grows (`bench/scale.py`)",
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary")) + ("  \n**Quick run (reduced size).** The full run is "
                                          "`python3 bench/scale.py`." if args.quick else ""),
            "",
            f"kvcache-server (default mode{', ' + args.server_args if args.server_args else ''}), one connection "
            f"writing new keys `key:000000000000`, … with {args.pipeline} pipelined SETs per round trip, "
            f"100-byte values. Phase 1: {args.entries:,} puts into cache db0 with a capacity of "
            f"{capacity:,} content bytes (~{args.capacity_entries:,} entries), so fifo eviction fires for the "
            f"last {max(0, args.entries - args.capacity_entries):,} puts. Phase 2: capacity lifted, writing "
            f"on until the file is {args.grow_factor:g}× the RSS budget (sqlite-cache-size {bl.mib(page_cache)} "
            f"+ memory-tier-size {bl.mib(tier)} = {bl.mib(budget)}), within {args.max_seconds:.0f} s for the "
            "whole run. RSS is the server's VmRSS after each window; file is db0.sqlite (wal: its WAL).",
            "",
        ]
        if first and last:
            md += [
                f"- Throughput at {last['puts_total']:,} puts vs the first {first['puts_total']:,}: "
                f"**{ratio_first:.2f}** ({last['rps']:,.0f} vs {first['rps']:,.0f} puts/s"
                + (f"; vs the window ending at {second['puts_total']:,}: {ratio_second:.2f}" if ratio_second else "")
                + ").",
                f"- End of phase 1: {last['keys']:,} keys, {evicted_end or 0:,} evicted, file {bl.mib(last['file'])}.",
            ]
        md += [
            f"- RSS: {bl.mib(rss0)} at start, {bl.mib(summary['rss_mid_phase1'])} half-way through phase 1, "
            f"{bl.mib(summary['rss_end'])} at the end, {bl.mib(rss_max)} at most: "
            f"**{'flat' if flat else 'not flat'}** (flat: it grew by at most max(16 MiB, 15%) from half-way "
            f"through phase 1 to the end; it grew by {bl.mib(growth)}).",
        ]
        if end:
            md.append(f"- Final file {bl.mib(end['file'])}: {end['file'] / budget:.1f}× the RSS budget, "
                      f"{end['file'] / (end['rss'] or 1):.1f}× the RSS"
                      + ("" if phase2_reached else " (the target was not reached within the time bound)"
                         if phase2_reached is False else "") + ".")
        if wal_runaway:
            md.append(f"- **The WAL reached {bl.mib(wal_max)}, {wal_max / max(file_max, 1):.0f}× the cache file "
                      f"({bl.mib(file_max)})**: checkpoints did not keep up with the writes (or did not run). "
                      "A WAL this size costs disk, RSS (SQLite's WAL index grows with it) and time at the "
                      "next clean stop, which checkpoints it.")
        md += ["", bl.markdown_table(["phase", "puts", "keys", "evicted", "puts/s", "RSS", "file", "wal"], rows,
                                     "rrrrrrrr"),
               "", "Raw numbers: [`bench/scale.json`](bench/scale.json)."]
        bl.update_machine_section(info)
        bl.update_sections({"scale": "\n".join(md) + "\n"})
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
