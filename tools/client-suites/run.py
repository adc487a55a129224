#!/usr/bin/env python3
"""Client libraries' own test suites, run whole against redis-server and
against kvcache-server, test by test side by side.

    python3 tools/client-suites/run.py                      # redis-py (RESP2, RESP3), RQ, fakeredis
    python3 tools/client-suites/run.py --suites redis-py --markdown /tmp/clients.md

For each suite the runner fetches the library's source release from PyPI
(`pip download --no-binary :all:`, which carries its tests) into
~/.cache/kvcache/client-suites (`--cache-dir`), makes a virtualenv there
with what the tests import, starts each server on a free 127.0.0.1 port in
a temporary directory (both with `enable-debug-command yes`, which the
suites' DEBUG tests need), runs the suite with pytest's JUnit XML, and
prints every test whose outcome differs between the servers. It exits 0
when no test that passes on Redis fails on kvcache, 3 when one does, 1 on
a harness failure.

Suites:
- redis-py: its tests/ (sync and asyncio), less what needs a cluster,
  modules, TLS, replicas or Sentinel and the token-renewal tests on mocks
  (test_credentials), with `--protocol=2` and `--protocol=3`.
- rq: RQ's tests, one at a time (they share a database). RQ's tests connect
  to localhost:6379 only, so each server in turn runs on port 6379, which
  must be free; the suite is skipped when it is not. Some of its worker
  tests time out now and then on either server; each passes when rerun.
- fakeredis: the tests fakeredis checks itself against a real server with
  (marked `real`, RESP2 and RESP3), a detailed account of commands'
  replies and errors; on port 6390, as they expect.

Tests that need a newer Redis than 7.0 skip on both servers (both report
7.0.15). Standard library only, besides what it installs in the virtualenv.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from toollib import HOST, default_binary, free_port  # noqa: E402
import benchlib as bl  # noqa: E402  (on the path toollib set)

SUITES = {
    "redis-py": {
        "package": "redis==8.2.0",
        "deps": ["pytest", "pytest-asyncio", "pytest-timeout", "ujson", "numpy", "pybreaker", "redis-entraid",
                 "xxhash", "aiohttp", "packaging", "click", "invoke"],
    },
    "rq": {
        "package": "rq==3.0.0",
        "deps": ["pytest", "pytest-timeout", "psutil", "croniter", "click", "redis"],
        "port": 6379,
    },
    "fakeredis": {
        "package": "fakeredis==2.41.0",
        "deps": ["pytest", "pytest-asyncio", "pytest-timeout", "pytest-mock", "hypothesis", "valkey", "redis==8.2.0",
                 "lupa", "pyprobables", "jsonpath-ng", "sortedcontainers"],
        "port": 6390,
    },
}

REDIS_PY_MARKS = ("not redismod and not onlycluster and not ssl and not replica and not cp_integration "
                  "and not multidb_integration and not experimental")
REDIS_PY_IGNORED = ["tests/test_cluster.py", "tests/test_asyncio/test_cluster.py", "tests/test_scenario",
                    "tests/test_multidb", "tests/test_asyncio/test_multidb", "tests/test_asyncio/test_scenario",
                    "tests/test_observability", "tests/test_asyncio/test_observability",
                    "tests/test_sentinel.py", "tests/test_asyncio/test_sentinel.py", "tests/test_ssl.py",
                    "tests/test_asyncio/test_ssl.py",
                    # Token renewal against mocks; a background thread's exception there ends
                    # the whole pytest session (INTERNALERROR) on either server.
                    "tests/test_credentials.py", "tests/test_asyncio/test_credentials.py"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def fetch(suite: str, cache: str) -> tuple[str, str]:
    """The unpacked source release of the suite's library, and a virtualenv
    with the library (from that source) and its tests' imports."""
    spec = SUITES[suite]
    name, version = spec["package"].split("==")
    source = os.path.join(cache, f"{name}-{version}")
    if not os.path.isdir(source):
        os.makedirs(cache, exist_ok=True)
        run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", "-d", cache,
             spec["package"]])
        archive = glob.glob(os.path.join(cache, f"{name}-{version}.tar.gz"))[0]
        run(["tar", "xzf", archive, "-C", cache])
    venv = os.path.join(cache, f"venv-{name}-{version}")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".ready")):
        run([sys.executable, "-m", "venv", venv])
        run([python, "-m", "pip", "install", "-q", *spec["deps"]])
        run([python, "-m", "pip", "install", "-q", "-e", source])
        open(os.path.join(venv, ".ready"), "w").close()
    return source, python


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
            return True
        except OSError:
            return False


def start_server(kind: str, binary: str, port: int) -> bl.Server:
    """redis-server or kvcache-server on `port`, in a temporary directory,
    once PING answers (benchlib's Server, spawn and wait_ready)."""
    def argv(p, d) -> list[str]:
        common = ["--port", str(p), "--bind", HOST, "--dir", d, "--enable-debug-command", "yes"]
        if kind == "redis":
            return ["redis-server", *common, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""]
        return [binary, *common]
    server = bl.Server(f"client-suite-{kind}", argv, kind, pin=False)
    server.spawn(port)
    try:
        bl.wait_ready(port, server.proc, timeout=20)
    except RuntimeError as e:
        stop_server(server)
        raise RuntimeError(f"{kind} did not start on port {port}: {e}")
    return server


def stop_server(server: bl.Server) -> None:
    server.stop(timeout=20)
    shutil.rmtree(server.dir, ignore_errors=True)


