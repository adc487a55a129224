#!/usr/bin/env python3
"""Redis 7.0.15's own test files against kvcache-server and redis-server.

Runs each requested unit file of Redis's TCL suite in external mode
(`tclsh tests/test_helper.tcl --host … --port … --single unit/x --tags
-needs:repl`) once against a fresh redis-server 7.0.15 (Debian's) and once
against a fresh kvcache-server, parses the helper's output into one outcome
per test, and compares: of the tests that pass on Redis, how many pass here,
and what stopped the file early (the first blocker).

The suite comes from Debian's source package of redis (`apt-get source`),
fetched once into a cache directory outside the repository. See
docs/redis-tests.md ("How to run") for the setup and the options; `--help`
lists them too. Python 3 standard library only.

Exit status: 0 when kvcache passes at least --min-percent of the tests that
pass on Redis (over all files run), 1 when it passes fewer, 2 when the run
itself could not be made (no suite, no server, bad arguments).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
REDIS_VERSION = "7.0.15"
SOURCE_PACKAGE = "redis"
DEFAULT_CACHE = Path.home() / ".cache" / "kvcache" / f"redis-{REDIS_VERSION}-tests"
DEFAULT_DOC = ROOT / "docs" / "redis-tests.md"
DEFAULT_TAGS = "-needs:repl"

# Issue 15's list, then the files issues 16 and 18 and the protocol, INFO,
# AUTH and ACL work are measured by, then the streams'.
DEFAULT_UNITS = [
    "unit/type/list", "unit/type/list-2", "unit/type/list-3", "unit/type/set",
    "unit/type/hash", "unit/type/zset", "unit/type/incr", "unit/type/string",
    "unit/expire", "unit/keyspace", "unit/scan", "unit/multi", "unit/bitops",
    "unit/hyperloglog", "unit/sort", "unit/dump", "unit/geo", "unit/scripting",
    "unit/functions", "unit/other", "unit/introspection", "unit/introspection-2",
    "unit/pubsub", "unit/tracking", "unit/latency-monitor", "unit/protocol",
    "unit/info", "unit/auth", "unit/acl", "unit/type/stream", "unit/type/stream-cgroups",
]

SERVERS = ("redis", "kvcache")

# Tests skipped on both servers (the helper's --skiptest) because they break
# external mode on redis-server itself: each stops its file there, so the
# rest of the file would measure nothing. Name, then why.
DEFAULT_SKIPS = {
    "unit/type/set": [
        ("SRANDMEMBER with a dict containing long chain",
         "needs the server's pid (get_child_pid), which external mode lacks; it also leaves "
         "rdb-key-save-delay at 2147483647 behind, so a later DEBUG RELOAD hangs"),
    ],
}

# A test's outcome on one server.
OK, ERR, EXCEPTION, TIMEOUT, SKIP, IGNORE, NOT_RUN = (
    "ok", "err", "exception", "timeout", "skip", "ignore", "not-run")


class SetupError(Exception):
    """The run cannot be made: the message says what to do."""


class PortTaken(Exception):
    """The server could not bind its port: another process took it first."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the suite

DEB_SRC_HELP = """\
Redis's test suite comes from Debian's source package, which needs a deb-src
entry beside each bookworm deb entry. As root, once:

    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \\
        > /etc/apt/sources.list.d/debian-src.sources
    apt-get update

(with a one-line /etc/apt/sources.list, copy its `deb …` lines as `deb-src …`),
or pass --setup-apt and this script does the same. Then run it again; it
fetches the suite with `apt-get source redis` into the cache directory."""


def suite_ok(tree: Path) -> bool:
    version_h = tree / "src" / "version.h"
    if not (tree / "tests" / "test_helper.tcl").is_file() or not version_h.is_file():
        return False
    return f'"{REDIS_VERSION}"' in version_h.read_text(errors="replace")


