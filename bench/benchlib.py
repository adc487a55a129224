"""Shared pieces of the benchmark scripts in bench/: machine facts, the
Swift build (never two at once on this machine), servers on free loopback
ports that are always stopped, a small RESP client, and BENCHMARKS.md,
whose sections each script rewrites.

Standard library only.
"""

from __future__ import annotations

import atexit
import math
import datetime as _dt
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KVCACHE_BIN = REPO / ".build" / "release" / "kvcache-server"
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
HOST = "127.0.0.1"
SWIFT_BUILD_LOCK = "/tmp/swift-build.lock"


class HarnessError(Exception):
    """A failure of the harness itself (not a slow result): exit non-zero."""


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Signals: SIGTERM and SIGHUP unwind like Ctrl-C, so every `finally` runs.

def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def install_signal_handlers() -> None:
    # SIGINT too: a shell without job control starts background jobs with it ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)


# Exit status of every script in bench/ (EXIT_STATUS is quoted in their --help):
#   0  the run finished and every target property it checks holds (or --no-check)
#   1  the harness failed (a server did not start, a tool is missing, a reply was wrong)
#   2  bad command-line arguments (argparse)
#   3  the run finished and at least one checked target property does not hold
#      (or could not be measured); the "CHECK" lines say which
#   130 interrupted (Ctrl-C, SIGTERM, SIGHUP)
TARGET_MISSED = 3
EXIT_STATUS = ("exit status: 0 every checked target holds (or --no-check), 1 harness failure, "
               "2 bad arguments, 3 a checked target does not hold or could not be measured "
               "(see the CHECK lines), 130 interrupted")


