#!/usr/bin/env python3
"""Slow clients: does a crowd of slow or stuck connections slow everyone down?

Measures `redis-benchmark -t get,set -n N -c 20 -q` against kvcache-server
unloaded, then again while the server also holds

* --tricklers (default 1,000) connections each sending a partial command one
  byte per second (a multibulk request ending in a 1 MB bulk, or an inline
  command without its newline, so none ever completes),
* --half-open (default 50) clients that connected, sent half of a 1 MiB
  bulk and never send the rest nor read,
* --non-readers (default 10) clients that sent a pipeline of GETs of a
  100 KB value and never read the replies (their socket buffers fill up).

Rounds (--rounds, default 2) alternate unloaded and loaded runs; the best
run of each kind is compared, which damps the noise of other work on the
machine. It prints both throughputs (SET, GET and combined) and their
ratio, and fails when loaded < --min-ratio (default 0.8) x unloaded, when
the server did not hold every extra connection, dropped a slow client, or
stopped answering. The process's descriptor limit is raised as needed.

Exit status 0 on success, 1 when the property is violated, 2 when the test
could not run. Standard library only (plus redis-benchmark from
redis-tools); everything talks to 127.0.0.1 and stops by itself, in about a
minute with the defaults.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from toollib import HOST, default_binary, encode, free_port, log_warnings
import benchlib as bench  # noqa: E402  (toollib puts bench/ on the path)

def command(port: int, *args, timeout: float = 10.0) -> bytes:
    """One command on a fresh connection; returns the raw reply's first line (and bulk)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(encode(*args))
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            if data.startswith(b"$"):
                head, _, rest = data.partition(b"\r\n")
                if _ and (int(head[1:]) < 0 or len(rest) >= int(head[1:]) + 2):
                    return data
            elif data.endswith(b"\r\n"):
                return data
    return data


def server_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def connected_clients(port: int) -> int:
    info = command(port, "INFO", "clients").decode(errors="replace")
    m = re.search(r"connected_clients:(\d+)", info)
    return int(m.group(1)) if m else -1


# ---------------------------------------------------------------------------

def run_benchmark(port: int, n: int, clients: int) -> dict[str, float]:
    out = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(port), "-t", "get,set", "-n", str(n),
                          "-c", str(clients), "-q"],
                         capture_output=True, text=True, timeout=300)
    text = out.stdout.replace("\r", "\n")
    rates = {m.group(1): float(m.group(2))
             for m in re.finditer(r"^\s*(SET|GET): ([\d.]+) requests per second", text, re.M)}
    if out.returncode != 0 or set(rates) != {"SET", "GET"}:
        raise RuntimeError(f"redis-benchmark failed ({out.returncode}): {out.stdout[-300:]} {out.stderr[-300:]}")
    # Combined: 2n requests over the time both runs took.
    rates["combined"] = 2 / (1 / rates["SET"] + 1 / rates["GET"])
    return rates


