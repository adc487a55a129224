"""The examples under Clients/examples, run as a user would run them against
a server of their own, checking what they print and what they leave in the
caches. They use named caches and KVCACHE.* commands, so they are
kvcache-server only.
"""
import os
import re
import subprocess
import sys

import pytest

from conftest import require_tool

from conftest import ROOT

pytestmark = pytest.mark.kvcache_only

EXAMPLES = os.path.join(ROOT, "Clients", "examples")
SWIFT_EXAMPLE = os.path.join(ROOT, ".build", "debug", "SwiftExample")
TIMEOUT = 30


need = require_tool  # a skip, or a failure under KVCACHE_REQUIRE_TOOLS=1


def fullmatch_numbers(template, text):
    """Matches `text` against `template`, where each {n} stands for a number."""
    return re.fullmatch(re.escape(template).replace(re.escape("{n}"), r"(\d+)"), text)


def run(args, env=None):
    """Runs an example; returns its standard output after checking it exited 0."""
    done = subprocess.run(args, capture_output=True, timeout=TIMEOUT, env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stderr == b""
    return done.stdout.decode()


# --- redis-cli ---------------------------------------------------------------------

def test_redis_cli_session(fresh_server):
    need("redis-cli")
    s = fresh_server()
    out = run([os.path.join(EXAMPLES, "redis-cli-session.sh"), str(s.port)])
    match = fullmatch_numbers(
        '$ redis-cli SET greeting "hello world"\nOK\n'
        "$ redis-cli GET greeting\nhello world\n"
        "$ redis-cli SET session:42 alice EX 3600\nOK\n"
        "$ redis-cli TTL session:42\n{n}\n"
        "$ redis-cli TTL greeting\n-1\n"
        "$ printf 'SELECT sessions\\nSET user:1 bob EX 60\\nGET user:1\\nDBSIZE\\n' | redis-cli\n"
        "OK\nOK\nbob\n1\n"
        "$ redis-cli EXISTS user:1\n0\n"
        "$ redis-cli INFO keyspace\n# Keyspace\r\n"
        "db0:keys=2,expires=1,avg_ttl={n}\r\n"
        "$ redis-cli INFO caches\n# Caches\r\n"
        "cache_db0:keys=2,expires=1,avg_ttl={n},bytes=34,capacity=0,policy=fifo,hits=3,misses=1,evicted=0,"
        "expired=0,tier_entries=2,tier_bytes={n},file_bytes={n},wal_bytes={n},unapplied_bytes={n},available=1\r\n"
        "cache_sessions:keys=1,expires=1,avg_ttl={n},bytes=9,capacity=0,policy=fifo,hits=1,misses=0,evicted=0,"
        "expired=0,tier_entries=1,tier_bytes={n},file_bytes={n},wal_bytes={n},unapplied_bytes={n},available=1\r\n",
        out)
    assert match, out
    assert 3599 <= int(match[1]) <= 3600
    assert s.client(db="sessions", protocol=2).get("user:1") == b"bob"


def test_redis_cli_session_takes_the_port_from_the_environment(fresh_server):
    need("redis-cli")
    s = fresh_server()
    out = run([os.path.join(EXAMPLES, "redis-cli-session.sh")], env={"PORT": str(s.port)})
    assert out.startswith('$ redis-cli SET greeting "hello world"\nOK\n')
    assert s.client(protocol=2).get("greeting") == b"hello world"


# --- netcat ------------------------------------------------------------------------

def test_netcat_session(fresh_server):
    need("nc")
    s = fresh_server()
    out = run([os.path.join(EXAMPLES, "netcat-session.sh"), str(s.port)])
    nc = "| nc -N 127.0.0.1 %d\n" % s.port
    assert out == (
        "$ printf 'SET a 1\\r\\nGET a\\r\\nINCR a\\r\\n' " + nc +
        "+OK\\r\\n\n$1\\r\\n\n1\\r\\n\n:2\\r\\n\n\n"
        "$ printf 'GET missing\\r\\nSET word hello\\r\\nINCR word\\r\\nSET a\\r\\n' " + nc +
        "$-1\\r\\n\n+OK\\r\\n\n-ERR value is not an integer or out of range\\r\\n\n"
        "-ERR wrong number of arguments for 'set' command\\r\\n\n\n"
        "$ printf 'SELECT sessions\\r\\nKVCACHE.PUT page 1700000000000 text/html <p>hi</p>\\r\\nKVCACHE.GET page\\r\\n' "
        + nc +
        "+OK\\r\\n\n+OK\\r\\n\n*4\\r\\n\n$4\\r\\n\npage\\r\\n\n:1700000000000\\r\\n\n$9\\r\\n\ntext/html\\r\\n\n"
        "$9\\r\\n\n<p>hi</p>\\r\\n\n\n"
        "$ printf '*3\\r\\n$3\\r\\nSET\\r\\n$1\\r\\nb\\r\\n$5\\r\\nhello\\r\\n*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\nb\\r\\n' "
        + nc +
        "+OK\\r\\n\n$5\\r\\n\nhello\\r\\n\n\n"
    )


def test_netcat_session_raw_prints_the_bytes_as_they_came(fresh_server):
    need("nc")
    s = fresh_server()
    out = run([os.path.join(EXAMPLES, "netcat-session.sh")], env={"PORT": str(s.port), "RAW": "1"})
    assert "nc -N 127.0.0.1 %d\n+OK\r\n$1\r\n1\r\n:2\r\n\n" % s.port in out
    assert "*4\r\n$4\r\npage\r\n:1700000000000\r\n$9\r\ntext/html\r\n$9\r\n<p>hi</p>\r\n" in out


# --- redis-py ----------------------------------------------------------------------

def test_cache_aside_misses_hits_and_refills_after_the_ttl(fresh_server):
    s = fresh_server()
    out = run([sys.executable, os.path.join(EXAMPLES, "cache_aside.py"), str(s.port)])
    lines = out.splitlines()
    user = '{"id": 42, "name": "Ada Lovelace"}'
    session = '{"token": "abc", "user": 42}'
    shapes = [
        ("user 42, first read: miss " + user, "slow"),
        ("user 42, second read: hit " + user, "fast"),
        ("session abc, first read: miss " + session, "slow"),
        ("session abc, second read: hit " + session, "fast"),
        ("TTL of user:42 in users: 300 s", None),
        ("user:42 in sessions: 0 (each cache has its own keys)", None),
        ("waiting 600 ms for the session to expire", None),
        ("session abc, after its TTL: miss " + session, "slow"),
        ("user 42, after the session's TTL: hit " + user, "fast"),
        ("database reads: 3", None),
    ]
    assert len(lines) == len(shapes), out
    for line, (text, speed) in zip(lines, shapes):
        if speed is None:
            assert line == text
            continue
        match = re.fullmatch(re.escape(text) + r" \((\d+) ms\)", line)
        assert match, line
        ms = int(match[1])
        assert ms >= 200 if speed == "slow" else ms < 200, line
    assert s.client(db="users", protocol=2).get("user:42") == user.encode()
    assert s.client(protocol=2).get("user:42") is None


# --- Swift -------------------------------------------------------------------------

def swift_example():
    if not os.path.exists(SWIFT_EXAMPLE):
        pytest.fail("%s is missing: run `swift build` first" % SWIFT_EXAMPLE)
    return SWIFT_EXAMPLE


ENTRY_LINES = (
    'entry: stored 1700000000, metadata "content-type: text/html", value "<p>hello</p>"\n'
    "after delete: gone\n"
)


def test_swift_example_against_the_server(fresh_server):
    s = fresh_server()
    out = run([swift_example(), str(s.port)])
    assert out == (
        "greeting: hello from Swift, TTL 60 s\n"
        "pipelined counters: [1, 1, 2, 3]\n"
        "user:1 in sessions: alice, in db0: (nil)\n"
        "incr of text: ERR value is not an integer or out of range\n" + ENTRY_LINES
    )
    assert s.client(db="sessions", protocol=2).get("user:1") == b"alice"


def test_swift_example_runs_the_same_entry_code_on_the_engine(tmp_path):
    assert run([swift_example(), "--embedded", str(tmp_path)]) == ENTRY_LINES
    assert (tmp_path / "responses.sqlite").exists()


def test_swift_example_reports_a_refused_connection(fresh_server):
    s = fresh_server()
    port = s.port
    s.stop()
    done = subprocess.run([swift_example(), str(port)], capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 1
    assert done.stdout.decode() == "error: connection failed: cannot connect to 127.0.0.1:%d: Connection refused\n" % port