class Checks:
    """The target properties a script checks. Each is printed as a CHECK line;
    `exit_code()` is TARGET_MISSED if one failed (or was not measured, ok None)
    unless checking is off (--no-check: exploratory runs report, never fail)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.items: list[dict] = []

    def add(self, name: str, ok: bool | None, detail: str) -> None:
        self.items.append({"name": name, "ok": ok, "detail": detail})

    def report(self) -> None:
        if not self.items:
            return
        print()
        print("Target checks" + ("" if self.enabled else " (--no-check: reported only)") + ":")
        for item in self.items:
            verdict = {True: "pass", False: "FAIL", None: "FAIL (not measured)"}[item["ok"]]
            print(f"CHECK {verdict}: {item['name']}: {item['detail']}")

    @property
    def failed(self) -> list[dict]:
        return [i for i in self.items if i["ok"] is not True]

    def exit_code(self) -> int:
        if self.enabled and self.failed:
            log(f"{len(self.failed)} of {len(self.items)} target check(s) failed: exit {TARGET_MISSED}")
            return TARGET_MISSED
        return 0

    def as_list(self) -> list[dict]:
        return list(self.items)

    def markdown(self, details: bool = True) -> str:
        """One line for BENCHMARKS.md: every check and its verdict."""
        verdict = {True: "pass", False: "**FAIL**", None: "**not measured**"}
        return "Checks: " + "; ".join(
            f"{i['name']}: {verdict[i['ok']]}" + (f" ({i['detail']})" if details else "") for i in self.items) + "."


def main_wrapper(main) -> None:
    """Runs main(); exits with its return code (0, or TARGET_MISSED), 1 on a
    harness failure, 130 on Ctrl-C. Servers are stopped in every case."""
    install_signal_handlers()
    try:
        code = main()
    except KeyboardInterrupt:
        log("interrupted: stopping servers")
        code = 130
    except HarnessError as error:
        log(f"harness failure: {error}")
        code = 1
    finally:
        stop_all_servers()
    sys.exit(code or 0)


# --------------------------------------------------------------------------
# The Swift build: two cores, and another engineer builds too.

def swift_build_running() -> bool:
    try:
        out = subprocess.run(["pgrep", "-f", "swift-build"], capture_output=True, text=True)
    except FileNotFoundError:
        return False
    mine = str(os.getpid())
    return any(pid.strip() and pid.strip() != mine for pid in out.stdout.splitlines())


def wait_for_no_swift_build(max_seconds: float | None = None, quiet: bool = False) -> bool:
    """Waits until `pgrep -f swift-build` finds nothing. Returns False if
    max_seconds passed first."""
    start = time.monotonic()
    said = False
    while swift_build_running():
        if not said and not quiet:
            log("waiting for a running swift-build to finish...")
            said = True
        if max_seconds is not None and time.monotonic() - start > max_seconds:
            return False
        time.sleep(2)
    return True


def build_kvcache(product: str = "kvcache-server", timeout: float = 3600) -> None:
    """`swift build -c release --product PRODUCT`, after any other Swift build."""
    wait_for_no_swift_build()
    # Also hold /tmp/swift-build.lock, which other builds on this machine take
    # with flock(1), so a build started between the check and ours waits.
    import fcntl
    with open(SWIFT_BUILD_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wait_for_no_swift_build()
        log(f"building: swift build -c release --product {product}")
        t0 = time.monotonic()
        try:
            result = subprocess.run(["swift", "build", "-c", "release", "--product", product],
                                    cwd=REPO, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise HarnessError("swift is not on the PATH")
        except subprocess.TimeoutExpired:
            raise HarnessError(f"swift build took over {timeout:.0f} s")
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise HarnessError(f"swift build failed (exit {result.returncode}):\n{tail}")
    log(f"built in {time.monotonic() - t0:.1f} s")


def ensure_kvcache(build: bool) -> None:
    if build:
        build_kvcache()
    if not KVCACHE_BIN.exists():
        raise HarnessError(f"{KVCACHE_BIN} does not exist (build it, or drop --no-build)")


def loadavg() -> float | None:
    """The 1-minute load average (2.0 fills this machine's 2 cores)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------
# Pinning (DESIGN.md, "How a >= 1.0x Redis is measured"): each server and
# all its threads on core 0 (`taskset -c 0`), the load generator on core 1.

SERVER_CPU = "0"
CLIENT_CPU = "1"
_pinning = {"on": False}  # setup_pinning() turns it on


def pinning_possible() -> bool:
    try:
        cpus = os.sched_getaffinity(0) | {int(SERVER_CPU), int(CLIENT_CPU)}
        return (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None and len(cpus) >= 2
    except (AttributeError, OSError):
        return False


def setup_pinning(enabled: bool = True) -> bool:
    """Turns pinning on (servers on core 0, this process and what it spawns
    on core 1) if asked and possible. Returns whether it is on."""
    on = enabled and pinning_possible()
    if enabled and not on:
        log("cannot pin (fewer than 2 cores or no taskset): servers and load share every core")
    _pinning["on"] = on
    if on:
        try:
            os.sched_setaffinity(0, {int(CLIENT_CPU)})
        except OSError as error:
            log(f"cannot pin this process to core {CLIENT_CPU}: {error}")
    return on


def pinning_on() -> bool:
    return _pinning["on"]


def pinned(argv: list[str], cpu: str) -> list[str]:
    """argv under `taskset -c cpu` when pinning is on."""
    return ["taskset", "-c", cpu, *argv] if _pinning["on"] else list(argv)


def client_argv(argv: list[str]) -> list[str]:
    """A load generator's command line (core 1 when pinning)."""
    return pinned(argv, CLIENT_CPU)


# --------------------------------------------------------------------------
# Machine facts.

def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0] if text else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "not found"


def git_commit() -> str:
    """HEAD's hash; '+dirty' if the tracked files differ from it. Works in a
    git worktree too (where .git is a file, not a directory)."""
    try:
        out = subprocess.run(["git", "--no-optional-locks", "rev-parse", "HEAD"], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
        commit = out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    try:
        out = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain", "-uno"],
                             cwd=REPO, capture_output=True, text=True, timeout=60)
        if out.returncode == 0 and out.stdout.strip():
            commit += "+dirty"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return commit


def machine_info() -> dict:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    sqlite = _first_line(["sh", "-c", "dpkg-query -W -f='${Version}' libsqlite3-0 2>/dev/null"])
    openssl = _first_line(["sh", "-c", "dpkg-query -W -f='${Version}' libssl3 2>/dev/null"])
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram": ram,
        "kernel": platform.release(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(),
        "redis_server": _first_line(["redis-server", "--version"]),
        "redis_benchmark": _first_line(["redis-benchmark", "--version"]),
        "swift": _first_line(["swift", "--version"]),
        "gcc": _first_line(["gcc", "--version"]),
        "sqlite": sqlite,
        "openssl": openssl,
        "python": platform.python_version(),
    }


def machine_markdown(info: dict) -> str:
    return "\n".join([
        "| | |", "|---|---|",
        f"| CPU | {info['cpu']} |",
        f"| cores | {info['cores']} |",
        f"| RAM | {info['ram']} |",
        f"| kernel | {info['kernel']} |",
        f"| redis-server | {info['redis_server']} |",
        f"| redis-benchmark | {info['redis_benchmark']} |",
        f"| swift | {info['swift']} |",
        f"| gcc | {info['gcc']} |",
        f"| libsqlite3 / libssl3 | {info['sqlite']} / {info['openssl']} |",
        "",
        "The machine is a virtual machine with 2 cores: the server under test, the load "
        "generator (`redis-benchmark` or a Python client) and anything else running (another "
        "engineer's Swift build, hypervisor steal time) share them, so absolute figures are "
        "low and noisy; compare servers measured in the same run.",
    ])


def binary_stamp(path: Path = KVCACHE_BIN) -> str:
    """When the kvcache-server binary was built (the tree may have moved on since)."""
    try:
        return _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except OSError:
        return "missing"


def run_stamp(info: dict, command: str, binary: str | None = None) -> str:
    return (f"Run {info['date']} on commit `{info['commit']}`"
            + (f" (`kvcache-server` binary built {binary})" if binary else "") + f": `{command}`")


# --------------------------------------------------------------------------
# BENCHMARKS.md: sections between markers, rewritten by their own script.

SECTION_ORDER = ["machine", "compare", "latency", "memory", "scale", "scale_tier", "engine", "restart", "collections"]
_HEADER = """# Benchmarks

kvcache-server (SQLite file per cache) side by side with Debian's `redis-server`.
This file is generated: each section below is rewritten by the script named in it;
edit the scripts (bench/), not this file.

## How to reproduce

compare, latency, scale, restart and collection_writes (issue 13's targets)
each start their servers on free 127.0.0.1 ports in temporary directories,
pin each server (all its threads) to core 0 and the load to core 1
(`--no-pin`: do not), stop everything they started, and exit 0 when the
targets they check hold, 3 when one does not or could not be measured
(`--no-check`: report only), 1 on a harness failure; `--help` says which
targets. `--quick` is a smoke run of about a minute, `--no-write` leaves
this file alone; each section says the command and commit it came from.

| script | command (full run) | what it measures |
| --- | --- | --- |
| `bench/compare.py` | `python3 bench/compare.py` (~80 min; `--modes everysec,no` ~35 min) | SET, GET, MIXED at `-r 10000` and `-r 1000000`, `-P 1` and `-P 16`, in every persistence mode against the Redis of the same durability |
| `bench/latency.py` | `python3 bench/latency.py` (~15 min) | a probe's GET p50/p99/p99.9 during a mass expiry of 1M keys, sustained ingest and a capacity cut, beside Redis (AOF everysec) |
| `bench/scale.py` | `python3 bench/scale.py` (~10-15 min) | new-key ingest to 5M keys: rate over time, RSS, file and log sizes, against the C ceiling (`bench/engine/ceiling.c --mode ingest`) |
| `bench/scale.py --memory-tier-size 32mb` | `python3 bench/scale.py --memory-tier-size 32mb --keys 2000000 --no-redis --no-ceiling` (~2 min) | RssAnon flat while the file grows to 10x a small memory tier (issue 14) |
| `bench/memory.py` | `python3 bench/memory.py` (~3-5 min) | RssAnon of 1M keys of 100 B beside Redis's, GET -P 16 from all memory and, restarted, from a 32mb memory tier (issue 14) |
| `bench/engine/run.py` | `python3 bench/engine/run.py --build-swift` (a few min) | the Swift engine against the same SQL in C |
| `bench/restart.py` | `python3 bench/restart.py` (~2-3 min) | spawn to first GET after kill -9 with 1M entries and 200k unapplied writes, and after a clean stop, beside Redis reloading its AOF |
| `bench/collection_writes.py` | `python3 bench/collection_writes.py` (~5-10 min) | RPUSH+LPOP, ZADD, HSET on 1K- and 100K-element values, beside Redis |
| `bench/expiry_sweep.py` | `python3 bench/expiry_sweep.py` | the older one-server mass-expiry check (latency.py supersedes it) |
| `bench/ab.sh` | `bench/ab.sh OLD NEW 5` | one change: two binaries, alternating rounds, medians |
| `bench/cpu_ab.sh` | `bench/cpu_ab.sh 5 OLD NEW -- -t set -P 16 -r 10000` | one change: the server's CPU microseconds per request (all threads), alternating rounds, medians; steadier than requests/s on a busy machine |
"""


def _parse_sections(text: str) -> dict[str, str]:
    sections = {}
    for match in re.finditer(r"<!-- BEGIN (\w+) -->\n(.*?)<!-- END \1 -->\n?", text, re.S):
        sections[match.group(1)] = match.group(2)
    return sections


def update_sections(updates: dict[str, str], path: Path = BENCHMARKS_MD) -> None:
    """Replaces (or adds) the named sections of BENCHMARKS.md, keeping the others."""
    sections = _parse_sections(path.read_text()) if path.exists() else {}
    for name, body in updates.items():
        sections[name] = body.rstrip("\n") + "\n"
    names = [n for n in SECTION_ORDER if n in sections] + sorted(n for n in sections if n not in SECTION_ORDER)
    out = [_HEADER]
    for name in names:
        out.append(f"<!-- BEGIN {name} -->\n{sections[name]}<!-- END {name} -->\n")
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(out))
    tmp.replace(path)
    log(f"updated {path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {', '.join(updates)}")


