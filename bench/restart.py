#!/usr/bin/env python3
"""Time from spawn to the first successful GET after a clean restart.

    python3 bench/restart.py            # 1,000,000 entries of 100 bytes, 3 restarts each
    python3 bench/restart.py --quick    # 100,000 entries, 1 restart each

For kvcache-server (default mode; --kvcache-args adds options) and for
redis-server --appendonly yes --appendfsync everysec --save '' (each on a free
127.0.0.1 port, in its own temporary directory): store --entries keys
key:000000000000 ... with 100-byte values (pipelined SETs), stop the server
cleanly (SIGTERM, which both handle as a clean shutdown: kvcache checkpoints
its WAL, Redis flushes and fsyncs its AOF), then --repeat times: spawn it
again and poll (connect, then GET of a stored key, every --poll-ms) until the
GET returns the stored value (Redis answers -LOADING until its AOF is
loaded), and stop it cleanly again. Reports the median time to the first
GET, also the time to the first accepted connection and the clean-stop time;
writes bench/restart.json and the "restart" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

RESULTS_JSON = bl.REPO / "bench" / "restart.json"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Restart time (spawn to first GET of a stored key) of kvcache-server "
                                            "and redis-server with AOF everysec, holding --entries keys.")
    p.add_argument("--quick", action="store_true", help="100,000 entries and 1 restart each")
    p.add_argument("--entries", type=int, help="keys stored (default 1000000)")
    p.add_argument("--repeat", type=int, help="restarts per server; the median is reported (default 3, quick 1)")
    p.add_argument("--poll-ms", type=float, default=0.5, help="pause between polls (default 0.5 ms)")
    p.add_argument("--start-timeout", type=float, default=300, help="longest wait for the first GET (s)")
    p.add_argument("--max-seconds", type=float, default=1200,
                   help="no new restart begins after this many seconds (default 1200)")
    p.add_argument("--kvcache-args", default="", help="extra kvcache-server options")
    p.add_argument("--servers", default="kvcache,redis-aof-everysec", help="comma-separated subset")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/restart.json alone")
    args = p.parse_args(argv)
    args.entries = args.entries or (100_000 if args.quick else 1_000_000)
    args.repeat = args.repeat or (1 if args.quick else 3)
    return args


def first_get(server: bl.Server, key: bytes, expected: bytes, poll: float, timeout: float) -> dict:
    """Spawns the server and polls until GET key returns expected. Times are
    from just before the spawn."""
    server.spawn(server.port)  # same port as before
    t0 = server.spawned_at
    deadline = t0 + timeout
    connected = None
    loading_replies = 0
    request = bl.Client.encode("GET", key)
    while time.monotonic() < deadline:
        if not server.alive():
            raise bl.HarnessError(f"{server.name} exited during start: {server.log_tail()}")
        try:
            sock = socket.create_connection((bl.HOST, server.port), timeout=5)
        except OSError:
            time.sleep(poll)
            continue
        if connected is None:
            connected = time.monotonic() - t0
        client = bl.Client.__new__(bl.Client)
        client.sock, client.buf = sock, bytearray()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while time.monotonic() < deadline:
                sock.sendall(request)
                reply = client.read_reply(raise_errors=False)
                if reply == expected:
                    return {"first_get": time.monotonic() - t0, "first_connect": connected,
                            "loading_replies": loading_replies}
                if isinstance(reply, bl.RespError) and str(reply).startswith("LOADING"):
                    loading_replies += 1
                    time.sleep(poll)
                    continue
                raise bl.HarnessError(f"{server.name}: GET {key.decode()} answered {reply!r} after restart")
        except (OSError, ConnectionError):
            time.sleep(poll)
        finally:
            client.close()
    raise bl.HarnessError(f"{server.name}: no GET answer within {timeout:.0f} s of the spawn")


def fill(server: bl.Server, entries: int) -> float:
    t0 = time.monotonic()
    with bl.Client(server.port, timeout=300) as c:
        bl.pipelined_sets(c, 0, entries)
        size = c.command("DBSIZE")
    if size != entries:
        raise bl.HarnessError(f"{server.name}: DBSIZE {size} after storing {entries} keys")
    return time.monotonic() - t0


def clean_stop(server: bl.Server) -> float:
    t0 = time.monotonic()
    code = server.stop(timeout=120)
    if code != 0:
        raise bl.HarnessError(f"{server.name} exited with code {code} on SIGTERM: {server.log_tail()}")
    return time.monotonic() - t0


def data_size(server: bl.Server) -> int:
    return sum(bl.file_size(os.path.join(root, f)) for root, _d, files in os.walk(server.dir)
               for f in files if f != "server.log")


def main() -> int:
    args = parse_args()
    command = "python3 bench/restart.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    wanted = args.servers.split(",")
    if "kvcache" in wanted:
        bl.ensure_kvcache(build=not args.no_build)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    deadline = time.monotonic() + args.max_seconds
    servers = []
    if "kvcache" in wanted:
        servers.append(bl.kvcache_server("kvcache", shlex.split(args.kvcache_args)))
    if "redis-aof-everysec" in wanted:
        servers.append(bl.redis_server("redis-aof-everysec", bl.REDIS_AOF_EVERYSEC))
    probe = bl.bench_key(args.entries // 2)
    value = bl.VALUE_100

    results = {}
    for server in servers:
        try:
            server.start()
        except bl.ServerFailed as error:
            raise bl.HarnessError(f"{server.name} did not start: {error}")
        fill_s = fill(server, args.entries)
        bl.log(f"{server.name}: stored {args.entries:,} keys in {fill_s:.1f} s; stopping cleanly")
        stops = [clean_stop(server)]
        size = data_size(server)
        runs = []
        for i in range(args.repeat):
            if time.monotonic() > deadline:
                bl.log("--max-seconds reached: fewer restarts")
                break
            r = first_get(server, probe, value, args.poll_ms / 1000, args.start_timeout)
            r["rss"] = server.rss_bytes()
            r["loadavg"] = bl.loadavg()
            with bl.Client(server.port) as c:
                r["dbsize"] = c.command("DBSIZE")
            stops.append(clean_stop(server))
            runs.append(r)
            bl.log(f"{server.name}: restart {i + 1}: first GET after {r['first_get'] * 1000:.1f} ms "
                   f"(connection accepted after {r['first_connect'] * 1000:.1f} ms, "
                   f"{r['loading_replies']} LOADING replies), {r['dbsize']:,} keys")
            if r["dbsize"] != args.entries:
                raise bl.HarnessError(f"{server.name} came back with {r['dbsize']} keys, not {args.entries}")
        results[server.name] = {
            "argv": server.display_argv, "fill_seconds": round(fill_s, 2), "data_bytes": size,
            "stop_seconds": [round(s, 3) for s in stops], "runs": runs,
            "median_first_get": bl.median([r["first_get"] for r in runs]),
            "median_first_connect": bl.median([r["first_connect"] for r in runs]),
        }

    headers = ["server", "entries", "data on disk", "first GET (median)", "first connection",
               "clean stop after the fill", "clean stop after a restart", "restarts"]
    rows = []
    for name, r in results.items():
        fg, fc = r["median_first_get"], r["median_first_connect"]
        rows.append([name, f"{args.entries:,}", bl.mib(r["data_bytes"]),
                     "n/a" if fg is None else f"{fg * 1000:.1f} ms",
                     "n/a" if fc is None else f"{fc * 1000:.1f} ms",
                     f"{r['stop_seconds'][0] * 1000:.0f} ms",
                     "n/a" if len(r["stop_seconds"]) < 2 else f"{bl.median(r['stop_seconds'][1:]) * 1000:.0f} ms",
                     str(len(r["runs"]))])
    print()
    print(bl.text_table(headers, rows))
    kv, rd = results.get("kvcache"), results.get("redis-aof-everysec")
    verdict = ""
    if kv and rd and kv["median_first_get"] and rd["median_first_get"]:
        verdict = (f"kvcache-server answers its first GET {rd['median_first_get'] / kv['median_first_get']:.1f}× "
                   f"sooner than redis-server (AOF everysec)" if kv["median_first_get"] < rd["median_first_get"] else
                   f"redis-server (AOF everysec) answers its first GET "
                   f"{kv['median_first_get'] / rd['median_first_get']:.1f}× sooner than kvcache-server")
        print(verdict)

    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "entries": args.entries,
                                            "probe_key": probe.decode(), "servers": results}, indent=1) + "\n")
        md = [
            "## Restart: spawn to first GET (`bench/restart.py`)",
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary")) + ("  \n**Quick run (reduced size).** The full run is "
                                          "`python3 bench/restart.py`." if args.quick else ""),
            "",
            f"Each server stores {args.entries:,} keys with 100-byte values (pipelined SETs), is stopped "
            "cleanly (SIGTERM: kvcache checkpoints its WAL into the file; Redis fsyncs its AOF) and started "
            f"again; the time runs from the spawn to the first `GET {probe.decode()}` that returns the "
            f"stored value, polling every {args.poll_ms:g} ms (Redis answers `-LOADING` while it reads its "
            f"AOF). Median of {args.repeat} restart(s). Servers: "
            + "; ".join(f"`{name}`: `{' '.join(shlex.quote(a) for a in r['argv'])}`"
                        for name, r in results.items()) + ".",
            "",
            bl.markdown_table(headers, rows),
            "",
        ]
        if verdict:
            md += [verdict + ".", ""]
        md += ["\"data on disk\" is the server's directory after the first clean stop (kvcache: the SQLite "
               "file; Redis: `appendonlydir/`, whose base file may be an RDB preamble after an automatic AOF "
               "rewrite). \"first connection\" is when the port first accepted a connection; a clean stop is SIGTERM to exit "
               "(kvcache's first one checkpoints whatever WAL the fill left). The files were just written, so "
               "the OS page cache is warm: this is a restart, not a cold boot. Raw numbers: "
               "[`bench/restart.json`](bench/restart.json)."]
        bl.update_machine_section(info)
        bl.update_sections({"restart": "\n".join(md) + "\n"})
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
