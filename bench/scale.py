#!/usr/bin/env python3
"""Sustained new-key ingest: kvcache-server growing to 5M keys against the C
ceiling of the same SQL, with Redis (AOF everysec) under the same load.

    python3 bench/scale.py            # 5,000,000 keys of 100 B; ~10-15 min on 2 cores
    python3 bench/scale.py --quick    # 1,000,000 keys, memtable-max-size 32mb; ~1 min
    python3 bench/scale.py --keys 2000000 --max-seconds 600

Three runs, one after another, each on core 0 (`taskset -c 0`, all threads),
the load on core 1:

  ceiling   bench/engine/ceiling.c --mode ingest: --keys new keys from an
            empty file in digest-sorted batches of --batch (50,000) with the
            server writer's upsert, stats UPDATE and settings (WAL,
            synchronous=FULL, own PASSIVE checkpoints); its rate per --window
            keys.
  kvcache   kvcache-server with its default configuration (appendonly yes,
            appendfsync everysec, memtable-max-size 512mb; --kvcache-args
            adds options), loaded by `redis-benchmark -t set -r 2000000000
            -n <keys> -c 50 -P 16 -d 100`: random keys key:000000000000 ...,
            so all but ~0.1% are new (a collision rewrites a key; DBSIZE says
            how many are distinct). Every --sample seconds: DBSIZE, INFO
            persistence (memtable bytes, writer), RssAnon and VmRSS from
            /proc/<pid>/status, db0.sqlite, its WAL, and appendonlydir. After
            the load: the time until the memtable is empty (all in SQLite).
  redis     redis-server --appendonly yes --appendfsync everysec under the
            same redis-benchmark load, for reference (--no-redis to skip).

Rates over time come from DBSIZE between samples; each --window keys the
kvcache rate is set beside the ceiling's rate over the same keys.

Checks (exit status 3 if one does not hold; --no-check only reports),
issue 13's target ">= 0.8x the C ceiling at the same size":
  sustained   the acknowledged rate over the last --tail (20%) of the keys,
              with the memtable full before that stretch began (else: not
              measured), >= --target (0.8) x the ceiling's rate over the same keys
  end-to-end  keys / (time until every key is in SQLite) >= --target x the
              ceiling's keys / seconds
  no refusal  no SET answered an error (total_error_replies unchanged;
              writes wait when the memtable is full and are refused after
              memtable-full-timeout)
With --memory-tier-size SIZE (given to kvcache-server; issue 14's target),
one more check, and the run is reported apart (section "scale_tier",
bench/scale-tier.json):
  RSS flat    the file grew to >= 10x SIZE (else: not measured), and
              RssAnon grew by at most max(16 MiB, 15%) from the sample where
              the file first reached 2x SIZE to the end of the run
    python3 bench/scale.py --memory-tier-size 32mb --keys 2000000 --no-redis --no-ceiling
Exit status: 0 all checks hold, 1 harness failure, 2 bad arguments, 3 a
check failed or could not be measured, 130 interrupted.

Writes bench/scale.json and the "scale" section of BENCHMARKS.md (--no-write:
print only).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "engine"))
import benchlib as bl  # noqa: E402
from run import build_ceiling  # noqa: E402  (bench/engine/run.py)

RESULTS_JSON = bl.REPO / "bench" / "scale.json"
KEYSPACE = 2_000_000_000  # redis-benchmark's -r is an int


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="kvcache-server new-key ingest to --keys against the C ceiling, "
                                            "with RSS, file and log sizes; Redis under the same load.",
                                epilog=bl.EXIT_STATUS)
    p.add_argument("--quick", action="store_true",
                   help="1,000,000 keys, windows of 100,000, samples every 0.25 s, kvcache with "
                        "--memtable-max-size 32mb (so the bound is passed), ~1 minute")
    p.add_argument("--keys", type=int, help="SETs of new keys (default 5000000, quick 1000000)")
    p.add_argument("--window", type=int, help="keys per reported window (default 500000, quick 100000)")
    p.add_argument("--batch", type=int, default=50_000, help="the ceiling's keys per transaction (default 50000)")
    p.add_argument("--tail", type=float, default=0.2, help="share of the keys, at the end, for the sustained check")
    p.add_argument("--target", type=float, default=0.8, help="kvcache / ceiling needed (default 0.8, issue 13)")
    p.add_argument("--sample", type=float, help="seconds between samples (default 1, quick 0.25)")
    p.add_argument("--pipeline", type=int, default=16, help="redis-benchmark -P (default 16)")
    p.add_argument("--clients", type=int, default=50, help="redis-benchmark -c (default 50)")
    p.add_argument("--max-seconds", type=float,
                   help="bound for each server's load and drain (default 900, quick 60); the ceiling gets the same")
    p.add_argument("--kvcache-args", default=None,
                   help="extra kvcache-server options (default none; quick: '--memtable-max-size 32mb')")
    p.add_argument("--memory-tier-size", help="given to kvcache-server; checks RssAnon stays flat while the file "
                                              "grows to 10x it (reported apart: section scale_tier)")
    p.add_argument("--no-redis", action="store_true", help="skip the Redis reference run")
    p.add_argument("--no-ceiling", action="store_true", help="skip the C ceiling (no ratios; the two checks against it are skipped)")
    p.add_argument("--no-check", action="store_true", help="report the checks, never fail on them")
    p.add_argument("--no-pin", action="store_true", help="do not pin servers to core 0 and the load to core 1")
    p.add_argument("--no-build", action="store_true", help="use the existing .build/release/kvcache-server")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and bench/scale.json alone")
    args = p.parse_args(argv)
    args.keys = args.keys or (1_000_000 if args.quick else 5_000_000)
    args.window = args.window or (100_000 if args.quick else 500_000)
    args.sample = args.sample or (0.25 if args.quick else 1.0)
    args.max_seconds = args.max_seconds or (60 if args.quick else 900)
    if args.kvcache_args is None:
        args.kvcache_args = "--memtable-max-size 32mb" if args.quick else ""
    args.tier_bytes = None
    if args.memory_tier_size:
        args.tier_bytes = bl.parse_size(args.memory_tier_size)
        if args.tier_bytes is None or args.tier_bytes <= 0:
            p.error("--memory-tier-size takes a size such as 32mb")
        args.kvcache_args = (args.kvcache_args + " --memory-tier-size " + args.memory_tier_size).strip()
    return args


def rss_flat(samples: list[dict], tier: int) -> tuple[bool | None, str, dict]:
    """Issue 14's check: RssAnon flat while the file grows to 10x the tier."""
    with_file = [s for s in samples if s.get("file") and s.get("rssanon")]
    final_file = max((s["file"] for s in with_file), default=0)
    start = next((s for s in with_file if s["file"] >= 2 * tier), None)
    end = with_file[-1] if with_file else None
    facts = {"tier_bytes": tier, "final_file": final_file}
    if final_file < 10 * tier or start is None or end is None:
        return None, (f"not measured: the file reached {bl.mib(final_file)}, under 10x the tier "
                      f"({bl.mib(10 * tier)}): raise --keys"), facts
    grew = end["rssanon"] - start["rssanon"]
    allowed = max(16 * 1024 * 1024, 0.15 * start["rssanon"])
    peak = max(s["rssanon"] for s in with_file)
    facts.update({"rss_start": start["rssanon"], "rss_end": end["rssanon"], "rss_peak": peak,
                  "file_at_start": start["file"], "grew": grew, "allowed": allowed})
    return grew <= allowed, (f"RssAnon {bl.mib(start['rssanon'])} when the file was {bl.mib(start['file'])} "
                             f"(2x the tier), {bl.mib(end['rssanon'])} at the end with the file at "
                             f"{bl.mib(final_file)} ({final_file / tier:.1f}x the tier): grew {bl.mib(grew)}, "
                             f"allowed {bl.mib(allowed)}; peak {bl.mib(peak)}"), facts


