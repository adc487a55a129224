"""Blocking XREAD and XREADGROUP as Redis 7.0's: woken by XADD from any
client, by MULTI/EXEC and by scripts; served from the one key that got
entries; timeouts and CLIENT UNBLOCK; never blocking inside MULTI; BLOCK
refused in scripts; XREADGROUP clients answered with an error when their
stream is deleted, replaced or flushed or their group destroyed; and a
producer process feeding a consumer group of two worker processes.
KVCACHE_TARGET=redis runs them against redis-server."""
import multiprocessing
import time

import pytest
import redis

from test_blocking import in_background, wait_blocked


@pytest.fixture
def client(server, r):
    """A factory of extra clients (closed after the test)."""
    made = []

    def make(**kw):
        c = server.client(**kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def test_xread_block_is_woken_by_xadd_from_another_client(r, client):
    r.xadd("s", {"old": "1"}, id="1-0")
    got = in_background(client().xread, {"s": "$"}, None, 0)
    wait_blocked(r, 1)
    r.xadd("s", {"new": "2"}, id="2-0")
    assert got() == [[b"s", [(b"2-0", {b"new": b"2"})]]]
    assert r.info("clients")["blocked_clients"] == 0


def test_xread_block_serves_at_once_or_times_out(r, client):
    r.xadd("s", {"f": "v"}, id="1-0")
    assert r.xread({"s": "0"}, block=1000) == [[b"s", [(b"1-0", {b"f": b"v"})]]]
    started = time.time()
    assert r.xread({"s": "$"}, block=150) == []
    assert 0.12 <= time.time() - started < 2
    assert r.xread({"missing": "$"}, block=50) == []


def test_a_blocked_reader_is_served_from_the_key_that_got_entries(r, client):
    got = in_background(client().xread, {"a": "$", "b": "$", "c": "$"}, 10, 0)
    wait_blocked(r, 1)
    r.xadd("b", {"f": "v"}, id="5-0")
    assert got() == [[b"b", [(b"5-0", {b"f": b"v"})]]]


def test_exec_wakes_a_reader_once_with_every_entry_it_added(r, client):
    reader = client()
    got = in_background(reader.xread, {"s": "$"}, 2, 0)
    wait_blocked(r, 1)
    with r.pipeline(transaction=True) as p:
        p.xadd("s", {"n": "1"}, id="1-0")
        p.xadd("s", {"n": "2"}, id="2-0")
        p.xadd("s", {"n": "3"}, id="3-0")
        p.execute()
    assert got() == [[b"s", [(b"1-0", {b"n": b"1"}), (b"2-0", {b"n": b"2"})]]]  # COUNT 2


def test_xadd_then_del_in_exec_wakes_no_one(r, client):
    got = in_background(client().xread, {"s": "$"}, None, 0)
    wait_blocked(r, 1)
    with r.pipeline(transaction=True) as p:
        p.xadd("s", {"old": "1"})
        p.delete("s")
        p.execute()
    time.sleep(0.1)
    assert r.info("clients")["blocked_clients"] == 1
    r.xadd("s", {"new": "2"}, id="9-0")
    assert got() == [[b"s", [(b"9-0", {b"new": b"2"})]]]


def test_blocking_reads_inside_multi_answer_as_a_timeout(c):
    assert c.command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == "OK"
    assert c.command("MULTI") == "OK"
    assert c.command("XREAD", "BLOCK", "0", "STREAMS", "s", "$") == "QUEUED"
    assert c.command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">") == "QUEUED"
    assert c.command("EXEC") == [None, None]


