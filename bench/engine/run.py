#!/usr/bin/env python3
"""The storage engine against its C ceiling.

    python3 bench/engine/run.py            # N = 10,000 and 1,000,000, 3 repeats (a few minutes)
    python3 bench/engine/run.py --quick    # N = 10,000 and 100,000, 1 repeat

Builds bench/engine/ceiling.c (`gcc -O2 ceiling.c -lsqlite3 -lcrypto`, into a
temporary directory), a C program running exactly the engine's SQL on the
same schema and pragmas, and measures for each N:

    put1     overwrites of random existing keys in a cache of N entries,
             one transaction per put (5000 by default)
    put1000  the same, 1000 puts per transaction (100,000 by default)
    get      gets of random existing keys (200,000 by default)
    get-tier (Swift only) gets with the engine's 64 MiB memory tier on; its
             swift / c is against the C `get`

Both sides first fill the cache with key:0 ... key:<N-1> (1000 puts per
transaction, untimed); --ops-* set the timed operation counts, passed to both.

If `.build/release/kvcache-bench` exists (the Swift engine driven the same
way: `--entries N --mode put1|put1000|get --dir D`), it runs that too, each
repeat right after the C one, and reports swift / c. Both print one JSON line
per measurement: {"impl":..., "mode":..., "entries":N, "ops":..., "seconds":...,
"ops_per_sec":...}. Medians over --repeat runs go to a table, to
bench/engine/results.json and to the "engine" section of BENCHMARKS.md.

ceiling.c also has `--mode ingest` (new keys from an empty file in
digest-sorted batches of 50,000 with the server writer's upsert and
settings): the ceiling bench/scale.py builds with build_ceiling() and sets
the server's sustained ingest beside (issue 13's ">= 0.8x" target).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import benchlib as bl  # noqa: E402

SWIFT_BENCH = bl.REPO / ".build" / "release" / "kvcache-bench"
RESULTS_JSON = HERE / "results.json"
MODES = ["put1", "put1000", "get", "get-tier"]
C_MODE = {"put1": "put1", "put1000": "put1000", "get": "get", "get-tier": None}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="C ceiling vs the Swift engine (kvcache-bench) on the engine's SQL.")
    p.add_argument("--quick", action="store_true", help="N = 10000,100000 and 1 repeat")
    p.add_argument("--entries", help="comma-separated N (default 10000,1000000)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated among " + ",".join(MODES))
    p.add_argument("--ops-put1", type=int, default=5000, help="timed puts in put1 (default 5000)")
    p.add_argument("--ops-put1000", type=int, default=100000, help="timed puts in put1000 (default 100000)")
    p.add_argument("--ops-get", type=int, default=200000, help="timed gets in get and get-tier (default 200000)")
    p.add_argument("--repeat", type=int, help="runs per (impl, mode, N); the median is reported (default 3, quick 1)")
    p.add_argument("--timeout", type=float, default=900, help="longest one run may take (s)")
    p.add_argument("--ceiling-args", default="",
                   help="extra arguments for the C program, e.g. '--wal-autocheckpoint 4000' to follow an engine "
                        "that changed SQLite's default (recorded in the results)")
    p.add_argument("--no-swift", action="store_true", help="run the C ceiling only")
    p.add_argument("--build-swift", action="store_true",
                   help="first `swift build -c release --product kvcache-bench` (after any other swift-build)")
    p.add_argument("--no-write", action="store_true", help="print only: leave BENCHMARKS.md and results.json alone")
    args = p.parse_args(argv)
    args.entries = [int(x) for x in (args.entries or ("10000,100000" if args.quick else "10000,1000000")).split(",")]
    args.modes = [m.strip() for m in args.modes.split(",")]
    if any(m not in MODES for m in args.modes):
        p.error("--modes takes " + ", ".join(MODES))
    args.repeat = args.repeat or (1 if args.quick else 3)
    return args


def build_ceiling(out_dir: str) -> str:
    exe = str(Path(out_dir) / "ceiling")
    cmd = ["gcc", "-O2", str(HERE / "ceiling.c"), "-lsqlite3", "-lcrypto", "-o", exe]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise bl.HarnessError("building the ceiling failed:\n" + result.stderr[-2000:])
    return exe


def run_one(exe: str, impl: str, mode: str, entries: int, ops: int, work: str, timeout: float,
            extra: list[str]) -> dict:
    d = tempfile.mkdtemp(prefix=f"{impl}-{mode}-", dir=work)
    argv = [exe, "--entries", str(entries), "--mode", mode, "--ops", str(ops), "--dir", d, *extra]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"impl": impl, "mode": mode, "entries": entries, "error": f"timed out after {timeout:.0f} s"}
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if result.returncode != 0:
        return {"impl": impl, "mode": mode, "entries": entries,
                "error": f"exit {result.returncode}: {(result.stderr or result.stdout).strip()[-300:]}"}
    for line in reversed(result.stdout.strip().splitlines()):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "ops_per_sec" in row:
            row.setdefault("impl", impl)
            return row
    return {"impl": impl, "mode": mode, "entries": entries, "error": f"no JSON line in output: {result.stdout[-200:]!r}"}


def main() -> int:
    args = parse_args()
    command = "python3 bench/engine/run.py" + (" " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "")
    info = bl.machine_info()
    work = bl.make_tempdir("bench-engine-")
    impls = {"c": build_ceiling(work)}
    if not args.no_swift:
        if args.build_swift:
            bl.build_kvcache(product="kvcache-bench")
        if SWIFT_BENCH.exists():
            impls["swift"] = str(SWIFT_BENCH)
        else:
            bl.log(f"{SWIFT_BENCH.relative_to(bl.REPO)} not found: C ceiling only "
                   "(build it with `swift build -c release --product kvcache-bench`)")

    runs = []
    for entries in args.entries:
        for mode in args.modes:
            for rep in range(1, args.repeat + 1):
                for impl, exe in impls.items():
                    if impl == "c" and C_MODE[mode] is None:
                        continue
                    ops = {"put1": args.ops_put1, "put1000": args.ops_put1000}.get(mode, args.ops_get)
                    build = bl.swift_build_running()
                    row = run_one(exe, impl, C_MODE[mode] if impl == "c" else mode, entries, ops, work, args.timeout,
                                  shlex.split(args.ceiling_args) if impl == "c" else [])
                    row["mode"] = mode
                    row.update({"repeat": rep, "swift_build_running": build or bl.swift_build_running(),
                                "loadavg": bl.loadavg()})
                    runs.append(row)
                    if "error" in row:
                        bl.log(f"{impl:5s} {mode:7s} N={entries:<9,} FAILED: {row['error']}")
                    else:
                        bl.log(f"{impl:5s} {mode:7s} N={entries:<9,} {row['ops_per_sec']:>12,.0f} ops/s "
                               f"({row['ops']:,} ops in {row['seconds']:.2f} s)"
                               + (" during a swift build" if row["swift_build_running"] else ""))

    medians = {}
    rows = []
    for entries in args.entries:
        for mode in args.modes:
            if "swift" not in impls and C_MODE[mode] is None:
                continue
            m = {impl: bl.median([r.get("ops_per_sec") for r in runs
                                  if r["impl"] == impl and r["mode"] == (C_MODE[mode] or "get" if impl == "c" else mode)
                                  and r["entries"] == entries])
                 for impl in impls}
            medians[f"{mode} N={entries}"] = m
            c, s = m.get("c"), m.get("swift")
            row = [mode + (" (vs C get)" if C_MODE[mode] is None else ""), f"{entries:,}", bl.fmt_rps(c)]
            if "swift" in impls:
                row += [bl.fmt_rps(s), "n/a" if not c or s is None else f"{s / c:.2f}"]
            rows.append(row)
    headers = ["mode", "entries", "C ops/s"] + (["Swift ops/s", "swift / c"] if "swift" in impls else [])
    print()
    print(f"Median ops/s over {args.repeat} run(s):")
    print(bl.text_table(headers, rows))
    failures = [r for r in runs if "error" in r]

    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps({"machine": info, "command": command, "ceiling_args": args.ceiling_args,
                                            "ops": {"put1": args.ops_put1, "put1000": args.ops_put1000,
                                                    "get": args.ops_get}, "runs": runs,
                                            "medians": medians}, indent=1) + "\n")
        section = [
            "## Engine: Swift vs the C ceiling (`bench/engine/run.py`)",
            "",
            bl.run_stamp(info, command),
            "",
            "`bench/engine/ceiling.c` runs the engine's SQL as specified for this benchmark (the schema, the "
            "pragmas `locking_mode=EXCLUSIVE`, WAL, `synchronous=NORMAL`, 16 MiB page cache, SQLite's default "
            "auto-checkpoint, and the statements, all listed in ceiling.c) from C: statements prepared once "
            "(`SQLITE_PREPARE_PERSISTENT`), SHA-256 of the key through one reused `EVP_MD_CTX`, blobs bound "
            "without copies. Keys `key:<n>`, 100-byte values, empty metadata. Both sides fill a cache "
            "with N entries (untimed), then time operations on random existing keys: "
            f"`put1`: {args.ops_put1:,} overwrites, one transaction per put (`BEGIN IMMEDIATE`, the row "
            f"lookup, the upsert, the stats `UPDATE`, `COMMIT`); `put1000`: {args.ops_put1000:,} overwrites, "
            f"1000 per transaction; `get`: {args.ops_get:,} gets. `get-tier` is the Swift engine with its "
            "64 MiB memory tier of hot entries on; its swift / c is against the C `get` (plain SQL). "
            + (f"The C program ran with `{args.ceiling_args}`. " if args.ceiling_args else "")
            + ("The Swift side is `.build/release/kvcache-bench`, run right after the C one each time."
               if "swift" in impls else
               "`.build/release/kvcache-bench` was not built, so only the ceiling is shown."),
            "",
            f"Median over {args.repeat} run(s), operations per second:",
            "",
            bl.markdown_table(headers, rows, "lr" + "r" * (len(headers) - 2)),
            "",
            "swift / c is the share of the ceiling the Swift engine reaches (1.00: as fast as C). Where the "
            "engine departs from that SQL (its own checkpointing, a plain INSERT or UPDATE instead of the "
            "upsert, a lookup spared by its memory tier) it can beat the ceiling: swift / c above 1 says so. "
            "Raw runs: [`bench/engine/results.json`](bench/engine/results.json).",
        ]
        if failures:
            section += ["", f"{len(failures)} run(s) failed: "
                        + "; ".join(f"{r['impl']} {r['mode']} N={r['entries']}: {r['error'][:100]}" for r in failures[:4])]
        bl.update_machine_section(info)
        bl.update_sections({"engine": "\n".join(section) + "\n"})
    if failures and all("error" in r for r in runs if r["impl"] == "c"):
        raise bl.HarnessError("every C ceiling run failed")
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