def installed_redis_version() -> str | None:
    """The Debian version of the installed redis-server package, if any."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "redis-server"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def deb_src_stanzas() -> tuple[str, str]:
    """deb-src entries mirroring this machine's bookworm deb entries."""
    out = []
    d = Path("/etc/apt/sources.list.d")
    for f in sorted(d.glob("*.sources")) if d.is_dir() else []:
        for stanza in re.split(r"\n\s*\n", f.read_text(errors="replace")):
            fields = dict(
                (m.group(1).lower(), m.group(2).strip())
                for m in re.finditer(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
            if fields.get("types", "").split() != ["deb"]:
                continue
            if not any(s.startswith("bookworm") for s in fields.get("suites", "").split()):
                continue
            if fields.get("enabled", "yes").lower() == "no":
                continue
            lines = [ln for ln in stanza.strip().splitlines() if not ln.lstrip().startswith("#")]
            out.append("\n".join("Types: deb-src" if ln.lower().startswith("types:") else ln
                                 for ln in lines))
    one_line = []
    for f in [Path("/etc/apt/sources.list"), *sorted(d.glob("*.list"))] if d.is_dir() else []:
        if not f.is_file():
            continue
        for ln in f.read_text(errors="replace").splitlines():
            parts = ln.split()
            if len(parts) >= 3 and parts[0] == "deb" and any(p.startswith("bookworm") for p in parts[1:]):
                one_line.append("deb-src" + ln.strip()[3:])
    text = "\n\n".join(out) + ("\n" if out else "")
    return text, "\n".join(one_line) + ("\n" if one_line else "")


def setup_apt() -> None:
    if os.geteuid() != 0:
        raise SetupError("--setup-apt needs root (it writes /etc/apt/sources.list.d).\n\n" + DEB_SRC_HELP)
    stanzas, lines = deb_src_stanzas()
    if not stanzas and not lines:
        raise SetupError("found no bookworm deb entry in /etc/apt to mirror as deb-src.\n\n" + DEB_SRC_HELP)
    if stanzas:
        Path("/etc/apt/sources.list.d/kvcache-deb-src.sources").write_text(stanzas)
    if lines:
        Path("/etc/apt/sources.list.d/kvcache-deb-src.list").write_text(lines)
    log("redis-tests: added deb-src entries under /etc/apt/sources.list.d/kvcache-deb-src.*; apt-get update")
    r = subprocess.run(["apt-get", "update"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise SetupError(f"apt-get update failed:\n{r.stderr.strip()}")


def apt_source(workdir: Path, spec: str) -> subprocess.CompletedProcess:
    return subprocess.run(["apt-get", "source", "--only-source", spec], cwd=workdir,
                          capture_output=True, text=True, timeout=900)


def fetch_suite(cache: Path, allow_setup_apt: bool) -> Path:
    """The Redis source tree holding tests/, fetched into `cache` if absent."""
    if suite_ok(cache):
        return cache
    if cache.exists() and any(cache.iterdir()):
        raise SetupError(f"{cache} exists but holds no Redis {REDIS_VERSION} source tree; "
                         "remove it or pass another --cache-dir")
    for tool, pkg in (("apt-get", "apt"), ("dpkg-source", "dpkg-dev")):
        if not shutil.which(tool):
            raise SetupError(f"fetching the suite needs {tool} (Debian package {pkg}).")
    cache.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=cache.parent))
    try:
        version = installed_redis_version()
        specs = ([f"{SOURCE_PACKAGE}={version}"] if version and f":{REDIS_VERSION}-" in version else [])
        specs.append(SOURCE_PACKAGE)
        log(f"redis-tests: fetching the Redis {REDIS_VERSION} test suite (apt-get source) into {cache}")
        result = None
        for attempt in (1, 2):
            for spec in specs:
                result = apt_source(work, spec)
                if result.returncode == 0:
                    break
            if result.returncode == 0:
                break
            no_src = "deb-src" in (result.stderr + result.stdout)
            if attempt == 1 and no_src and allow_setup_apt:
                setup_apt()
                continue
            if no_src:
                raise SetupError("apt-get source found no source package: there is no deb-src entry.\n\n"
                                 + DEB_SRC_HELP)
            raise SetupError("apt-get source redis failed:\n" + (result.stderr or result.stdout).strip()
                             + "\n\n" + DEB_SRC_HELP)
        trees = [p for p in work.iterdir() if p.is_dir() and p.name.startswith(f"redis-{REDIS_VERSION}")]
        if not trees or not suite_ok(trees[0]):
            got = sorted(p.name for p in work.iterdir())
            raise SetupError(f"apt-get source gave no Redis {REDIS_VERSION} tree (got {got}); "
                             f"this runner is for {REDIS_VERSION}, as Debian bookworm's redis-server.")
        dsc = sorted(work.glob("*.dsc"))
        (trees[0] / ".kvcache-source").write_text(
            (dsc[0].name if dsc else "unknown") + "\n")
        if cache.exists():
            cache.rmdir()
        shutil.move(str(trees[0]), str(cache))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cache


def source_version(tree: Path) -> str:
    stamp = tree / ".kvcache-source"
    name = stamp.read_text().strip() if stamp.is_file() else "unknown"
    m = re.match(r"redis_(.+)\.dsc$", name)
    return m.group(1) if m else name


# ---------------------------------------------------------------- servers

def ping(port: int, timeout: float = 3.0) -> bool:
    """True when the server answers PING within `timeout` seconds."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            data = b""
            deadline = time.monotonic() + timeout
            while b"\r\n" not in data and time.monotonic() < deadline:
                chunk = s.recv(512)
                if not chunk:
                    return False
                data += chunk
            # +PONG, or -LOADING / -NOAUTH: either way the loop is alive.
            return data[:1] in (b"+", b"-")
    except OSError:
        return False


class Server:
    """One fresh server process on a free loopback port with its own directory."""

    def __init__(self, kind: str, argv_base: list[str], workdir: Path, extra: list[str]):
        self.kind = kind
        self.dir = workdir / "data"
        self.dir.mkdir(parents=True)
        self.log_path = workdir / "server.log"
        self.port = free_port()
        self.argv = argv_base + ["--port", str(self.port), "--bind", HOST, "--dir", str(self.dir)]
        if kind == "redis":
            self.argv += ["--save", "", "--appendonly", "no", "--daemonize", "no",
                          "--enable-debug-command", "yes", "--enable-protected-configs", "yes",
                          "--enable-module-command", "yes", "--logfile", ""]
        else:
            self.argv += ["--enable-debug-command", "yes"]
        self.argv += extra
        self.proc: subprocess.Popen | None = None

    def start(self, wait: float = 30.0) -> None:
        logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if re.search(r"already in use|Address in use", self.log_tail(), re.I):
                    raise PortTaken()
                raise SetupError(f"{self.kind} server exited at start (status {self.proc.returncode}):\n"
                                 f"  {shlex.join(self.argv)}\n" + self.log_tail())
            if ping(self.port, 1.0):
                return
            time.sleep(0.1)
        self.stop()
        raise SetupError(f"{self.kind} server did not answer PING within {wait:.0f}s:\n"
                         f"  {shlex.join(self.argv)}\n" + self.log_tail())

    def exit_status(self) -> str | None:
        """How the process ended, or None while it runs."""
        if self.proc is None or self.proc.poll() is None:
            return None
        rc = self.proc.returncode
        if rc < 0:
            try:
                return f"killed by signal {signal.Signals(-rc).name}"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exited with status {rc}"

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_bytes().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def new_port(self) -> None:
        self.port = free_port()
        i = self.argv.index("--port")
        self.argv[i + 1] = str(self.port)

    def stop(self) -> str | None:
        """SIGTERM, then SIGKILL after 10 s; what went wrong on the way, if anything."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            # The whole process group: it is the server's own session, so a
            # wrapper script's children go too.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
            return "did not exit within 10 s of SIGTERM (killed with SIGKILL)"
        if rc != 0:
            return f"{self.exit_status()} after SIGTERM"
        return None


# ---------------------------------------------------------------- the helper

def run_helper(tree: Path, port: int, unit: str, args, out_path: Path) -> tuple[str, float, bool]:
    """Runs one unit file; returns (output, seconds, killed by our timeout)."""
    argv = ["tclsh", "tests/test_helper.tcl", "--host", HOST, "--port", str(port),
            "--single", unit, "--timeout", str(args.helper_timeout), "--dont-clean",
            # The helper listens for its test clients just below --baseport
            # (21079 by default): two runs on one machine collided there. It
            # checks port and port + 10000 are free; both stay below Linux's
            # ephemeral ports (32768 on), which a client socket could take
            # between that check and the helper's listen. --baseport fixes it.
            "--baseport", str(args.baseport or random.randrange(12000, 22000))]
    if args.tags:
        argv += ["--tags", args.tags]
    if args.durable:
        argv.append("--durable")
    for name in skips_for(unit, args):
        argv += ["--skiptest", name]
    env = dict(os.environ, TERM="dumb")
    start = time.monotonic()
    killed = False
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, cwd=tree, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            proc.wait(args.file_timeout)
        except subprocess.TimeoutExpired:
            killed = True
        finally:
            # The helper's test client runs in the same process group.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    # Paths inside the private copy read as the suite's own (tests/...).
    text = out_path.read_bytes().decode(errors="replace").replace(f"{tree}/", "")
    return text, time.monotonic() - start, killed


def skips_with_reasons(unit: str, args) -> list[list[str]]:
    """[name, why] of each test skipped in `unit` on both servers."""
    out = [] if args.no_default_skips else [[n, why] for n, why in DEFAULT_SKIPS.get(unit, [])]
    return out + [[n, "asked for with --skiptest"] for n in args.skiptest or []]


def skips_for(unit: str, args) -> list[str]:
    return [n for n, _ in skips_with_reasons(unit, args)]


def skips_table(units: list[str], args) -> dict[str, list[list[str]]]:
    return {u: skips_with_reasons(u, args) for u in units if skips_with_reasons(u, args)}


# ---------------------------------------------------------------- parsing

ANSI = re.compile(r"\x1b\[[0-9;]*m")
STATUS_LINE = re.compile(r"^\[(ok|err|exception|skip|ignore|TIMEOUT|ready)\]: ?(.*)$")
DONE_LINE = re.compile(r"^\[\d+/\d+ done\]: (\S+) \((\d+) seconds\)")
OK_BODY = re.compile(r"^(.*) \((\d+) ms\)$")
ERR_HEAD = re.compile(r"^(.*) in (tests/\S+\.tcl)$")
IGNORE_BODY = re.compile(r"^(?:(.*): )?(Tag: .*|Not supported .*|large memory flag not provided)$")
IN_PROGRESS = re.compile(r"=> \(IN PROGRESS\) (.*)$")
TEST_FRAME = re.compile(r'\(procedure "test" line \d+\)\s*\n\s*invoked from within\s*\n"test (.*)')
QUOTED_FRAME = re.compile(r'(?:while executing|invoked from within)\s*\n"(.*?)"?\s*$', re.M)
INTERNAL_FRAME = re.compile(r"\$args|\$client read|^uplevel|^\[srv|^dict |^consume_")


def tcl_word(text: str) -> str:
    """The first Tcl word of `text`: a {braced}, "quoted" or bare word."""
    if text.startswith("{"):
        depth = 0
        for i, c in enumerate(text):
            depth += c == "{"
            depth -= c == "}"
            if depth == 0:
                return text[1:i]
        return text[1:]
    if text.startswith('"'):
        m = re.match(r'"((?:[^"\\]|\\.)*)"', text)
        return m.group(1) if m else text[1:]
    return text.split()[0] if text.split() else text


def name_pattern(name: str) -> re.Pattern | None:
    """A regexp for a test name written with $variables or [commands], else None."""
    if "$" not in name and "[" not in name:
        return None
    parts = re.split(r"\$\{[^}]*\}|\$[A-Za-z0-9_:]+(?:\([^)]*\))?|\[[^\]]*\]", name)
    return re.compile("^" + ".*".join(re.escape(p) for p in parts) + "$", re.S)


def parse_exception(text: str) -> dict:
    """The message, the failing command and the test of an [exception] block."""
    lines = text.splitlines()
    first = lines[0] if lines else ""
    first = re.sub(r"^Executing test client: ", "", first)
    message = first[:-1] if first.endswith(".") else first
    command = None
    for m in QUOTED_FRAME.finditer(text):
        frame = m.group(1).strip()
        if frame and not INTERNAL_FRAME.search(frame):
            command = frame
            break
    test = None
    m = TEST_FRAME.search(text)
    if m:
        test = tcl_word(m.group(1))
    return {"message": message.strip(), "command": command, "test": test}


def parse_output(text: str) -> dict:
    """Per-test outcomes and how the file ended, from the helper's output."""
    lines = ANSI.sub("", text).splitlines()
    tests: list[dict] = []
    res = {"tests": tests, "completed": False, "exception": None, "timeout": None,
           "block_errors": [], "ignored_blocks": 0}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        m = DONE_LINE.match(line)
        if m:
            res["completed"] = True
            continue
        m = STATUS_LINE.match(line)
        if not m:
            continue
        status, body = m.group(1), m.group(2)
        if status == "ok":
            mm = OK_BODY.match(body)
            tests.append({"name": mm.group(1) if mm else body, "status": OK,
                          "ms": int(mm.group(2)) if mm else None})
        elif status == "err":
            detail = []
            while i < len(lines) and not (STATUS_LINE.match(lines[i]) or DONE_LINE.match(lines[i])
                                          or lines[i].startswith("Testing ")
                                          or lines[i].strip() == "The End"):
                detail.append(lines[i])
                i += 1
            mm = ERR_HEAD.match(body)
            if mm:
                tests.append({"name": mm.group(1), "status": ERR,
                              "error": "\n".join(detail).strip()})
            else:  # --durable: an error outside any test
                res["block_errors"].append("\n".join([body] + detail).strip())
        elif status == "exception":
            block = "\n".join([body] + lines[i:])
            i = len(lines)
            exc = parse_exception(block)
            exc["text"] = block.strip()
            res["exception"] = exc
        elif status == "TIMEOUT":
            test = None
            while i < len(lines) and not STATUS_LINE.match(lines[i]):
                mm = IN_PROGRESS.search(lines[i])
                if mm:
                    test = mm.group(1).strip()
                i += 1
            res["timeout"] = {"test": test}
        elif status == "skip":
            tests.append({"name": body, "status": SKIP})
        elif status == "ignore":
            mm = IGNORE_BODY.match(body)
            if mm and mm.group(1):
                tests.append({"name": mm.group(1), "status": IGNORE, "error": mm.group(2)})
            else:
                res["ignored_blocks"] += 1
    return res


def keyed(tests: list[dict]) -> dict[str, dict]:
    """Tests by name, a repeated name numbered in order of appearance ("name (#2)")."""
    seen: dict[str, int] = {}
    out: dict[str, dict] = {}
    for t in tests:
        n = seen.get(t["name"], 0) + 1
        seen[t["name"]] = n
        key = t["name"] if n == 1 else f"{t['name']} (#{n})"
        out[key] = t
    return out


# ---------------------------------------------------------------- one file, one server

def run_file(kind: str, unit: str, tree: Path, args, logdir: Path) -> dict:
    """Runs `unit` against a fresh server of `kind`; the parsed result and how it ended."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=logdir))
    if kind == "redis":
        server = Server(kind, [args.redis_server], workdir, shlex.split(args.redis_args))
    else:
        server = Server(kind, [str(args.kvcache)], workdir, shlex.split(args.kvcache_args))
    out_path = workdir / "helper.out"
    shutdown = None
    try:
        for attempt in range(3):
            try:
                server.start()
                break
            except PortTaken:
                # Another process took the free port first: a new port, once more.
                server.stop()
                server.new_port()
        else:
            raise SetupError(f"{kind} server could not bind a free port three times:\n"
                             + server.log_tail())
        text, seconds, killed = run_helper(tree, server.port, unit, args, out_path)
        dead = server.exit_status()
        alive = dead is None and ping(server.port, 5.0)
    finally:
        shutdown = server.stop()
        if not args.keep_data:
            shutil.rmtree(server.dir, ignore_errors=True)
    res = parse_output(text)
    res["seconds"] = round(seconds, 1)
    res["log_dir"] = str(workdir)
    res["stop"] = describe_stop(res, killed, dead, alive, server, args)
    if shutdown:
        # A clean SIGTERM shutdown is part of what a file checks, run to its end or not.
        res["shutdown"] = shutdown
    return res


def describe_stop(res: dict, killed: bool, dead: str | None, alive: bool,
                  server: Server, args) -> dict | None:
    """What stopped the file before its end, or None when it ran to the end."""
    exc, tmo = res["exception"], res["timeout"]
    if dead:
        stop = {"kind": "crash", "reason": f"server {dead}",
                "server_log_tail": server.log_tail(25)}
    elif (killed or tmo) and not alive:
        stop = {"kind": "hang", "reason": "server stopped answering PING"}
    elif killed:
        stop = {"kind": "timeout", "reason": f"file still running after {args.file_timeout}s"}
    elif tmo:
        stop = {"kind": "timeout",
                "reason": f"no progress for {args.helper_timeout}s (the server still answers PING)"}
    elif exc:
        stop = {"kind": "exception", "reason": exc["message"]}
    elif res["completed"]:
        return None
    else:
        stop = {"kind": "helper", "reason": "the helper stopped without finishing the file"}
    if exc:
        stop["message"] = exc["message"]
        stop["command"] = exc["command"]
        stop["test"] = exc["test"]
        stop["in_test"] = exc["test"] is not None
    if tmo and tmo.get("test"):
        stop["test"] = tmo["test"]
        stop["in_test"] = True
    return stop


# ---------------------------------------------------------------- comparing

def settle(res: dict, order: list[str]) -> dict[str, dict]:
    """One server's outcomes by test key, the stopped-at test and the rest marked.

    `order` is the reference list of test keys (Redis's run) used to find the
    test that was running when the file stopped, and those never reached."""
    out = keyed(res["tests"])
    stop = res.get("stop")
    if not stop:
        return out
    if stop.get("in_test") and stop.get("test"):
        name = stop["test"]
        pat = name_pattern(name)
        status = EXCEPTION if stop["kind"] == "exception" else TIMEOUT
        if stop["kind"] in ("crash", "hang"):
            status = stop["kind"]
        target = None
        for key in order:
            if key in out:
                continue
            base = re.sub(r" \(#\d+\)$", "", key)
            if (pat.match(base) if pat else name in (key, base)):
                target = key
                break
        if target is None and not pat and name not in out:
            target = name
        if target is not None:
            stop["test"] = target
            out[target] = {"name": target, "status": status,
                           "error": stop.get("message") or stop["reason"]}
    for key in order:
        if key not in out:
            out[key] = {"name": key, "status": NOT_RUN}
    return out


def blocker_text(stop: dict | None) -> str:
    if not stop:
        return ""
    where = f"in test '{stop['test']}'" if stop.get("in_test") and stop.get("test") else \
        "in setup, outside any test"
    msg = stop.get("message") or ""
    if stop["kind"] == "exception":
        return f"{short(msg, 110)} ({where})"
    if stop["kind"] in ("crash", "hang"):
        tail = f": {short(msg, 80)}" if msg else ""
        return f"{stop['reason']} ({where}){tail}"
    return f"{stop['reason']} ({where})"


def short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def compare(unit: str, redis: dict, kv: dict) -> dict:
    redis_order = list(keyed(redis["tests"]).keys())
    r_out = settle(redis, redis_order)
    kv_out = settle(kv, list(r_out.keys()))
    names = list(r_out.keys()) + [k for k in kv_out if k not in r_out]
    tests = []
    for name in names:
        r, k = r_out.get(name), kv_out.get(name)
        row = {"name": name, "redis": r["status"] if r else NOT_RUN,
               "kvcache": k["status"] if k else NOT_RUN}
        for side, t in (("redis", r), ("kvcache", k)):
            if t and t.get("error") and t["status"] not in (OK, SKIP):
                row[f"{side}_error"] = t["error"][:4000]
        tests.append(row)
    passed_r = [t for t in tests if t["redis"] == OK]
    passed_k = [t for t in passed_r if t["kvcache"] == OK]
    return {
        "file": unit,
        "passed_on_redis": len(passed_r),
        "passed_on_kvcache": len(passed_k),
        "passed_only_on_kvcache": sum(1 for t in tests if t["kvcache"] == OK and t["redis"] != OK),
        "percent": round(100.0 * len(passed_k) / len(passed_r), 1) if passed_r else None,
        "first_blocker": blocker_text(kv.get("stop")),
        "redis_stopped": blocker_text(redis.get("stop")),
        "redis": summary_of(redis),
        "kvcache": summary_of(kv),
        "tests": tests,
    }


def summary_of(res: dict) -> dict:
    counts: dict[str, int] = {}
    for t in res["tests"]:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    out = {k: res[k] for k in ("completed", "seconds", "stop", "block_errors", "log_dir", "shutdown")
           if k in res}
    out["counts"] = counts
    if res.get("exception"):
        out["exception_text"] = res["exception"]["text"][:6000]
    return out


def totals(files: list[dict]) -> dict:
    r = sum(f["passed_on_redis"] for f in files)
    k = sum(f["passed_on_kvcache"] for f in files)
    return {"passed_on_redis": r, "passed_on_kvcache": k,
            "percent": round(100.0 * k / r, 1) if r else None,
            "files_run_to_end_on_kvcache": sum(1 for f in files if f["kvcache"]["completed"]
                                               and not f["kvcache"].get("stop")),
            "files": len(files)}


# ---------------------------------------------------------------- output

def pct(p) -> str:
    return "n/a" if p is None else f"{p:.1f}%"


def print_table(files: list[dict], tot: dict, out=sys.stdout) -> None:
    w = max([len("file")] + [len(f["file"]) for f in files])
    print(f"{'file':<{w}}  {'redis':>6}  {'kvcache':>7}  {'%':>6}  first blocker", file=out)
    for f in files:
        print(f"{f['file']:<{w}}  {f['passed_on_redis']:>6}  {f['passed_on_kvcache']:>7}  "
              f"{pct(f['percent']):>6}  {short(f['first_blocker'], 100) or ('(ran to the end)' if f['passed_on_redis'] else '(nothing runs in external mode)')}",
              file=out)
        if f["redis_stopped"]:
            print(f"{'':<{w}}  (Redis stopped early too: {short(f['redis_stopped'], 90)})", file=out)
    print(f"{'total':<{w}}  {tot['passed_on_redis']:>6}  {tot['passed_on_kvcache']:>7}  "
          f"{pct(tot['percent']):>6}", file=out)


def md(text: str) -> str:
    """Text safe inside a Markdown table cell or list item."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*") \
        .replace("_", "\\_").replace("`", "'")


def code(text: str) -> str:
    """A code span for a list item (not a table cell: there `|` would need escaping)."""
    text = text.replace("`", "'")
    return f"`{text}`" if text else ""


HOW_TO_RUN = """\
## How to run

The runner is `tools/redis-tests/run.py` (Python 3, standard library only). It
needs `tclsh` (Debian package `tcl`), Debian's `redis-server` 7.0.15 and a
release build of the server:

```sh
export PATH=/opt/swift/usr/bin:$PATH
swift build -c release                      # .build/release/kvcache-server
python3 tools/redis-tests/run.py --json /tmp/redis-tests.json --write-doc
```

The first run fetches Redis's test suite with `apt-get source redis` (the
version matching the installed `redis-server`, 7.0.15) into
`~/.cache/kvcache/redis-7.0.15-tests` (`--cache-dir` or
`KVCACHE_REDIS_TESTS` to change it); the sources never enter this repository.
`apt-get source` needs a `deb-src` entry beside each bookworm `deb` entry.
As root, once:

```sh
sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \\
    > /etc/apt/sources.list.d/debian-src.sources
apt-get update
```

or pass `--setup-apt`, which writes the same entries and runs `apt-get
update`. Without them the runner stops and says so.

For each file, the runner starts a fresh redis-server (`--save ''
--appendonly no --enable-debug-command yes`, with protected configs and
MODULE enabled as Redis's own test config has them) and a fresh
kvcache-server (`--enable-debug-command yes`), each on a free loopback port
with a temporary directory, and runs
`tclsh tests/test_helper.tcl --host 127.0.0.1 --port P --single unit/x --tags -needs:repl`
against each, from a private copy of the suite. A file is bounded by
`--file-timeout` (default 600 s) and the helper's own no-progress
`--helper-timeout` (default 180 s). A server that dies is reported as a
crash (with its log's tail), one that stops answering PING as a hang; the
file's remaining tests count as not run and the next file starts on a fresh
server.

Useful options:

- `unit/type/list unit/scan …`: run only these files (default: the list in
  this page's table).
- `--kvcache PATH` (default `.build/release/kvcache-server`),
  `--redis-server PATH`, `--kvcache-args '…'`, `--redis-args '…'`.
- `--json PATH`: every test's outcome on both servers, by file and name.
- `--write-doc [PATH]`: regenerate this page (default `docs/redis-tests.md`).
- `--redis-results JSON`: take Redis's outcomes from an earlier `--json` file
  instead of running redis-server again (halves the time).
- `--from-json JSON`: run nothing; print the table, `--write-doc` and
  `--min-percent` from an earlier `--json` file.
- `--min-percent N`: exit 1 when kvcache passes fewer than N% of the tests
  that pass on Redis, over all files run (for CI).
- `--skiptest NAME` (repeatable; a name or `/regexp`): skip a test on both
  servers. The tests under "What is left out" are skipped unless
  `--no-default-skips`.
- `--durable`: pass `--durable` to the helper, so an exception fails one test
  instead of stopping the file (not how the table below is measured).
- `--log-dir DIR`: where the helper's output and the server logs of each
  file go (default: a new directory under `/tmp`, printed at the end).

Reading the table: *passed on Redis* counts the tests that pass against
redis-server in the same run; *passed on kvcache* counts those of them that
also pass against kvcache-server. The *first blocker* is what stopped the file
early on kvcache: a Tcl exception (usually an error reply such as an unknown
command or CONFIG parameter, raised outside an assertion), a timeout, a
crash or a hang; the tests after it were not run. A file without a blocker
ran to its end. Tests with the same name in one file are numbered
(`name (#2)`) in order of appearance.
"""


# Why each test that passes on Redis fails here, by file and test name:
# printed after the test's error in the doc.
FAILURE_REASONS = {
    ("unit/type/string", "SETRANGE against integer-encoded key"):
        "OBJECT ENCODING is read off the value's bytes here (a value that reads as an integer is `int`), "
        "not from how it was written; Redis says `raw` once SETRANGE has changed the string",
    ("unit/scripting", "SORT BY <constant> output gets ordered for scripting"):
        "Redis sorts the output of SORT BY <constant> on a set when a script calls it (for deterministic "
        "replication of scripts); here it came in the set's order (fixed after the run of 2026-12-01: "
        "test_sort_by_a_constant_is_sorted_inside_a_script)",
    ("unit/scripting", "Consistent eval error reporting"):
        "INFO commandstats did not count EVAL as a failed call when the script's refused redis.call was its "
        "error (fixed after the run of 2026-12-01: "
        "test_a_script_failing_on_a_refused_call_counts_as_a_failed_eval)",
    ("unit/introspection-2", "MIGRATE command is marked with movablekeys"):
        "MIGRATE (moving keys to another server) is not implemented (README, Differences), so COMMAND INFO "
        "has no entry for it",
}


def render_doc(data: dict) -> str:
    files, tot = data["files"], data["total"]
    o = []
    o.append("# Redis's own tests against kvcache-server\n")
    o.append("<!-- Generated by tools/redis-tests/run.py --write-doc; edit the script, not this file. -->\n")
    o.append(
        f"Redis {REDIS_VERSION}'s TCL test files (Debian source package "
        f"`redis {data['debian_source_version']}`), run in external mode with "
        f"`--tags {data['tags']}`{' --durable' if data['durable'] else ''} against redis-server "
        f"{data['redis_server_version']} and against kvcache-server "
        f"(commit `{data['kvcache_commit']}`), each file on a fresh server. "
        f"Generated {data['generated']}; the run took {fmt_secs(data['runtime_seconds'])}.\n")
    o.append(f"Over these {tot['files']} files kvcache passes **{tot['passed_on_kvcache']} of the "
             f"{tot['passed_on_redis']}** tests that pass on Redis ({pct(tot['percent'])}); "
             f"{tot['files_run_to_end_on_kvcache']} of the files run to their end.\n")
    o.append("## Summary\n")
    o.append("| file | passed on Redis | passed on kvcache | % | first blocker on kvcache |")
    o.append("|---|---:|---:|---:|---|")
    for f in files:
        blocker = md(short(f["first_blocker"], 160)) if f["first_blocker"] else (
            "ran to the end" if f["passed_on_redis"] else "nothing runs in external mode")
        if f["redis_stopped"]:
            blocker += f" (Redis also stopped: {md(short(f['redis_stopped'], 80))})"
        o.append(f"| {f['file']} | {f['passed_on_redis']} | {f['passed_on_kvcache']} | "
                 f"{pct(f['percent'])} | {blocker} |")
    o.append(f"| **total** | **{tot['passed_on_redis']}** | **{tot['passed_on_kvcache']}** | "
             f"**{pct(tot['percent'])}** | |")
    o.append("")
    crashes = [f for f in files if (f["kvcache"].get("stop") or {}).get("kind") in ("crash", "hang")]
    bad_exits = [f for f in files if f["kvcache"].get("shutdown")]
    if crashes or bad_exits:
        o.append("## Crashes and hangs\n")
        for f in bad_exits:
            o.append(f"- **{f['file']}**: after the file, kvcache-server {md(f['kvcache']['shutdown'])}.")
        for f in crashes:
            s = f["kvcache"]["stop"]
            o.append(f"- **{f['file']}**: {md(blocker_text(s))}"
                     + (f"; command {code(short(s['command'], 120))}" if s.get("command") else ""))
            if s.get("server_log_tail"):
                o.append("\n  ```\n" + "\n".join("  " + ln for ln in s["server_log_tail"].splitlines()[-10:])
                         + "\n  ```")
        o.append("")
    skipped = [(u, n, why) for u, lst in data.get("skips", {}).items() for n, why in lst]
    o.append("## What is left out\n")
    if skipped:
        o.append("Skipped on both servers (the helper's `--skiptest`), because they break "
                 "external mode on redis-server itself, or need what this server leaves out on "
                 "purpose, and stop their file there:\n")
        for u, n, why in skipped:
            o.append(f"- {u}: {md(n)} — {md(why)}.")
        o.append("")
    nothing = [f["file"] for f in files if not f["passed_on_redis"] and not f["redis_stopped"]]
    if nothing:
        o.append(f"No test of {', '.join(nothing)} runs in external mode: every one is tagged "
                 "`external:skip` (or `needs:repl`). Measuring them needs the helper to start "
                 "the server itself, which this runner does not do.\n")
    o.append("Tests tagged `needs:repl` or `external:skip` are not run on either server and are "
             "not counted.\n")
    o.append(HOW_TO_RUN)
    o.append("## Per file: passing on Redis, not on kvcache\n")
    for f in files:
        missing = [t for t in f["tests"] if t["redis"] == OK and t["kvcache"] != OK]
        o.append(f"### {f['file']}\n")
        if not f["passed_on_redis"]:
            o.append("No test of this file passes on Redis in external mode"
                     + (" (all are tagged external:skip or needs:repl)." if not f["redis_stopped"] else ".")
                     + "\n")
            continue
        o.append(f"{f['passed_on_kvcache']} of {f['passed_on_redis']} pass on kvcache"
                 + (f"; first blocker: {md(short(f['first_blocker'], 200))}." if f["first_blocker"]
                    else "; the file runs to its end.")
                 + ("" if not f["passed_only_on_kvcache"]
                    else f" {f['passed_only_on_kvcache']} pass on kvcache but not on Redis.") + "\n")
        failed = [t for t in missing if t["kvcache"] != NOT_RUN]
        not_run = [t for t in missing if t["kvcache"] == NOT_RUN]
        for t in failed:
            # An assertion's "(context: … proc ::test)" locates it in the suite: long, and
            # the same for every test; the JSON keeps it.
            err = (t.get("kvcache_error") or "").split(" (context: ")[0]
            why = FAILURE_REASONS.get((f["file"], t["name"]))
            o.append(f"- {md(t['name'])} — {t['kvcache']}: {code(short(err, 240))}"
                     + (f". Why: {md(why)}." if why else ""))
        if failed:
            o.append("")
        if not_run:
            o.append(f"<details><summary>{len(not_run)} not run (the file stopped at its blocker)"
                     "</summary>\n")
            for t in not_run:
                o.append(f"- {md(t['name'])}")
            o.append("\n</details>\n")
    return "\n".join(o).rstrip() + "\n"


def fmt_secs(s: float) -> str:
    s = int(round(s))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


# ---------------------------------------------------------------- main

def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (head or "unknown") + ("+changes" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def redis_server_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SetupError(f"cannot run {path}: {e}; install Debian's redis-server "
                         f"(apt-get install redis-server) or pass --redis-server")
    m = re.search(r"v=(\S+)", out)
    return m.group(1) if m else "unknown"


def normalize_unit(u: str) -> str:
    u = u.removesuffix(".tcl").removeprefix("tests/")
    return u if "/" in u and u.split("/")[0] in ("unit", "integration") else f"unit/{u}"


def parse_args(argv: list[str]):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("units", nargs="*", help="unit files (unit/type/list or type/list); "
                   "default: the 31 files of docs/redis-tests.md")
    p.add_argument("--cache-dir", type=Path,
                   default=Path(os.environ.get("KVCACHE_REDIS_TESTS", DEFAULT_CACHE)),
                   help=f"where the Redis source tree is kept (default {DEFAULT_CACHE})")
    p.add_argument("--setup-apt", action="store_true",
                   help="as root, add deb-src entries mirroring bookworm's and apt-get update when needed")
    p.add_argument("--fetch-only", action="store_true", help="fetch the suite and stop")
    p.add_argument("--kvcache", type=Path, default=ROOT / ".build" / "release" / "kvcache-server")
    p.add_argument("--redis-server", default=shutil.which("redis-server") or "/usr/bin/redis-server")
    p.add_argument("--kvcache-args", default="", help="extra arguments for kvcache-server")
    p.add_argument("--redis-args", default="", help="extra arguments for redis-server")
    p.add_argument("--redis-results", type=Path,
                   help="reuse Redis's outcomes from an earlier --json file instead of running it")
    p.add_argument("--tags", default=DEFAULT_TAGS, help=f"the helper's --tags (default {DEFAULT_TAGS})")
    p.add_argument("--durable", action="store_true", help="the helper's --durable")
    p.add_argument("--skiptest", action="append", metavar="NAME",
                   help="the helper's --skiptest (a name, or /regexp), on both servers; may repeat")
    p.add_argument("--no-default-skips", action="store_true",
                   help="do not skip the tests that break external mode on Redis itself")
    p.add_argument("--file-timeout", type=int, default=600, help="seconds per file and server")
    p.add_argument("--baseport", type=int, default=0,
                   help="the helper's --baseport (its own listener takes one of the 32 ports below it): "
                        "to run beside another session's helper")
    p.add_argument("--helper-timeout", type=int, default=180,
                   help="the helper's --timeout: seconds without progress")
    p.add_argument("--json", type=Path, help="write every test's outcome here")
    p.add_argument("--write-doc", nargs="?", const=DEFAULT_DOC, type=Path,
                   help=f"render the Markdown report (default path {DEFAULT_DOC.relative_to(ROOT)})")
    p.add_argument("--min-percent", type=float, default=0.0,
                   help="exit 1 when kvcache passes fewer than this %% of Redis's passing tests")
    p.add_argument("--log-dir", type=Path, help="keep the helper output and server logs here")
    p.add_argument("--from-json", type=Path,
                   help="run nothing: print the table, --write-doc and --min-percent from an earlier --json")
    p.add_argument("--keep-data", action="store_true", help="keep each server's data directory")
    return p.parse_args(argv)


def report(data: dict, args) -> int:
    """Prints the table, writes what was asked for; the exit status of --min-percent."""
    tot = data["total"]
    print_table(data["files"], tot)
    if args.json and not args.from_json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.write_doc:
        args.write_doc.parent.mkdir(parents=True, exist_ok=True)
        args.write_doc.write_text(render_doc(data))
        print(f"wrote {args.write_doc}")
    if tot["percent"] is not None and tot["percent"] < args.min_percent:
        print(f"kvcache passes {pct(tot['percent'])} of Redis's passing tests, "
              f"under --min-percent {args.min_percent}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.from_json:
        return report(json.loads(args.from_json.read_text()), args)
    units = [normalize_unit(u) for u in args.units] or list(DEFAULT_UNITS)
    started = time.monotonic()
    try:
        tree = fetch_suite(args.cache_dir.expanduser(), args.setup_apt)
        if args.fetch_only:
            print(tree)
            return 0
        missing = [u for u in units if not (tree / "tests" / f"{u}.tcl").is_file()]
        if missing:
            raise SetupError(f"no such test file in the suite: {', '.join(missing)}")
        if not shutil.which("tclsh"):
            raise SetupError("tclsh not found: apt-get install tcl")
        if not args.kvcache.is_file():
            raise SetupError(f"{args.kvcache} not found: build it with "
                             "`swift build -c release` or pass --kvcache")
        baseline = None
        if args.redis_results:
            baseline = json.loads(args.redis_results.read_text())
            redis_version = baseline.get("redis_server_version", "unknown")
            mine = {"tags": args.tags, "durable": args.durable,
                    "skiptest": {u: skips_for(u, args) for u in units if skips_for(u, args)}}
            theirs = {"tags": baseline.get("tags"), "durable": baseline.get("durable"),
                      "skiptest": {u: [n for n, _ in v] for u, v in baseline.get("skips", {}).items()
                                   if u in units}}
            if mine != theirs:
                raise SetupError(f"{args.redis_results} was made with other options than this run "
                                 f"(it: {theirs}; this run: {mine}); run redis-server again")
        else:
            redis_version = redis_server_version(args.redis_server)
            if redis_version != REDIS_VERSION:
                raise SetupError(f"{args.redis_server} is Redis {redis_version}; the suite is "
                                 f"{REDIS_VERSION} (Debian bookworm's redis-server)")
    except SetupError as e:
        log(f"redis-tests: {e}")
        return 2

    logdir = args.log_dir or Path(tempfile.mkdtemp(prefix="kvcache-redis-tests-"))
    logdir.mkdir(parents=True, exist_ok=True)
    # A private copy of tests/: the helper writes into tests/tmp, and runs
    # made at the same time must not clean up each other's files.
    private = Path(tempfile.mkdtemp(prefix="suite-", dir=logdir))
    shutil.copytree(tree / "tests", private / "tests", symlinks=True)

    files = []
    try:
        for n, unit in enumerate(units, 1):
            results = {}
            for kind in SERVERS:
                if kind == "redis" and baseline:
                    prev = next((f for f in baseline["files"] if f["file"] == unit), None)
                    if prev is None:
                        log(f"redis-tests: {unit} is not in {args.redis_results}; running redis-server")
                    else:
                        results[kind] = redis_result_from(prev)
                        continue
                log(f"redis-tests: [{n}/{len(units)}] {unit} on {kind} …")
                try:
                    results[kind] = run_file(kind, unit, private, args, logdir)
                except SetupError as e:
                    log(f"redis-tests: {e}")
                    return 2
                r = results[kind]
                c = keyed(r["tests"])
                log(f"redis-tests:   {sum(1 for t in c.values() if t['status'] == OK)} ok, "
                    f"{sum(1 for t in c.values() if t['status'] == ERR)} err in {r['seconds']}s"
                    + (f"; stopped: {short(blocker_text(r['stop']), 120)}" if r["stop"] else ""))
            files.append(compare(unit, results["redis"], results["kvcache"]))
    except KeyboardInterrupt:
        log("redis-tests: interrupted")
        return 130
    finally:
        shutil.rmtree(private, ignore_errors=True)

    runtime = time.monotonic() - started
    tot = totals(files)
    data = {
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "redis_version": REDIS_VERSION,
        "debian_source_version": source_version(tree),
        "redis_server_version": redis_version,
        "kvcache_commit": git_commit(),
        "kvcache_binary": str(args.kvcache),
        "tags": args.tags,
        "durable": args.durable,
        "skips": skips_table(units, args),
        "runtime_seconds": round(runtime, 1),
        "total": tot,
        "files": files,
    }
    status = report(data, args)
    print(f"runtime {fmt_secs(runtime)}; logs in {logdir}")
    return status


def redis_result_from(prev: dict) -> dict:
    """Redis's parsed result rebuilt from an earlier --json file's file entry."""
    tests = []
    for t in prev["tests"]:
        if t["redis"] == NOT_RUN:
            continue
        tests.append({"name": re.sub(r" \(#\d+\)$", "", t["name"]), "status": t["redis"],
                      **({"error": t["redis_error"]} if t.get("redis_error") else {})})
    r = dict(prev["redis"])
    r["tests"] = [t for t in tests if t["status"] not in (EXCEPTION, TIMEOUT, "crash", "hang")]
    r.setdefault("completed", False)
    r.setdefault("stop", None)
    r["exception"] = None
    r["timeout"] = None
    return r


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