def update_machine_section(info: dict, path: Path = BENCHMARKS_MD) -> None:
    update_sections({"machine": "## Machine\n\n" + machine_markdown(info) + "\n"}, path)


# --------------------------------------------------------------------------
# Servers.

def encode(*args) -> bytes:
    """A request as a RESP array of bulk strings (str, bytes or int arguments)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


# free_port hands out ports below Linux's ephemeral range (32768-60999 by
# default), which the kernel never gives to an outgoing connection or a
# bind to port 0: a port taken from that range (bind to 0, then close) could
# become some client's source port before the server bound it, and the
# server then failed with "Address already in use". Each process (each
# pytest-xdist worker) walks its own block of the range, so two workers
# never race for one port either.
PORT_RANGE = (23000, 32768)
PORT_BLOCK = 1200
_port_cursor = None


def _port_block_start() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...
    blocks = (PORT_RANGE[1] - PORT_RANGE[0]) // PORT_BLOCK
    index = int(worker[2:]) if worker[2:].isdigit() else blocks - 1 - os.getpid() % 2
    return PORT_RANGE[0] + (index % blocks) * PORT_BLOCK


def free_port() -> int:
    """A loopback port nothing listens on, from this process's block."""
    global _port_cursor
    start = _port_block_start()
    if _port_cursor is None:
        _port_cursor = random.randrange(PORT_BLOCK)
    for _ in range(PORT_BLOCK):
        port = start + _port_cursor
        _port_cursor = (_port_cursor + 1) % PORT_BLOCK
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # the whole block busy: any port
        s.bind((HOST, 0))
        return s.getsockname()[1]