def test_scripts_may_not_block_but_wake_blocked_readers(r, client):
    r.xgroup_create("s", "g", "$", mkstream=True)
    assert r.eval("return redis.pcall('xread', 'STREAMS', KEYS[1], '$')", 1, "s") is None
    with pytest.raises(redis.ResponseError, match="xread command is not allowed with BLOCK option from scripts"):
        r.eval("return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')", 1, "s")
    with pytest.raises(redis.ResponseError, match="xreadgroup command is not allowed with BLOCK option from scripts"):
        r.eval("return redis.pcall('xreadgroup', 'GROUP', 'g', 'c', 'BLOCK', 0, 'STREAMS', KEYS[1], '>')", 1, "s")
    got = in_background(client().xreadgroup, "g", "worker", {"s": ">"}, None, 0)
    wait_blocked(r, 1)
    r.eval("redis.call('xadd', KEYS[1], '4-0', 'from', 'lua')", 1, "s")
    assert got() == [[b"s", [(b"4-0", {b"from": b"lua"})]]]


def test_client_unblock_answers_as_a_timeout_or_an_error(r, client):
    first, second = client(), client()
    got = in_background(first.xread, {"s": "$"}, None, 0)
    wait_blocked(r, 1)
    (blocked_id,) = [c["id"] for c in r.client_list() if "b" in c["flags"]]
    assert r.client_unblock(int(blocked_id)) == 1
    assert got() == []
    got = in_background(second.xread, {"s": "$"}, None, 0)
    wait_blocked(r, 1)
    (blocked_id,) = [c["id"] for c in r.client_list() if "b" in c["flags"]]
    assert r.client_unblock(int(blocked_id), error=True) == 1
    error = got()
    assert isinstance(error, redis.ResponseError) and "UNBLOCKED client unblocked via CLIENT UNBLOCK" in str(error)
    assert r.client_unblock(int(blocked_id)) == 0


def test_consumers_of_one_group_share_the_entries(r, client):
    r.xgroup_create("s", "g", "$", mkstream=True)
    alice = in_background(client().xreadgroup, "g", "alice", {"s": ">"}, None, 0)
    wait_blocked(r, 1)
    bob = in_background(client().xreadgroup, "g", "bob", {"s": ">"}, None, 0)
    wait_blocked(r, 2)
    r.xadd("s", {"job": "1"}, id="1-0")
    assert alice() == [[b"s", [(b"1-0", {b"job": b"1"})]]]  # first come, first served
    wait_blocked(r, 1)
    r.xadd("s", {"job": "2"}, id="2-0")
    assert bob() == [[b"s", [(b"2-0", {b"job": b"2"})]]]
    assert [(p["message_id"], p["consumer"]) for p in r.xpending_range("s", "g", "-", "+", 10)] == [
        (b"1-0", b"alice"), (b"2-0", b"bob")]


@pytest.mark.parametrize("how", ["del", "set", "flushdb", "exec"])
def test_blocked_readgroup_gets_an_error_when_its_stream_goes(r, client, how):
    r.xadd("s", {"f": "v"}, id="1-0")
    r.xgroup_create("s", "g", "$")
    reader, plain = client(), client()
    got = in_background(reader.xreadgroup, "g", "alice", {"s": ">"}, None, 0)
    other = in_background(plain.xread, {"s": "$"}, None, 0)
    wait_blocked(r, 2)
    if how == "del":
        r.delete("s")
    elif how == "set":
        r.set("s", "x")
    elif how == "flushdb":
        r.flushdb()
    else:
        with r.pipeline(transaction=True) as p:
            p.delete("s")
            p.sadd("s", "m")
            p.execute()
    error = got()
    assert isinstance(error, redis.ResponseError) and "UNBLOCKED the stream key no longer exists" in str(error)
    wait_blocked(r, 1)  # the XREAD client waits on: a new stream there serves it
    r.delete("s")
    r.xadd("s", {"f": "w"}, id="7-0")
    assert other() == [[b"s", [(b"7-0", {b"f": b"w"})]]]


def test_destroying_the_group_answers_its_blocked_readers_nogroup(r, client):
    r.config_resetstat()
    r.xgroup_create("s", "g", "$", mkstream=True)
    got = in_background(client().xreadgroup, "g", "alice", {"s": ">"}, None, 0)
    wait_blocked(r, 1)
    assert r.xgroup_destroy("s", "g") == 1
    error = got()
    assert isinstance(error, redis.ResponseError)
    assert "the consumer group this client was blocked on no longer exists" in str(error)
    assert r.info("errorstats")["errorstat_NOGROUP"]["count"] == 1


