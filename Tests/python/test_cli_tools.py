"""The tools users reach for: redis-cli (one-shot and interactive), netcat and
redis-benchmark, run as subprocesses against the server.

Expected outputs were observed with Debian's redis-cli / redis-benchmark
7.0.15 against redis-server 7.0.15 (KVCACHE_TARGET=redis). With stdout not a
terminal, redis-cli prints replies raw: a status or bulk as its text and a
newline (none added when the text already ends with one, as INFO's does), an
integer as its digits, a nil as an empty line, an error as its text followed
by an empty line.
"""
import subprocess

import pytest

from conftest import require_tool

TIMEOUT = 10


tool = require_tool  # a skip, or a failure under KVCACHE_REQUIRE_TOOLS=1


def cli(server, *args, stdin=None):
    """Runs redis-cli against the server; returns (stdout, stderr) as text
    (\r kept) after checking that it exited 0."""
    done = subprocess.run([tool("redis-cli"), "-h", "127.0.0.1", "-p", str(server.port)] + list(args),
                          input=None if stdin is None else stdin.encode(), capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode(), done.stderr.decode()


@pytest.fixture
def r(server):
    """Like conftest's `r`, but RESP2: redis-py 8 defaults to protocol 3 and
    sends HELLO 3 on connect, which a RESP2-only server refuses."""
    c = server.client(protocol=2)
    c.flushall()
    yield c
    c.close()


# --- redis-cli, one command per run -------------------------------------------------

def test_redis_cli_set_get_del(server, r):
    assert cli(server, "SET", "k", "v") == ("OK\n", "")
    assert r.get("k") == b"v"
    assert cli(server, "GET", "k") == ("v\n", "")
    assert cli(server, "DEL", "k", "missing") == ("1\n", "")
    assert cli(server, "GET", "k") == ("\n", "")
    assert r.exists("k") == 0


def test_redis_cli_binary_safe_argument(server, r):
    assert cli(server, "SET", "sp ace", "line1\nline2")[0] == "OK\n"
    assert r.get("sp ace") == b"line1\nline2"


def test_redis_cli_flushall(server, r):
    r.set("a", 1)
    c4 = server.client(db=4, protocol=2)
    c4.set("b", 1)
    c4.close()
    assert cli(server, "FLUSHALL") == ("OK\n", "")
    assert r.dbsize() == 0
    assert cli(server, "-n", "4", "DBSIZE") == ("0\n", "")


def test_redis_cli_info(server, r):
    out, err = cli(server, "INFO")
    assert err == ""
    assert out.startswith("# Server\r\n")
    assert "\r\ntcp_port:%d\r\n" % server.port in out
    for section in ("Clients", "Memory", "Persistence", "Stats", "Keyspace"):
        assert "# %s\r\n" % section in out


def test_redis_cli_info_section(server, r):
    out, _ = cli(server, "INFO", "keyspace")
    assert out == "# Keyspace\r\n"
    r.set("a", 1)
    out, _ = cli(server, "INFO", "keyspace")
    # Exactly Redis's line: this server's own figures are in INFO caches.
    assert out == "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"


def test_redis_cli_select_with_n(server, r):
    assert cli(server, "-n", "3", "SET", "k", "three") == ("OK\n", "")
    assert cli(server, "GET", "k") == ("\n", "")
    assert cli(server, "-n", "3", "GET", "k") == ("three\n", "")
    c3 = server.client(db=3, protocol=2)
    assert c3.get("k") == b"three"
    c3.close()
    assert r.get("k") is None


def test_redis_cli_shows_errors(server, r):
    assert cli(server, "foo") == ("ERR unknown command 'foo', with args beginning with: \n\n", "")
    assert cli(server, "GET") == ("ERR wrong number of arguments for 'get' command\n\n", "")


# --- redis-cli, interactive (commands from a pipe) ------------------------------------

def test_redis_cli_interactive_starts_without_error(server, r):
    # At start the interactive mode sends COMMAND DOCS (7.0 redis-cli) for its
    # help; a reply it cannot use crashes it or prints an error.
    out, err = cli(server, stdin="PING\n")
    assert out == "PONG\n"
    assert err == ""


def test_redis_cli_interactive_session(server, r):
    out, err = cli(server, stdin="SET a 1\nGET a\nFOO\nDEL a\nGET a\n")
    assert err == ""
    assert out == "OK\n1\nERR unknown command 'FOO', with args beginning with: \n\n1\n\n"


def test_redis_cli_interactive_with_n(server, r):
    out, err = cli(server, "-n", "2", stdin="SET k v\nDBSIZE\n")
    assert (out, err) == ("OK\n1\n", "")
    c2 = server.client(db=2, protocol=2)
    assert c2.get("k") == b"v"
    c2.close()


# --- netcat ---------------------------------------------------------------------------

def nc(server, data):
    done = subprocess.run([tool("nc"), "-q1", "127.0.0.1", str(server.port)],
                          input=data, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_netcat_inline_commands(server, r):
    assert nc(server, b"SET a 1\r\nGET a\r\n") == b"+OK\r\n$1\r\n1\r\n"
    assert r.get("a") == b"1"


def test_netcat_bare_newlines_and_quit(server, r):
    assert nc(server, b"PING\nECHO \"x y\"\nQUIT\nPING\n") == b"+PONG\r\n$3\r\nx y\r\n+OK\r\n"


# --- redis-benchmark ---------------------------------------------------------------------

def test_redis_benchmark_set_get(server, r):
    done = subprocess.run([tool("redis-benchmark"), "-h", "127.0.0.1", "-p", str(server.port),
                           "-t", "set,get", "-n", "20000", "-c", "20", "-P", "16", "-r", "10000", "-q"],
                          capture_output=True, timeout=60, text=True)
    assert done.returncode == 0, done.stderr
    # Progress lines are separated by \r; the final ones by \n.
    lines = [l.strip() for l in done.stdout.replace("\r", "\n").split("\n") if l.strip()]
    finals = [l for l in lines if "requests per second" in l]
    assert [l.split(":")[0] for l in finals] == ["SET", "GET"]
    # "WARNING: Could not fetch server CONFIG" (stderr) means CONFIG GET save /
    # appendonly did not answer a 2-element array; error replies print "Error".
    for text in (done.stdout, done.stderr):
        for word in ("WARNING", "Error", "ERR", "rror from server"):
            assert word not in text, text
    # -r 10000 makes keys key:000000000000 .. key:000000009999
    keys = r.dbsize()
    assert 0 < keys <= 10000
    assert r.exists(*["key:%012d" % i for i in range(10000)]) == keys
