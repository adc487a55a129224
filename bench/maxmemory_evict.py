#!/usr/bin/env python3
"""SET under maxmemory eviction: every write evicts, kvcache-server beside
redis-server, the same redis-benchmark load, interleaved rounds, medians.

    python3 bench/maxmemory_evict.py              # 5 rounds, ~2 min
    python3 bench/maxmemory_evict.py --rounds 1   # a smoke run

Each server (appendonly yes, appendfsync everysec on both; free 127.0.0.1
ports, temporary directories, pinned to core 0, the load to core 1) gets
`maxmemory-policy allkeys-lru` and a maxmemory of its used memory at start
plus --limit bytes (default 8 MB: the 50 clients' buffers count against
maxmemory too, 64 KiB each here, ~20 KiB in Redis), so that after the
first writes every SET evicts a key. The load is
`redis-benchmark -t set -r 1000000 -d 100 -c 50 -P --pipeline -n --requests`.
Printed: each round's rps, the medians and kvcache / redis, and the keys
left (DBSIZE) and evicted_keys of each. Nothing is checked (exit 0 unless
the harness fails); a fresh pair of servers is started per round.

(Until 2026-12-03 each eviction sample of kvcache-server listed every write
not yet in SQLite: ~8 ms a SET while the writer was behind.)
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402


def used_memory(client: bl.Client) -> int:
    return int(bl.info_fields(client, "memory")["used_memory"])


def one_round(args, name: str) -> dict:
    if name == "kvcache":
        server = bl.kvcache_server("kvcache", [])
    else:
        server = bl.redis_server("redis", bl.REDIS_AOF_EVERYSEC)
    server.start()
    try:
        with bl.Client(server.port) as c:
            c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
            c.command("CONFIG", "SET", "maxmemory", str(used_memory(c) + args.limit))
        argv = bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(server.port), "-t", "set", "-r", "1000000",
                               "-d", "100", "-c", "50", "-P", str(args.pipeline), "-n", str(args.requests), "-q", "--csv"])
        out = subprocess.run(argv, capture_output=True, text=True, timeout=600).stdout
        if len(out.strip().splitlines()) < 2:
            raise RuntimeError(f"{name}: redis-benchmark gave no result: {out.strip()!r}")
        rps = float(out.strip().splitlines()[-1].split(",")[1].strip('"'))
        with bl.Client(server.port) as c:
            keys = c.command("DBSIZE")
            evicted = int(bl.info_fields(c, "stats")["evicted_keys"])
        return {"rps": rps, "keys": keys, "evicted": evicted}
    finally:
        server.stop()


def main() -> int:
    p = argparse.ArgumentParser(description="SET under maxmemory eviction (allkeys-lru), kvcache-server beside redis-server.")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("--pipeline", type=int, default=16)
    p.add_argument("--limit", type=int, default=8_000_000, help="maxmemory above the used memory at start (bytes)")
    p.add_argument("--no-pin", action="store_true")
    args = p.parse_args()
    bl.setup_pinning(not args.no_pin)
    bl.ensure_kvcache(False)
    results: dict[str, list[dict]] = {"kvcache": [], "redis": []}
    for r in range(args.rounds):
        for name in (["kvcache", "redis"] if r % 2 == 0 else ["redis", "kvcache"]):
            res = one_round(args, name)
            results[name].append(res)
            print(f"round {r + 1} {name}: {res['rps']:,.0f} SET/s, {res['keys']} keys left, {res['evicted']} evicted",
                  flush=True)
    medians = {name: statistics.median(x["rps"] for x in rs) for name, rs in results.items()}
    print(f"median SET/s with every write evicting (-P {args.pipeline}): kvcache {medians['kvcache']:,.0f}, "
          f"redis {medians['redis']:,.0f}, kvcache / redis {medians['kvcache'] / medians['redis']:.2f}")
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
