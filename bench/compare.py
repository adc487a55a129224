#!/usr/bin/env python3
"""kvcache-server side by side with Debian's redis-server, every persistence
mode against the Redis of the same durability, driven by redis-benchmark.

    python3 bench/compare.py            # full run: 5 rounds, ~75 min on 2 cores (always's -P 1 SETs: ~30 of them)
    python3 bench/compare.py --quick    # smoke run, ~1 min: 1 round, -r 10000/100000, fixed small -n
    python3 bench/compare.py --modes everysec,no   # without appendfsync always: ~40 min

Servers (each on a free 127.0.0.1 port, in its own temporary directory, and
with all its threads pinned to core 0 by `taskset -c 0`; redis-benchmark runs
under `taskset -c 1`, as DESIGN.md's "How a >= 1.0x Redis is measured" says):

    mode      kvcache-server                     redis-server
    everysec  kvcache-everysec: defaults         redis-everysec:  --appendonly yes --appendfsync everysec --save ''
              (appendonly yes, appendfsync everysec)
    always    kvcache-always: --appendfsync always   redis-always: --appendonly yes --appendfsync always --save ''
    no        kvcache-noaof: --appendonly no     redis-nopersist: --appendonly no --save ''

Loads, each `redis-benchmark -c 50 -d 100` (issue 13):

    SET, GET   one redis-benchmark (-t set / -t get)
    MIXED      a SET and a GET redis-benchmark started together against the same
               server (each -c 50); rps = the sum of their rps

for every keyspace (-r 10000 and -r 1000000; keyspace i lives in database i)
and pipelining (-P 1, -P 16). Every keyspace is first filled (key:000000000000
..., redis-benchmark's names) so that every GET hits. SET on the large
keyspace runs a fixed -n (--large-set-n, 1,000,000 as issue 13 says: the
default memtable-max-size, 512mb, must hold it); every other load is sized by
a calibration pass (warm-up, not counted) to last about --seconds. Then
--rounds rounds run every load on every server, interleaved (load by load,
server order rotated each round). Before each measurement the script waits
until no server has background work (kvcache: memtable_bytes and
writer_jobs_in_flight at 0; Redis: no AOF rewrite or save running), so one
server's writer does not share core 0 with another's measurement.

Checks (exit status 3 if one does not hold; --no-check only reports): for
every mode, SET and MIXED at every keyspace and pipelining reach
--pass-ratio (0.95, DESIGN.md's pass mark for ">= 1.0x") of the same-durability
Redis's median rps. GET is reported, not checked (issue 13 sets no GET target).
Exit status: 0 all checks hold, 1 harness failure, 2 bad arguments,
3 a check failed or its load could not be measured, 130 interrupted.

Writes bench/results.json (every round's numbers), bench/results.png and the
"compare" section of BENCHMARKS.md (--no-write: print only).
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

# mode -> (kvcache name, kvcache arguments, redis name, redis arguments, what it promises)
MODES = {
    "everysec": ("kvcache-everysec", [], "redis-everysec", bl.REDIS_AOF_EVERYSEC,
                 "appendonly yes, appendfsync everysec: every write in the log before its reply, "
                 "the log fsynced once a second"),
    "always": ("kvcache-always", ["--appendfsync", "always"], "redis-always", bl.REDIS_AOF_ALWAYS,
               "appendonly yes, appendfsync always: the log fsynced before the replies leave"),
    "no": ("kvcache-noaof", ["--appendonly", "no"], "redis-nopersist", bl.REDIS_NOPERSIST,
           "appendonly no: no log; kvcache applies writes to SQLite within about a second, "
           "Redis keeps them in memory only"),
}
CHECKED_OPS = ("SET", "MIXED")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="kvcache-server against redis-server in each persistence mode (everysec, always, no), "
                    "with redis-benchmark; writes BENCHMARKS.md, bench/results.json and bench/results.png.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=bl.EXIT_STATUS)
    p.add_argument("--quick", action="store_true",
                   help="smoke run (~1 minute): 1 round, keyspaces 10000 and 100000, fixed -n (no calibration)")
    p.add_argument("--rounds", type=int, help="interleaved rounds; the median is reported (default 5, quick 1)")
    p.add_argument("--seconds", type=float, help="target length of a calibrated measurement (default 4)")
    p.add_argument("--modes", default="everysec,always,no", help="comma-separated among everysec,always,no")
    p.add_argument("--keyspaces", help="comma-separated -r values (default 10000,1000000; quick 10000,100000)")
    p.add_argument("--pipelines", default="1,16", help="comma-separated -P values (default 1,16)")
    p.add_argument("--loads", default="SET,GET,MIXED", help="comma-separated among SET,GET,MIXED")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (default 50)")
    p.add_argument("--large-set-n", type=int,
                   help="-n of SET on the largest keyspace (default 1000000 as issue 13; quick: the quick -n)")
    p.add_argument("--kvcache-args", default="", help="extra arguments for every kvcache-server (exploration)")
    p.add_argument("--pass-ratio", type=float, default=0.95,
                   help="a checked load passes at this kvcache/redis ratio or more (default 0.95, DESIGN.md)")
    p.add_argument("--no-check", action="store_true", help="report the checks, never fail on them")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers to core 0 and the load to core 1")
    p.add_argument("--idle-timeout", type=float, default=120,
                   help="longest wait for the servers' background work before a measurement (s, default 120)")
    p.add_argument("--timeout", type=float, default=600, help="longest one redis-benchmark may run (s, default 600)")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/results.* alone")
    p.add_argument("--render-only", action="store_true",
                   help="run nothing: redraw bench/results.png and the BENCHMARKS.md section from bench/results.json")
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.seconds = args.seconds or 4.0
    args.keyspaces = [int(x) for x in (args.keyspaces or ("10000,100000" if args.quick else "10000,1000000")).split(",")]
    args.pipelines = [int(x) for x in args.pipelines.split(",")]
    args.loads = [x.strip().upper() for x in args.loads.split(",")]
    if any(x not in ("SET", "GET", "MIXED") for x in args.loads):
        p.error("--loads takes SET, GET, MIXED")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.modes or any(m not in MODES for m in args.modes):
        p.error("--modes takes everysec, always, no")
    if args.large_set_n is None:
        args.large_set_n = 0 if args.quick else 1_000_000  # 0: the quick fixed -n
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
    return bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(port), "-c", str(args.clients), "-d", "100",
                           "-r", str(load.keyspace), "-P", str(load.pipeline), "-n", str(n), "-t", op.lower(),
                           "--dbnum", str(load.db), "--csv"])


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
    elif server.kind == "kvcache" and load.op != "GET":
        # How much of the memtable bound the load used (issue 13: the default must hold it).
        try:
            with bl.Client(server.port, timeout=10) as c:
                result["memtable_bytes_after"] = int(bl.info_fields(c, "persistence").get("memtable_bytes", 0))
        except (OSError, bl.RespError, ValueError):
            pass
    return result


def fixed_n(args, load: Load) -> dict[str, int] | None:
    """-n for a load that is not calibrated: the large keyspace's SET (issue
    13's -n 1,000,000), and every load in --quick."""
    if load.op == "SET" and load.keyspace == max(args.keyspaces) and args.large_set_n:
        return {"SET": args.large_set_n}
    if args.quick:
        n = 10_000 if load.pipeline == 1 else 50_000
        return {op: n for op in (["SET", "GET"] if load.op == "MIXED" else [load.op])}
    return None


