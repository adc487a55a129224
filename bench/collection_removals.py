#!/usr/bin/env python3
"""Removals from one large set and one large sorted set, with a scan: the
time they take and the slowest single command, kvcache-server binaries side
by side with redis-server (no persistence on either).

    python3 bench/collection_removals.py                       # .build/release against Redis, 3 rounds: ~3 min
    python3 bench/collection_removals.py --kvcache OLD --kvcache NEW --rounds 3

For each server and round: SADD (ZADD) --members members m0 … in batches of
1,000; then --removals SREM (ZREM) of single random members, pipelined
1,000 a batch, with `slowlog-log-slower-than 2000`; then an SSCAN (ZSCAN)
walk, COUNT 100, that checks each remaining member comes back exactly once
(after the removals, nothing changes under the walk). Reports the medians
of the removal time and of the slowest command SLOWLOG saw, per server.

Reports only (exit 0), or 1 on a harness failure, 3 when a walk returned
a member twice or missed one. Needs redis-py (`pip install redis`).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

import redis  # noqa: E402


def one_round(server: bl.Server, kind: str, members: int, removals: int, seed: int) -> dict:
    server.start()  # a fresh server in a fresh directory each round
    try:
        r = redis.Redis(host=bl.HOST, port=server.port)
        pipe = r.pipeline(transaction=False)
        for start in range(0, members, 1000):
            names = ["m%d" % i for i in range(start, min(start + 1000, members))]
            if kind == "set":
                pipe.sadd("c", *names)
            else:
                pipe.zadd("c", {name: i for i, name in enumerate(names, start)})
        pipe.execute()
        r.config_set("slowlog-log-slower-than", 2000)
        r.slowlog_reset()
        order = list(range(members))
        random.Random(seed).shuffle(order)
        began = time.perf_counter()
        for start in range(0, removals, 1000):
            for i in order[start:min(start + 1000, removals)]:
                (pipe.srem if kind == "set" else pipe.zrem)("c", "m%d" % i)
            pipe.execute()
        took = time.perf_counter() - began
        slowest = max((entry["duration"] for entry in r.slowlog_get(128)), default=0) / 1000.0
        seen: list[bytes] = []
        cursor = 0
        while True:
            if kind == "set":
                cursor, batch = r.sscan("c", cursor, count=100)
                seen += batch
            else:
                cursor, batch = r.zscan("c", cursor, count=100)
                seen += [member for member, _ in batch]
            if cursor == 0:
                break
        expected = {("m%d" % i).encode() for i in order[removals:]}
        whole = len(seen) == len(set(seen)) and set(seen) == expected
        return {"seconds": took, "slowest_ms": slowest, "scan_whole": whole}
    finally:
        server.stop(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kvcache", action="append", help="a kvcache-server binary (may repeat; default .build/release)")
    parser.add_argument("--no-redis", action="store_true", help="leave redis-server out")
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--removals", type=int, default=700_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not 0 < args.removals <= args.members:
        parser.error("--removals must be between 1 and --members")
    bl.install_signal_handlers()
    bl.setup_pinning()
    makers = []  # (name, a function making a fresh Server)
    for n, binary in enumerate(args.kvcache or [str(bl.KVCACHE_BIN)]):
        def make(binary=binary, name=f"kvcache{n + 1}"):
            def argv(port, d):
                return [binary, "--port", str(port), "--bind", bl.HOST, "--dir", d, "--appendonly", "no"]
            return bl.Server(name, argv, "kvcache")
        makers.append((f"kvcache{n + 1}", make))
        print(f"kvcache{n + 1}: {binary} --appendonly no")
    if not args.no_redis:
        makers.append(("redis", lambda: bl.redis_server("redis", bl.REDIS_NOPERSIST)))
        print("redis: redis-server " + " ".join(bl.REDIS_NOPERSIST))
    results: dict[tuple[str, str], list[dict]] = {}
    for round_ in range(args.rounds):
        for kind in ("set", "zset"):
            for name, make in makers[round_ % len(makers):] + makers[:round_ % len(makers)]:
                outcome = one_round(make(), kind, args.members, args.removals, seed=round_)
                results.setdefault((name, kind), []).append(outcome)
                bl.log(f"round {round_ + 1} {kind} {name}: {outcome}")
    print(f"\n{args.removals:,} random removals from {args.members:,} members, medians of {args.rounds} round(s)\n")
    print("| server | kind | removals took (s) | slowest command (ms) | scan returned each member once |")
    print("| --- | --- | ---: | ---: | --- |")
    broken = False
    for (name, kind), outcomes in results.items():
        whole = all(o["scan_whole"] for o in outcomes)
        broken |= not whole
        print(f"| {name} | {kind} | {statistics.median(o['seconds'] for o in outcomes):.2f} "
              f"| {statistics.median(o['slowest_ms'] for o in outcomes):.1f} | {'yes' if whole else 'NO'} |")
    return 3 if broken else 0


if __name__ == "__main__":
    bl.main_wrapper(main)