def outcomes(xml_path: str) -> dict[str, tuple[str, str]]:
    """Each test's outcome (pass, failure, error, skip) and failure message."""
    found = {}
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return found
    for case in root.iter("testcase"):
        name = f"{case.get('classname') or ''}::{case.get('name') or ''}"
        outcome, message = "pass", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = child.tag, (child.get("message") or "").splitlines()[0][:300] if child.get("message") else ""
                break
            if child.tag == "skipped":
                outcome = "skip"
        found[name] = (outcome, message)
    return found


def pytest_runs(suite: str, source: str) -> list[tuple[str, list[str]]]:
    """(label, pytest arguments without the server's address) of each run of a suite."""
    if suite == "redis-py":
        base = ["-m", REDIS_PY_MARKS, "-o", "log_cli=false", "--timeout", "30"]
        base += [f"--ignore={p}" for p in REDIS_PY_IGNORED if os.path.exists(os.path.join(source, p))]
        return [(f"resp{p}", base + [f"--protocol={p}", "tests"]) for p in (2, 3)]
    if suite == "fakeredis":
        # The tests marked `real` (each with RESP2 and RESP3) talk to the server; the rest to fakeredis itself.
        return [("", ["-m", "real", "--timeout", "60", "test/test_mixins", "test/test_keyspace_notifications.py",
                      "test/test_subkey_notifications.py"])]
    return [("", ["--timeout", "60", "tests"])]


def run_suite(suite: str, args, binary: str) -> list[dict]:
    source, python = fetch(suite, args.cache_dir)
    results = []
    for label, pytest_args in pytest_runs(suite, source):
        per_server = {}
        for kind in ("redis", "kvcache"):
            if "port" in SUITES[suite]:
                port = SUITES[suite]["port"]
                if not port_is_free(port):
                    print(f"{suite}: port {port} is taken; skipped", file=sys.stderr)
                    return results
            else:
                port = free_port()
            server = start_server(kind, binary, port)
            xml_path = os.path.join(tempfile.gettempdir(), f"client-suite-{suite}{label}-{kind}-{os.getpid()}.xml")
            cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml_path}", *pytest_args]
            if suite == "redis-py":
                cmd.append(f"--redis-url=redis://{HOST}:{port}/0")
            started = time.monotonic()
            try:
                # The virtualenv's scripts on PATH, as when it is activated (RQ's tests run `rqworker`).
                env = dict(os.environ, PATH=os.path.dirname(python) + os.pathsep + os.environ.get("PATH", ""))
                done = subprocess.run(cmd, cwd=source, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=args.timeout)
                tail = done.stdout.decode(errors="replace").strip().splitlines()[-1:]
            except subprocess.TimeoutExpired:
                tail = [f"stopped after {args.timeout} s"]
            finally:
                stop_server(server)
            per_server[kind] = outcomes(xml_path)
            print(f"{suite} {label} {kind}: {' '.join(tail)} ({time.monotonic() - started:.0f} s)", flush=True)
        redis, kv = per_server["redis"], per_server["kvcache"]
        differ = [(name, redis.get(name, ("missing", ""))[0], kv.get(name, ("missing", ""))[0],
                   kv.get(name, ("", ""))[1]) for name in sorted(set(redis) | set(kv))
                  if redis.get(name, ("missing", ""))[0] != kv.get(name, ("missing", ""))[0]]
        results.append({
            "suite": suite, "label": label,
            "redis_passed": sum(1 for o, _ in redis.values() if o == "pass"),
            "kvcache_passed": sum(1 for o, _ in kv.values() if o == "pass"),
            "both_passed": sum(1 for n, (o, _) in redis.items() if o == "pass" and kv.get(n, ("",))[0] == "pass"),
            "differ": differ,
        })
    return results


def report(results: list[dict]) -> str:
    lines = ["| suite | run | passed on Redis | passed on kvcache | of those passing on Redis |",
             "|---|---|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['suite']} | {r['label'] or '-'} | {r['redis_passed']} | {r['kvcache_passed']} | "
                     f"{r['both_passed']} |")
    lines.append("")
    for r in results:
        for name, on_redis, on_kv, message in r["differ"]:
            lines.append(f"- {r['suite']} {r['label']}: `{name}`: Redis {on_redis}, kvcache {on_kv}"
                         + (f": {message}" if message and on_kv in ("failure", "error") else ""))
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suites", default="redis-py,rq,fakeredis", help="comma-separated among " + ", ".join(SUITES))
    p.add_argument("--binary", default=default_binary(), help="kvcache-server binary")
    p.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/kvcache/client-suites"))
    p.add_argument("--timeout", type=int, default=1500, help="seconds one pytest run may take")
    p.add_argument("--markdown", help="write the summary table and the differences here")
    args = p.parse_args()
    suites = [s for s in args.suites.split(",") if s]
    if any(s not in SUITES for s in suites):
        p.error("--suites takes " + ", ".join(SUITES))
    if not os.path.exists(args.binary):
        p.error(f"no kvcache-server binary at {args.binary} (swift build -c release)")
    results = []
    try:
        for suite in suites:
            results += run_suite(suite, args, args.binary)
    except (subprocess.CalledProcessError, RuntimeError, IndexError) as e:
        print(f"harness failure: {e}", file=sys.stderr)
        return 1
    text = report(results)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    regressions = [d for r in results for d in r["differ"] if d[1] == "pass" and d[2] in ("failure", "error")]
    return 3 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
