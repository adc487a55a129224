#!/usr/bin/env python3
"""Redis 7.0.15's own test files in their normal mode (not external): the
suite starts the server itself, as `./runtest` does, with the config file
it writes (tests/assets/default.conf plus each test's overrides), restarts
it, reads its log and runs the tests tagged external:skip too. The binary
under test stands in for src/redis-server; redis-cli and redis-benchmark
are Debian's.

    python3 tools/redis-tests/run.py --setup-apt --fetch-only   # the tree, once
    python3 tools/redis-tests/normal_mode.py --kvcache .build/release/kvcache-server \
        [--redis /usr/bin/redis-server] [--markdown FILE] [unit/type/incr ...]

Each file runs alone (`./runtest --single F --clients 1`, bounded by
--file-timeout), two at a time in two copies of the tree (runtest clears
tests/tmp at start, so one tree runs one file at a time). An exception
stops a file where it happens, as in runtest. With --redis, the same files
run against redis-server too and each file's line says how many of the
tests that pass on Redis pass here. Without files: every file of the
suite's all_tests list but the cluster, TLS and module ones and the
replication files SKIP names.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

TREE = Path.home() / ".cache/kvcache/redis-7.0.15-tests"
# Replication's files run but those that need what this server lacks: a
# failover, a unix socket (psync2-reg), the replication buffer shared with
# the backlog (replication-buffer), a replid kept across restarts
# (psync2-master-restart), diskless loading states (integration/replication).
SKIP = re.compile(r"moduleapi|cluster|tls|integration/replication$|replication-buffer|psync2$|psync2-reg"
                  r"|psync2-master-restart|failover|oom-score-adj")
OK = re.compile(r"\[(?:\x1b\[[0-9;]*m)?ok(?:\x1b\[[0-9;]*m)?\]: (.*?) \(\d+ ms\)$")
ERR = re.compile(r"^\[(?:\x1b\[[0-9;]*m)?err(?:\x1b\[[0-9;]*m)?\]: (.*?) in tests/")
EXC = re.compile(r"\[(?:\x1b\[[0-9;]*m)?exception(?:\x1b\[[0-9;]*m)?\]: (.*)$")


def default_units(tree: Path) -> list[str]:
    text = (tree / "tests/test_helper.tcl").read_text()
    block = text[text.index("set ::all_tests {"):]
    block = block[:block.index("}")]
    return [u for u in re.findall(r"(?:unit|integration)/[\w/-]+", block) if not SKIP.search(u)]


def make_tree(base: Path, server: str) -> Path:
    tree = Path(tempfile.mkdtemp(prefix="redis-normal-"))
    shutil.copytree(base, tree, dirs_exist_ok=True, symlinks=True)
    shutil.rmtree(tree / "tests/tmp", ignore_errors=True)
    (tree / "tests/tmp").mkdir()
    for tool, path in [("redis-server", server)] + [(t, shutil.which(t) or "/usr/bin/" + t) for t in
                                                    ("redis-cli", "redis-benchmark", "redis-check-aof", "redis-check-rdb")]:
        link = tree / "src" / tool
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(os.path.abspath(path))
    return tree


def run_file(tree: Path, unit: str, timeout: int, port: int) -> dict:
    try:
        out = subprocess.run(["./runtest", "--single", unit, "--clients", "1", "--timeout", "120",
                              "--baseport", str(port), "--tags", "-needs:repl"],
                             cwd=tree, capture_output=True, text=True, errors="replace", timeout=timeout).stdout
        timed_out = False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        timed_out = True
    lines = out.splitlines()
    passed = sorted({m.group(1) for l in lines if (m := OK.search(l))})  # a name may repeat
    failed = [m.group(1) for l in lines if (m := ERR.search(l))]
    exception = next((m.group(1) for l in lines if (m := EXC.search(l))), None)
    return {"passed": passed, "failed": failed, "exception": exception, "timed_out": timed_out}


def run_all(server: str, units: list[str], timeout: int) -> dict[str, dict]:
    trees = [make_tree(TREE, server) for _ in range(2)]
    try:
        results: dict[str, dict] = {}

        def worker(i: int) -> None:
            for j, unit in enumerate(units):
                if j % 2 == i:
                    results[unit] = run_file(trees[i], unit, timeout, 21000 + i * 4000)
                    r = results[unit]
                    print(f"  {os.path.basename(server)} {unit}: {len(r['passed'])} passed, {len(r['failed'])} failed"
                          + (f", stopped: {r['exception'][:100]}" if r["exception"] else "")
                          + (", timed out" if r["timed_out"] else ""), flush=True)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(worker, range(2)))
        return results
    finally:
        for tree in trees:
            shutil.rmtree(tree, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kvcache", required=True)
    p.add_argument("--redis", help="also run redis-server, for the share of Redis's passing tests")
    p.add_argument("--file-timeout", type=int, default=420)
    p.add_argument("--markdown", help="write the summary table here")
    p.add_argument("units", nargs="*")
    args = p.parse_args()
    units = args.units or default_units(TREE)
    kv = run_all(args.kvcache, units, args.file_timeout)
    redis = run_all(args.redis, units, args.file_timeout) if args.redis else None
    rows = ["| file | passed on Redis | passed on kvcache | of those passing on Redis | what stopped the file on kvcache |",
            "|---|---:|---:|---:|---|"]
    total_redis = total_kv = total_both = 0
    for unit in units:
        k = kv[unit]
        stop = (k["exception"] or ("timed out" if k["timed_out"] else "ran to the end"))
        stop = stop.replace("Executing test client: ", "").replace("|", "\\|")[:110]
        if redis:
            r = set(redis[unit]["passed"])
            both = len(r & set(k["passed"]))  # names are counted once
            total_redis += len(r)
            total_both += both
            rows.append(f"| {unit} | {len(r)} | {len(k['passed'])} | {both} | {stop} |")
        else:
            rows.append(f"| {unit} | | {len(k['passed'])} | | {stop} |")
        total_kv += len(k["passed"])
    rows.append(f"| **total** | **{total_redis if redis else ''}** | **{total_kv}** | **{total_both if redis else ''}** | |")
    table = "\n".join(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
