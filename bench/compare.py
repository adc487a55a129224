#!/usr/bin/env python3
"""kvcache-server side by side with Debian's redis-server, driven by redis-benchmark.

One command:

    python3 bench/compare.py            # full run, ~15-25 minutes on 2 cores
    python3 bench/compare.py --quick    # ~1-minute smoke run (1 round, smaller keyspaces)

It builds kvcache-server (release; it first waits until no other `swift-build`
runs), starts every server on a free 127.0.0.1 port with its own temporary
directory:

    redis-nopersist     redis-server --save '' --appendonly no
    redis-aof-everysec  redis-server --appendonly yes --appendfsync everysec --save ''
    kvcache             .build/release/kvcache-server --port P --dir D
    kvcache-NAME        the same plus the arguments of each --kvcache-mode NAME='ARGS'
                        (default: everysec='--durability everysec')

A server that fails to start is reported as skipped. Loads, each with
`redis-benchmark -c 50 -d 100`:

    SET, GET   one redis-benchmark (-t set / -t get)
    MIXED      a SET and a GET redis-benchmark started together against the same
               server (each -c 50, so 100 connections); rps = the sum of their rps

for every keyspace (-r 10000 and -r 1000000; keyspace i lives in database i,
so the small keyspace is a small cache) and pipelining (-P 1, -P 16). Every
keyspace is first filled with key:000000000000 ... (redis-benchmark's key
names) so that every GET hits. A calibration pass (warm-up, not counted)
sizes -n so each measurement lasts about --seconds. Then --rounds rounds run
every load on every server, interleaved (load by load, server order rotated
each round); the median rps of the rounds is reported with ratios to each
Redis. Writes bench/results.json (every round's numbers), bench/results.png
and the "compare" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

RESULTS_JSON = bl.REPO / "bench" / "results.json"
RESULTS_PNG = bl.REPO / "bench" / "results.png"
REDIS_NAMES = ["redis-nopersist", "redis-aof-everysec"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Benchmark kvcache-server against redis-server (no persistence, and AOF everysec) "
                    "with redis-benchmark; write BENCHMARKS.md, bench/results.json and bench/results.png.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: python3 bench/compare.py --rounds 5 --kvcache-mode everysec='--durability everysec'")
    p.add_argument("--quick", action="store_true",
                   help="smoke run (~1 minute): 1 round, keyspaces 10000 and 100000, 0.5 s measurements")
    p.add_argument("--rounds", type=int, help="interleaved rounds; the median is reported (default 3, quick 1)")
    p.add_argument("--seconds", type=float, help="target length of one measurement (default 4, quick 0.5)")
    p.add_argument("--keyspaces", help="comma-separated -r values (default 10000,1000000; quick 10000,100000)")
    p.add_argument("--pipelines", default="1,16", help="comma-separated -P values (default 1,16)")
    p.add_argument("--loads", default="SET,GET,MIXED", help="comma-separated among SET,GET,MIXED")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (default 50)")
    p.add_argument("--kvcache-mode", action="append", default=None, metavar="NAME='ARGS'",
                   help="an extra kvcache-server configuration, named kvcache-NAME, started with ARGS "
                        "after --port/--dir; may repeat (default: everysec='--durability everysec')")
    p.add_argument("--no-extra-modes", action="store_true", help="run only the default kvcache mode")
    p.add_argument("--servers", help="comma-separated subset of server names to run")
    p.add_argument("--idle-wait", type=float,
                   help="before each measurement, wait up to this many seconds for another swift-build "
                        "to finish (default 60, quick 0); measurements taken during one are flagged")
    p.add_argument("--idle-budget", type=float, default=600,
                   help="most seconds spent in all such waits (default 600)")
    p.add_argument("--timeout", type=float, default=120, help="longest one redis-benchmark may run (s)")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/results.* alone")
    p.add_argument("--render-only", action="store_true",
                   help="run nothing: redraw bench/results.png and the BENCHMARKS.md section from bench/results.json")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.seconds = args.seconds or (0.5 if args.quick else 4.0)
    args.keyspaces = [int(x) for x in (args.keyspaces or ("10000,100000" if args.quick else "10000,1000000")).split(",")]
    args.pipelines = [int(x) for x in args.pipelines.split(",")]
    args.loads = [x.strip().upper() for x in args.loads.split(",")]
    if any(x not in ("SET", "GET", "MIXED") for x in args.loads):
        p.error("--loads takes SET, GET, MIXED")
    if args.idle_wait is None:
        args.idle_wait = 0 if args.quick else 60
    modes = []
    if not args.no_extra_modes:
        for spec in (args.kvcache_mode if args.kvcache_mode is not None else ["everysec=--durability everysec"]):
            name, sep, rest = spec.partition("=")
            if not sep or not name.strip():
                p.error(f"--kvcache-mode wants NAME='ARGS', got {spec!r}")
            modes.append((name.strip(), shlex.split(rest)))
    args.modes = modes
    return args


# --------------------------------------------------------------------------
# Loads and measurements.

class Load:
    def __init__(self, op: str, keyspace: int, pipeline: int, db: int):
        self.op, self.keyspace, self.pipeline, self.db = op, keyspace, pipeline, db

    @property
    def name(self) -> str:
        return f"{self.op} -r {self.keyspace} -P {self.pipeline}"

    def as_dict(self) -> dict:
        return {"name": self.name, "op": self.op, "keyspace": self.keyspace, "pipeline": self.pipeline, "db": self.db}


def rb_argv(args, port: int, op: str, load: Load, n: int) -> list[str]:
    return ["redis-benchmark", "-h", bl.HOST, "-p", str(port), "-c", str(args.clients), "-d", "100",
            "-r", str(load.keyspace), "-P", str(load.pipeline), "-n", str(n), "-t", op.lower(),
            "--dbnum", str(load.db), "--csv"]


def parse_csv(text: str) -> dict | None:
    rows = list(csv.reader(io.StringIO(text)))
    for row in rows:
        if len(row) >= 2 and row[0] in ("SET", "GET"):
            try:
                out = {"rps": float(row[1])}
                if len(rows[0]) == len(row):
                    for key, value in zip(rows[0][2:], row[2:]):
                        out[key] = float(value)
                return out
            except ValueError:
                return None
    return None


def run_benchmarks(args, port: int, parts: list[tuple[str, Load, int]]) -> list[dict]:
    """Runs one redis-benchmark per part, all at once; returns one result per part."""
    procs = []
    t0 = time.monotonic()
    for op, load, n in parts:
        argv = rb_argv(args, port, op, load, n)
        procs.append((op, n, argv, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                    text=True, stdin=subprocess.DEVNULL)))
    results = []
    try:
        for op, n, argv, proc in procs:
            remaining = max(1.0, args.timeout - (time.monotonic() - t0))
            try:
                out, err = proc.communicate(timeout=remaining)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                results.append({"op": op, "n": n, "error": f"timed out after {args.timeout:.0f} s"})
                continue
            elapsed = time.monotonic() - t0
            parsed = parse_csv(out)
            if proc.returncode != 0 or parsed is None:
                msg = (err.strip() or out.strip()).splitlines()[-1:] or [f"exit {proc.returncode}"]
                results.append({"op": op, "n": n, "error": msg[0][:300]})
            else:
                parsed.update({"op": op, "n": n, "seconds": round(elapsed, 3)})
                results.append(parsed)
    finally:
        for _, _, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def measure(args, server: bl.Server, load: Load, n: dict[str, int]) -> dict:
    """One measurement of a load; n maps SET/GET to -n."""
    ops = ["SET", "GET"] if load.op == "MIXED" else [load.op]
    build_before = bl.swift_build_running()
    parts = run_benchmarks(args, server.port, [(op, load, n[op]) for op in ops])
    build_after = bl.swift_build_running()
    errors = [p["error"] for p in parts if "error" in p]
    result = {"parts": parts, "swift_build_running": build_before or build_after, "loadavg": bl.loadavg()}
    if errors:
        result["error"] = "; ".join(errors)
        result["rps"] = None
    else:
        result["rps"] = sum(p["rps"] for p in parts)
        if len(parts) > 1:
            secs = [p["seconds"] for p in parts]
            result["overlap"] = round(min(secs) / max(secs), 3)
    if not server.alive():
        result["error"] = (result.get("error", "") + " server died: " + server.log_tail()).strip()
        result["rps"] = None
    return result


def calibrate(args, server: bl.Server, load: Load, solo: dict) -> dict[str, int]:
    """Finds -n per part so the load lasts about args.seconds. `solo` holds the
    SET/GET calibrated rates for this (server, keyspace, pipeline), for MIXED."""
    target = args.seconds
    if load.op == "MIXED":
        n = {op: max(1000, int(solo.get(op, 20000) * target * 0.5)) for op in ("SET", "GET")}
        r = measure(args, server, load, n)
        if r["rps"] is None:
            return n
        return {p["op"]: max(1000, int(p["rps"] * target)) for p in r["parts"]}
    n = 2000 * load.pipeline
    min_probe = min(0.5, target / 2)
    for _ in range(8):
        r = measure(args, server, load, {load.op: n})
        if r["rps"] is None:
            break
        secs = r["parts"][0]["seconds"]
        if secs >= min_probe:
            break
        n = int(n * min(16, max(2, 1.5 * min_probe / max(secs, 0.01))))
    rps = r["rps"] or n / max(target, 0.1)
    solo[load.op] = rps
    return {load.op: max(1000, int(rps * target))}


def resize(args, runs: list[dict], server: str, load: Load, current: dict[str, int]) -> dict[str, int]:
    """-n for the next round, from the median rps of the rounds so far (so one
    unlucky calibration does not leave a measurement far too short or long)."""
    new = {}
    for op, n in current.items():
        rates = [p["rps"] for r in runs if r["server"] == server and r["load"] == load.name
                 for p in r["parts"] if p.get("op") == op and "rps" in p]
        m = bl.median(rates)
        new[op] = max(1000, int(m * args.seconds)) if m else n
    return new


def populate(server: bl.Server, keyspace: int, db: int) -> float:
    """SET key:000000000000 ... key:<keyspace-1> in database db; returns seconds."""
    t0 = time.monotonic()
    with bl.Client(server.port, timeout=300) as c:
        c.command("SELECT", db)
        bl.pipelined_sets(c, 0, keyspace)
        size = c.command("DBSIZE")
    if size != keyspace:
        raise RuntimeError(f"DBSIZE is {size} after filling {keyspace} keys")
    return time.monotonic() - t0


# --------------------------------------------------------------------------
# Output.

def ratio(a, b) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}"


def build_table(loads: list[Load], ok_servers: list[str], medians: dict) -> tuple[list[str], list[list[str]]]:
    kv = [s for s in ok_servers if s.startswith("kvcache")]
    redis = [s for s in REDIS_NAMES if s in ok_servers]
    headers = ["load"] + [f"{s} rps" for s in ok_servers]
    for k in kv:
        for r in redis:
            headers.append(f"{k} / {r.removeprefix('redis-')}")
    rows = []
    for load in loads:
        m = medians.get(load.name, {})
        row = [load.name] + [bl.fmt_rps(m.get(s)) for s in ok_servers]
        for k in kv:
            for r in redis:
                row.append(ratio(m.get(k), m.get(r)))
        rows.append(row)
    return headers, rows


def draw_chart(loads: list[Load], ok_servers: list[str], medians: dict, path: Path, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        bl.log("matplotlib is missing (pip install matplotlib): no chart")
        return False
    pipelines = sorted({l.pipeline for l in loads})
    fig, axes = plt.subplots(len(pipelines), 1, figsize=(12, 4.2 * len(pipelines)), squeeze=False)
    colors = {"redis-nopersist": "#d62728", "redis-aof-everysec": "#ff9896"}
    palette = ["#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#bcbd22"]
    for i, s in enumerate(s for s in ok_servers if s not in colors):
        colors[s] = palette[i % len(palette)]
    width = 0.8 / max(1, len(ok_servers))
    for ax, pipe in zip(axes[:, 0], pipelines):
        group = [l for l in loads if l.pipeline == pipe]
        for j, server in enumerate(ok_servers):
            xs = [g + (j - (len(ok_servers) - 1) / 2) * width for g in range(len(group))]
            ys = [(medians.get(l.name, {}).get(server) or 0) / 1000 for l in group]
            bars = ax.bar(xs, ys, width, label=server, color=colors[server])
            for bar, y in zip(bars, ys):
                if y:
                    ax.annotate(f"{y:.0f}", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom",
                                fontsize=7, rotation=90, xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(range(len(group)))
        ax.set_xticklabels([f"{l.op}\n-r {l.keyspace:,}" for l in group], fontsize=9)
        ax.set_ylabel("thousand requests/s (median)")
        ax.set_title(f"-P {pipe}, -c 50, -d 100")
        ax.margins(y=0.3)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", ncol=len(ok_servers), frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def markdown_section(args, info, servers_meta, loads, ok_servers, medians, runs, command, chart_ok) -> str:
    headers, rows = build_table(loads, ok_servers, medians)
    flagged = sum(1 for r in runs if r.get("swift_build_running"))
    failed = [r for r in runs if r.get("rps") is None]
    server_rows = []
    for name, meta in servers_meta.items():
        status = "ok" if meta["status"] == "ok" else f"skipped: {meta.get('reason', '')[:200]}"
        server_rows.append([f"`{name}`", "`" + " ".join(shlex.quote(a) for a in meta["argv"]) + "`", status])
    mixed_overlaps = [r["overlap"] for r in runs if "overlap" in r]
    lines = [
        "## kvcache-server vs redis-server (`bench/compare.py`)",
        "",
        bl.run_stamp(info, command, info.get("kvcache_binary")) + ("  \n**Quick smoke run: 1 round, small keyspaces, 0.5 s measurements; "
                                      "not representative.** The full run is `python3 bench/compare.py`."
                                      if args.quick else ""),
        "",
        "Reproduce: `python3 bench/compare.py` (full: 3 rounds, -r 10000 and 1000000, ~4 s per measurement) "
        "or `python3 bench/compare.py --quick` (smoke run, ~1 minute). Raw per-round numbers: "
        "[`bench/results.json`](bench/results.json).",
        "",
        "Servers (each on a free 127.0.0.1 port P, in its own temporary directory D):",
        "",
        bl.markdown_table(["name", "command", "status"], server_rows, "lll"),
        "",
        f"Median requests/s over {args.rounds} round(s), `redis-benchmark -c {args.clients} -d 100`; "
        "ratios are kvcache's median over Redis's (1.00 = as fast as Redis):",
        "",
        bl.markdown_table(headers, rows),
        "",
    ]
    if chart_ok:
        lines += ["![requests per second, by load and server](bench/results.png)", ""]
    lines += [
        "### How to read this",
        "",
        "- **SET / GET**: one `redis-benchmark -t set` (or `-t get`) with 50 connections, 100-byte values, "
        "random keys `key:000000000000`…`key:<r-1>` (`-r`), `-P 1` (one request in flight per connection) "
        "or `-P 16` (16 pipelined). GET loads run on a keyspace filled beforehand, so every GET hits.",
        "- **MIXED**: a SET and a GET `redis-benchmark` started at the same time against the same server "
        f"(each `-c {args.clients}`, so twice the connections); the figure is the sum of their two rps. Each "
        "is sized to last about as long as the other (calibrated), but they do not end at exactly the same "
        "moment, so the sum is slightly optimistic" +
        (f" (shorter / longer run time: median {bl.median(mixed_overlaps):.2f})." if mixed_overlaps else "."),
        "- Keyspace *i* lives in database *i* (`--dbnum`): the `-r 10000` loads run on a cache of 10,000 "
        "entries, the large ones on a cache of that many entries (for kvcache: a separate SQLite file).",
        "- `redis-nopersist` keeps everything in memory and writes nothing; `redis-aof-everysec` appends "
        "every write to its AOF and fsyncs once a second. `kvcache` (default mode) commits every write to "
        "SQLite (WAL, `synchronous=NORMAL`) before it answers: a crash of the process loses nothing "
        "acknowledged. Each `kvcache-NAME` is kvcache-server with the extra arguments shown above "
        "(`--durability everysec`: answer at once and commit at least once a second, like Redis's "
        "`appendfsync everysec`), so `kvcache-everysec / aof-everysec` compares like with like.",
        "- The rounds are interleaved (every load on every server, then again) and the median is kept, "
        "so slow phases of the machine are spread over all servers. A calibration pass before round 1 "
        f"sizes `-n` for ~{args.seconds:g} s per measurement and warms every server up; later rounds "
        "re-size `-n` from the median rate measured so far.",
        "- On 2 cores the load generator competes with the server: at `-P 16` Redis is often limited by "
        "`redis-benchmark` itself, which understates Redis and flatters the ratio.",
    ]
    loads_seen = [r["loadavg"] for r in runs if r.get("loadavg") is not None]
    if loads_seen:
        lines.append(f"- 1-minute load average during the measurements: median {bl.median(loads_seen):.1f}, "
                     f"range {min(loads_seen):.1f}–{max(loads_seen):.1f} (a benchmark itself keeps about 2 "
                     "runnable; well above that, other work was sharing the 2 cores and the figures are "
                     "noisier: compare the rounds in results.json).")
    if flagged:
        lines.append(f"- {flagged} of {len(runs)} measurements overlapped another engineer's Swift build "
                     "(flagged `swift_build_running` in results.json).")
    if failed:
        lines.append(f"- {len(failed)} measurement(s) failed (see results.json): "
                     + "; ".join(f"{r['server']} {r['load']}: {r.get('error', '')[:120]}" for r in failed[:5]))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------

def main() -> int:
    args = parse_args()
    if args.render_only:
        return render_only()
    command = "python3 bench/compare.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    for tool in ("redis-server", "redis-benchmark"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            raise bl.HarnessError(f"{tool} is not installed (apt-get install redis-server redis-tools)")
    bl.ensure_kvcache(build=not args.no_build)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()

    specs = [bl.redis_server("redis-nopersist", bl.REDIS_NOPERSIST),
             bl.redis_server("redis-aof-everysec", bl.REDIS_AOF_EVERYSEC),
             bl.kvcache_server("kvcache", [])]
    specs += [bl.kvcache_server(f"kvcache-{name}", extra) for name, extra in args.modes]
    if args.servers:
        wanted = set(args.servers.split(","))
        specs = [s for s in specs if s.name in wanted]
    servers_meta: dict[str, dict] = {}
    servers: list[bl.Server] = []
    for s in specs:
        try:
            s.start()
            servers_meta[s.name] = {"status": "ok", "argv": s.display_argv}
            servers.append(s)
            bl.log(f"started {s.name} on port {s.port} (pid {s.pid}, dir {s.dir})")
        except bl.ServerFailed as error:
            servers_meta[s.name] = {"status": "skipped", "reason": str(error), "argv": s.display_argv}
            bl.log(f"SKIPPED {s.name}: {error}")
    if not servers:
        raise bl.HarnessError("no server started")

    loads = [Load(op, r, p, db) for db, r in enumerate(args.keyspaces) for p in args.pipelines for op in args.loads]
    populate_seconds: dict[str, dict] = {}
    for s in servers:
        populate_seconds[s.name] = {}
        for db, r in enumerate(args.keyspaces):
            try:
                secs = populate(s, r, db)
                populate_seconds[s.name][str(r)] = round(secs, 2)
                bl.log(f"filled {s.name} db{db} with {r:,} keys in {secs:.1f} s ({r / secs:,.0f} SET/s, pipelined)")
            except (OSError, bl.RespError, RuntimeError) as error:
                bl.log(f"{s.name}: filling db{db} failed: {error}")
                servers_meta[s.name].update(status="skipped", reason=f"filling failed: {error}")
    servers = [s for s in servers if servers_meta[s.name]["status"] == "ok"]

    # Calibration (warm-up): -n per (server, load).
    sizes: dict[tuple[str, str], dict[str, int]] = {}
    for s in servers:
        solo: dict[tuple[int, int], dict] = {}
        for load in sorted(loads, key=lambda l: l.op == "MIXED"):
            key = (load.keyspace, load.pipeline)
            sizes[(s.name, load.name)] = calibrate(args, s, load, solo.setdefault(key, {}))
        bl.log(f"calibrated {s.name}: " + ", ".join(f"{l.name}: n={sizes[(s.name, l.name)]}" for l in loads))

    runs: list[dict] = []
    idle_spent = 0.0
    for rnd in range(1, args.rounds + 1):
        order = servers[rnd - 1:] + servers[:rnd - 1] if servers else []
        for load in loads:
            for s in order:
                if args.idle_wait > 0 and idle_spent < args.idle_budget and bl.swift_build_running():
                    t_wait = time.monotonic()
                    bl.wait_for_no_swift_build(min(args.idle_wait, args.idle_budget - idle_spent), quiet=True)
                    idle_spent += time.monotonic() - t_wait
                r = measure(args, s, load, sizes[(s.name, load.name)])
                r.update({"round": rnd, "server": s.name, "load": load.name})
                runs.append(r)
                flag = " (during a swift build)" if r["swift_build_running"] else ""
                bl.log(f"round {rnd} {s.name:20s} {load.name:24s} "
                       + (f"{r['rps']:>12,.0f} rps{flag}" if r["rps"] is not None else f"FAILED: {r.get('error')}"))
        for s in servers:
            for load in loads:
                sizes[(s.name, load.name)] = resize(args, runs, s.name, load, sizes[(s.name, load.name)])

    ok_servers = [s.name for s in servers]
    medians: dict[str, dict[str, float | None]] = {}
    for load in loads:
        medians[load.name] = {s: bl.median([r["rps"] for r in runs if r["server"] == s and r["load"] == load.name])
                              for s in ok_servers}

    for s in servers:
        s.stop()

    headers, rows = build_table(loads, ok_servers, medians)
    print()
    print(f"Median requests/s over {args.rounds} round(s) (redis-benchmark -c {args.clients} -d 100):")
    print(bl.text_table(headers, rows))
    skipped = {n: m for n, m in servers_meta.items() if m["status"] != "ok"}
    for name, meta in skipped.items():
        print(f"skipped {name}: {meta.get('reason')}")
    print(f"total time {time.monotonic() - started:.0f} s")

    if not args.no_write:
        payload = {
            "machine": info, "command": command,
            "settings": {"rounds": args.rounds, "seconds": args.seconds, "keyspaces": args.keyspaces,
                         "pipelines": args.pipelines, "clients": args.clients, "value_size": 100,
                         "quick": args.quick},
            "servers": servers_meta, "loads": [l.as_dict() for l in loads],
            "populate_seconds": populate_seconds,
            "n": {f"{k[0]} | {k[1]}": v for k, v in sizes.items()},
            "idle_wait_seconds": round(idle_spent, 1), "runs": runs, "medians": medians,
        }
        RESULTS_JSON.write_text(json.dumps(payload, indent=1) + "\n")
        render(payload)
    return 0


def render(payload: dict) -> None:
    """Writes bench/results.png and the compare section of BENCHMARKS.md from a results payload."""
    settings = SimpleNamespace(**payload["settings"])
    info = payload["machine"]
    loads = [Load(l["op"], l["keyspace"], l["pipeline"], l["db"]) for l in payload["loads"]]
    ok_servers = [name for name, meta in payload["servers"].items() if meta["status"] == "ok"]
    title = (f"kvcache-server vs redis-server, median of {settings.rounds} round(s) "
             f"({info['date']}, {info['commit'][:12]}{' quick' if settings.quick else ''})")
    chart_ok = draw_chart(loads, ok_servers, payload["medians"], RESULTS_PNG, title)
    bl.update_machine_section(info)
    bl.update_sections({"compare": markdown_section(settings, info, payload["servers"], loads, ok_servers,
                                                     payload["medians"], payload["runs"], payload["command"],
                                                     chart_ok)})
    bl.log(f"wrote {RESULTS_JSON.relative_to(bl.REPO)}" + (f", {RESULTS_PNG.relative_to(bl.REPO)}" if chart_ok else ""))


def render_only() -> int:
    try:
        payload = json.loads(RESULTS_JSON.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise bl.HarnessError(f"cannot read {RESULTS_JSON}: {error}")
    render(payload)
    return 0

if __name__ == "__main__":
    bl.main_wrapper(main)