# --------------------------------------------------------------------------
# The ceiling.

def run_ceiling(args, work: str) -> dict:
    exe = build_ceiling(work)
    d = tempfile.mkdtemp(prefix="ceiling-ingest-", dir=work)
    argv = bl.pinned([exe, "--mode", "ingest", "--entries", str(args.keys), "--batch", str(args.batch),
                      "--report-every", str(args.window), "--dir", d], bl.SERVER_CPU)
    bl.log("ceiling: " + " ".join(argv))
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=args.max_seconds)
    except subprocess.TimeoutExpired as error:
        partial = (error.stdout or b"").decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        return {"error": f"timed out after {args.max_seconds:.0f} s", "windows": parse_windows(partial)}
    finally:
        file_bytes = bl.file_size(os.path.join(d, "ceiling.sqlite"))
        subprocess.run(["rm", "-rf", d])
    if out.returncode != 0:
        return {"error": f"exit {out.returncode}: {out.stderr.strip()[-300:]}", "windows": parse_windows(out.stdout)}
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    summary = next((r for r in rows if "ops_per_sec" in r), {})
    return {"windows": parse_windows(out.stdout), "seconds": summary.get("seconds"),
            "rate": summary.get("ops_per_sec"), "file_bytes": file_bytes, "summary": summary}


