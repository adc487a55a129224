#!/usr/bin/env python3
"""A probe client's GET latency while the server does heavy background work:
a mass expiry, sustained ingest, a capacity cut. kvcache-server beside
redis-server with AOF everysec, under the same load.

    python3 bench/latency.py            # 1M keys, 30 s of ingest, 5 rounds: ~15 min on 2 cores
    python3 bench/latency.py --quick    # 200K keys, 5 s of ingest, 1 round: ~1 min
    python3 bench/latency.py --scenarios expiry --rounds 3

Servers, each started afresh for every scenario and round (free 127.0.0.1
port, temporary directory, all threads pinned to core 0 with `taskset -c 0`;
this script and redis-benchmark run on core 1):

  kvcache   kvcache-server --enable-debug-command yes (default persistence:
            appendonly yes, appendfsync everysec)
  redis     redis-server --appendonly yes --appendfsync everysec --save ''
            --enable-debug-command local

The probe: one connection sending `GET probe` (-P 1, a key that exists and
stays), one at a time, every --probe-interval-ms (1 ms), timing each round
trip. Percentiles are over the probes sent while the scenario's work runs
(closed loop: a stall of 50 ms is one 50 ms sample, not fifty).

Scenarios (before each but fresh-expiry, the server is idle: kvcache's memtable applied,
Redis's AOF rewrite done):

  expiry  --keys keys (100-byte values) written with `PX 1000` while active
          expiry is off (`DEBUG SET-ACTIVE-EXPIRE 0`, on both servers), so
          all are expired once written; then `DEBUG SET-ACTIVE-EXPIRE 1`
          starts the mass expiry at one moment. It lasts until INFO stats'
          expired_keys has grown by --keys; how long that takes is reported.
  fresh-expiry  2 x --keys `SET key:__rand_int__ <100 B> PX 1000` from
          redis-benchmark (-r --keys -c 50 -P 16: about 86% of the keys,
          most written more than once), then the same, started 1.1 s after
          the last write without waiting for the server to be idle:
          kvcache's writer is still applying them, so their expiries are
          in memory (the heap of rows not yet in the file, an entry a
          write) rather than in the file's index. It lasts until every key
          written has expired.
  ingest  `redis-benchmark -t set -r 2000000000 -c --ingest-clients (50)
          -P --ingest-pipeline (16) -d 100` (new keys) for --ingest-seconds
          (30), the probe alongside; keys written and the rate are reported.
  cut     --keys keys without expiry (each written twice with
          --cut-overwrites), the probe key written last, then a
          cut to --keep (10%) of the data: kvcache `CONFIG SET cache
          "db0 <bytes> fifo"` with bytes = --keep x the cache's content bytes
          (INFO caches); Redis, which has no per-cache capacity, `CONFIG SET
          maxmemory-policy allkeys-lru` and `CONFIG SET maxmemory` to
          used_memory - (1 - --keep) x used_memory_dataset: the nearest
          equivalent (LRU keeps the probe key, which is read all
          the time; FIFO keeps it because it was written last). It lasts
          until INFO stats' evicted_keys stops growing for 1 s; how long that
          takes and how many keys went are reported.

Checks (exit status 3 if one does not hold; --no-check only reports): for
each scenario, kvcache's probe p99 (median over the rounds) <= max(2 ms,
Redis's p99 in the same run) (issue 13). p50, p99.9 and max are reported.
Exit status: 0 all checks hold, 1 harness failure, 2 bad arguments, 3 a
check failed or could not be measured, 130 interrupted.

Writes bench/latency.json and the "latency" section of BENCHMARKS.md
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

RESULTS_JSON = bl.REPO / "bench" / "latency.json"
SCENARIOS = ["expiry", "fresh-expiry", "ingest", "cut"]
PROBE_KEY = b"probe"
KV_ARGS = ["--enable-debug-command", "yes"]
REDIS_ARGS = bl.REDIS_AOF_EVERYSEC + ["--enable-debug-command", "local"]
EXPIRING_TEMPLATE = b"*5\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$100\r\n" + bl.VALUE_100 + b"\r\n$2\r\nPX\r\n$4\r\n1000\r\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Probe GET latency (p50/p99/p99.9) of kvcache-server and redis-server "
                                            "(AOF everysec) during a mass expiry, sustained ingest and a capacity cut.",
                                epilog=bl.EXIT_STATUS)
    p.add_argument("--quick", action="store_true", help="200,000 keys, 5 s of ingest, 1 round (~1 minute)")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated among " + ",".join(SCENARIOS))
    p.add_argument("--keys", type=int, help="keys that expire, and keys before the cut (default 1000000, quick 200000)")
    p.add_argument("--rounds", type=int, help="rounds, servers interleaved; medians reported (default 5, quick 1)")
    p.add_argument("--ingest-seconds", type=float, help="length of the ingest load (default 30, quick 5)")
    p.add_argument("--ingest-clients", type=int, default=50, help="redis-benchmark -c of the ingest (default 50)")
    p.add_argument("--ingest-pipeline", type=int, default=16, help="redis-benchmark -P of the ingest (default 16)")
    p.add_argument("--keep", type=float, default=0.1, help="share of the data the cut keeps (default 0.1)")
    p.add_argument("--cut-overwrites", action="store_true",
                   help="cut: write every key a second time before the cut (kvcache's overwrites leave the rows' "
                        "places in age order behind, for eviction to move)")
    p.add_argument("--probe-interval-ms", type=float, default=1.0, help="pause between probes (default 1 ms)")
    p.add_argument("--max-scenario-seconds", type=float, default=300,
                   help="longest an expiry or a cut may take before it is reported unfinished (default 300)")
    p.add_argument("--floor-ms", type=float, default=2.0, help="the check's floor: p99 <= max(this, Redis's p99)")
    p.add_argument("--kvcache-args", default="", help="extra kvcache-server options")
    p.add_argument("--no-check", action="store_true", help="report the checks, never fail on them")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers to core 0 and the load to core 1")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/latency.json alone")
    args = p.parse_args(argv)
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if not args.scenarios or any(s not in SCENARIOS for s in args.scenarios):
        p.error("--scenarios takes " + ", ".join(SCENARIOS))
    args.keys = args.keys or (200_000 if args.quick else 1_000_000)
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.ingest_seconds = args.ingest_seconds or (5 if args.quick else 30)
    return args


# --------------------------------------------------------------------------
# The probe.

class Probe:
    """One connection timing `GET probe` round trips, paced."""

    def __init__(self, port: int, interval: float):
        self.client = bl.Client(port, timeout=120)
        self.request = bl.encode("GET", PROBE_KEY)
        self.interval = interval

    def once(self) -> float:
        t = time.perf_counter()
        self.client.sock.sendall(self.request)
        reply = self.client.read_reply(raise_errors=False)
        dt = time.perf_counter() - t
        if reply != b"v":
            raise bl.HarnessError(f"the probe's GET answered {reply!r:.80}"
                                  + (" (the probe key was evicted or expired)" if reply is None else ""))
        return dt

    def run(self, until, check_every: float = 0.1, deadline: float | None = None) -> tuple[list[float], bool]:
        """Probes until until() is true (checked every check_every seconds) or
        the deadline passes. Returns the latencies (s) and whether until() held."""
        samples: list[float] = []
        next_check = time.monotonic() + check_every
        while True:
            samples.append(self.once())
            now = time.monotonic()
            if now >= next_check:
                if until():
                    return samples, True
                next_check = now + check_every
            if deadline is not None and now > deadline:
                return samples, False
            time.sleep(self.interval)

    def close(self) -> None:
        self.client.close()


def stats(samples: list[float]) -> dict:
    ms = [s * 1000 for s in samples]
    return {"n": len(ms), "p50": bl.percentile(ms, 50), "p99": bl.percentile(ms, 99),
            "p999": bl.percentile(ms, 99.9), "max": max(ms) if ms else None}


def stat_field(c: bl.Client, section: str, name: str) -> int:
    return int(bl.info_fields(c, section).get(name, "0") or 0)


# --------------------------------------------------------------------------
# Scenarios. Each gets a started, idle server with the probe key set and
# returns {"samples": [...], "finished": bool, ...}.

def fill(c: bl.Client, keys: int, template: bytes = bl.SET_TEMPLATE, batch: int = 1000) -> float:
    t0 = time.monotonic()
    for lo in range(0, keys, batch):
        hi = min(keys, lo + batch)
        c.sock.sendall(b"".join(template % n for n in range(lo, hi)))
        c.expect_ok(hi - lo)
    return time.monotonic() - t0


def scenario_expiry(args, server: bl.Server, c: bl.Client, probe: Probe, wait_idle: bool = True) -> dict:
    c.command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    if wait_idle:
        fill_s = fill(c, args.keys, EXPIRING_TEMPLATE)
    else:
        # Twice --keys SETs of random keys among --keys, as fast as redis-benchmark sends them.
        t0 = time.monotonic()
        subprocess.run(bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(server.port), "-r", str(args.keys),
                                       "-n", str(2 * args.keys), "-c", "50", "-P", "16", "-q", "SET", "key:__rand_int__",
                                       bl.VALUE_100.decode(), "PX", "1000"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
        fill_s = time.monotonic() - t0
    c.command("SET", PROBE_KEY, "v")
    time.sleep(1.1)  # every key is past its PX 1000
    idle = bl.wait_idle([server], timeout=600) if wait_idle else 0.0
    expiring = c.command("DBSIZE") - 1  # all but the probe key
    before, _ = probe.run(lambda: True, check_every=1.0)  # ~1 s of idle probes
    base = stat_field(c, "stats", "expired_keys")
    c.command("DEBUG", "SET-ACTIVE-EXPIRE", 1)
    t0 = time.monotonic()
    samples, finished = probe.run(lambda: stat_field(c, "stats", "expired_keys") - base >= expiring,
                                  deadline=t0 + args.max_scenario_seconds)
    seconds = time.monotonic() - t0
    return {"samples": samples, "before": before, "finished": finished, "seconds": seconds,
            "expired": stat_field(c, "stats", "expired_keys") - base, "fill_seconds": fill_s, "idle_wait": idle,
            "dbsize_after": c.command("DBSIZE")}


def scenario_ingest(args, server: bl.Server, c: bl.Client, probe: Probe) -> dict:
    before, _ = probe.run(lambda: True, check_every=1.0)
    errors0 = stat_field(c, "stats", "total_error_replies")
    argv = bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(server.port), "-t", "set",
                           "-r", "2000000000", "-n", "2000000000", "-c", str(args.ingest_clients),
                           "-P", str(args.ingest_pipeline), "-d", "100", "-q"])
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        time.sleep(0.2)  # the connections are up
        t0 = time.monotonic()
        samples, _ = probe.run(lambda: time.monotonic() - t0 >= args.ingest_seconds)
        seconds = time.monotonic() - t0
    finally:
        proc.kill()
        proc.wait()
    keys = c.command("DBSIZE")
    out = {"samples": samples, "before": before, "finished": True, "seconds": seconds, "keys": keys,
           "rate": keys / seconds if seconds else None,
           "error_replies": stat_field(c, "stats", "total_error_replies") - errors0}
    if server.kind == "kvcache":
        out["memtable_bytes_after"] = int(bl.info_fields(c, "persistence").get("memtable_bytes", 0))
    return out


def scenario_cut(args, server: bl.Server, c: bl.Client, probe: Probe) -> dict:
    fill_s = fill(c, args.keys)
    if args.cut_overwrites:
        fill_s += fill(c, args.keys)
    c.command("SET", PROBE_KEY, "v")  # written last: FIFO keeps it
    idle = bl.wait_idle([server], timeout=600)
    before, _ = probe.run(lambda: True, check_every=1.0)
    base = stat_field(c, "stats", "evicted_keys")
    if server.kind == "kvcache":
        content = 0
        # INFO keyspace has Redis's fields only; a cache's content bytes are in INFO caches.
        for line in c.command("INFO", "caches").decode().splitlines():
            if line.startswith("cache_db0:"):
                content = int(dict(p.split("=", 1) for p in line.split(":", 1)[1].split(",")).get("bytes", 0))
        if content <= 0:
            raise bl.HarnessError(f"{server.name}: INFO caches gave no content bytes for db0")
        limit = max(1, int(content * args.keep))
        setting = f"CONFIG SET cache \"db0 {limit} fifo\" (content {content:,} bytes)"
        commands = [("CONFIG", "SET", "cache", f"db0 {limit} fifo")]
    else:
        mem = bl.info_fields(c, "memory")
        used, dataset = int(mem["used_memory"]), int(mem["used_memory_dataset"])
        limit = used - int(dataset * (1 - args.keep))
        setting = (f"CONFIG SET maxmemory-policy allkeys-lru; CONFIG SET maxmemory {limit} "
                   f"(used_memory {used:,} less {1 - args.keep:.0%} of used_memory_dataset {dataset:,})")
        commands = [("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"), ("CONFIG", "SET", "maxmemory", limit)]
    state = {"last": base, "since": None}

    def settled() -> bool:
        evicted = stat_field(c, "stats", "evicted_keys")
        now = time.monotonic()
        if evicted != state["last"] or evicted == base:
            state["last"], state["since"] = evicted, now
            return False
        return now - state["since"] >= 1.0

    t0 = time.monotonic()
    for cmd in commands:
        reply = c.command(*cmd, raise_errors=False)
        if reply != "OK":
            raise bl.HarnessError(f"{server.name}: {' '.join(map(str, cmd))} answered {reply!r}")
    samples, finished = probe.run(settled, deadline=t0 + args.max_scenario_seconds)
    seconds = (state["since"] or time.monotonic()) - t0  # until the last eviction seen
    return {"samples": samples, "before": before, "finished": finished, "seconds": seconds, "setting": setting,
            "evicted": stat_field(c, "stats", "evicted_keys") - base, "dbsize_after": c.command("DBSIZE"),
            "fill_seconds": fill_s, "idle_wait": idle}


def scenario_fresh_expiry(args, server: bl.Server, c: bl.Client, probe: Probe) -> dict:
    return scenario_expiry(args, server, c, probe, wait_idle=False)


RUNNERS = {"expiry": scenario_expiry, "fresh-expiry": scenario_fresh_expiry, "ingest": scenario_ingest,
           "cut": scenario_cut}


def run_scenario(args, kind: str, scenario: str) -> dict:
    server = (bl.kvcache_server("kvcache", KV_ARGS + shlex.split(args.kvcache_args)) if kind == "kvcache"
              else bl.redis_server("redis-everysec", REDIS_ARGS))
    try:
        server.start()
    except bl.ServerFailed as error:
        raise bl.HarnessError(f"{server.name} did not start: {error}")
    probe = None
    try:
        with bl.Client(server.port, timeout=600) as c:
            c.command("SET", PROBE_KEY, "v")
            probe = Probe(server.port, args.probe_interval_ms / 1000)
            r = RUNNERS[scenario](args, server, c, probe)
        if not server.alive():
            raise bl.HarnessError(f"{server.name} died: {server.log_tail()}")
    finally:
        if probe:
            probe.close()
        server.kill()  # its directory is thrown away: no need for a clean stop
    r["stats"] = stats(r.pop("samples"))
    r["before"] = stats(r["before"])
    r["server"], r["argv"] = server.name, server.display_argv
    return r


def fmt_ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def main() -> int:
    args = parse_args()
    command = "python3 bench/latency.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    bl.ensure_kvcache(build=not args.no_build)
    pinned = bl.setup_pinning(not args.no_pin)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()

    runs: list[dict] = []
    kinds = ["kvcache", "redis"]
    for rnd in range(1, args.rounds + 1):
        for scenario in args.scenarios:
            for kind in (kinds if rnd % 2 else kinds[::-1]):
                r = run_scenario(args, kind, scenario)
                r.update({"round": rnd, "scenario": scenario, "loadavg": bl.loadavg(),
                          "swift_build_running": bl.swift_build_running()})
                runs.append(r)
                s = r["stats"]
                bl.log(f"round {rnd} {scenario:6s} {r['server']:15s} {r['seconds']:6.1f} s "
                       f"probe n={s['n']} p50={fmt_ms(s['p50'])} p99={fmt_ms(s['p99'])} p99.9={fmt_ms(s['p999'])} "
                       f"max={fmt_ms(s['max'])} ms" + ("" if r["finished"] else " (UNFINISHED)"))

    servers = ["kvcache", "redis-everysec"]
    checks = bl.Checks(enabled=not args.no_check)
    summary: dict[str, dict] = {}
    headers = ["scenario", "server", "work took (s)", "done", "probes", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
               "idle p99 ms"]
    rows = []
    for scenario in args.scenarios:
        summary[scenario] = {}
        for name in servers:
            sel = [r for r in runs if r["scenario"] == scenario and r["server"] == name]
            m = {f: bl.median([r["stats"][f] for r in sel]) for f in ("p50", "p99", "p999", "max")}
            m["idle_p99"] = bl.median([r["before"]["p99"] for r in sel])
            m["seconds"] = bl.median([r["seconds"] for r in sel])
            m["finished"] = all(r["finished"] for r in sel)
            m["probes"] = sum(r["stats"]["n"] for r in sel)
            summary[scenario][name] = m
            what = ""
            if scenario in ("expiry", "fresh-expiry"):
                what = f"{bl.median([r['expired'] for r in sel]):,.0f} expired"
            elif scenario == "cut":
                what = f"{bl.median([r['evicted'] for r in sel]):,.0f} evicted"
            elif scenario == "ingest":
                what = f"{bl.median([r['rate'] for r in sel]):,.0f} keys/s"
            m["what"] = what
            rows.append([scenario, name, "n/a" if m["seconds"] is None else f"{m['seconds']:.1f}",
                         ("yes" if m["finished"] else "NO") + (f", {what}" if what else ""), f"{m['probes']:,}",
                         fmt_ms(m["p50"]), fmt_ms(m["p99"]), fmt_ms(m["p999"]), fmt_ms(m["max"]),
                         fmt_ms(m["idle_p99"])])
        kv, rd = summary[scenario]["kvcache"], summary[scenario]["redis-everysec"]
        if kv["p99"] is None or rd["p99"] is None:
            checks.add(f"{scenario}: kvcache p99 <= max({args.floor_ms:g} ms, Redis's p99)", None, "not measured")
        else:
            bound = max(args.floor_ms, rd["p99"])
            ok = kv["p99"] <= bound and kv["finished"]
            checks.add(f"{scenario}: kvcache p99 <= max({args.floor_ms:g} ms, Redis's p99)", ok,
                       f"{kv['p99']:.2f} ms vs bound {bound:.2f} ms (Redis {rd['p99']:.2f} ms)"
                       + ("" if kv["finished"] else "; kvcache's work did not finish within --max-scenario-seconds"))

    print()
    print(f"Probe GET latency, medians over {args.rounds} round(s):")
    print(bl.text_table(headers, rows))
    print(f"total {time.monotonic() - started:.0f} s")
    checks.report()

    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "settings": vars(args),
                                            "pinned": pinned, "summary": summary, "runs": runs,
                                            "checks": checks.as_list()}, indent=1) + "\n")
        cut_settings = {r["server"]: r["setting"] for r in runs if r["scenario"] == "cut"}
        md = [
            "## Latency under background work (`bench/latency.py`)",
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary"))
            + ("  \n**Quick run (reduced size, 1 round).** The full run is `python3 bench/latency.py`."
               if args.quick else ""),
            "",
            f"A probe connection sends `GET probe` one at a time, every {args.probe_interval_ms:g} ms, while the "
            "server works; p50/p99/p99.9/max are over the probes sent during the work (median over "
            f"{args.rounds} round(s), a fresh server each time"
            + (", servers pinned to core 0, the probe and load on core 1" if pinned else "") + "). "
            f"kvcache-server runs its default persistence (appendonly yes, everysec); Redis runs "
            f"`{' '.join(shlex.quote(a) for a in REDIS_ARGS)}`. **expiry**: {args.keys:,} keys written "
            "with `PX 1000` while active expiry was off, then switched on (`DEBUG SET-ACTIVE-EXPIRE 1`): "
            "all expire at once; \"work took\" is until INFO's expired_keys grew by all of them. "
            f"**fresh-expiry**: {2 * args.keys:,} `SET key:__rand_int__ <100 B> PX 1000` from redis-benchmark "
            f"(`-r {args.keys} -c 50 -P 16`), expired as above 1.1 s after the last write, without waiting for "
            "kvcache's writer to apply them (their expiries are still in memory, not in the file's index). "
            f"**ingest**: `redis-benchmark -t set -r 2000000000 -c {args.ingest_clients} -P {args.ingest_pipeline} "
            f"-d 100` for {args.ingest_seconds:g} s. **cut**: {args.keys:,} keys, then a cut to "
            f"{args.keep:.0%} of the data; kvcache: `CONFIG SET cache \"db0 <bytes> fifo\"`; Redis, which has "
            "no per-cache capacity: `CONFIG SET maxmemory-policy allkeys-lru` and `CONFIG SET maxmemory` to "
            f"used_memory less {1 - args.keep:.0%} of used_memory_dataset, the nearest equivalent; \"work took\" "
            "is until the last eviction seen. Target (issue 13): kvcache's p99 ≤ max("
            f"{args.floor_ms:g} ms, Redis's p99).",
            "",
            bl.markdown_table(headers, rows, "llrlrrrrrr"),
            "",
            checks.markdown(),
            "",
        ]
        if cut_settings:
            md += ["Cut settings (last round): " + "; ".join(f"{k}: `{v}`" for k, v in cut_settings.items()) + ".", ""]
        md += ["Raw numbers: [`bench/latency.json`](bench/latency.json)."]
        bl.update_machine_section(info)
        bl.update_sections({"latency": "\n".join(md) + "\n"})
    return checks.exit_code()


if __name__ == "__main__":
    bl.main_wrapper(main)
