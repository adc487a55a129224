#!/usr/bin/env python3
"""Which commands twemproxy (nutcracker) forwards, and which it refuses by
closing the connection: every command redis-server knows (`COMMAND`) is
sent through nutcracker to that redis-server, with as many arguments as its
arity asks (keys where the command takes keys), on a connection of its own.

    python3 tools/proxy_commands.py          # prints both lists
    python3 tools/proxy_commands.py --json   # {command: [verdict, first reply bytes, request]}

Needs redis-server and nutcracker (apt-get install redis-server nutcracker).
docs/cluster.md lists the result for nutcracker 0.5.0 and redis-server 7.0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import benchlib as bl  # noqa: E402

# Arguments for commands whose minimal arity does not parse (a timeout or a
# numeric argument in a key's place), so that only the proxy's verdict counts.
SPECIAL = {
    "blpop": ["k", "0.01"], "brpop": ["k", "0.01"], "bzpopmin": ["k", "0.01"], "bzpopmax": ["k", "0.01"],
    "blmove": ["k", "k2", "LEFT", "LEFT", "0.01"], "brpoplpush": ["k", "k2", "0.01"],
    "blmpop": ["0.01", "1", "k", "LEFT"], "bzmpop": ["0.01", "1", "k", "MIN"],
    "eval": ["return 1", "1", "k"], "eval_ro": ["return 1", "1", "k"],
    "evalsha": ["x", "1", "k"], "evalsha_ro": ["x", "1", "k"], "fcall": ["x", "1", "k"], "fcall_ro": ["x", "1", "k"],
    "xread": ["STREAMS", "k", "0"], "xreadgroup": ["GROUP", "g", "c", "STREAMS", "k", ">"],
    "subscribe": ["ch"], "select": ["1"], "info": [],
}


def request_for(entry) -> list[str]:
    name = entry[0].decode()
    if name in SPECIAL:
        return [name] + SPECIAL[name]
    arity, first_key = entry[1], entry[3]
    return [name] + ["k%d" % i if first_key and i + 1 >= first_key else "1" for i in range(abs(arity) - 1)]


def verdict(proxy_port: int, request: list[str]) -> tuple[str, str]:
    """('closed', '') when the proxy closes the connection, else ('answered', first reply bytes)."""
    with socket.create_connection((bl.HOST, proxy_port), timeout=2) as s:
        s.sendall(bl.encode(*request))
        try:
            data = s.recv(4096)
        except socket.timeout:
            return "timeout", ""
    return ("closed", "") if not data else ("answered", data[:60].decode(errors="replace"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print every command's verdict as JSON")
    args = p.parse_args()
    for tool in ("redis-server", "nutcracker"):
        if shutil.which(tool) is None:
            raise bl.HarnessError(f"{tool} is not installed (apt-get install redis-server nutcracker)")
    backend = bl.redis_server("redis-behind-proxy", bl.REDIS_NOPERSIST)
    backend.start()
    workdir = bl.make_tempdir("proxy-commands-")
    proxy_port = bl.free_port()
    config = os.path.join(workdir, "nutcracker.yml")
    with open(config, "w") as f:
        f.write(f"probe:\n  listen: {bl.HOST}:{proxy_port}\n  redis: true\n  timeout: 2000\n"
                f"  servers:\n   - {bl.HOST}:{backend.port}:1 node1\n")
    proxy = subprocess.Popen(["nutcracker", "-c", config, "-s", str(bl.free_port()), "-a", bl.HOST,
                              "-o", os.path.join(workdir, "nutcracker.log")])
    try:
        deadline = time.monotonic() + 10
        while verdict_or_none(proxy_port) is None:
            if time.monotonic() > deadline or proxy.poll() is not None:
                raise bl.HarnessError("nutcracker did not start")
            time.sleep(0.05)
        with bl.Client(backend.port) as c:
            table = c.command("COMMAND")
        results = {}
        for entry in sorted(table, key=lambda e: e[0]):
            request = request_for(entry)
            kind, reply = verdict(proxy_port, request)
            results[request[0]] = [kind, reply, " ".join(request)]
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
    version = subprocess.run(["nutcracker", "--version"], capture_output=True, text=True)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print(((version.stdout + version.stderr).strip().splitlines() or ["nutcracker"])[0],
          "in front of", bl.machine_info()["redis_server"].split(" sha=")[0])
    for kind in ("answered", "closed", "timeout"):
        names = [n.upper() for n, v in results.items() if v[0] == kind]
        if names:
            print(f"\n{kind} ({len(names)} of {len(results)}):\n" + " ".join(names))
    return 0


def verdict_or_none(port: int):
    try:
        return verdict(port, ["PING"])
    except OSError:
        return None


if __name__ == "__main__":
    bl.main_wrapper(main)
