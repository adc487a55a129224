"""Fixtures for the end-to-end suite: start the real server binary on a free
loopback port with a temporary data directory, and talk to it with redis-py,
raw sockets, redis-cli and nc.

Environment (docs/testing.md):
- KVCACHE_TARGET=redis runs the same tests against Debian's redis-server, to
  check that what they expect is what Redis does; tests of this server's own
  behaviour are marked `kvcache_only` and skipped there.
- KVCACHE_BIN: the server binary (default .build/debug/kvcache-server).
- KVCACHE_MODE: the persistence mode (everysec, always, no-aof).
- KVCACHE_REQUIRE_TOOLS=1 (CI): a missing redis-server, redis-cli, nc, nutcracker,
  redis-benchmark, prometheus-redis-exporter, prometheus, promtool or
  lua5.1 fails the tests that need it instead of skipping them.
- KVCACHE_SLOW=0 skips the tests marked `slow` (10,000 clients, crash
  cycles): CI runs them in one pass of the suite only.

Every server a test starts writes sanitizer reports (ASan, LSan, TSan) to
files of their own in its directory; after each test, a report, a server
that died on its own, or a SIGTERM that did not end in exit 0 fails it.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402  the one RESP client and server spawner of the repository

TARGET = os.environ.get("KVCACHE_TARGET", "kvcache")
BIN = os.environ.get("KVCACHE_BIN", os.path.join(ROOT, ".build", "debug", "kvcache-server"))
# KVCACHE_MODE picks the persistence mode the suite runs in: everysec
# (appendonly yes, appendfsync everysec: the default), always (appendfsync
# always) or no-aof (appendonly no: writes reach SQLite within a second).
MODE = os.environ.get("KVCACHE_MODE", "everysec")
MODE_ARGS = {"everysec": [], "always": ["--appendfsync", "always"], "no-aof": ["--appendonly", "no"]}[MODE]
# Kept for the tools' smoke tests: "commit" when acknowledged writes survive a crash.
DURABILITY = "everysec" if MODE == "no-aof" else "commit"
REQUIRE_TOOLS = os.environ.get("KVCACHE_REQUIRE_TOOLS") == "1"
RUN_SLOW = os.environ.get("KVCACHE_SLOW", "1") != "0"


REDIS = TARGET == "redis"
# Redis behaviour this server documents differently (README, "Differences from Redis").
redis_only = pytest.mark.skipif(not REDIS, reason="Redis behaviour that kvcache-server documents differently")

free_port = benchlib.free_port


def wait_for_blocked(c, n, timeout=5):
    """Waits until INFO says `n` clients are blocked (a raw client `c`)."""
    deadline = time.time() + timeout
    while b"blocked_clients:%d\r\n" % n not in c.command("INFO", "clients"):
        if time.time() > deadline:
            raise AssertionError("expected %d blocked clients" % n)
        time.sleep(0.02)


def require_tool(name):
    """The tool's path; a skip when it is missing, or a failure under
    KVCACHE_REQUIRE_TOOLS=1 (CI installs every tool, so a skip there would
    hide a test that never ran)."""
    path = shutil.which(name)
    if path is None:
        message = "%s is not installed" % name
        if REQUIRE_TOOLS:
            pytest.fail(message + " (KVCACHE_REQUIRE_TOOLS=1)")
        pytest.skip(message)
    return path


def pytest_configure(config):
    config.addinivalue_line("markers", "kvcache_only: behaviour of kvcache-server that Redis does not share")
    config.addinivalue_line("markers", "commit_durability: needs acknowledged writes to survive a crash (not appendonly no)")
    config.addinivalue_line("markers", "slow: long tests (many clients, crash cycles) run in one pass only; "
                                       "KVCACHE_SLOW=0 skips them")
    config.addinivalue_line("markers", "loop_only: long runs of commands on the loop thread alone (random "
                                       "differential runs against redis-server, nodes behind nutcracker), which "
                                       "add no thread interplay the rest lacks: the ThreadSanitizer pass skips them")


def pytest_collection_modifyitems(config, items):
    if not RUN_SLOW:
        skip_slow = pytest.mark.skip(reason="slow: run in another pass (KVCACHE_SLOW=0)")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip_slow)
    if TARGET != "redis":
        if DURABILITY != "commit":
            skip = pytest.mark.skip(reason="a crash may lose the last second of writes under appendonly no")
            for item in items:
                if "commit_durability" in item.keywords:
                    item.add_marker(skip)
        return
    skip = pytest.mark.skip(reason="kvcache-server behaviour, not Redis's")
    for item in items:
        if "kvcache_only" in item.keywords:
            item.add_marker(skip)


def wait_for_port(port, proc, timeout=20.0):
    benchlib.wait_listening(port, proc, timeout)


# Servers started and not yet cleaned up: checked after every test.
LIVE_SERVERS = []


class Server:
    """One running server process. `args` are extra `--name value` options.
    `target` is "kvcache" or "redis" (default: KVCACHE_TARGET)."""

    def __init__(self, args=(), directory=None, config_text=None, target=None):
        self.dir = directory or tempfile.mkdtemp(prefix="kvcache-test-")
        self.owns_dir = directory is None
        self.args = list(args)
        self.config_text = config_text
        self.target = target or TARGET
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.log")
        # What went wrong with the process, whatever the test asserted:
        # exit codes of SIGTERM stops that were not 0, deaths nobody asked for.
        self.problems = []
        # Exit codes a test expects from a SIGTERM stop besides 0.
        self.allowed_exit_codes = set()

    def command_line(self):
        # A config file (both servers read redis.conf's format) comes first,
        # then options that override it, as on redis-server's command line.
        line = ["redis-server"] if self.target == "redis" else [BIN]
        if self.config_text is not None:
            path = os.path.join(self.dir, "kvcache.conf")
            with open(path, "w") as f:
                f.write(self.config_text)
            line.append(path)
        if self.target == "redis":
            return line + ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                           "--save", "", "--appendonly", "no", "--daemonize", "no"] + self.args
        return line + ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", os.path.join(self.dir, "data")] \
            + MODE_ARGS + self.args

    def start(self):
        self.port = self.port or free_port()
        self.proc = benchlib.spawn(self.command_line(), self.log_path, env=benchlib.sanitizer_env(self.dir))
        if self not in LIVE_SERVERS:
            LIVE_SERVERS.append(self)
        tls_only = "--tls-port" in self.args and "--port" in self.args and \
            self.args[self.args.index("--port") + 1] == "0"
        try:
            # Listening, and done replaying its append-only log (-LOADING until then).
            (benchlib.wait_listening if tls_only else benchlib.wait_ready)(self.port, self.proc)
        except RuntimeError as error:
            if self.proc.poll() is not None:
                self.proc = None  # its exit is the test's to judge: it gets this error (a refused start)
            # Why it did not start: the end of its log and any sanitizer report.
            raise RuntimeError("%s\n%s" % (error, "\n".join(["the end of its log:\n" + self.log()[-3000:]] +
                                                              benchlib.sanitizer_reports(self.dir))))
        # The plain port is bound before the TLS port: wait for that too, so
        # a test may use either as soon as start() returns.
        if "--tls-port" in self.args:
            tls_port = int(self.args[self.args.index("--tls-port") + 1])
            if tls_port:
                benchlib.wait_listening(tls_port, self.proc)
        return self

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Stops the server (SIGTERM: a clean shutdown) and returns its exit
        code. A SIGTERM stop that does not end in 0 is recorded as a problem
        the after-test check reports, even when the test ignores the code."""
        if self.proc is None:
            return None
        already = self.proc.poll()
        if already is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
            self.problems.append("no exit %ds after signal %d: killed" % (timeout, sig))
        if already is not None and already != 0 and already not in self.allowed_exit_codes:
            self.problems.append("the server had exited on its own with %d" % already)
        elif sig == signal.SIGTERM and code != 0 and code not in self.allowed_exit_codes:
            self.problems.append("SIGTERM: exit code %d, expected 0" % code)
        self.proc = None
        return code

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def restart(self):
        self.stop()
        return self.start()

    def client(self, db=0, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, socket_timeout=10, **kw)

    def raw(self):
        return RawConnection(self.port)

    def data_dir(self):
        return os.path.join(self.dir, "data")

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def health(self):
        """What is wrong with the server so far: sanitizer reports, a
        process that died without being stopped, bad exit codes."""
        found = list(self.problems)
        if self.proc is not None and self.proc.poll() is not None and self.proc.returncode not in self.allowed_exit_codes:
            found.append("the server died during the test (exit %d)" % self.proc.returncode)
        found += ["sanitizer report " + r for r in benchlib.sanitizer_reports(self.dir)]
        try:
            log = self.log()
        except OSError:
            log = ""
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                       "runtime error:", "Fatal error:"):
            if marker in log:
                found.append("the server log has %r:\n%s" % (marker, log[log.index(marker) - 200:][:4000]))
        return found

    def cleanup(self):
        """Stops the server, then checks it (before anything is deleted);
        returns the problems found. The directory is kept when there are any."""
        if self.proc is not None and self.proc.poll() is not None:
            # Shown with the test's failure report: why the server went away.
            print(f"server exited with {self.proc.returncode}; the end of its log:\n{self.log()[-3000:]}")
        self.stop()
        problems = self.health()
        if self in LIVE_SERVERS:
            LIVE_SERVERS.remove(self)
        if problems:
            problems.append("server directory kept: %s" % self.dir)
        elif self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return problems