def calibrate(args, servers: list[bl.Server], server: bl.Server, load: Load, solo: dict) -> dict[str, int]:
    """Finds -n per part so the load lasts about args.seconds. `solo` holds the
    SET/GET calibrated rates for this (server, keyspace, pipeline), for MIXED."""
    target = args.seconds
    if load.op == "MIXED":
        n = {op: max(1000, int(solo.get(op, 20000) * target * 0.5)) for op in ("SET", "GET")}
        bl.wait_idle(servers, args.idle_timeout)
        r = measure(args, server, load, n)
        if r["rps"] is None:
            return n
        return {p["op"]: max(1000, int(p["rps"] * target)) for p in r["parts"]}
    n = 2000 * load.pipeline
    min_probe = min(0.5, target / 2)
    r = {"rps": None}
    for _ in range(8):
        bl.wait_idle(servers, args.idle_timeout)
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
    if fixed_n(args, load) is not None:
        return current
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

def ratio(a, b) -> float | None:
    return None if a is None or not b else a / b


def fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def pairs(modes: list[str], ok_servers: list[str]) -> list[tuple[str, str, str]]:
    """(mode, kvcache name, redis name) for every mode whose two servers ran."""
    return [(m, MODES[m][0], MODES[m][2]) for m in modes if MODES[m][0] in ok_servers and MODES[m][2] in ok_servers]