# Sanitizer reports go to files of their own (<directory>/sanitizer.<pid>),
# so a check finds them however the server's output is redirected.
SANITIZER_OPTIONS = ("ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS")


def sanitizer_env(directory: str, env: dict | None = None) -> dict:
    """`env` (default: this process's) with each sanitizer's log_path set
    to <directory>/sanitizer; harmless for a binary built without one."""
    env = dict(os.environ if env is None else env)
    for name in SANITIZER_OPTIONS:
        options = env.get(name, "")
        env[name] = (options + ":" if options else "") + f"log_path={directory}/sanitizer"
    return env


def sanitizer_reports(directory: str) -> list[str]:
    """The text of every sanitizer report written under `directory`."""
    reports = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return reports
    for name in names:
        if name.startswith("sanitizer."):
            text = Path(directory, name).read_text(errors="replace")
            if text.strip():
                reports.append(f"{name}:\n{text}")
    return reports


def spawn(argv: list[str], log_path: str, env: dict | None = None, new_session: bool = False) -> subprocess.Popen:
    """Starts a server with stdout and stderr appended to `log_path`."""
    with open(log_path, "ab") as logf:
        return subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=new_session)


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 20.0, host: str = HOST) -> None:
    """Returns once `port` accepts a connection. Raises RuntimeError if the
    process exits first or the port stays closed for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"server did not listen on {port} within {timeout}s")


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 60.0, host: str = HOST) -> None:
    """wait_listening, then waits while PING answers -LOADING (the server
    replays its append-only log after a crash). Raises RuntimeError."""
    deadline = time.monotonic() + timeout
    wait_listening(port, proc, timeout, host)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=2) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(200)
                if reply and not reply.startswith(b"-LOADING"):
                    return
                # -LOADING, or closed without a reply: a server that is
                # exiting (a refused start) or not yet answering. Ask again.
        except OSError:
            # Refused or reset: a server exiting (a refused start, once it
            # listened) or one refusing for another reason (not loading).
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                return
            raise RuntimeError(f"server exited with {proc.returncode}")
        time.sleep(0.02)
    raise RuntimeError(f"server still loading after {timeout}s")


_servers: list["Server"] = []
_tempdirs: list[str] = []


def make_tempdir(prefix: str) -> str:
    path = tempfile.mkdtemp(prefix=prefix)
    _tempdirs.append(path)
    return path


def stop_all_servers() -> None:
    for server in list(_servers):
        server.stop(timeout=10)
    for path in list(_tempdirs):
        shutil.rmtree(path, ignore_errors=True)
        _tempdirs.remove(path)


atexit.register(stop_all_servers)


class ServerFailed(Exception):
    """A server did not start (reported as skipped, not a harness failure)."""


class Server:
    """One server process on a free loopback port, in a directory of its own.

    `argv_for(port, dir)` builds its command line. The process is registered
    so that it is stopped on exit, Ctrl-C or an exception.
    """

    def __init__(self, name: str, argv_for, kind: str, data_dir: str | None = None, pin: bool = True):
        self.name = name
        self.pin = pin
        self.argv_for = argv_for
        self.kind = kind  # "redis" or "kvcache"
        self.dir = data_dir or make_tempdir(f"bench-{name}-")
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.argv: list[str] = []
        self.spawned_at = 0.0
        self.log_path = os.path.join(self.dir, "server.log")

    @property
    def display_argv(self) -> list[str]:
        """The command line with P for the port and D for the directory."""
        argv = self.argv_for("P", "D")
        argv = [str(Path(a).relative_to(REPO)) if a.startswith(str(REPO) + "/") else a for a in argv]
        return pinned(argv, SERVER_CPU) if self.pin else argv

    def spawn(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.argv = self.argv_for(self.port, self.dir)
        self.spawned_at = time.monotonic()
        try:
            argv = pinned(self.argv, SERVER_CPU) if self.pin else self.argv
            self.proc = spawn(argv, self.log_path, new_session=True)
        except OSError as error:
            raise ServerFailed(f"{self.argv[0]}: {error}")
        _servers.append(self)

    def start(self, timeout: float = 30, attempts: int = 3) -> None:
        """Spawns and waits for PING to answer. Raises ServerFailed."""
        last = ""
        for _ in range(attempts):
            self.spawn()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    with Client(self.port, timeout=2) as c:
                        if c.command("PING") == "PONG":
                            return
                except (OSError, RespError):
                    pass
                time.sleep(0.02)
            code = self.proc.poll()
            last = self.log_tail()
            self.stop(timeout=5)
            if code is None:
                raise ServerFailed(f"no PONG within {timeout:.0f} s; log: {last}")
            if "Address already in use" not in last and "address in use" not in last.lower():
                raise ServerFailed(f"exited with code {code}: {last}")
        raise ServerFailed(f"could not bind a port: {last}")

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace").strip().splitlines()
            return " | ".join(text[-lines:])
        except OSError:
            return ""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_bytes(self) -> int | None:
        if not self.alive():
            return None
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def rss_fields(self) -> dict[str, int]:
        """VmRSS, RssAnon and RssFile of the process, in bytes (empty if it is gone)."""
        out: dict[str, int] = {}
        if not self.alive():
            return out
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                name, _, rest = line.partition(":")
                if name in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                    out[name] = int(rest.split()[0]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return out

    def kill(self) -> int | None:
        """SIGKILL (a crash, as kill -9), and waits. Returns the exit code."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        if self in _servers:
            _servers.remove(self)
        self.proc = None
        return code

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM (a clean stop for both servers), then SIGKILL after timeout.
        Returns the exit code."""
        proc = self.proc
        if proc is None:
            return None
        code = proc.poll()
        if code is None:
            try:
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name}: no exit {timeout:.0f} s after SIGTERM; killing pid {proc.pid}")
                proc.kill()
                code = proc.wait()
        if self in _servers:
            _servers.remove(self)
        self.proc = None
        return code


def redis_server(name: str, extra: list[str], data_dir: str | None = None, pin: bool = True) -> Server:
    def argv(port: int, d: str) -> list[str]:
        return ["redis-server", "--port", str(port), "--bind", HOST, "--dir", d,
                "--daemonize", "no", "--logfile", "", *extra]
    return Server(name, argv, "redis", data_dir, pin)


def kvcache_server(name: str, extra: list[str], data_dir: str | None = None, pin: bool = True) -> Server:
    def argv(port: int, d: str) -> list[str]:
        return [str(KVCACHE_BIN), "--port", str(port), "--dir", d, *extra]
    return Server(name, argv, "kvcache", data_dir, pin)


REDIS_NOPERSIST = ["--save", "", "--appendonly", "no"]
REDIS_AOF_EVERYSEC = ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]
REDIS_AOF_ALWAYS = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]


def info_fields(client: "Client", section: str = "") -> dict[str, str]:
    """INFO [section] as a dict of its `name:value` lines."""
    text = client.command(*(["INFO", section] if section else ["INFO"]))
    text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            name, _, value = line.partition(":")
            out[name.strip()] = value.strip()
    return out


def busy_reason(server: Server) -> str | None:
    """Why a server is not idle, or None: kvcache with writes not yet applied
    to SQLite (memtable_bytes, writer_jobs_in_flight), Redis with an AOF
    rewrite or RDB save running or scheduled."""
    with Client(server.port, timeout=10) as c:
        f = info_fields(c, "persistence")
    if server.kind == "kvcache":
        mem, jobs = int(f.get("memtable_bytes", "0") or 0), int(f.get("writer_jobs_in_flight", "0") or 0)
        if f.get("writer_paused", "0") == "1":
            return None  # held on purpose (DEBUG WRITER PAUSE)
        return f"memtable_bytes={mem} writer_jobs_in_flight={jobs}" if mem or jobs else None
    busy = [k for k in ("aof_rewrite_in_progress", "aof_rewrite_scheduled", "rdb_bgsave_in_progress")
            if f.get(k, "0") not in ("0", "")]
    return ",".join(busy) or None


def wait_idle(servers: list[Server], timeout: float = 120, poll: float = 0.1) -> float:
    """Waits until no server has background work (busy_reason), so one
    server's writer or AOF rewrite does not run on core 0 while another is
    measured. Returns the seconds waited; logs and gives up after timeout."""
    t0 = time.monotonic()
    while True:
        reasons = {}
        for s in servers:
            if not s.alive():
                continue
            try:
                r = busy_reason(s)
            except (OSError, RespError, ValueError):
                r = None
            if r:
                reasons[s.name] = r
        if not reasons:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            log(f"still busy after {timeout:.0f} s, measuring anyway: {reasons}")
            return time.monotonic() - t0
        time.sleep(poll)


# --------------------------------------------------------------------------
# The one RESP client of the repository: benchmarks, tools/ and the test
# suite (Tests/python/conftest.py) all read replies with it.

class RespError(Exception):
    """An error reply (raised, or returned with errors="return")."""


class ProtocolViolation(RespError, ValueError):
    """Bytes that are not a RESP reply."""


class Client:
    """One connection. Error replies are raised as RespError
    (errors="raise", the default), returned as RespError instances
    (errors="return"), or turned into whatever a callable makes of the text
    (the test suite compares them as ("error", text) tuples)."""

    def __init__(self, port: int, timeout: float = 30, host: str = HOST, errors="raise"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.errors = errors

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    encode = staticmethod(encode)

    @property
    def buf(self) -> bytearray:
        """Bytes received and not yet read as replies."""
        return self._buf

    @buf.setter
    def buf(self, data) -> None:
        self._buf = bytearray(data)

    def send(self, data) -> None:
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def read_line(self) -> bytes:
        """The next line, without its CR LF."""
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill()

    _line = read_line

    def _error(self, text: str, raise_errors):
        mode = self.errors if raise_errors is None else ("raise" if raise_errors else "return")
        if mode == "raise":
            raise RespError(text)
        if mode == "return":
            return RespError(text)
        return mode(text)

    def read_reply(self, raise_errors: bool | None = None):
        """One RESP2 reply (and RESP3's null): str for a status, int, bytes
        or None for a bulk, a list; an error as the connection's `errors` says."""
        line = self.read_line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return self._error(rest.decode(errors="replace"), raise_errors)
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data = bytes(self.buf[:n])
            del self.buf[:n + 2]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read_reply(raise_errors) for _ in range(n)]
        if kind == b"_":
            return None
        raise ProtocolViolation(f"unexpected reply line {line[:80]!r}")

    reply = read_reply

    def command(self, *args, raise_errors: bool | None = None):
        self.sock.sendall(self.encode(*args))
        return self.read_reply(raise_errors)

    def is_closed(self, timeout: float = 5) -> bool:
        """True when the server closes the connection (EOF) within `timeout`.
        The socket's own timeout is restored after (a read after this waits
        as long as before, not `timeout`)."""
        kept = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        finally:
            self.sock.settimeout(kept)

    def expect_ok(self, count: int) -> None:
        """Reads `count` replies that must all be +OK (fast path for pipelined SETs)."""
        need = count * 5
        while len(self.buf) < need:
            self._fill()
        head = bytes(self.buf[:need])
        if head.count(b"+OK\r\n") == count:
            del self.buf[:need]
            return
        for _ in range(count):
            reply = self.read_reply(raise_errors=False)
            if reply != "OK":
                raise RespError(f"SET answered {reply!r}")


