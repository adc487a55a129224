#!/usr/bin/env python3
"""The throughput cost of TLS: one kvcache-server with a plain and a TLS
port, the same redis-benchmark load against each, alternating rounds,
medians and the TLS/plain ratio printed. Certificates are made with openssl
in a temporary directory.

    python3 bench/tls_cost.py [--rounds 3] [--requests 100000] [--binary PATH]
"""
import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from benchlib import free_port  # noqa: E402


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bench CA",
            "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=server", "-keyout", "server.key",
            "-out", "server.csr", cwd=d)
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.ext", "-out", "server.crt", cwd=d)


def bench(port, tls, certs, test, requests, pipeline):
    cmd = ["redis-benchmark", "-p", str(port), "-t", test, "-n", str(requests), "-c", "50", "-d", "100",
           "-r", "10000", "-P", str(pipeline), "-q"]
    if tls:
        cmd += ["--tls", "--cacert", os.path.join(certs, "ca.crt")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout.replace("\r", "\n")
    found = re.findall(r"([\d.]+) requests per second", out)
    return float(found[-1]) if found else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "kvcache-server"))
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="kvcache-tls-bench-")
    make_certs(tmp)
    plain, tls_port = free_port(), free_port()
    server = subprocess.Popen([args.binary, "--port", str(plain), "--tls-port", str(tls_port), "--dir",
                               os.path.join(tmp, "data"), "--tls-cert-file", os.path.join(tmp, "server.crt"),
                               "--tls-key-file", os.path.join(tmp, "server.key"), "--tls-auth-clients", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", plain)).close()
                break
            except OSError:
                time.sleep(0.05)
        results = {}
        for _ in range(args.rounds):
            for test in ("set", "get"):
                for pipeline in (1, 16):
                    for tls in (False, True):
                        key = (test.upper(), pipeline, "tls" if tls else "plain")
                        results.setdefault(key, []).append(
                            bench(tls_port if tls else plain, tls, tmp, test, args.requests, pipeline))
        print("%-6s %-4s %12s %12s %7s" % ("load", "-P", "plain rps", "TLS rps", "ratio"))
        for test in ("SET", "GET"):
            for pipeline in (1, 16):
                p = statistics.median(results[(test, pipeline, "plain")])
                t = statistics.median(results[(test, pipeline, "tls")])
                print("%-6s %-4d %12.0f %12.0f %7.2f" % (test, pipeline, p, t, t / p))
        return 0
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