def parse_windows(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "window_rate" in row:
            out.append({"rows": row["rows"], "seconds": row["seconds"], "rate": row["window_rate"]})
    return out


# --------------------------------------------------------------------------
# A server under the ingest load.

def sample(server: bl.Server, c: bl.Client, t0: float) -> dict:
    row = {"t": round(time.monotonic() - t0, 3), "keys": c.command("DBSIZE")}
    rss = server.rss_fields()
    row["vmrss"], row["rssanon"] = rss.get("VmRSS"), rss.get("RssAnon")
    if server.kind == "kvcache":
        f = bl.info_fields(c, "persistence")
        for name in ("memtable_bytes", "memtable_max_bytes", "writer_jobs_in_flight", "writer_batches_applied",
                     "aof_segments"):
            try:
                row[name] = int(f.get(name, "0") or 0)
            except ValueError:
                row[name] = None
        row["memtable_used_perc"] = float(f.get("memtable_used_perc", "0") or 0)
        db = os.path.join(server.dir, "db0.sqlite")
        row["file"], row["wal"] = bl.file_size(db), bl.file_size(db + "-wal")
    else:
        row["file"], row["wal"] = 0, 0
    row["log"] = bl.dir_size(os.path.join(server.dir, "appendonlydir"))
    return row


def error_replies(c: bl.Client) -> int:
    try:
        return int(bl.info_fields(c, "stats").get("total_error_replies", "0"))
    except (ValueError, bl.RespError):
        return 0


def drained(c: bl.Client) -> bool:
    f = bl.info_fields(c, "persistence")
    return f.get("memtable_bytes", "0") == "0" and f.get("writer_jobs_in_flight", "0") == "0"


def run_server(args, server: bl.Server) -> dict:
    try:
        server.start()
    except bl.ServerFailed as error:
        raise bl.HarnessError(f"{server.name} did not start: {error}")
    bl.log(f"{server.name}: pid {server.pid}, port {server.port}, dir {server.dir}")
    c = bl.Client(server.port, timeout=60)
    errors0 = error_replies(c)
    argv = bl.client_argv(["redis-benchmark", "-h", bl.HOST, "-p", str(server.port), "-t", "set",
                           "-r", str(KEYSPACE), "-n", str(args.keys), "-c", str(args.clients),
                           "-P", str(args.pipeline), "-d", "100", "--csv"])
    samples: list[dict] = []
    t0 = time.monotonic()
    deadline = t0 + args.max_seconds
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    complete = True
    try:
        next_sample = t0
        while proc.poll() is None:
            if time.monotonic() > deadline:
                complete = False
                bl.log(f"{server.name}: --max-seconds reached during the load: stopping redis-benchmark")
                proc.kill()
                break
            if not server.alive():
                raise bl.HarnessError(f"{server.name} died during the load: {server.log_tail()}")
            if time.monotonic() >= next_sample:
                samples.append(sample(server, c, t0))
                s = samples[-1]
                bl.log(f"{server.name} t={s['t']:6.1f}s keys={s['keys']:>10,} RssAnon={bl.mib(s['rssanon'])} "
                       + (f"memtable={bl.mib(s.get('memtable_bytes'))} file={bl.mib(s['file'])} " if server.kind == "kvcache" else "")
                       + f"log={bl.mib(s['log'])}")
                next_sample += args.sample
            time.sleep(0.02)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    acked_at = time.monotonic() - t0
    samples.append(sample(server, c, t0))
    rb = None
    for line in out.splitlines():
        cells = [x.strip('"') for x in line.split(",")]
        if cells and cells[0] == "SET":
            try:
                rb = {"rps": float(cells[1]), "p50_ms": float(cells[4]), "p99_ms": float(cells[6]),
                      "max_ms": float(cells[7])}
            except (IndexError, ValueError):
                pass
    # Until everything is in SQLite (kvcache), bounded by the same deadline.
    drained_at = None
    if server.kind == "kvcache" and complete:
        while time.monotonic() < deadline + args.max_seconds / 2:
            if drained(c):
                drained_at = time.monotonic() - t0
                break
            time.sleep(0.1)
        samples.append(sample(server, c, t0))
    errors = error_replies(c) - errors0
    keys = c.command("DBSIZE")
    c.close()
    stop_code = server.stop(timeout=300)
    return {"argv": server.display_argv, "samples": samples, "complete": complete, "acked_seconds": round(acked_at, 3),
            "drained_seconds": None if drained_at is None else round(drained_at, 3), "keys": keys,
            "error_replies": errors, "redis_benchmark": rb,
            "redis_benchmark_error": None if rb else (err.strip().splitlines()[-1:] or [""])[0][:300],
            "stop_code": stop_code}


def crossing_times(samples: list[dict], marks: list[int]) -> dict[int, float]:
    """The time at which DBSIZE reached each mark, interpolated between samples."""
    out = {}
    for m in marks:
        prev = None
        for s in samples:
            if s["keys"] >= m:
                if prev is None or s["keys"] == prev["keys"]:
                    out[m] = s["t"]
                else:
                    out[m] = prev["t"] + (s["t"] - prev["t"]) * (m - prev["keys"]) / (s["keys"] - prev["keys"])
                break
            prev = s
    return out


def windows_of(run: dict, marks: list[int]) -> list[dict]:
    """Rate per window between marks (keys), from DBSIZE samples."""
    times = crossing_times(run["samples"], marks)
    out, prev_m, prev_t = [], 0, 0.0
    for m in marks:
        if m not in times:
            break
        t = times[m]
        row = {"rows": m, "seconds": round(t, 3), "rate": (m - prev_m) / (t - prev_t) if t > prev_t else None}
        # The sample nearest the mark, for sizes.
        near = min(run["samples"], key=lambda s: abs(s["t"] - t))
        row.update({k: near.get(k) for k in ("vmrss", "rssanon", "file", "wal", "log", "memtable_bytes",
                                             "memtable_used_perc")})
        out.append(row)
        prev_m, prev_t = m, t
    return out


# --------------------------------------------------------------------------

def main() -> int:
    args = parse_args()
    command = "python3 bench/scale.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    bl.ensure_kvcache(build=not args.no_build)
    pinned = bl.setup_pinning(not args.no_pin)
    info = bl.machine_info()
    info["kvcache_binary"] = bl.binary_stamp()
    started = time.monotonic()
    work = bl.make_tempdir("bench-scale-")

    # Marks: every window, and the key count (redis-benchmark's collisions: DBSIZE ends a little short).
    marks = list(range(args.window, args.keys + 1, args.window))
    checks = bl.Checks(enabled=not args.no_check)

    ceiling = None
    if not args.no_ceiling:
        ceiling = run_ceiling(args, work)
        if "error" in ceiling:
            bl.log(f"ceiling failed: {ceiling['error']}")
        else:
            bl.log(f"ceiling: {args.keys:,} keys in {ceiling['seconds']:.1f} s ({ceiling['rate']:,.0f}/s)")

    kv = run_server(args, bl.kvcache_server("kvcache", shlex.split(args.kvcache_args)))
    # Collisions leave DBSIZE a little under --keys: the last mark is what it reached.
    kv_marks = [m for m in marks if m < kv["keys"]] + [kv["keys"]]
    kv_windows = windows_of(kv, kv_marks)
    rd = None
    if not args.no_redis:
        rd = run_server(args, bl.redis_server("redis-everysec", bl.REDIS_AOF_EVERYSEC))
        rd["windows"] = windows_of(rd, [m for m in marks if m < rd["keys"]] + [rd["keys"]])

    # Ratios and checks.
    c_windows = {w["rows"]: w for w in (ceiling or {}).get("windows", [])}
    if c_windows and kv_windows and kv_windows[-1]["rows"] not in c_windows:
        # The last mark is kvcache's DBSIZE, a little under --keys (collisions): the ceiling's last window.
        c_windows[kv_windows[-1]["rows"]] = c_windows[max(c_windows)]
    for w in kv_windows:
        cw = c_windows.get(w["rows"])
        w["ceiling_rate"] = cw["rate"] if cw else None
        w["ratio"] = w["rate"] / cw["rate"] if cw and w["rate"] and cw["rate"] else None
    samples = kv["samples"]
    full_at = next((s["t"] for s in samples if (s.get("memtable_used_perc") or 0) >= 90), None)
    memtable_peak = max((s.get("memtable_bytes") or 0 for s in samples), default=0)
    memtable_max = next((s.get("memtable_max_bytes") for s in samples if s.get("memtable_max_bytes")), None)

    tail_start = int(args.keys * (1 - args.tail))
    tail_marks = [m for m in kv_marks if m > tail_start]
    sustained = None
    if ceiling and "error" not in ceiling and tail_marks and kv["complete"]:
        times = crossing_times(samples, [tail_start] + [tail_marks[-1]])
        c_times = {w["rows"]: w["seconds"] for w in ceiling["windows"]}
        c_start = c_times.get(tail_start)
        if c_start is None:  # the tail starts between two ceiling windows: interpolate
            lo = max((w for w in ceiling["windows"] if w["rows"] <= tail_start), key=lambda w: w["rows"], default=None)
            hi = min((w for w in ceiling["windows"] if w["rows"] >= tail_start), key=lambda w: w["rows"], default=None)
            lo_rows, lo_t = (lo["rows"], lo["seconds"]) if lo else (0, 0.0)
            if hi and hi["rows"] > lo_rows:
                c_start = lo_t + (hi["seconds"] - lo_t) * (tail_start - lo_rows) / (hi["rows"] - lo_rows)
        c_end = c_times.get(tail_marks[-1]) or (ceiling["seconds"] if tail_marks[-1] == kv["keys"] else None)
        if tail_start in times and tail_marks[-1] in times and c_start is not None and c_end:
            kv_rate = (tail_marks[-1] - tail_start) / max(1e-9, times[tail_marks[-1]] - times[tail_start])
            c_rate = (tail_marks[-1] - tail_start) / max(1e-9, c_end - c_start)
            sustained = {"from": tail_start, "to": tail_marks[-1], "kvcache_rate": kv_rate, "ceiling_rate": c_rate,
                         "ratio": kv_rate / c_rate, "memtable_full_before": full_at is not None
                         and full_at <= times[tail_start]}
    if args.no_ceiling:
        pass  # --no-ceiling: the two ratios to the ceiling are not checked
    elif sustained is None:
        checks.add(f"sustained ingest >= {args.target}x the ceiling", None,
                   "not measured (a run failed or was cut by --max-seconds)")
    elif not sustained["memtable_full_before"]:
        checks.add(f"sustained ingest >= {args.target}x the ceiling", None,
                   f"not measured: the memtable never reached 90% of memtable-max-size before key "
                   f"{sustained['from']:,} (ratio there {sustained['ratio']:.2f}, measuring the memtable, not "
                   "the writer): raise --keys or lower --memtable-max-size")
    else:
        checks.add(f"sustained ingest >= {args.target}x the ceiling", sustained["ratio"] >= args.target,
                   f"{sustained['ratio']:.2f} (keys {sustained['from']:,}-{sustained['to']:,}: "
                   f"{sustained['kvcache_rate']:,.0f}/s vs the ceiling's {sustained['ceiling_rate']:,.0f}/s)")
    end_to_end = None
    if args.no_ceiling:
        pass
    elif ceiling and "error" not in ceiling and kv["drained_seconds"]:
        kv_rate = kv["keys"] / kv["drained_seconds"]
        end_to_end = {"kvcache_rate": kv_rate, "ceiling_rate": ceiling["rate"], "ratio": kv_rate / ceiling["rate"]}
        checks.add(f"end-to-end (all in SQLite) >= {args.target}x the ceiling", end_to_end["ratio"] >= args.target,
                   f"{end_to_end['ratio']:.2f} ({kv['keys']:,} keys in {kv['drained_seconds']:.1f} s = "
                   f"{kv_rate:,.0f}/s vs the ceiling's {args.keys:,} in {ceiling['seconds']:.1f} s = "
                   f"{ceiling['rate']:,.0f}/s)")
    else:
        checks.add(f"end-to-end (all in SQLite) >= {args.target}x the ceiling", None,
                   "not measured (a run failed, was cut by --max-seconds, or the memtable never drained)")
    flat = None
    if args.tier_bytes:
        ok, detail, flat = rss_flat(kv["samples"], args.tier_bytes)
        checks.add(f"RssAnon flat while the file grows to 10x memory-tier-size {args.memory_tier_size}", ok, detail)
    checks.add("no write refused", kv["error_replies"] == 0,
               f"{kv['error_replies']:,} error replies during the load"
               + (f"; redis-benchmark max latency {kv['redis_benchmark']['max_ms']:.0f} ms"
                  if kv.get("redis_benchmark") else ""))

    # Report.
    headers = ["keys", "kvcache keys/s", "ceiling keys/s", "kvcache / ceiling", "RssAnon", "VmRSS", "memtable",
               "db0.sqlite", "wal", "log"]
    rows = [[f"{w['rows']:,}", bl.fmt_rps(w["rate"]), bl.fmt_rps(w.get("ceiling_rate")),
             "n/a" if w.get("ratio") is None else f"{w['ratio']:.2f}", bl.mib(w.get("rssanon")),
             bl.mib(w.get("vmrss")), bl.mib(w.get("memtable_bytes")), bl.mib(w.get("file")), bl.mib(w.get("wal")),
             bl.mib(w.get("log"))] for w in kv_windows]
    print()
    print(bl.text_table(headers, rows))
    last = samples[-1] if samples else {}
    rss_peak = max((s.get("rssanon") or 0 for s in samples), default=0)
    summary_lines = [
        f"kvcache: {kv['keys']:,} distinct keys; every SET acknowledged after {kv['acked_seconds']:.1f} s "
        f"({kv['keys'] / kv['acked_seconds']:,.0f}/s), all in SQLite after "
        + (f"{kv['drained_seconds']:.1f} s ({kv['keys'] / kv['drained_seconds']:,.0f}/s)" if kv["drained_seconds"]
           else "(not drained)")
        + (f"; redis-benchmark p50 {kv['redis_benchmark']['p50_ms']:.1f} ms, p99 {kv['redis_benchmark']['p99_ms']:.1f} ms, "
           f"max {kv['redis_benchmark']['max_ms']:.0f} ms" if kv.get("redis_benchmark") else ""),
        f"kvcache memory: RssAnon peak {bl.mib(rss_peak)}, at the end {bl.mib(last.get('rssanon'))} "
        f"(VmRSS {bl.mib(last.get('vmrss'))}); memtable peak {bl.mib(memtable_peak)} of {bl.mib(memtable_max)}"
        + (f", 90% full first at {full_at:.1f} s" if full_at is not None else ", never 90% full"),
        f"kvcache disk at the end: db0.sqlite {bl.mib(last.get('file'))}, WAL {bl.mib(last.get('wal'))}, "
        f"log {bl.mib(last.get('log'))} (log peak {bl.mib(max((s.get('log') or 0 for s in samples), default=0))})",
    ]
    if ceiling and "error" not in ceiling:
        summary_lines.append(f"ceiling: {args.keys:,} keys in {ceiling['seconds']:.1f} s ({ceiling['rate']:,.0f}/s), "
                             f"file {bl.mib(ceiling['file_bytes'])}")
    elif ceiling:
        summary_lines.append(f"ceiling FAILED: {ceiling['error']}")
    if rd:
        rd_last = rd["samples"][-1] if rd["samples"] else {}
        summary_lines.append(
            f"redis (AOF everysec), same load: {rd['keys']:,} keys acknowledged after {rd['acked_seconds']:.1f} s "
            f"({rd['keys'] / rd['acked_seconds']:,.0f}/s); RssAnon at the end {bl.mib(rd_last.get('rssanon'))}, "
            f"AOF {bl.mib(rd_last.get('log'))}")
    print()
    for line in summary_lines:
        print(line)
    print(f"total {time.monotonic() - started:.0f} s")
    checks.report()

    if not args.no_write:
        section = "scale_tier" if args.tier_bytes else "scale"
        results_json = RESULTS_JSON.with_name("scale-tier.json") if args.tier_bytes else RESULTS_JSON
        results_json.write_text(json.dumps({
            "machine": info, "command": command, "settings": vars(args), "pinned": pinned, "ceiling": ceiling,
            "kvcache": kv, "kvcache_windows": kv_windows, "redis": rd, "sustained": sustained,
            "end_to_end": end_to_end, "rss_flat": flat, "checks": checks.as_list()}, indent=1) + "\n")
        md = [
            (f"## Scale with a small memory tier: RssAnon while the file grows (`bench/scale.py "
             f"--memory-tier-size {args.memory_tier_size}`)" if args.tier_bytes else
             "## Scale: sustained new-key ingest against the C ceiling (`bench/scale.py`)"),
            "",
            bl.run_stamp(info, command, info.get("kvcache_binary"))
            + ("  \n**Quick run (reduced size, small memtable).** The full run is `python3 bench/scale.py`."
               if args.quick else ""),
            "",
            f"`redis-benchmark -t set -r {KEYSPACE} -n {args.keys:,} -c {args.clients} -P {args.pipeline} -d 100` "
            f"(random keys, all but ~0.1% new) against kvcache-server "
            f"({'`' + args.kvcache_args + '`' if args.kvcache_args else 'default configuration'}) and, for "
            "reference, Redis with AOF everysec; the ceiling is `bench/engine/ceiling.c --mode ingest`: the same "
            f"number of new keys in digest-sorted batches of {args.batch:,} with the server writer's upsert and "
            "settings. "
            + ("Each server and the ceiling pinned to core 0, the load to core 1. " if pinned else "")
            + "Rates come from DBSIZE sampled every "
            f"{args.sample:g} s; RssAnon and VmRSS from /proc; log is appendonlydir.",
            "",
        ]
        md += [f"- {line}." for line in summary_lines]
        if sustained:
            md.append(f"- Sustained (keys {sustained['from']:,}–{sustained['to']:,}"
                      + ("" if sustained["memtable_full_before"] else ", memtable not yet full") + "): "
                      f"**{sustained['ratio']:.2f}×** the ceiling ({sustained['kvcache_rate']:,.0f} vs "
                      f"{sustained['ceiling_rate']:,.0f} keys/s); target ≥ {args.target}×.")
        if end_to_end:
            md.append(f"- End to end (until all in SQLite): **{end_to_end['ratio']:.2f}×** the ceiling.")
        md += ["", checks.markdown(details=False),
               "", bl.markdown_table(headers, rows, "r" * len(headers)), "",
               f"Raw numbers (every sample): [`bench/{results_json.name}`](bench/{results_json.name})."]
        if flat and flat.get("rss_start"):
            md.insert(-6, f"- RssAnon while the file grew from 2x to {flat['final_file'] / flat['tier_bytes']:.1f}x "
                          f"memory-tier-size: {bl.mib(flat['rss_start'])} → {bl.mib(flat['rss_end'])} "
                          f"(peak {bl.mib(flat['rss_peak'])}).")
        bl.update_machine_section(info)
        bl.update_sections({section: "\n".join(md) + "\n"})
    return checks.exit_code()


if __name__ == "__main__":
    bl.main_wrapper(main)