VALUE_100 = b"x" * 100
SET_TEMPLATE = b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$100\r\n" + VALUE_100 + b"\r\n"


def bench_key(n: int) -> bytes:
    """The key redis-benchmark uses for `key:__rand_int__` with -r: 12 digits."""
    return b"key:%012d" % n


def pipelined_sets(client: Client, start: int, stop: int, batch: int = 1000) -> None:
    """SET key:<n> (redis-benchmark's format) to a 100-byte value for n in
    [start, stop), `batch` commands per round trip."""
    for lo in range(start, stop, batch):
        hi = min(stop, lo + batch)
        client.sock.sendall(b"".join([SET_TEMPLATE % n for n in range(lo, hi)]))
        client.expect_ok(hi - lo)


def parse_size(text: str) -> int | None:
    """A size as the server's config reads it: 1024, 32mb, 1gb (kb, mb, gb; k, m, g: powers of 1000)."""
    t = text.strip().lower()
    units = [("kb", 1024), ("mb", 1024 ** 2), ("gb", 1024 ** 3), ("k", 1000), ("m", 1000 ** 2), ("g", 1000 ** 3)]
    for suffix, factor in units:
        if t.endswith(suffix):
            try:
                return int(float(t[:-len(suffix)]) * factor)
            except ValueError:
                return None
    return int(t) if t.isdigit() else None


def file_size(path: str | Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def dir_size(path: str | Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            total += file_size(os.path.join(root, f))
    return total


def mib(n: float | None) -> str:
    return "?" if n is None else f"{n / 1048576:.1f} MiB"


def fmt_rps(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}"


def median(values: list[float]) -> float | None:
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def percentile(samples: list[float], p: float) -> float | None:
    """The p-th percentile (nearest rank) of samples, None if there are none."""
    if not samples:
        return None
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, math.ceil(len(s) * p / 100.0 - 1e-9) - 1))]


def markdown_table(headers: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or ("l" + "r" * (len(headers) - 1))
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])
