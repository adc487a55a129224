"""Fixtures for the end-to-end suite: start the real server binary on a free
loopback port with a temporary data directory, and talk to it with redis-py,
raw sockets, redis-cli and nc.

KVCACHE_TARGET=redis runs the same tests against Debian's redis-server, to
check that what they expect is what Redis does; tests of this server's own
behaviour are marked `kvcache_only` and skipped there.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("KVCACHE_TARGET", "kvcache")
BIN = os.environ.get("KVCACHE_BIN", os.path.join(ROOT, ".build", "debug", "kvcache-server"))
# KVCACHE_MODE picks the persistence mode the suite runs in: everysec
# (appendonly yes, appendfsync everysec: the default), always (appendfsync
# always) or no-aof (appendonly no: writes reach SQLite within a second).
MODE = os.environ.get("KVCACHE_MODE", "everysec")
MODE_ARGS = {"everysec": [], "always": ["--appendfsync", "always"], "no-aof": ["--appendonly", "no"]}[MODE]
# Kept for the tools' smoke tests: "commit" when acknowledged writes survive a crash.
DURABILITY = "everysec" if MODE == "no-aof" else "commit"


REDIS = TARGET == "redis"
# Redis behaviour this server documents differently (README, "Differences from Redis").
redis_only = pytest.mark.skipif(not REDIS, reason="Redis behaviour that kvcache-server documents differently")


def pytest_configure(config):
    config.addinivalue_line("markers", "kvcache_only: behaviour of kvcache-server that Redis does not share")
    config.addinivalue_line("markers", "commit_durability: needs acknowledged writes to survive a crash (not appendonly no)")


def pytest_collection_modifyitems(config, items):
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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"server did not listen on {port} within {timeout}s")


def wait_until_loaded(port, proc, args, timeout=60.0):
    """Waits while the server answers -LOADING (it replays its append-only log
    after a crash); a server that needs AUTH or refuses for another reason is
    taken as loaded."""
    if "--tls-port" in args and "--port" in args and args[args.index("--port") + 1] == "0":
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(200)
        except OSError:
            return
        if not reply.startswith(b"-LOADING"):
            return
        time.sleep(0.02)
    raise RuntimeError(f"server still loading after {timeout}s")


class Server:
    """One running server process. `args` are extra `--name value` options."""

    def __init__(self, args=(), directory=None, config_text=None):
        self.dir = directory or tempfile.mkdtemp(prefix="kvcache-test-")
        self.owns_dir = directory is None
        self.args = list(args)
        self.config_text = config_text
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.log")

    def command_line(self):
        if TARGET == "redis":
            return ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                    "--save", "", "--appendonly", "no", "--daemonize", "no"] + self.args
        line = [BIN]
        if self.config_text is not None:
            path = os.path.join(self.dir, "kvcache.conf")
            with open(path, "w") as f:
                f.write(self.config_text)
            line.append(path)
        return line + ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", os.path.join(self.dir, "data")] \
            + MODE_ARGS + self.args

    def start(self):
        self.port = self.port or free_port()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command_line(), stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for_port(self.port, self.proc)
        wait_until_loaded(self.port, self.proc, self.args)
        # The plain port is bound before the TLS port: wait for that too, so
        # a test may use either as soon as start() returns.
        if "--tls-port" in self.args:
            tls_port = int(self.args[self.args.index("--tls-port") + 1])
            if tls_port:
                wait_for_port(tls_port, self.proc)
        return self

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
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

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is not None:
            # Shown with the test's failure report: why the server went away.
            print(f"server exited with {self.proc.returncode}; the end of its log:\n{self.log()[-3000:]}")
        self.stop()
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class RawConnection:
    """A plain socket for exact protocol checks."""

    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def read_line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_reply(self):
        """Reads one RESP2 reply: str for +, Exception-like tuple ('ERR', text) for -, int, bytes/None, list."""
        line = self.read_line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ("error", rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.read_reply() for _ in range(n)]
        raise ValueError(f"unexpected reply line {line!r}")

    def command(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.send(out)
        return self.read_reply()

    def is_closed(self, timeout=5):
        """True when the server closes the connection (EOF) within `timeout`."""
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

    def close(self):
        self.sock.close()


@pytest.fixture(scope="module")
def server():
    """A server shared by a module's tests; FLUSHALL before each test keeps them apart."""
    s = Server().start()
    yield s
    s.cleanup()


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
    for s in made:
        s.cleanup()