def test_a_blocked_reply_is_a_map_in_resp3(r, server, client):
    reader = client(protocol=3)
    got = in_background(reader.xread, {"s": "$"}, None, 0)
    wait_blocked(r, 1)
    r.xadd("s", {"f": "v"}, id="3-0")
    assert got() == {b"s": [[(b"3-0", {b"f": b"v"})]]}


# ---------------------------------------------------------------------------
# A producer process and a consumer group of two worker processes
# ---------------------------------------------------------------------------

def producer(port, count):
    r = redis.Redis(port=port)
    for i in range(count):
        r.xadd("jobs", {"n": i})
        if i % 50 == 0:
            time.sleep(0.01)
    r.xadd("jobs", {"stop": 1})
    r.xadd("jobs", {"stop": 1})


def worker(port, name):
    # Each worker takes the next job for itself (BLOCK), does it, records the
    # result and acknowledges; a stop entry ends it (one read, one entry: a
    # worker never takes both stops).
    r = redis.Redis(port=port, socket_timeout=30)
    while True:
        reply = r.xreadgroup("workers", name, {"jobs": ">"}, count=1, block=10000)
        if not reply:
            break
        done = False
        for sid, fields in reply[0][1]:
            if b"stop" in fields:
                done = True
            else:
                r.xadd("results", {"job": fields[b"n"], "by": name})
            r.xack("jobs", "workers", sid)
        if done:
            break


def test_a_producer_feeds_a_group_of_two_worker_processes(server, r):
    count = 600
    r.xgroup_create("jobs", "workers", "$", mkstream=True)
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=worker, args=(server.port, name)) for name in ("w1", "w2")]
    for p in workers:
        p.start()
    wait_blocked(r, 2)
    maker = ctx.Process(target=producer, args=(server.port, count))
    maker.start()
    for p in [maker] + workers:
        p.join(60)
        assert p.exitcode == 0
    results = r.xrange("results")
    jobs = sorted(int(fields[b"job"]) for _, fields in results)
    assert jobs == list(range(count))  # every job done exactly once
    by = {fields[b"by"] for _, fields in results}
    assert by == {b"w1", b"w2"}  # both workers took a share
    assert r.xpending("jobs", "workers")["pending"] == 0
    consumers = {c["name"]: c["pending"] for c in r.xinfo_consumers("jobs", "workers")}
    assert consumers == {"w1": 0, "w2": 0} or consumers == {b"w1": 0, b"w2": 0}


def test_a_blocked_readgroup_gets_an_error_when_its_stream_expires(r, client):
    r.xgroup_create("s", "g", "$", mkstream=True)
    got = in_background(client().xreadgroup, "g", "alice", {"s": ">"}, None, 0)
    wait_blocked(r, 1)
    r.pexpire("s", 50)
    error = got(timeout=10)  # the expiry sweep removes it
    assert isinstance(error, redis.ResponseError) and "UNBLOCKED the stream key no longer exists" in str(error)


def test_swapdb_answers_or_serves_blocked_stream_readers(server, r, client):
    # db9 holds the stream the readers wait on; db4 holds another, with an entry.
    db9, db4 = client(db=9), client(db=4)
    db9.flushdb()
    db4.flushdb()
    db9.xgroup_create("s", "g", "$", mkstream=True)
    db4.xadd("s", {"from": "db4"}, id="5-0")
    group_reader = in_background(client(db=9).xreadgroup, "g", "alice", {"s": ">"}, None, 0)
    plain_reader = in_background(client(db=9).xread, {"s": "0"}, None, 0)
    wait_blocked(r, 2)
    r.swapdb(4, 9)
    # The stream now in db9 has no group g: the XREADGROUP client is told;
    # it has an entry past 0: the XREAD client is served it.
    error = group_reader()
    assert isinstance(error, redis.ResponseError) and "NOGROUP" in str(error)
    assert plain_reader() == [[b"s", [(b"5-0", {b"from": b"db4"})]]]
    db9.flushdb()
    db4.flushdb()
