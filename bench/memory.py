#!/usr/bin/env python3
"""What a million keys cost in memory, and GETs from a small memory tier
(issue 14's memory targets), kvcache-server beside redis-server.

    python3 bench/memory.py                      # 1,000,000 keys of 100 B; ~3-5 min
    python3 bench/memory.py --keys 200000        # a smaller run (tier 32mb is then most of the data)

Servers (free 127.0.0.1 ports, temporary directories, all threads pinned
to core 0; redis-benchmark on core 1):

  kvcache   kvcache-server, default configuration (memory-tier-size: a
            quarter of the machine's memory, so the tier holds every key)
  redis     redis-server --save '' --appendonly no (all in memory, as a
            cache without persistence)

Steps:
  1. fill   --keys SETs of key:000000000000 ... (redis-benchmark's keys)
            with 100-byte values, 1,000 per round trip, into each server;
            then kvcache's writer is let finish (memtable empty), and both
            servers settle for --settle seconds (kvcache trims its heap
            once more an interval after the memtable drained; Redis's
            jemalloc purges in the background). Reported: RssAnon and VmRSS
            (/proc/<pid>/status) once settled, RssAnon a second after the
            drain too, INFO memory's used_memory, and MEMORY USAGE of one
            key, on both.
  2. full   `redis-benchmark -t get -r <keys> -c 50 -P 16 -d 100` on each
            (every GET hits).
  3. tier   kvcache stopped (SIGTERM) and started again on the same
            directory with --memory-tier-size --tier (32mb, about a quarter
            of 1M keys' content); --warmup seconds of the same GET load,
            then the measured one, beside Redis measured again right after.
            RssAnon after the load.

Checks (exit status 3 if one does not hold; --no-check only reports):
  rss        kvcache's RssAnon after the fill <= Redis's RssAnon
  tier-get   kvcache's GET -P 16 with the small tier >= 0.5x Redis's
  tier-rss   kvcache's RssAnon with the small tier <= the tier + 64 MiB
Exit status: 0 all hold, 1 harness failure, 2 bad arguments, 3 a check
failed or could not be measured, 130 interrupted.

Writes bench/memory.json and the "memory" section of BENCHMARKS.md
(--no-write: print only).
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

RESULTS_JSON = bl.REPO / "bench" / "memory.json"
MIB = 1024 * 1024


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Memory of 1M keys in kvcache-server and redis-server, and GET from a "
                                            "small memory tier.", epilog=bl.EXIT_STATUS)
    p.add_argument("--keys", type=int, default=1_000_000, help="keys of 100 B to fill (default 1000000)")
    p.add_argument("--tier", default="32mb", help="kvcache's memory-tier-size for step 3 (default 32mb)")
    p.add_argument("--warmup", type=float, default=10, help="seconds of GET load before the tier measurement")
    p.add_argument("--settle", type=float, default=15, help="seconds both servers idle after the fill before RSS is read "
                                                              "(default 15)")
    p.add_argument("--requests", type=int, default=2_000_000, help="redis-benchmark -n of each GET load")
    p.add_argument("--kvcache-args", default="", help="extra kvcache-server options")
    p.add_argument("--no-check", action="store_true", help="report the checks, never fail on them")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers to core 0 and the load to core 1")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/memory.json alone")
    args = p.parse_args(argv)
    args.tier_bytes = bl.parse_size(args.tier)
    if not args.tier_bytes:
        p.error("--tier takes a size such as 32mb")
    return args


def get_load(server: bl.Server, keys: int, requests: int, seconds: float | None = None) -> dict:
    """One redis-benchmark GET load (-P 16); with `seconds`, stopped after that long (a warm-up)."""
    argv = bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(server.port), "-t", "get", "-r", str(keys),
                           "-n", str(requests), "-c", "50", "-P", "16", "-d", "100", "--csv"])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=seconds if seconds else 600)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        if seconds:
            return {}
        raise bl.HarnessError(f"{server.name}: GET load did not end in 600 s")
    for line in out.splitlines():
        cells = [x.strip('"') for x in line.split(",")]
        if cells and cells[0] == "GET":
            return {"rps": float(cells[1]), "p50_ms": float(cells[4]), "p99_ms": float(cells[6])}
    raise bl.HarnessError(f"{server.name}: redis-benchmark gave no GET figure: {err.strip()[-300:]}")


def memory_facts(server: bl.Server, c: bl.Client) -> dict:
    rss = server.rss_fields()
    mem = bl.info_fields(c, "memory")
    usage = c.command("MEMORY", "USAGE", bl.bench_key(0).decode(), raise_errors=False)
    return {"rssanon": rss.get("RssAnon"), "vmrss": rss.get("VmRSS"),
            "used_memory": int(mem.get("used_memory", "0") or 0),
            "memory_usage_key": usage if isinstance(usage, int) else None}


def main() -> int:
    args = parse_args()
    command = "python3 bench/memory.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    bl.ensure_kvcache(build=not args.no_build)
    pinned = bl.setup_pinning(not args.no_pin)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()
    checks = bl.Checks(enabled=not args.no_check)
    extra = shlex.split(args.kvcache_args)

    kv = bl.kvcache_server("kvcache", extra)
    rd = bl.redis_server("redis-nopersist", bl.REDIS_NOPERSIST)
    results: dict = {}
    for server in (kv, rd):
        server.start()
        with bl.Client(server.port, timeout=120) as c:
            t0 = time.monotonic()
            bl.pipelined_sets(c, 0, args.keys)
            fill = time.monotonic() - t0
            drain = bl.wait_idle([server], timeout=600)
            time.sleep(1)
            at_drain = server.rss_fields().get("RssAnon")
            time.sleep(max(0.0, args.settle - 1))
            facts = memory_facts(server, c)
            facts.update({"fill_seconds": round(fill, 2), "drain_seconds": round(drain, 2),
                          "dbsize": c.command("DBSIZE"), "rssanon_at_drain": at_drain})
        results[server.name] = {"fill": facts}
        bl.log(f"{server.name}: {args.keys:,} keys in {fill:.1f} s (+{drain:.1f} s to SQLite); RssAnon "
               f"{bl.mib(facts['rssanon'])} ({bl.mib(at_drain)} a second after the drain), VmRSS {bl.mib(facts['vmrss'])}, used_memory {bl.mib(facts['used_memory'])}, "
               f"MEMORY USAGE of a key {facts['memory_usage_key']}")
    for server in (kv, rd):
        results[server.name]["full_get"] = get_load(server, args.keys, args.requests)
        bl.log(f"{server.name}: GET -P 16, all in memory: {results[server.name]['full_get']['rps']:,.0f}/s")

    # Step 3: kvcache again on the same directory, with a small tier.
    kv.stop(timeout=300)
    small = bl.kvcache_server("kvcache-tier", extra + ["--memory-tier-size", args.tier], data_dir=kv.dir)
    small.start(timeout=120)
    get_load(small, args.keys, 100_000_000, seconds=args.warmup)
    tier_get = get_load(small, args.keys, args.requests)
    with bl.Client(small.port, timeout=60) as c:
        tier_facts = memory_facts(small, c)
        mem = bl.info_fields(c, "memory")
    tier_facts.update({k: mem.get(k) for k in ("memory_tier_hits", "memory_tier_misses", "memory_tier_entries", "memory_tier_bytes") if k in mem})
    redis_again = get_load(rd, args.keys, args.requests)
    results["kvcache-tier"] = {"get": tier_get, "memory": tier_facts}
    results["redis-nopersist"]["get_beside_tier"] = redis_again
    bl.log(f"kvcache-tier ({args.tier}): GET -P 16 {tier_get['rps']:,.0f}/s vs Redis {redis_again['rps']:,.0f}/s; "
           f"RssAnon {bl.mib(tier_facts['rssanon'])}")
    small.stop(timeout=300)
    rd.stop()

    kv_fill, rd_fill = results["kvcache"]["fill"], results["redis-nopersist"]["fill"]
    if kv_fill["rssanon"] and rd_fill["rssanon"]:
        checks.add("RssAnon after the fill <= Redis's", kv_fill["rssanon"] <= rd_fill["rssanon"],
                   f"{bl.mib(kv_fill['rssanon'])} vs {bl.mib(rd_fill['rssanon'])} "
                   f"({(kv_fill['rssanon'] - rd_fill['rssanon']) / max(1, args.keys):+.0f} bytes a key)")
    else:
        checks.add("RssAnon after the fill <= Redis's", None, "not measured")
    ratio = tier_get["rps"] / redis_again["rps"] if redis_again.get("rps") else None
    checks.add(f"GET -P 16 with memory-tier-size {args.tier} >= 0.5x Redis", None if ratio is None else ratio >= 0.5,
               "not measured" if ratio is None else f"{ratio:.2f} ({tier_get['rps']:,.0f} vs {redis_again['rps']:,.0f}/s)")
    bound = args.tier_bytes + 64 * MIB
    checks.add(f"RssAnon with memory-tier-size {args.tier} <= the tier + 64 MiB",
               None if not tier_facts["rssanon"] else tier_facts["rssanon"] <= bound,
               f"{bl.mib(tier_facts['rssanon'])} (bound {bl.mib(bound)})")

    headers = ["server", "RssAnon", "VmRSS", "used_memory", "MEMORY USAGE of a key", "GET -P 16 rps"]
    rows = [
        ["kvcache (default tier)", bl.mib(kv_fill["rssanon"]), bl.mib(kv_fill["vmrss"]), bl.mib(kv_fill["used_memory"]),
         str(kv_fill["memory_usage_key"]), bl.fmt_rps(results["kvcache"]["full_get"]["rps"])],
        ["redis (no persistence)", bl.mib(rd_fill["rssanon"]), bl.mib(rd_fill["vmrss"]), bl.mib(rd_fill["used_memory"]),
         str(rd_fill["memory_usage_key"]), bl.fmt_rps(results["redis-nopersist"]["full_get"]["rps"])],
        [f"kvcache, restarted with memory-tier-size {args.tier}", bl.mib(tier_facts["rssanon"]),
         bl.mib(tier_facts["vmrss"]), bl.mib(tier_facts["used_memory"]), str(tier_facts["memory_usage_key"]),
         bl.fmt_rps(tier_get["rps"])],
        ["redis, measured beside that", "", "", "", "", bl.fmt_rps(redis_again["rps"])],
    ]
    print()
    print(bl.text_table(headers, rows))
    print(f"total {time.monotonic() - started:.0f} s")
    checks.report()
    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "settings": vars(args),
                                            "pinned": pinned, "results": results, "checks": checks.as_list()},
                                           indent=1) + "\n")
        per_key = (kv_fill["rssanon"] - rd_fill["rssanon"]) / max(1, args.keys) if kv_fill["rssanon"] else None
        md = [
            "## Memory: a million keys, and GET from a small memory tier (`bench/memory.py`)",
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary")),
            "",
            f"{args.keys:,} keys `key:000000000000`… of 100 bytes SET (1,000 a round trip) into kvcache-server "
            "(default configuration; its writer let finish) and redis-server without persistence"
            + (", each pinned to core 0, the load on core 1" if pinned else "")
            + "; RssAnon and VmRSS from /proc. GET is `redis-benchmark -t get -r "
            f"{args.keys} -n {args.requests:,} -c 50 -P 16 -d 100`. Then kvcache is restarted on the same directory "
            f"with `--memory-tier-size {args.tier}` and warmed up for {args.warmup:g} s of the same load before "
            "its GETs are measured, Redis measured again right after.",
            "",
            bl.markdown_table(headers, rows, "lrrrrr"),
            "",
            (f"kvcache's RssAnon after the fill is {per_key:+.0f} bytes a key beside Redis's "
             "(docs/decisions.md, \"The request path, stop 24\", says where they go)." if per_key is not None else ""),
            "",
            checks.markdown(details=True),
            "",
            "Raw numbers: [`bench/memory.json`](bench/memory.json).",
        ]
        bl.update_machine_section(info)
        bl.update_sections({"memory": "\n".join(md) + "\n"})
    return checks.exit_code()


if __name__ == "__main__":
    bl.main_wrapper(main)
