#!/usr/bin/env python3
"""Pub/Sub under load, kvcache-server beside redis-server in one run.

N subscribers on one channel (a fraction of them never read), publishers
pipelining PUBLISH at full speed for a while, and a probe client timing GET
round trips meanwhile. For each server: publishes per second, the peak RSS
(bounded by client-output-buffer-limit pubsub: Redis's 32mb 8mb 60 by
default, lowered here with --hard/--soft to keep the run short), how many
of the slow subscribers were disconnected and how many readers survived,
and the probe's GET p50/p99. Both servers run with the same limits.

    python3 bench/pubsub_load.py [--subscribers 1000] [--slow 0.1] [--seconds 10]
        [--payload 64] [--hard 4mb] [--soft 1mb] [--soft-seconds 60] [--rate N]
        [--binary PATH] [--json FILE]

With --rate both servers get the same load, so memory and latency compare;
at full speed (the default) the Python load generator is the bottleneck,
and the faster server simply gets more messages queued.
"""
import argparse
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import encode, free_port  # noqa: E402


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def command(s, *args):
    s.sendall(encode(*args))
    data = b""
    while not data.endswith(b"\r\n"):
        data += s.recv(65536)
    return data


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def start(kind, binary, port, directory, limits):
    taskset = ["taskset", "-c", "0"] if shutil.which("taskset") and os.cpu_count() > 1 else []
    if kind == "redis":
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                "--appendonly", "no", "--maxclients", "10000"]
    else:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", os.path.join(directory, "data"),
                "--maxclients", "10000"]
    argv += ["--client-output-buffer-limit"] + limits.split()
    proc = subprocess.Popen(taskset + argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            s = connect(port)
            if command(s, "PING") == b"+PONG\r\n":
                s.close()
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{kind} did not start")


def run_one(kind, args):
    directory = tempfile.mkdtemp(prefix=f"pubsub-load-{kind}-")
    port = free_port()
    proc = start(kind, args.binary, port, directory, f"pubsub {args.hard} {args.soft} {args.soft_seconds}")
    try:
        subscribe = encode("SUBSCRIBE", "firehose")
        slow_count = int(args.subscribers * args.slow)
        slow, readers = [], []
        for i in range(args.subscribers):
            if i < slow_count:
                # A small receive window, so the server, not the kernel, holds what it does not read.
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", port))
            else:
                s = connect(port)
            s.sendall(subscribe)
            (slow if i < slow_count else readers).append(s)
        control = connect(port)
        while True:
            reply = command(control, "PUBSUB", "NUMSUB", "firehose")
            if reply.endswith(b":%d\r\n" % args.subscribers):
                break
            time.sleep(0.05)
        command(control, "SET", "probe", "x" * 100)
        stop = threading.Event()
        closed_readers = [0]

        def drain():
            sel = selectors.DefaultSelector()
            for s in readers:
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ)
            while not stop.is_set():
                for key, _ in sel.select(timeout=0.1):
                    try:
                        if not key.fileobj.recv(1 << 20):
                            sel.unregister(key.fileobj)
                            closed_readers[0] += 1
                    except (BlockingIOError, ConnectionError):
                        pass

        published = [0]

        def publisher():
            s = connect(port)
            batch = encode("PUBLISH", "firehose", "m" * args.payload) * args.pipeline
            began = time.time()
            while not stop.is_set():
                if args.rate and published[0] > args.rate * (time.time() - began):
                    time.sleep(0.002)
                    continue
                s.sendall(batch)
                got = 0
                buf = b""
                while got < args.pipeline:
                    buf += s.recv(65536)
                    got = buf.count(b"\r\n")
                published[0] += args.pipeline
            s.close()

        latencies = []

        def probe():
            s = connect(port)
            request = encode("GET", "probe")
            while not stop.is_set():
                t = time.perf_counter()
                s.sendall(request)
                data = b""
                while len(data) < 107:
                    data += s.recv(65536)
                latencies.append(time.perf_counter() - t)
                time.sleep(0.001)
            s.close()

        threads = [threading.Thread(target=drain), threading.Thread(target=probe)]
        threads += [threading.Thread(target=publisher) for _ in range(args.publishers)]
        peak = 0
        start_time = time.time()
        for t in threads:
            t.start()
        while time.time() - start_time < args.seconds:
            peak = max(peak, rss_kb(proc.pid))
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(10)
        elapsed = time.time() - start_time
        reply = command(control, "PUBSUB", "NUMSUB", "firehose")
        remaining = int(reply.rsplit(b":", 1)[1])
        latencies.sort()

        def pct(p):
            return latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000 if latencies else 0

        for s in slow + readers + [control]:
            s.close()
        return {
            "server": kind,
            "publishes_per_s": round(published[0] / elapsed),
            "peak_rss_mb": round(peak / 1024, 1),
            "subscribers_left": remaining,
            "slow_subscribers": slow_count,
            "readers_closed": closed_readers[0],
            "probe_gets": len(latencies),
            "get_p50_ms": round(pct(0.50), 3),
            "get_p99_ms": round(pct(0.99), 3),
        }
    finally:
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(directory, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subscribers", type=int, default=1000)
    p.add_argument("--slow", type=float, default=0.1, help="fraction of subscribers that never read")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--payload", type=int, default=64)
    p.add_argument("--publishers", type=int, default=2)
    p.add_argument("--pipeline", type=int, default=32)
    p.add_argument("--hard", default="4mb")
    p.add_argument("--soft", default="1mb")
    p.add_argument("--soft-seconds", type=int, default=60)
    p.add_argument("--rate", type=int, default=0, help="publishes per second over all publishers (0: full speed)")
    p.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "kvcache-server"))
    p.add_argument("--json")
    args = p.parse_args()
    results = []
    for kind in ["kvcache", "redis"]:
        results.append(run_one(kind, args))
    fields = list(results[0].keys())[1:]
    print(f"{'':22}" + "".join(f"{r['server']:>14}" for r in results))
    for f in fields:
        print(f"{f:22}" + "".join(f"{r[f]:>14}" for r in results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
