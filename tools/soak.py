#!/usr/bin/env python3
"""Soak test: minutes of mixed load on kvcache-server, watching for leaks.

Several client processes, each with several threads, run a random mix for
--minutes (default 10) over a few caches (db0, db1, db7 and two named
caches): GET, MGET, SET without TTL, SET with short (1-5 s) and long
(10-60 min) TTLs, EXPIRE, DEL, INCR, pipelines, partial SCANs (with and
without MATCH), read-your-write checks on keys private to a thread, and
random disconnects: a client dropping its connection and reconnecting, a
raw socket closed in the middle of a command, and one closed with replies
still unread.

The server's resident memory (VmRSS of its pid), its open descriptors
(/proc/PID/fd) and the throughput are printed at the start, every
--interval seconds (default 60) and at the end. It fails when

* the server dies (or does not exit 0 on SIGTERM at the end),
* RSS or the descriptor count grows without bound: the value at the end is
  over 1.5x the value after the first interval plus a small absolute slack
  (--rss-slack-mb, --fd-slack),
* a client sees a wrong value, an unexpected error reply or a dropped
  connection it did not ask for.

Exit status 0 on success, 1 when a property is violated, 2 when the test
could not run. Standard library and redis-py only; everything talks to
127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from toollib import HOST, default_binary, encode, free_port, log_warnings
import benchlib as bench  # noqa: E402  (toollib puts bench/ on the path)

CACHES = ["0", "1", "7", "soak-a", "soak-b"]


# ---------------------------------------------------------------------------
# The server's resources.

def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# ---------------------------------------------------------------------------
# The load.

class Worker:
    """One client thread: a redis-py client per cache, a random mix of commands."""

    def __init__(self, port: int, tag: str, seed: int, keys: int, deadline: float, counters):
        self.port, self.tag, self.keys, self.deadline = port, tag, keys, deadline
        self.rng = random.Random(seed)
        self.counters = counters  # shared dict-like of mp.Value
        self.clients: dict[str, redis.Redis] = {}
        self.private: dict[tuple[str, bytes], bytes] = {}
        self.ops = 0
        self.errors: list[str] = []
        self.stats = {"disconnects": 0, "raw_aborts": 0, "scans": 0, "checks": 0}

    def client(self, cache: str) -> redis.Redis:
        c = self.clients.get(cache)
        if c is None:
            c = redis.Redis(host=HOST, port=self.port, db=cache, socket_timeout=30, socket_connect_timeout=10,
                            retry=Retry(NoBackoff(), 0), single_connection_client=True)
            self.clients[cache] = c
        return c

    def key(self) -> bytes:
        return b"soak:k:%d" % self.rng.randrange(self.keys)

    def value(self) -> bytes:
        n = self.rng.choice((1, 10, 100, 500, 2000)) if self.rng.random() < 0.2 else self.rng.randrange(1, 400)
        return self.rng.randbytes(n)

    def fail(self, text: str):
        if len(self.errors) < 20:
            self.errors.append(f"{self.tag}: {text}")
        with self.counters["errors"].get_lock():
            self.counters["errors"].value += 1

    def run(self):
        while time.time() < self.deadline:
            cache = self.rng.choice(CACHES)
            try:
                self.step(cache)
            except redis.exceptions.ResponseError as error:
                self.fail(f"error reply in {cache}: {error}")
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as error:
                self.fail(f"connection lost in {cache}: {error!r}")
                self.drop(cache)
                time.sleep(0.2)
            self.ops += 1
            if self.ops % 50 == 0:
                with self.counters["ops"].get_lock():
                    self.counters["ops"].value += 50
        for c in self.clients.values():
            c.close()

    def drop(self, cache: str):
        c = self.clients.pop(cache, None)
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def step(self, cache: str):
        r = self.rng.random()
        c = self.client(cache)
        if r < 0.38:
            c.get(self.key())
        elif r < 0.48:
            c.set(self.key(), self.value())
        elif r < 0.58:
            c.set(self.key(), self.value(), ex=self.rng.randint(1, 5))
        elif r < 0.64:
            c.set(self.key(), self.value(), px=self.rng.randint(600_000, 3_600_000))
        elif r < 0.69:
            c.delete(*[self.key() for _ in range(self.rng.randint(1, 3))])
        elif r < 0.74:
            c.mget([self.key() for _ in range(5)])
        elif r < 0.77:
            c.incr(b"soak:ctr:%d" % self.rng.randrange(50))
        elif r < 0.80:
            c.expire(self.key(), self.rng.randint(1, 10))
        elif r < 0.86:
            pipe = c.pipeline(transaction=False)
            for _ in range(self.rng.choice((5, 20, 100))):
                if self.rng.random() < 0.5:
                    pipe.set(self.key(), self.value(), ex=self.rng.choice((None, 3, 600)))
                else:
                    pipe.get(self.key())
            pipe.execute()
        elif r < 0.88:
            self.scan(c)
        elif r < 0.95:
            self.read_your_write(c, cache)
        elif r < 0.96:
            c.ttl(self.key())
        elif r < 0.965:
            c.dbsize()
        elif r < 0.975:
            # A client dropping its connection, then reconnecting on next use.
            self.drop(cache)
            self.stats["disconnects"] += 1
        elif r < 0.98:
            self.raw_abort()
        else:
            c.exists(self.key(), self.key())

    def scan(self, c: redis.Redis):
        self.stats["scans"] += 1
        cursor = 0
        match = self.rng.choice((None, "soak:k:1*", "soak:ctr:*", "soak:p:*"))
        for _ in range(self.rng.randint(1, 10)):
            cursor, keys = c.scan(cursor=cursor, match=match, count=self.rng.choice((10, 100, 500)))
            if match == "soak:k:1*" and any(not k.startswith(b"soak:k:1") for k in keys):
                self.fail(f"SCAN MATCH {match} returned {keys[:3]}")
            if cursor == 0:
                break

    def read_your_write(self, c: redis.Redis, cache: str):
        self.stats["checks"] += 1
        k = b"soak:p:%s:%d" % (self.tag.encode(), self.rng.randrange(200))
        if (cache, k) in self.private and self.rng.random() < 0.5:
            got = c.get(k)
            if got != self.private[(cache, k)]:
                self.fail(f"{cache} {k!r}: read {got[:20] if got else got!r}, wrote "
                          f"{self.private[(cache, k)][:20]!r} ({len(self.private[(cache, k)])} bytes)")
            return
        v = self.value()
        c.set(k, v)
        self.private[(cache, k)] = v
        got = c.get(k)
        if got != v:
            self.fail(f"{cache} {k!r}: read back {got[:20] if got else got!r} right after SET")

    def raw_abort(self):
        """A raw client that leaves badly: mid-command, or with replies unread."""
        self.stats["raw_aborts"] += 1
        s = socket.create_connection((HOST, self.port), timeout=10)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                         if self.rng.random() < 0.3 else b"\x00" * 8)  # sometimes RST instead of FIN
            cmds = b"".join(encode("SET", self.key(), self.value()) + encode("GET", self.key())
                            for _ in range(self.rng.randint(1, 50)))
            if self.rng.random() < 0.5:
                cmds = cmds[:self.rng.randrange(1, len(cmds))]  # cut mid-command
            s.sendall(cmds)
        finally:
            s.close()


def process_main(port, tag, seed, threads, keys, deadline, counters, results):
    workers = [Worker(port, f"{tag}.{i}", seed * 1000 + i, keys, deadline, counters) for i in range(threads)]
    ts = [threading.Thread(target=w.run, daemon=True) for w in workers]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=max(1.0, deadline - time.time() + 60))
    summary = {"ops": sum(w.ops for w in workers), "errors": [e for w in workers for e in w.errors]}
    for k in ("disconnects", "raw_aborts", "scans", "checks"):
        summary[k] = sum(w.stats[k] for w in workers)
    results.put(summary)


# ---------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Run minutes of mixed load on kvcache-server and fail if its RSS or open descriptors "
                    "grow without bound, or it dies.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--binary", default=default_binary(), help="kvcache-server binary")
    p.add_argument("--minutes", type=float, default=10.0, help="how long the load runs")
    p.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    p.add_argument("--processes", type=int, default=3, help="client processes")
    p.add_argument("--threads", type=int, default=2, help="client threads per process")
    p.add_argument("--keys", type=int, default=10000, help="keys per cache")
    p.add_argument("--rss-slack-mb", type=float, default=32.0, help="absolute slack on RSS growth (MiB)")
    p.add_argument("--fd-slack", type=int, default=16, help="absolute slack on descriptor growth")
    p.add_argument("--durability", choices=("commit", "everysec"), default="commit")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--dir", default=None, help="work directory (default: temporary, removed on success)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not os.path.isfile(args.binary) or not os.access(args.binary, os.X_OK):
        print(f"soak: no executable binary at {args.binary}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    work = args.dir or tempfile.mkdtemp(prefix="kvcache-soak-")
    os.makedirs(work, exist_ok=True)
    log_path = os.path.join(work, "server.log")
    port = free_port()
    proc = bench.spawn([args.binary, "--port", str(port), "--bind", HOST, "--dir",
                                 os.path.join(work, "data"), "--durability", args.durability], log_path,
                       env=bench.sanitizer_env(work))
    procs: list[mp.Process] = []
    problems: list[str] = []
    samples: list[tuple] = []  # (t, rss_kb, fds, ops/s, keys)
    total_ops = 0
    summaries: list[dict] = []
    growth_text: list[str] = []
    load_start = time.time()
    print(f"soak: binary {args.binary}, {args.minutes} min, {args.processes} processes x {args.threads} threads, "
          f"caches {', '.join(CACHES)}, {args.keys} keys each, seed {seed}, pid {proc.pid}, work dir {work}",
          flush=True)
    try:
        try:
            bench.wait_listening(port, proc, 20)
        except RuntimeError as error:
            print(f"soak: {error}", file=sys.stderr)
            return 2
        monitor = redis.Redis(host=HOST, port=port, socket_timeout=30)

        def total_keys() -> int:
            # INFO caches: every cache, named ones too (INFO keyspace has the numbered ones).
            info = monitor.info("caches")
            return sum(v.get("keys", 0) for v in info.values() if isinstance(v, dict))

        cpu_last = [time.time(), cpu_seconds(proc.pid)]

        def sample(t, rate):
            s = (t, rss_kb(proc.pid), fd_count(proc.pid), rate, total_keys())
            samples.append(s)
            now, cpu = time.time(), cpu_seconds(proc.pid)
            busy = (cpu - cpu_last[1]) / max(1e-9, now - cpu_last[0]) * 100
            cpu_last[:] = [now, cpu]
            rate_text = "-" if rate is None else f"{rate:9.0f}"
            busy_text = "-" if rate is None else f"{busy:5.1f}%"
            print(f"  {t:7.0f}s  RSS {s[1] / 1024:8.1f} MiB  fds {s[2]:5d}  ops/s {rate_text:>9}  keys {s[4]:7d}  "
                  f"server CPU {busy_text:>6}", flush=True)

        sample(0, None)
        ctx = mp.get_context("fork")
        counters = {"ops": ctx.Value("q", 0), "errors": ctx.Value("q", 0)}
        results = ctx.Queue()
        load_start = time.time()
        load_end = load_start + args.minutes * 60
        # Clients run a little past the end, so the last sample sees the load still on.
        client_end = load_end + 2
        for i in range(args.processes):
            p = ctx.Process(target=process_main, daemon=True,
                            args=(port, f"p{i}", seed + i, args.threads, args.keys, client_end, counters, results))
            p.start()
            procs.append(p)
        last_t, last_ops = load_start, 0
        next_sample = load_start + args.interval
        while True:
            now = time.time()
            if proc.poll() is not None:
                problems.append(f"the server died (exit {proc.returncode}) after {now - load_start:.0f}s of load")
                break
            if now >= load_end:
                ops = counters["ops"].value
                sample(now - load_start, (ops - last_ops) / max(1e-9, now - last_t))
                break
            if now >= next_sample:
                ops = counters["ops"].value
                sample(now - load_start, (ops - last_ops) / (now - last_t))
                last_t, last_ops = now, ops
                next_sample += args.interval
            time.sleep(min(0.5, max(0.0, min(next_sample, load_end) - time.time())))
        for _ in procs:
            try:
                summaries.append(results.get(timeout=120))
            except Exception:
                problems.append("a client process did not report")
        for p in procs:
            p.join(timeout=30)
        idle = None
        if proc.poll() is None:
            time.sleep(1)  # let the server notice the clients' closes
            idle = (rss_kb(proc.pid), fd_count(proc.pid))
            print(f"  clients gone: RSS {idle[0] / 1024:8.1f} MiB  fds {idle[1]:5d}", flush=True)
        total_ops = sum(s["ops"] for s in summaries)
        client_errors = [e for s in summaries for e in s["errors"]]
        error_count = counters["errors"].value
        if error_count:
            problems.append(f"{error_count} client-side failures, first ones:")
            problems.extend("    " + e for e in client_errors[:10])

        # Growth: end vs the first interval's sample.
        if len(samples) >= 3 and proc.poll() is None:
            base, end = samples[1], samples[-1]
            rss_limit = 1.5 * base[1] + args.rss_slack_mb * 1024
            fd_limit = 1.5 * base[2] + args.fd_slack
            growth_text.append(f"RSS {base[1] / 1024:.1f} -> {end[1] / 1024:.1f} MiB "
                               f"(limit {rss_limit / 1024:.1f}, peak {max(s[1] for s in samples) / 1024:.1f})")
            growth_text.append(f"fds {base[2]} -> {end[2]} (limit {fd_limit:.0f}, "
                               f"peak {max(s[2] for s in samples)})")
            if end[1] > rss_limit:
                problems.append(f"RSS grew from {base[1] / 1024:.1f} MiB after the first interval to "
                                f"{end[1] / 1024:.1f} MiB (limit {rss_limit / 1024:.1f})")
            if end[2] > fd_limit:
                problems.append(f"open descriptors grew from {base[2]} to {end[2]} (limit {fd_limit:.0f})")
            # With every client gone, only the listener, the log and each
            # cache's file, WAL and lock file should stay open.
            if idle is not None:
                idle_limit = samples[0][2] + 4 * len(CACHES) + args.fd_slack
                growth_text.append(f"fds with no client connected {idle[1]} (limit {idle_limit})")
                if idle[1] > idle_limit:
                    problems.append(f"{idle[1]} descriptors open with no client connected (limit {idle_limit}): "
                                    f"client sockets leaked?")
        elif proc.poll() is None:
            growth_text.append("too short for a growth check (needs two intervals)")
            problems.append("run too short for a growth check: use --minutes >= 2 x --interval")

        monitor.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                code = None
            if code != 0:
                problems.append(f"SIGTERM at the end: exit code {code}, expected 0")
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    elapsed = min(time.time(), load_start + args.minutes * 60 + 2) - load_start
    problems.extend(f"sanitizer report {r[:2000]}" for r in bench.sanitizer_reports(work))
    failed = bool(problems)
    print()
    print("Problems:" if failed else "No problem found.")
    for line in problems:
        print("  - " + line)
    if failed:
        tail = open(log_path, "rb").read().decode(errors="replace").splitlines()[-10:]
        print("  server log tail:")
        for line in tail:
            print("    " + line)
    print()
    print("Summary")
    print(f"  result        : {'FAIL' if failed else 'PASS'}")
    print(f"  load          : {elapsed:.0f}s, {total_ops} commands (pipelines count once), "
          f"{total_ops / max(1e-9, elapsed):.0f}/s average")
    if samples:
        print(f"  start         : RSS {samples[0][1] / 1024:.1f} MiB, {samples[0][2]} fds")
    for line in growth_text:
        print(f"  growth        : {line}")
    if summaries:
        print(f"  client events : {sum(s['disconnects'] for s in summaries)} disconnect/reconnects, "
              f"{sum(s['raw_aborts'] for s in summaries)} aborted raw clients, {sum(s['scans'] for s in summaries)} "
              f"scans, {sum(s['checks'] for s in summaries)} read-your-write checks")
    warnings = log_warnings(log_path)
    example = f", e.g. {warnings[0][:150]}" if warnings else ""
    print(f"  server log    : {len(warnings)} warning lines{example}")
    alive = not any("died" in p or "SIGTERM" in p for p in problems)
    print(f"  server alive  : {'yes, exited 0 on SIGTERM' if alive else 'NO'}")
    if failed or args.dir:
        print(f"  work dir kept : {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