def mode_table(loads: list[Load], medians: dict, kv: str, rd: str, pass_ratio: float) -> tuple[list[str], list[list[str]]]:
    headers = ["load", f"{kv} rps", f"{rd} rps", "kvcache / redis", f"target (>= {pass_ratio:.2f})"]
    rows = []
    for load in loads:
        m = medians.get(load.name, {})
        r = ratio(m.get(kv), m.get(rd))
        verdict = "—" if load.op not in CHECKED_OPS else ("n/a" if r is None else "pass" if r >= pass_ratio else "**FAIL**")
        rows.append([load.name, bl.fmt_rps(m.get(kv)), bl.fmt_rps(m.get(rd)), fmt_ratio(r), verdict])
    return headers, rows


def add_checks(checks: bl.Checks, loads: list[Load], medians: dict, modes: list[str], ok_servers: list[str],
               pass_ratio: float) -> None:
    for mode in modes:
        kv, rd = MODES[mode][0], MODES[mode][2]
        for load in loads:
            if load.op not in CHECKED_OPS:
                continue
            m = medians.get(load.name, {})
            a, b = m.get(kv), m.get(rd)
            r = ratio(a, b)
            checks.add(f"{mode}: {load.name} kvcache/redis >= {pass_ratio:.2f}", None if r is None else r >= pass_ratio,
                       "not measured" if r is None else f"{r:.2f} ({a:,.0f} vs {b:,.0f} rps)")


def draw_chart(loads: list[Load], ok_servers: list[str], medians: dict, path: Path, title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        bl.log("matplotlib is missing (pip install matplotlib): no chart")
        return False
    pipelines = sorted({l.pipeline for l in loads})
    fig, axes = plt.subplots(len(pipelines), 1, figsize=(13, 4.4 * len(pipelines)), squeeze=False)
    colors = {"redis-everysec": "#ff9896", "redis-always": "#d62728", "redis-nopersist": "#ffbb78",
              "kvcache-everysec": "#aec7e8", "kvcache-always": "#1f77b4", "kvcache-noaof": "#98df8a"}
    palette = ["#9467bd", "#17becf", "#bcbd22", "#8c564b"]
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
                                fontsize=6, rotation=90, xytext=(0, 2), textcoords="offset points")
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


