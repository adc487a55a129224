#!/usr/bin/env python3
"""A million keys with short TTLs: are they all gone after their time, and
does the sweep leave other clients' latency alone?

Loads N keys (default 1,000,000) with `SET k v PX <ttl>` through pipelines,
then, while the keys expire and the sweep removes them, a second client
times PING and GET round trips. Prints the time until DBSIZE reaches 0 and
the latency percentiles before and during the sweep; exits non-zero if keys
remain after the deadline or p99 during the sweep exceeds --max-p99-ms.

    python3 bench/expiry_sweep.py [--keys 1000000] [--ttl-ms 3000] [--binary PATH]
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from benchlib import encode, free_port  # noqa: E402


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        if line[:1] == b"$" and int(line[1:]) >= 0:
            n = int(line[1:])
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 20)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        return line

    def command(self, *args):
        self.send(encode(*args))
        return self.reply()


def percentile(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p / 100))] if s else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--ttl-ms", type=int, default=3000)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "kvcache-server"))
    parser.add_argument("--durability", default="commit")
    parser.add_argument("--deadline-s", type=float, default=120, help="fail if keys remain this long after their TTL")
    parser.add_argument("--max-p99-ms", type=float, default=10.0)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="kvcache-sweep-")
    port = free_port()
    server = subprocess.Popen([args.binary, "--port", str(port), "--dir", os.path.join(tmp, "data"),
                               "--durability", args.durability], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            try:
                probe = Conn(port)
                break
            except OSError:
                time.sleep(0.05)
        load = Conn(port)
        started = time.time()
        batch = 10_000
        expire_ms = None
        for base in range(0, args.keys, batch):
            n = min(batch, args.keys - base)
            if expire_ms is None:
                # Every key expires at one moment after the load: the first
                # batch's rate says how long the load will take.
                expire_ms = int((time.time() + args.ttl_ms / 1000.0) * 1000)
            at = str(expire_ms).encode()
            load.send(b"".join(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$5\r\nvalue\r\n$4\r\nPXAT\r\n$%d\r\n%s\r\n" % (
                len(k), k, len(at), at) for k in (b"sweep:%d" % i for i in range(base, base + n))))
            for _ in range(n):
                assert load.reply() == b"+OK"
            if base == 0:
                rate = n / max(1e-6, time.time() - started)
                expire_ms = int((started + args.keys / rate * 3 + args.ttl_ms / 1000.0) * 1000)
        loaded_at = time.time()
        print("loaded %d keys in %.1fs, all expiring at %.1fs" % (args.keys, loaded_at - started, expire_ms / 1000.0 - started))
        if expire_ms / 1000.0 < loaded_at:
            print("FAIL: the load took longer than planned; raise --ttl-ms")
            return 1

        probe.command(b"SET", b"probe", b"x")
        samples_before, samples_during = [], []
        expire_at = expire_ms / 1000.0
        gone_at = None
        deadline = expire_at + args.deadline_s
        last_dbsize = 0
        next_dbsize = 0
        while time.time() < deadline:
            t = time.perf_counter()
            probe.command(b"GET", b"probe")
            dt = (time.perf_counter() - t) * 1000
            (samples_during if time.time() >= expire_at else samples_before).append(dt)
            if time.time() >= next_dbsize:
                last_dbsize = int(probe.command(b"DBSIZE")[1:])
                next_dbsize = time.time() + 0.5
                if last_dbsize <= 1 and time.time() > expire_at:  # only the probe key left
                    gone_at = time.time()
                    break
            time.sleep(0.001)
        if gone_at is None:
            print("FAIL: %d keys remain %.0fs after their TTL" % (last_dbsize - 1, args.deadline_s))
            return 1
        print("all keys gone %.2fs after their expiry time" % (gone_at - expire_at))
        for name, s in (("before expiry", samples_before), ("during the sweep", samples_during)):
            print("GET latency %s: n=%d p50=%.2fms p99=%.2fms max=%.2fms" % (
                name, len(s), percentile(s, 50), percentile(s, 99), max(s) if s else float("nan")))
        p99 = percentile(samples_during, 99)
        if p99 > args.max_p99_ms:
            print("FAIL: p99 during the sweep %.2fms > %.2fms" % (p99, args.max_p99_ms))
            return 1
        return 0
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
