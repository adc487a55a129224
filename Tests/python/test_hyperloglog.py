"""HyperLogLog as a user meets it: PFADD/PFCOUNT/PFMERGE with Redis's
counts and bytes (the expected values were made by redis-server 7.0.15 for
the same inputs, and, where `redis-server` is installed, a live Redis
answers the same random inputs beside this server), TYPE string, DUMP and
RESTORE, and PFADD surviving kill -9."""
import random

import pytest
import redis

from conftest import MODE


def test_counts_and_bytes_are_redis(r):
    assert r.pfadd("h", "a", "b", "c") == 1
    # The bytes Redis makes for these three elements (cache marked stale).
    assert r.get("h").hex() == "48594c4c01000000000000000000008060f38050b1844bfb80425a"
    assert r.pfcount("h") == 3
    assert r.get("h")[8:16] == b"\x03" + b"\x00" * 7  # the cached count
    assert r.type("h") == b"string"
    assert r.pfadd("h", "a", "b", "c") == 0
    r.pfadd("t", *[str(i) for i in range(1000)])
    assert r.pfcount("t") == 1001
    assert r.execute_command("PFDEBUG", "ENCODING", "t") == b"sparse"
    r.pfadd("big", *[str(i) for i in range(1, 100001)])
    assert r.pfcount("big") == 99562
    assert r.execute_command("PFDEBUG", "ENCODING", "big") == b"dense"
    assert r.strlen("big") == 12304
    assert r.pfcount("h", "t") == 1004
    assert r.pfmerge("m", "h", "t") is True
    assert r.pfcount("m") == 1004


def test_errors_are_redis(r):
    r.set("s", "not an hll at all")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE Key is not a valid HyperLogLog string value."):
        r.pfadd("s", "x")
    r.pfadd("h", "a", "b", "c")
    r.append("h", "tail")
    with pytest.raises(redis.ResponseError, match="INVALIDOBJ Corrupted HLL object detected"):
        r.pfcount("h")
    with pytest.raises(redis.ResponseError, match="The specified key does not exist"):
        r.execute_command("PFDEBUG", "ENCODING", "nokey")


def test_dump_restores_as_the_same_hll(r):
    r.pfadd("h", *["x%d" % i for i in range(3000)])
    payload = r.dump("h")
    r.restore("copy", 0, payload)
    assert r.get("copy") == r.get("h")
    assert r.pfcount("copy") == r.pfcount("h")


@pytest.mark.loop_only
def test_random_inputs_count_as_on_a_live_redis(r, real_redis):
    other = real_redis.client()
    other.flushall()
    rng = random.Random(15)
    for n in (0, 1, 7, 300, 2500, 40000):
        elements = [str(rng.random()) for _ in range(n)]
        for c in (r, other):
            c.pfadd("k%d" % n)
            for i in range(0, n, 500):
                c.pfadd("k%d" % n, *elements[i:i + 500])
        assert r.pfcount("k%d" % n) == other.pfcount("k%d" % n)
        assert r.get("k%d" % n) == other.get("k%d" % n)
    for c in (r, other):
        c.pfmerge("all", *["k%d" % n for n in (7, 300, 2500)])
    assert r.get("all") == other.get("all")
    assert r.pfcount("k1", "k40000", "all") == other.pfcount("k1", "k40000", "all")
    # DUMP of an HLL made here restores on Redis, and counts the same there.
    other.restore("copied", 0, r.dump("k2500"))
    assert other.pfcount("copied") == r.pfcount("k2500")


@pytest.mark.kvcache_only
@pytest.mark.skipif(MODE == "no-aof", reason="the append-only log is off (appendonly no)")
def test_pfadd_survives_kill9_and_is_logged_as_itself(fresh_server):
    s = fresh_server(args=["--enable-debug-command", "yes"])
    c = s.raw()
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    for i in range(0, 20000, 100):
        c.command("PFADD", "h", *["e%d" % j for j in range(i, i + 100)])
    assert c.command("PFDEBUG", "ENCODING", "h") == "dense"
    count = c.command("PFCOUNT", "h")
    before = c.command("GET", "h")
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("GET", "h") == before
    assert c.command("PFCOUNT", "h") == count