def fail_on(problems, what):
    if problems:
        pytest.fail("%s:\n%s" % (what, "\n".join(problems)), pytrace=False)


@pytest.fixture(autouse=True)
def servers_stay_healthy():
    """After every test, every server still running must be healthy: no
    sanitizer report, no unexpected death (module-scoped servers included)."""
    yield
    problems = []
    for s in list(LIVE_SERVERS):
        problems += ["port %s: %s" % (s.port, p) for p in s.health()]
        s.problems.clear()
    fail_on(problems, "a server went wrong during this test")


class RawConnection(benchlib.Client):
    """A plain socket for exact protocol checks: replies as benchlib reads
    them, with an error reply as the tuple ("error", text)."""

    def __init__(self, port, timeout=10):
        super().__init__(port, timeout=timeout, errors=lambda text: ("error", text))


@pytest.fixture(scope="module")
def server():
    """A server shared by a module's tests; FLUSHALL before each test keeps them apart."""
    s = Server().start()
    yield s
    fail_on(s.cleanup(), "the module's server")


@pytest.fixture
def r(server):
    c = server.client()
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def c(server, r):
    """A raw connection to a freshly flushed server (the `r` fixture runs FLUSHALL)."""
    conn = server.raw()
    yield conn
    conn.close()


# Redis's error replies as raw connections read them.
NOT_INT = ("error", "ERR value is not an integer or out of range")
SYNTAX = ("error", "ERR syntax error")
WRONGTYPE = ("error", "WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_FLOAT = ("error", "ERR value is not a valid float")
MUST_BE_POSITIVE = ("error", "ERR value is out of range, must be positive")


def arity(command):
    return ("error", f"ERR wrong number of arguments for '{command}' command")


@pytest.fixture
def fresh_server():
    """A server of the test's own, for tests that restart, kill or configure it."""
    made = []

    def make(args=(), config_text=None, start=True):
        s = Server(args=args, config_text=config_text)
        made.append(s)
        return s.start() if start else s

    yield make
    problems = []
    for s in made:
        problems += s.cleanup()
    fail_on(problems, "a server of this test")


@pytest.fixture
def real_redis():
    """A redis-server (whatever KVCACHE_TARGET says), for tests that compare
    this server's replies or payloads with Redis's in one run."""
    require_tool("redis-server")
    s = Server(target="redis").start()
    yield s
    s.cleanup()