class SlowCrowd:
    """The extra connections, and a thread trickling one byte per second into each trickler."""

    def __init__(self, port: int, tricklers: int, half_open: int, non_readers: int, seed: int):
        self.port = port
        self.rng = random.Random(seed)
        self.tricklers: list[list] = []  # [socket, payload, position]
        self.stuck: list[socket.socket] = []
        self.closed_by_server = 0
        self.bytes_trickled = 0
        self.stop = threading.Event()
        self.thread = None
        self.counts = (tricklers, half_open, non_readers)

    def open(self):
        tricklers, half_open, non_readers = self.counts
        for i in range(tricklers):
            s = socket.create_connection((HOST, self.port), timeout=10)
            if self.rng.random() < 0.7:
                payload = encode("SET", f"trickle:{i}", "x" * (1 << 20))
                head = payload.index(b"xxx")
                start = self.rng.randrange(0, head + 64)  # somewhere in the header or the bulk
            else:
                payload = f"SET trickle:inline:{i} ".encode() + b"y" * 100_000  # no newline, ever
                start = self.rng.randrange(0, 24)
            if start:
                s.sendall(payload[:start])
            s.setblocking(False)
            self.tricklers.append([s, payload, start])
        for i in range(half_open):
            s = socket.create_connection((HOST, self.port), timeout=10)
            s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\nhalf:%d\r\n$%d\r\n" % (len(b"half:%d" % i), i, 1 << 20)
                      + b"h" * (1 << 19))
            self.stuck.append(s)
        if non_readers:
            s = socket.create_connection((HOST, self.port), timeout=10)
            s.sendall(encode("SET", "slow:big", "b" * 100_000))
            s.recv(100)
            s.close()
        for _ in range(non_readers):
            s = socket.create_connection((HOST, self.port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.setblocking(False)
            request = encode("GET", "slow:big") * 50
            try:
                sent = s.send(request)  # what fits; the rest is never sent either
            except BlockingIOError:
                sent = 0
            del sent
            self.stuck.append(s)
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _trickle(self):
        # Spread the sends over each second: every 10 ms, a hundredth of the tricklers.
        tick = 0
        while not self.stop.is_set():
            t0 = time.monotonic()
            for idx in range(tick % 100, len(self.tricklers), 100):
                entry = self.tricklers[idx]
                s, payload, pos = entry
                if s is None or pos >= len(payload) - 1:
                    continue
                try:
                    if s.send(payload[pos:pos + 1]) == 1:
                        entry[2] += 1
                        self.bytes_trickled += 1
                except BlockingIOError:
                    pass
                except OSError:
                    self.closed_by_server += 1
                    s.close()
                    entry[0] = None
            tick += 1
            self.stop.wait(max(0.0, 0.01 - (time.monotonic() - t0)))

    def dropped(self) -> int:
        """Slow clients the server closed (EOF or reset seen)."""
        n = self.closed_by_server
        for entry in self.tricklers:
            s = entry[0]
            if s is None:
                continue
            try:
                data = s.recv(1 << 16)
                if data == b"" or data.startswith(b"-"):
                    n += 1  # closed, or answered with an error (and then closed)
            except BlockingIOError:
                pass
            except OSError:
                n += 1
        return n

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=5)
        for entry in self.tricklers:
            if entry[0] is not None:
                entry[0].close()
        for s in self.stuck:
            s.close()
        self.tricklers.clear()
        self.stuck.clear()


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Compare redis-benchmark throughput on an unloaded kvcache-server with its throughput "
                    "while 1,000 clients trickle partial commands and others are stuck half-open.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--binary", default=default_binary(), help="kvcache-server binary")
    p.add_argument("-n", "--requests", type=int, default=100000, help="redis-benchmark -n")
    p.add_argument("-c", "--clients", type=int, default=20, help="redis-benchmark -c")
    p.add_argument("--tricklers", type=int, default=1000, help="connections trickling one byte per second")
    p.add_argument("--half-open", type=int, default=50, help="clients stuck after half a bulk")
    p.add_argument("--non-readers", type=int, default=10, help="clients that never read their replies")
    p.add_argument("--rounds", type=int, default=2, help="unloaded/loaded pairs; the best of each is compared")
    p.add_argument("--settle", type=float, default=2.0,
                   help="seconds of trickling before the loaded benchmark starts")
    p.add_argument("--min-ratio", type=float, default=0.8, help="loaded/unloaded throughput below this fails")
    p.add_argument("--seed", type=int, default=None)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not os.path.isfile(args.binary) or not os.access(args.binary, os.X_OK):
        print(f"slow_clients: no executable binary at {args.binary}", file=sys.stderr)
        return 2
    if shutil.which("redis-benchmark") is None:
        print("slow_clients: redis-benchmark not found (Debian package redis-tools)", file=sys.stderr)
        return 2
    needed = args.tricklers + args.half_open + args.non_readers + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        new_soft = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
        soft = new_soft
    if soft != resource.RLIM_INFINITY and soft < needed:
        print(f"slow_clients: descriptor limit {soft} < {needed} needed", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    work = tempfile.mkdtemp(prefix="kvcache-slow-")
    port = free_port()
    log_path = os.path.join(work, "server.log")
    proc = bench.spawn([args.binary, "--port", str(port), "--bind", HOST, "--dir",
                                 os.path.join(work, "data")], log_path,
                       env=bench.sanitizer_env(work))
    problems: list[str] = []
    unloaded: list[dict] = []
    loaded: list[dict] = []
    crowd_info = []
    started = time.monotonic()
    print(f"slow_clients: binary {args.binary}, redis-benchmark -t get,set -n {args.requests} -c {args.clients} -q; "
          f"load: {args.tricklers} tricklers, {args.half_open} half-open, {args.non_readers} non-readers; "
          f"{args.rounds} rounds, seed {seed}", flush=True)
    crowd = None
    try:
        try:
            bench.wait_listening(port, proc, 20)
        except RuntimeError as error:
            print(f"slow_clients: {error}", file=sys.stderr)
            return 2
        for rnd in range(1, args.rounds + 1):
            r = run_benchmark(port, args.requests, args.clients)
            unloaded.append(r)
            print(f"  round {rnd} unloaded: SET {r['SET']:9.0f}/s  GET {r['GET']:9.0f}/s  "
                  f"combined {r['combined']:9.0f}/s", flush=True)
            crowd = SlowCrowd(port, args.tricklers, args.half_open, args.non_readers, seed + rnd)
            t0 = time.monotonic()
            crowd.open()
            opened = time.monotonic() - t0
            time.sleep(args.settle)
            extra = args.tricklers + args.half_open + args.non_readers
            # Minus the INFO connection itself. A connection whose handshake
            # the kernel retried may show up a moment later.
            held = connected_clients(port) - 1
            wait_until = time.monotonic() + 5
            while held < extra and time.monotonic() < wait_until:
                time.sleep(0.25)
                held = connected_clients(port) - 1
            if held < extra:
                problems.append(f"round {rnd}: the server held {held} of the {extra} extra connections")
            r = run_benchmark(port, args.requests, args.clients)
            loaded.append(r)
            dropped = crowd.dropped()
            if dropped:
                problems.append(f"round {rnd}: the server dropped {dropped} trickling clients")
            if proc.poll() is not None:
                problems.append(f"round {rnd}: the server died (exit {proc.returncode})")
                break
            rss = server_rss_mb(proc.pid)
            crowd_info.append((held, crowd.bytes_trickled, opened, rss))
            print(f"  round {rnd} loaded  : SET {r['SET']:9.0f}/s  GET {r['GET']:9.0f}/s  "
                  f"combined {r['combined']:9.0f}/s   ({held} extra connections held, opened in {opened:.2f}s, "
                  f"{crowd.bytes_trickled} bytes trickled, server RSS {rss:.0f} MiB)", flush=True)
            crowd.close()
            crowd = None
        if proc.poll() is None:
            pong = command(port, "PING")
            if pong != b"+PONG\r\n":
                problems.append(f"PING after the load answered {pong[:40]!r}")
            # Every client gone: only the INFO connection itself should remain.
            wait_until = time.monotonic() + 5
            after = connected_clients(port) - 1
            while after > 0 and time.monotonic() < wait_until:
                time.sleep(0.25)
                after = connected_clients(port) - 1
            if after > 0:
                problems.append(f"{after} clients still connected 5 s after every client left")
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                code = None
            if code != 0:
                problems.append(f"SIGTERM at the end: exit code {code}, expected 0")
        else:
            problems.append(f"the server died (exit {proc.returncode})")
    except RuntimeError as error:
        problems.append(str(error))
    finally:
        if crowd is not None:
            crowd.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    ratio = None
    if unloaded and loaded:
        best_u = max(unloaded, key=lambda r: r["combined"])
        best_l = max(loaded, key=lambda r: r["combined"])
        ratio = best_l["combined"] / best_u["combined"]
        if ratio < args.min_ratio:
            problems.append(f"loaded throughput is {ratio:.2f}x unloaded (minimum {args.min_ratio})")
    elif not problems:
        problems.append("no measurement")
    problems.extend(f"sanitizer report {r[:2000]}" for r in bench.sanitizer_reports(work))
    failed = bool(problems)
    print()
    print("Problems:" if failed else "No problem found.")
    for p in problems:
        print("  - " + p)
    if failed:
        print(f"  server log: {log_path}")
    print()
    print("Summary")
    print(f"  result     : {'FAIL' if failed else 'PASS'}")
    if ratio is not None:
        print(f"  unloaded   : SET {best_u['SET']:.0f}/s, GET {best_u['GET']:.0f}/s, "
              f"combined {best_u['combined']:.0f}/s (best of {len(unloaded)})")
        print(f"  loaded     : SET {best_l['SET']:.0f}/s, GET {best_l['GET']:.0f}/s, "
              f"combined {best_l['combined']:.0f}/s (best of {len(loaded)}), with {args.tricklers} tricklers + "
              f"{args.half_open} half-open + {args.non_readers} non-readers")
        print(f"  ratio      : {ratio:.2f} loaded/unloaded (SET {best_l['SET'] / best_u['SET']:.2f}, "
              f"GET {best_l['GET'] / best_u['GET']:.2f}); minimum {args.min_ratio}")
        if crowd_info:
            print(f"  crowd      : {max(c[0] for c in crowd_info)} extra connections held, server RSS up to "
                  f"{max(c[3] for c in crowd_info):.0f} MiB with them")
        runs_u = ", ".join("%.0f" % r["combined"] for r in unloaded)
        runs_l = ", ".join("%.0f" % r["combined"] for r in loaded)
        print(f"  all runs   : unloaded {runs_u}; loaded {runs_l} (combined req/s)")
    warnings = log_warnings(log_path)
    example = f", e.g. {warnings[0][:150]}" if warnings else ""
    print(f"  server log : {len(warnings)} warning lines{example}")
    print(f"  elapsed    : {time.monotonic() - started:.1f}s")
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