def markdown_section(payload: dict, chart_ok: bool) -> str:
    settings = SimpleNamespace(**payload["settings"])
    info, runs, medians = payload["machine"], payload["runs"], payload["medians"]
    loads = [Load(l["op"], l["keyspace"], l["pipeline"], l["db"]) for l in payload["loads"]]
    ok_servers = [name for name, meta in payload["servers"].items() if meta["status"] == "ok"]
    flagged = sum(1 for r in runs if r.get("swift_build_running"))
    failed = [r for r in runs if r.get("rps") is None]
    server_rows = []
    for name, meta in payload["servers"].items():
        status = "ok" if meta["status"] == "ok" else f"skipped: {meta.get('reason', '')[:200]}"
        server_rows.append([f"`{name}`", "`" + " ".join(shlex.quote(a) for a in meta["argv"]) + "`", status])
    mixed_overlaps = [r["overlap"] for r in runs if "overlap" in r]
    memtable_peak = max((r.get("memtable_bytes_after") or 0 for r in runs), default=0)
    checks = payload.get("checks", [])
    failed_checks = [c for c in checks if c["ok"] is not True]
    large = max(settings.keyspaces)
    lines = [
        "## kvcache-server vs redis-server, mode by mode (`bench/compare.py`)",
        "",
        bl.run_stamp(info, payload["command"], info.get("kvcache_binary"))
        + ("  \n**Quick smoke run: 1 round, small keyspaces, fixed small -n; not representative.** "
           "The full run is `python3 bench/compare.py`." if settings.quick else ""),
        "",
        "Reproduce: `python3 bench/compare.py` (full: 5 rounds, -r 10000 and 1000000, ~75 min) or "
        "`python3 bench/compare.py --quick` (smoke run, ~1 minute). Raw per-round numbers: "
        "[`bench/results.json`](bench/results.json).",
        "",
        "Servers (each on a free 127.0.0.1 port P, in its own temporary directory D"
        + (", pinned with all its threads to core 0; redis-benchmark runs under `taskset -c 1`"
           if settings.pinned else ", not pinned (--no-pin)") + "):",
        "",
        bl.markdown_table(["name", "command", "status"], server_rows, "lll"),
        "",
        f"Median requests/s over {settings.rounds} round(s), `redis-benchmark -c {settings.clients} -d 100`; "
        "kvcache / redis is kvcache's median over the same-durability Redis's (1.00 = as fast as Redis). "
        f"SET and MIXED are checked against {settings.pass_ratio:.2f} (DESIGN.md's pass mark for \"≥ 1.0×\"); "
        "GET is reported only.",
        "",
    ]
    for mode, kv, rd in pairs(settings.modes, ok_servers):
        headers, rows = mode_table(loads, medians, kv, rd, settings.pass_ratio)
        lines += [f"### `{mode}`: {MODES[mode][4]}", "", bl.markdown_table(headers, rows, "lrrrl"), ""]
    if checks:
        lines += [f"**Checks: {len(checks) - len(failed_checks)} of {len(checks)} pass**"
                  + (" (this run's exit status: 3)." if failed_checks and settings.check else "."), ""]
    if chart_ok:
        lines += ["![requests per second, by load and server](bench/results.png)", ""]
    lines += [
        "### How to read this",
        "",
        "- **SET / GET**: one `redis-benchmark -t set` (or `-t get`) with 50 connections, 100-byte values, "
        "random keys `key:000000000000`…`key:<r-1>` (`-r`), `-P 1` (one request in flight per connection) "
        "or `-P 16` (16 pipelined). GET loads run on a keyspace filled beforehand, so every GET hits. "
        + (f"SET on `-r {large:,}` runs `-n {settings.large_set_n:,}` (issue 13); " if settings.large_set_n else "")
        + ("Every other load is sized to last about "
           f"{settings.seconds:g} s by a calibration pass (also the warm-up), re-sized each round from the "
           "median so far." if not settings.quick else "Every other load runs a fixed small -n (quick run)."),
        "- **MIXED**: a SET and a GET `redis-benchmark` started at the same time against the same server "
        f"(each `-c {settings.clients}`, so twice the connections); the figure is the sum of their two rps. "
        "They do not end at exactly the same moment, so the sum is slightly optimistic"
        + (f" (shorter / longer run time: median {bl.median(mixed_overlaps):.2f})." if mixed_overlaps else "."),
        "- Keyspace *i* lives in database *i* (`--dbnum`): for kvcache a separate SQLite file (and log).",
        "- Each mode compares like with like: `everysec` (kvcache's default) and `always` append every "
        "write to the log before its reply on both servers; `no` has no log on either (kvcache still "
        "applies every write to its SQLite file within about a second; Redis writes nothing). "
        "kvcache's `memtable-max-size` (the writes not yet in SQLite) is its default, 512mb"
        + (f"; the most it held right after a load was {bl.mib(memtable_peak)}." if memtable_peak else "."),
        "- Rounds are interleaved (every load on every server, then again, server order rotated) and the "
        "median kept. Before each measurement the script waits until no server has background work "
        "(kvcache's writer applying a load's writes, Redis's AOF rewrite), since all servers share core 0"
        + (f" (waits: {payload.get('idle_wait_seconds', 0):.0f} s in all)." if payload.get("idle_wait_seconds") else "."),
        "- At `-P 16` one core of redis-benchmark can limit Redis, which understates Redis and flatters "
        "the ratio.",
    ]
    loads_seen = [r["loadavg"] for r in runs if r.get("loadavg") is not None]
    if loads_seen:
        lines.append(f"- 1-minute load average during the measurements: median {bl.median(loads_seen):.1f}, "
                     f"range {min(loads_seen):.1f}–{max(loads_seen):.1f} (a benchmark itself keeps about 2 "
                     "runnable; well above that, other work shared the 2 cores).")
    if flagged:
        lines.append(f"- {flagged} of {len(runs)} measurements overlapped a Swift build "
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
    pinned = bl.setup_pinning(not args.no_pin)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()

    extra = shlex.split(args.kvcache_args)
    specs = []
    for mode in args.modes:
        kv_name, kv_args, rd_name, rd_args, _ = MODES[mode]
        specs += [bl.kvcache_server(kv_name, kv_args + extra), bl.redis_server(rd_name, rd_args)]
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

    # Calibration (warm-up): -n per (server, load); fixed -n where issue 13 or --quick says.
    sizes: dict[tuple[str, str], dict[str, int]] = {}
    for s in servers:
        solo: dict[tuple[int, int], dict] = {}
        for load in sorted(loads, key=lambda l: l.op == "MIXED"):
            fixed = fixed_n(args, load)
            sizes[(s.name, load.name)] = fixed or calibrate(args, servers, s, load,
                                                             solo.setdefault((load.keyspace, load.pipeline), {}))
        bl.log(f"sized {s.name}: " + ", ".join(f"{l.name}: n={sizes[(s.name, l.name)]}" for l in loads))

    runs: list[dict] = []
    idle_spent = 0.0
    for rnd in range(1, args.rounds + 1):
        order = servers[rnd - 1:] + servers[:rnd - 1] if servers else []
        for load in loads:
            for s in order:
                waited = bl.wait_idle(servers, args.idle_timeout)
                idle_spent += waited
                r = measure(args, s, load, sizes[(s.name, load.name)])
                r.update({"round": rnd, "server": s.name, "load": load.name, "idle_wait": round(waited, 2)})
                runs.append(r)
                flag = " (during a swift build)" if r["swift_build_running"] else ""
                bl.log(f"round {rnd} {s.name:18s} {load.name:24s} "
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

    checks = bl.Checks(enabled=not args.no_check)
    add_checks(checks, loads, medians, args.modes, ok_servers, args.pass_ratio)

    print()
    print(f"Median requests/s over {args.rounds} round(s) (redis-benchmark -c {args.clients} -d 100):")
    for mode, kv, rd in pairs(args.modes, ok_servers):
        headers, rows = mode_table(loads, medians, kv, rd, args.pass_ratio)
        print()
        print(f"mode {mode}: {MODES[mode][4]}")
        print(bl.text_table(headers, [[c.replace("**", "") for c in r] for r in rows]))
    for name, meta in servers_meta.items():
        if meta["status"] != "ok":
            print(f"skipped {name}: {meta.get('reason')}")
    print(f"total time {time.monotonic() - started:.0f} s (waiting for idle servers: {idle_spent:.0f} s)")
    checks.report()

    if not args.no_write:
        payload = {
            "machine": info, "command": command,
            "settings": {"rounds": args.rounds, "seconds": args.seconds, "keyspaces": args.keyspaces,
                         "pipelines": args.pipelines, "clients": args.clients, "value_size": 100,
                         "quick": args.quick, "modes": args.modes, "large_set_n": args.large_set_n,
                         "pass_ratio": args.pass_ratio, "check": not args.no_check, "pinned": pinned,
                         "kvcache_args": args.kvcache_args},
            "servers": servers_meta, "loads": [l.as_dict() for l in loads],
            "populate_seconds": populate_seconds,
            "n": {f"{k[0]} | {k[1]}": v for k, v in sizes.items()},
            "idle_wait_seconds": round(idle_spent, 1), "runs": runs, "medians": medians,
            "checks": checks.as_list(),
        }
        RESULTS_JSON.write_text(json.dumps(payload, indent=1) + "\n")
        render(payload)
    return checks.exit_code()


def render(payload: dict) -> None:
    """Writes bench/results.png and the compare section of BENCHMARKS.md from a results payload."""
    settings = SimpleNamespace(**payload["settings"])
    info = payload["machine"]
    loads = [Load(l["op"], l["keyspace"], l["pipeline"], l["db"]) for l in payload["loads"]]
    ok_servers = [name for name, meta in payload["servers"].items() if meta["status"] == "ok"]
    title = (f"kvcache-server vs redis-server by persistence mode, median of {settings.rounds} round(s) "
             f"({info['date']}, {info['commit'][:12]}{' quick' if settings.quick else ''})")
    chart_ok = draw_chart(loads, ok_servers, payload["medians"], RESULTS_PNG, title)
    bl.update_machine_section(info)
    bl.update_sections({"compare": markdown_section(payload, chart_ok)})
    bl.log(f"wrote {RESULTS_JSON.relative_to(bl.REPO)}" + (f", {RESULTS_PNG.relative_to(bl.REPO)}" if chart_ok else ""))


def render_only() -> int:
    try:
        payload = json.loads(RESULTS_JSON.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise bl.HarnessError(f"cannot read {RESULTS_JSON}: {error}")
    if "modes" not in payload.get("settings", {}):
        raise bl.HarnessError(f"{RESULTS_JSON} comes from the compare.py before the per-mode rework: rerun it")
    render(payload)
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
