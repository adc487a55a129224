#!/usr/bin/env python3
"""kvcache-server nodes behind twemproxy (Debian's nutcracker), beside
redis-server nodes behind the same proxy configuration, with redis-benchmark.

    python3 bench/cluster.py              # 5 rounds, ~15 minutes on 2 cores
    python3 bench/cluster.py --quick      # 1 round, short measurements: a smoke run

Setups, each for both servers (kvcache-server in its default mode, and
redis-server without persistence), everything on 127.0.0.1:

    direct     redis-benchmark -> one node
    proxy-1    redis-benchmark -> nutcracker -> one node
    proxy-3    redis-benchmark -> nutcracker -> three nodes (named node1..3)

The pool is the one scripts/cluster writes (ketama, fnv1a_32, hash tags),
without ejection, so that a slow moment cannot take a node out mid-run.
As docs/../DESIGN.md's "How a ratio is measured" says: every server and the
proxy are pinned to core 0 (`taskset -c 0`), redis-benchmark to core 1;
rounds are interleaved (every load on every setup, the order rotated each
round) and medians are reported. On a 2-core machine three nodes share one
core with the proxy, so proxy-3 says what a ring costs, not how it scales:
the figures that matter are ratios within one run, kvcache / Redis behind
the same proxy, and proxy / direct for each server.

Loads: `redis-benchmark -t set|get -c 50 -d 100 -r 100000 -P 1|16`, the
keyspace filled first so that every GET hits. Writes bench/cluster.json and
the "cluster" section of BENCHMARKS.md. Stops by itself: each
redis-benchmark has a timeout, and the whole run a deadline (--max-minutes)
after which it reports the rounds it has.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from compare import parse_csv  # noqa: E402

RESULTS_JSON = bl.REPO / "bench" / "cluster.json"
SERVER_CORE, CLIENT_CORE = "0", "1"
KINDS = ["kvcache", "redis"]
SETUPS = ["direct", "proxy-1", "proxy-3"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 round, 1 s measurements, -r 10000")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 5, quick 1)")
    p.add_argument("--seconds", type=float, help="length of one measurement (default 3, quick 1)")
    p.add_argument("--keyspace", type=int, help="redis-benchmark -r (default 100000, quick 10000)")
    p.add_argument("--pipelines", default="1,16", help="comma-separated -P values (default 1,16)")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (default 50)")
    p.add_argument("--kvcache-args", default="", help="extra kvcache-server options, e.g. '--durability everysec'")
    p.add_argument("--max-minutes", type=float, default=30, help="stop measuring after this long (default 30)")
    p.add_argument("--timeout", type=float, default=60, help="longest one redis-benchmark may run (s)")
    p.add_argument("--idle-wait", type=float, default=60,
                   help="before a measurement, wait up to this long for another swift-build to end (default 60)")
    p.add_argument("--idle-budget", type=float, default=300, help="most seconds spent in all such waits (default 300)")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-pin", action="store_true", help="do not use taskset (a machine with one core)")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/cluster.json alone")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.seconds = args.seconds or (1.0 if args.quick else 3.0)
    args.keyspace = args.keyspace or (10000 if args.quick else 100000)
    args.pipelines = [int(x) for x in args.pipelines.split(",")]
    return args


def pinned(core: str, argv: list[str], args) -> list[str]:
    return argv if args.no_pin else ["taskset", "-c", core, *argv]


# --------------------------------------------------------------------------
# Nodes and proxies.

def node(kind: str, name: str, args) -> bl.Server:
    if kind == "redis":
        base = bl.redis_server(name, bl.REDIS_NOPERSIST)
    else:
        base = bl.kvcache_server(name, shlex.split(args.kvcache_args))
    inner = base.argv_for
    base.argv_for = lambda port, d: pinned(SERVER_CORE, inner(port, d), args)
    return base


def nutcracker(name: str, servers: list[bl.Server], args) -> bl.Server:
    """A nutcracker process (as a bl.Server, so it is stopped on exit) with
    one pool over `servers`, named node1.. in order."""
    def argv(port, d):
        if port == "P":  # the command line shown in BENCHMARKS.md
            return pinned(SERVER_CORE, ["nutcracker", "-c", "D/nutcracker.yml"], args)
        lines = ["bench:", f"  listen: 127.0.0.1:{port}", "  hash: fnv1a_32", '  hash_tag: "{}"',
                 "  distribution: ketama", "  redis: true", "  auto_eject_hosts: false",
                 "  timeout: 5000", "  preconnect: true", "  servers:"]
        lines += [f"   - 127.0.0.1:{s.port}:1 node{i + 1}" for i, s in enumerate(servers)]
        Path(d, "nutcracker.yml").write_text("\n".join(lines) + "\n")
        return pinned(SERVER_CORE, ["nutcracker", "-c", f"{d}/nutcracker.yml", "-s", str(bl.free_port()),
                                    "-a", "127.0.0.1", "-o", f"{d}/nutcracker.log"], args)
    return bl.Server(name, argv, "nutcracker")


class Setup:
    """One way in (direct or through a proxy) to nodes of one kind."""

    def __init__(self, kind: str, shape: str, args):
        self.kind, self.shape = kind, shape
        self.name = f"{shape} {kind}"
        count = {"direct": 1, "proxy-1": 1, "proxy-3": 3}[shape]
        self.nodes = [node(kind, f"{kind}-{shape}-node{i + 1}", args) for i in range(count)]
        self.proxy = None if shape == "direct" else nutcracker(f"nutcracker-{kind}-{shape}", self.nodes, args)

    def start(self) -> None:
        for n in self.nodes:
            n.start()
        if self.proxy:
            self.proxy.start()

    @property
    def port(self) -> int:
        return (self.proxy or self.nodes[0]).port

    def alive(self) -> bool:
        return all(s.alive() for s in self.nodes + ([self.proxy] if self.proxy else []))

    def describe(self) -> dict:
        return {"nodes": [" ".join(n.display_argv) for n in self.nodes],
                "proxy": " ".join(self.proxy.display_argv) if self.proxy else None}


# --------------------------------------------------------------------------
# Measurements.

def run_benchmark(args, port: int, op: str, pipeline: int, n: int) -> dict:
    argv = pinned(CLIENT_CORE, ["redis-benchmark", "-h", bl.HOST, "-p", str(port), "-c", str(args.clients),
                                "-d", "100", "-r", str(args.keyspace), "-P", str(pipeline), "-n", str(n),
                                "-t", op.lower(), "--csv"], args)
    t0 = time.monotonic()
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout:.0f} s", "n": n}
    parsed = parse_csv(out.stdout)
    if out.returncode != 0 or parsed is None:
        lines = (out.stderr.strip() or out.stdout.strip()).splitlines()
        return {"error": (lines[-1] if lines else f"exit {out.returncode}")[:300], "n": n}
    parsed.update(n=n, seconds=round(time.monotonic() - t0, 3))
    return parsed


def fill(setup: Setup, keyspace: int) -> None:
    """SET key:000000000000.. (redis-benchmark's keys) through the setup's port."""
    with bl.Client(setup.port, timeout=300) as c:
        bl.pipelined_sets(c, 0, keyspace)
        assert c.command("GET", bl.bench_key(keyspace - 1)) == bl.VALUE_100


def calibrate(args, setup: Setup, op: str, pipeline: int) -> int:
    n = 5000 * pipeline
    for _ in range(6):
        r = run_benchmark(args, setup.port, op, pipeline, n)
        if "error" in r:
            raise bl.HarnessError(f"{setup.name} {op} -P {pipeline}: {r['error']}")
        if r["seconds"] >= min(0.5, args.seconds / 2):
            break
        n *= 4
    return max(2000, int(r["rps"] * args.seconds))


def ratio(a, b) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}"


def main() -> int:
    args = parse_args()
    command = "python3 bench/cluster.py" + ("" if len(sys.argv) == 1 else " " + shlex.join(sys.argv[1:]))
    for tool in ["redis-server", "redis-benchmark", "nutcracker"] + ([] if args.no_pin else ["taskset"]):
        if shutil.which(tool) is None:
            raise bl.HarnessError(f"{tool} is not installed (apt-get install redis-server redis-tools nutcracker)")
    bl.ensure_kvcache(build=not args.no_build)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    version = subprocess.run(["nutcracker", "--version"], capture_output=True, text=True)
    info["nutcracker"] = ((version.stdout + version.stderr).strip().splitlines() or ["nutcracker"])[0]
    started = time.monotonic()
    deadline = started + args.max_minutes * 60

    setups = [Setup(kind, shape, args) for shape in SETUPS for kind in KINDS]
    for s in setups:
        s.start()
        fill(s, args.keyspace)
        bl.log(f"started and filled {s.name} ({args.keyspace:,} keys) on port {s.port}")
    loads = [(op, p) for p in args.pipelines for op in ("SET", "GET")]
    sizes = {(s.name, op, p): calibrate(args, s, op, p) for s in setups for op, p in loads}
    bl.log("calibrated: " + ", ".join(f"{k[0]} {k[1]} -P {k[2]}: n={v}" for k, v in sizes.items()))

    runs = []
    stopped_early = False
    idle_spent = 0.0
    for rnd in range(1, args.rounds + 1):
        if time.monotonic() > deadline:
            stopped_early = True
            bl.log(f"--max-minutes {args.max_minutes:g} reached: stopping after {rnd - 1} round(s)")
            break
        order = setups[rnd - 1:] + setups[:rnd - 1]
        for op, p in loads:
            for s in order:
                if idle_spent < args.idle_budget and bl.swift_build_running():
                    t_wait = time.monotonic()
                    bl.wait_for_no_swift_build(min(args.idle_wait, args.idle_budget - idle_spent), quiet=True)
                    idle_spent += time.monotonic() - t_wait
                r = run_benchmark(args, s.port, op, p, sizes[(s.name, op, p)])
                r.update(round=rnd, setup=s.name, load=f"{op} -P {p}", loadavg=bl.loadavg(),
                         swift_build_running=bl.swift_build_running())
                if not s.alive():
                    r["error"] = (r.get("error", "") + " a process of the setup died").strip()
                runs.append(r)
                bl.log(f"round {rnd} {s.name:16s} {op} -P {p:<3d} "
                       + (f"{r['rps']:>10,.0f} rps" if "rps" in r else f"FAILED: {r['error']}"))
    for s in setups:
        for proc in ([s.proxy] if s.proxy else []) + s.nodes:
            proc.stop()

    medians = {f"{op} -P {p}": {s.name: bl.median([r.get("rps") for r in runs
                                                   if r["setup"] == s.name and r["load"] == f"{op} -P {p}"])
                                for s in setups}
               for op, p in loads}
    rounds_done = max((r["round"] for r in runs), default=0)
    payload = {"machine": info, "command": command, "rounds": rounds_done, "stopped_early": stopped_early,
               "settings": {"seconds": args.seconds, "keyspace": args.keyspace, "pipelines": args.pipelines,
                            "clients": args.clients, "kvcache_args": args.kvcache_args, "pinned": not args.no_pin},
               "setups": {s.name: s.describe() for s in setups}, "n": {" | ".join(map(str, k)): v for k, v in sizes.items()},
               "runs": runs, "medians": medians, "minutes": round((time.monotonic() - started) / 60, 1)}
    section = markdown(payload)
    print(section)
    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps(payload, indent=1) + "\n")
        bl.update_sections({"cluster": section})
    return 0


def markdown(payload: dict) -> str:
    m = payload["medians"]
    info = payload["machine"]
    st = payload["settings"]
    rows = []
    for load, per in m.items():
        row = [load]
        for shape in SETUPS:
            k, r = per.get(f"{shape} kvcache"), per.get(f"{shape} redis")
            row += [bl.fmt_rps(k), bl.fmt_rps(r), ratio(k, r)]
        rows.append(row)
    headers = ["load"]
    for shape in SETUPS:
        headers += [f"{shape} kvcache", f"{shape} redis", f"{shape} kvcache / redis"]
    over_rows = []
    for load, per in m.items():
        over_rows.append([load] + [ratio(per.get(f"proxy-1 {kind}"), per.get(f"direct {kind}")) for kind in KINDS]
                         + [ratio(per.get(f"proxy-3 {kind}"), per.get(f"proxy-1 {kind}")) for kind in KINDS])
    failed = [r for r in payload["runs"] if "error" in r]
    loads_seen = [r["loadavg"] for r in payload["runs"] if r.get("loadavg") is not None]
    builds = sum(1 for r in payload["runs"] if r.get("swift_build_running"))
    kv_args = f" {st['kvcache_args']}" if st["kvcache_args"] else ""
    lines = [
        "## Several nodes behind twemproxy (`bench/cluster.py`)",
        "",
        bl.run_stamp(info, payload["command"], info.get("kvcache_binary"))
        + f"; {info.get('nutcracker', 'nutcracker').removeprefix('This is ')}.",
        "",
        f"Reproduce: `{payload['command']}` (this run took {payload['minutes']:g} min; `--quick` is a 1-round smoke run). "
        "Raw rounds: [`bench/cluster.json`](bench/cluster.json).",
        "",
        f"Median requests/s of {payload['rounds']} interleaved round(s) of "
        f"`redis-benchmark -c {st['clients']} -d 100 -r {st['keyspace']}` (every GET hits), "
        + ("every server and nutcracker pinned to core 0 (`taskset -c 0`), redis-benchmark to core 1. "
           if st["pinned"] else "unpinned. ")
        + f"kvcache is `kvcache-server{kv_args}` (default mode: each write committed to SQLite before its reply); "
        "redis is `redis-server --save '' --appendonly no`. **direct**: one node, no proxy; **proxy-1**: "
        "nutcracker in front of one node; **proxy-3**: nutcracker in front of three (the pool scripts/cluster "
        "writes: ketama, fnv1a_32, no ejection).",
        "",
        bl.markdown_table(headers, rows),
        "",
        "What the proxy costs, and what a ring of three costs on one core (ratios of the medians above):",
        "",
        bl.markdown_table(["load", "kvcache proxy-1 / direct", "redis proxy-1 / direct",
                           "kvcache proxy-3 / proxy-1", "redis proxy-3 / proxy-1"], over_rows),
        "",
        "- On 2 cores, nutcracker and the nodes share core 0: the proxy's own CPU comes out of the nodes' "
        "share, so proxy / direct is the whole cost of the extra hop on one core, and three nodes cannot be "
        "faster than one. docs/scaling.md turns the per-node figures into machine counts.",
        "- The comparison that holds across machines is kvcache / redis behind the same proxy: the proxy "
        "narrows the gap where it is the bottleneck (it caps both servers alike).",
    ]
    if loads_seen:
        lines.append(f"- 1-minute load average during the measurements: median {bl.median(loads_seen):.1f} "
                     f"(range {min(loads_seen):.1f}–{max(loads_seen):.1f}).")
    if builds:
        lines.append(f"- {builds} of {len(payload['runs'])} measurements overlapped a Swift build on the machine.")
    if payload["stopped_early"]:
        lines.append(f"- Stopped early at the time limit, after {payload['rounds']} round(s).")
    if failed:
        lines.append(f"- {len(failed)} measurement(s) failed: "
                     + "; ".join(f"{r['setup']} {r['load']}: {r['error'][:100]}" for r in failed[:4]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    bl.main_wrapper(main)
