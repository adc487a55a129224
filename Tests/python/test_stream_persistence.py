"""Streams across restarts, crashes and servers: a clean restart, DEBUG
RELOAD and kill -9 (the append-only log replayed) keep the entries, the
groups, their consumers, pending entries and last delivered IDs; XADD to a
large stream is logged as a few bytes; DUMP here RESTOREs on redis-server
7.0.15 and the reverse, byte for byte where no clock is involved; and the
replication feed carries Redis's forms (XADD with the ID it chose, an
approximate trim as the exact one, XREADGROUP as XCLAIM and XGROUP SETID).
The feed tests run against redis-server too (KVCACHE_TARGET=redis)."""
import glob
import os
import re

import pytest

from conftest import MODE
from test_blocking import in_background, wait_blocked
from test_replication_stream import Stream

DEBUG = ["--enable-debug-command", "yes"]
needs_log = pytest.mark.skipif(MODE == "no-aof", reason="the append-only log is off (appendonly no)")


def build(c, key="x"):
    """A stream with deletes, two groups, consumers with and without pending
    entries, a NOACK read, a claim and an acknowledgement."""
    for i in range(1, 301):
        c.command("XADD", key, "%d-0" % i, "f", str(i), "g", "v" * (i % 9))
    c.command("XADD", key, "MAXLEN", "~", "250", "301-0", "other", "x")
    c.command("XDEL", key, "150-0", "151-0")
    c.command("XGROUP", "CREATE", key, "g1", "0")
    c.command("XGROUP", "CREATE", key, "g2", "$")
    c.command("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10", "STREAMS", key, ">")
    c.command("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "5", "STREAMS", key, ">")
    c.command("XREADGROUP", "GROUP", "g1", "carol", "NOACK", "COUNT", "3", "STREAMS", key, ">")
    c.command("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", key, "0")
    c.command("XCLAIM", key, "g1", "dave", "0", c.command("XPENDING", key, "g1")[1], "RETRYCOUNT", "9")
    c.command("XACK", key, "g1", c.command("XPENDING", key, "g1")[2])
    c.command("XGROUP", "CREATECONSUMER", key, "g2", "erin")
    c.command("XSETID", key, "9000-0", "ENTRIESADDED", "400", "MAXDELETEDID", "151-0")


def state(c, key="x"):
    return c.command("XINFO", "STREAM", key, "FULL", "COUNT", "0")


@pytest.mark.kvcache_only
def test_restart_and_debug_reload_keep_groups_and_pending_entries(fresh_server):
    s = fresh_server(args=DEBUG)
    c = s.raw()
    build(c)
    before = state(c)
    assert c.command("DEBUG", "RELOAD") == "OK"
    assert state(c) == before
    c.close()
    s.restart()
    c = s.raw()
    assert state(c) == before
    c.close()


@needs_log
@pytest.mark.kvcache_only
def test_kill9_replays_the_log_to_the_same_groups_and_pending_entries(fresh_server):
    s = fresh_server(args=DEBUG)
    c = s.raw()
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"  # only the log holds what follows
    build(c)
    c.command("XADD", "x", "*", "generated", "id")
    c.command("XADD", "x", "MINID", "~", "200", "*", "trimmed", "approximately")
    before = state(c)
    s.kill9()
    s.start()
    c = s.raw()
    assert state(c) == before
    c.close()


def log_bytes(server):
    """The bytes of the log's segments; one retired between the listing
    and its stat (the writer applied it before the pause) counts 0."""
    total = 0
    for path in glob.glob(os.path.join(server.data_dir(), "appendonlydir", "*.log")):
        try:
            total += os.path.getsize(path)
        except FileNotFoundError:
            pass
    return total


@needs_log
@pytest.mark.kvcache_only
def test_xadd_to_a_large_stream_is_logged_as_the_command(fresh_server):
    s = fresh_server(args=DEBUG)
    c = s.raw()
    for start in range(0, 20000, 1000):
        c.send(b"".join(b"*5\r\n$4\r\nXADD\r\n$1\r\nb\r\n$1\r\n*\r\n$1\r\nf\r\n$%d\r\n%d\r\n" % (len(str(i)), i)
                        for i in range(start, start + 1000)))
        for _ in range(1000):
            c.read_reply()
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    before = log_bytes(s)
    for i in range(1000):
        c.command("XADD", "b", "*", "f", "x%d" % i)
    grown = log_bytes(s) - before
    assert grown < 1000 * 100, "1,000 XADDs to a stream of 20,000 took %d bytes of log" % grown
    last = c.command("XREVRANGE", "b", "+", "-", "COUNT", "1")
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("XLEN", "b") == 21000 and c.command("XREVRANGE", "b", "+", "-", "COUNT", "1") == last
    c.close()


@pytest.mark.kvcache_only
def test_dumps_restore_on_redis_server_and_back(c, real_redis):
    real = real_redis.raw()
    build(c)
    build(c, "mirror")
    build(real, "mirror")
    payload = c.command("DUMP", "x")
    assert real.command("RESTORE", "x", "0", payload) == "OK"
    assert state(real) == state(c)
    assert c.command("RESTORE", "back", "0", real.command("DUMP", "x")) == "OK"
    assert state(c, "back") == state(c)
    # Where no clock is in it, the payload is Redis's byte for byte.
    for i in range(1, 120):
        for conn in (c, real):
            conn.command("XADD", "plain", "%d-%d" % (i // 3, i), "field", "v%d" % (i % 7), "n", str(i))
    for conn in (c, real):
        conn.command("XDEL", "plain", "10-30", "20-61")
        conn.command("XTRIM", "plain", "MAXLEN", "100")
    assert c.command("DUMP", "plain") == real.command("DUMP", "plain")
    assert c.command("MEMORY", "USAGE", "plain") == real.command("MEMORY", "USAGE", "plain")
    # Built by the same commands, or restored, a stream takes Redis's figure.
    assert c.command("MEMORY", "USAGE", "mirror") == real.command("MEMORY", "USAGE", "mirror")
    assert c.command("MEMORY", "USAGE", "back") == real.command("MEMORY", "USAGE", "x")
    real.close()


# ---------------------------------------------------------------------------
# The replication feed: Redis's forms
# ---------------------------------------------------------------------------

@pytest.fixture
def feed(server, r):
    r.config_set("repl-ping-replica-period", 3600)
    made = []

    def attach():
        f = Stream(server)
        made.append(f)
        return f
    yield attach
    for f in made:
        f.close()
    r.config_set("repl-ping-replica-period", 10)


def commands(f, n):
    """The feed's next `n` commands (SELECT and PING left out), as text."""
    got = []
    while len(got) < n:
        cmd = f.command()
        assert cmd is not None, "the feed stopped after %r" % got
        if cmd[0] not in ("select", "ping"):
            got.append(" ".join(cmd))
    return got


def test_xadd_propagates_with_its_id_and_exact_trim(feed, r):
    f = feed()
    r.xadd("s", {"f": "v"})
    r.xadd("s", {"f": "v"}, id="9999999999999-*")
    r.execute_command("XADD", "s", "MAXLEN", "~", "1", "*", "f", "v")
    r.execute_command("XTRIM", "s", "MAXLEN", "~", "0")  # the whole node goes
    r.execute_command("XTRIM", "s", "MAXLEN", "0")  # nothing left to remove: not propagated
    got = commands(f, 4)
    assert re.fullmatch(r"xadd s \d+-0 f v", got[0])
    assert got[1:] == ["xadd s 9999999999999-0 f v", "xadd s MAXLEN = 3 9999999999999-1 f v", "xtrim s MAXLEN = 0"]
    f.expect_nothing()


def test_xreadgroup_propagates_as_xclaim_and_setid(feed, r):
    r.xadd("s", {"f": "v"}, id="1-0")
    r.xadd("s", {"f": "v"}, id="2-0")
    r.xadd("s", {"f": "v"}, id="3-0")
    r.xgroup_create("s", "g", "0")
    f = feed()
    r.xreadgroup("g", "alice", {"s": ">"}, count=1)
    r.xreadgroup("g", "bob", {"s": ">"}, count=1, noack=True)
    r.xreadgroup("g", "alice", {"s": "0"})  # history: nothing propagated
    r.xack("s", "g", "1-0")
    r.xclaim("s", "g", "carol", 0, ["3-0"], force=True, justid=True)
    got = commands(f, 7)
    assert re.fullmatch(r"xclaim s g alice 0 1-0 TIME \d+ RETRYCOUNT 1 FORCE JUSTID LASTID 1-0", got[0])
    assert got[1:5] == ["multi", "xgroup CREATECONSUMER s g bob", "xgroup SETID s g 2-0 ENTRIESREAD 2", "exec"]
    assert got[5] == "xack s g 1-0"
    assert re.fullmatch(r"xclaim s g carol 0 3-0 TIME \d+ RETRYCOUNT 1 FORCE JUSTID LASTID 2-0", got[6])
    r.xgroup_destroy("s", "g")
    assert commands(f, 1) == ["xgroup DESTROY s g"]


def test_xautoclaim_propagates_claims_and_drops_of_deleted_entries(feed, r, server):
    for i in range(1, 4):
        r.xadd("x", {"f": "v"}, id="%d-0" % i)
    r.xgroup_create("x", "grp", "0")
    r.xreadgroup("grp", "alice", {"x": ">"})
    r.xdel("x", "2-0")
    f = feed()
    raw = server.raw()
    assert raw.command("XAUTOCLAIM", "x", "grp", "bob", "0", "0-0", "JUSTID") == [b"0-0", [b"1-0", b"3-0"], [b"2-0"]]
    raw.close()
    got = commands(f, 5)
    assert got[0] == "multi" and got[4] == "exec"
    assert re.fullmatch(r"xclaim x grp bob 0 1-0 TIME \d+ RETRYCOUNT 1 FORCE JUSTID LASTID 3-0", got[1])
    assert re.fullmatch(r"xclaim x grp alice 0 2-0 TIME \d+ RETRYCOUNT 1 FORCE JUSTID LASTID 3-0", got[2])
    assert re.fullmatch(r"xclaim x grp bob 0 3-0 TIME \d+ RETRYCOUNT 1 FORCE JUSTID LASTID 3-0", got[3])


def test_a_served_blocked_xreadgroup_propagates_its_claim(feed, r, server):
    r.xgroup_create("s", "g", "$", mkstream=True)
    f = feed()
    reader = server.client()
    got = in_background(reader.xreadgroup, "g", "alice", {"s": ">"}, None, 0)
    wait_blocked(r, 1)
    r.xadd("s", {"f": "v"}, id="5-0")
    assert got() == [[b"s", [(b"5-0", {b"f": b"v"})]]]
    got = commands(f, 2)
    assert got[0] == "xadd s 5-0 f v"
    assert re.fullmatch(r"xclaim s g alice 0 5-0 TIME \d+ RETRYCOUNT 1 FORCE JUSTID LASTID 5-0", got[1])
    reader.close()
