"""Blocking pops and moves (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
BZPOPMIN, BZPOPMAX, BZMPOP) with Redis 7.0's semantics, WATCH, CLIENT
PAUSE/UNPAUSE/UNBLOCK, WAIT, and a producer and a worker process passing
jobs through BLPOP and BLMOVE. Run with KVCACHE_TARGET=redis to check them
against redis-server."""
import multiprocessing
import threading
import time

import pytest
import redis

from conftest import SYNTAX, wait_for_blocked


def in_background(fn, *args):
    """Runs fn(*args) in a thread; returns a getter for its result (or exception)."""
    box = {}

    def run():
        try:
            box["value"] = fn(*args)
        except Exception as e:  # noqa: BLE001
            box["value"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()

    def result(timeout=5):
        t.join(timeout)
        assert not t.is_alive(), "the blocked call never returned"
        return box["value"]
    return result


def blocked_clients(r):
    return r.info("clients")["blocked_clients"]


def wait_blocked(r, n, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if blocked_clients(r) == n:
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {n} blocked clients, have {blocked_clients(r)}")


@pytest.fixture
def client(server, r):
    """A factory of extra clients (closed after the test)."""
    made = []

    def make():
        c = server.client()
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def test_blpop_serves_at_once_when_a_list_has_elements(r):
    r.rpush("b", "x", "y")
    assert r.blpop(["a", "b"], 1) == (b"b", b"x")
    assert r.brpop(["a", "b"], 1) == (b"b", b"y")
    assert r.exists("b") == 0


def test_blpop_blocks_until_a_push_from_another_client(r, client):
    waiter = client()
    got = in_background(waiter.blpop, ["q1", "q2"], 0)
    wait_blocked(r, 1)
    r.rpush("q2", "job")
    assert got() == (b"q2", b"job")
    assert blocked_clients(r) == 0
    assert r.exists("q2") == 0


def test_clients_blocked_on_a_key_are_served_first_come_first_served(r, client):
    results = []
    for i in range(3):
        c = client()
        results.append(in_background(c.blpop, ["q"], 0))
        wait_blocked(r, i + 1)
    r.rpush("q", "a", "b", "c")
    assert [res()[1] for res in results] == [b"a", b"b", b"c"]


def test_timeouts_are_seconds_as_floats(r):
    started = time.time()
    assert r.blpop(["none"], 0.2) is None
    assert 0.15 <= time.time() - started < 2
    assert r.bzpopmin(["none"], 0.05) is None
    assert r.blmove("none", "dst", 0.05, "LEFT", "RIGHT") is None


def test_timeout_errors(c):
    assert c.command("BLPOP", "k", "-1") == ("error", "ERR timeout is negative")
    assert c.command("BLPOP", "k", "abc") == ("error", "ERR timeout is not a float or out of range")
    assert c.command("BZPOPMIN", "k", "nan") == ("error", "ERR timeout is not a float or out of range")
    assert c.command("BLMOVE", "a", "b", "UP", "LEFT", "0") == SYNTAX
    assert c.command("BLMPOP", "0", "0", "k", "LEFT") == ("error", "ERR numkeys should be greater than 0")


def test_zero_waits_until_pushed(r, client):
    waiter = client()
    got = in_background(waiter.brpoplpush, "src", "dst", 0)
    wait_blocked(r, 1)
    time.sleep(0.3)
    assert blocked_clients(r) == 1
    r.lpush("src", "v")
    assert got() == b"v"
    assert r.lrange("dst", 0, -1) == [b"v"]


def test_blmove_and_blmpop_and_the_sorted_set_forms_wake(r, client):
    w1, w2, w3, w4 = client(), client(), client(), client()
    moved = in_background(w1.blmove, "src", "dst", 0, "RIGHT", "LEFT")
    popped = in_background(w2.execute_command, "BLMPOP", "0", "2", "l1", "l2", "RIGHT", "COUNT", "2")
    zmin = in_background(w3.bzpopmax, ["z1", "z2"], 0)
    zm = in_background(w4.execute_command, "BZMPOP", "0", "1", "z3", "MIN", "COUNT", "5")
    wait_blocked(r, 4)
    r.rpush("src", "a", "b")
    r.rpush("l2", "1", "2", "3")
    r.zadd("z2", {"m": 1, "n": 2})
    r.zadd("z3", {"p": 3, "q": 1})
    assert moved() == b"b"
    assert popped() == [b"l2", [b"3", b"2"]]
    assert zmin() == (b"z2", b"n", 2.0)
    assert zm() == [b"z3", [[b"q", b"1"], [b"p", b"3"]]]
    assert r.lrange("dst", 0, -1) == [b"b"]


def test_blocking_commands_inside_multi_answer_at_once(r):
    p = r.pipeline(transaction=True)
    p.blpop(["none"], 0)
    p.brpoplpush("none", "dst", 0)
    p.bzpopmin(["none"], 0)
    p.execute_command("BLMPOP", "0", "1", "none", "LEFT")
    assert p.execute() == [None, None, None, None]


def test_a_transaction_is_seen_whole_by_a_blocked_client(r, client):
    waiter = client()
    got = in_background(waiter.blpop, ["blist"], 0)
    wait_blocked(r, 1)
    p = r.pipeline(transaction=True)
    p.lpush("blist", "a")
    p.lpush("blist", "b")
    p.lpush("blist", "c")
    p.execute()
    assert got() == (b"blist", b"c")


def test_a_list_pushed_then_deleted_in_one_transaction_wakes_nobody(r, client):
    waiter = client()
    got = in_background(waiter.blpop, ["k"], 0)
    wait_blocked(r, 1)
    p = r.pipeline(transaction=True)
    p.lpush("k", "a")
    p.delete("k")
    p.set("k", "string")
    p.execute()
    time.sleep(0.1)
    assert blocked_clients(r) == 1
    r.delete("k")
    r.lpush("k", "b")
    assert got() == (b"k", b"b")


def test_rename_move_and_sort_store_bring_a_key_in(r, client, server):
    w1, w2, w3 = client(), client(), client()
    first = in_background(w1.blpop, ["renamed"], 0)
    second = in_background(w2.blpop, ["moved"], 0)
    third = in_background(w3.bzpopmin, ["zrenamed"], 0)
    wait_blocked(r, 3)
    r.rpush("tmp", "x")
    r.rename("tmp", "renamed")
    other = server.client(db=1)
    other.rpush("moved", "y")
    other.move("moved", 0)
    r.zadd("ztmp", {"m": 1})
    r.rename("ztmp", "zrenamed")
    assert first() == (b"renamed", b"x")
    assert second() == (b"moved", b"y")
    assert third() == (b"zrenamed", b"m", 1.0)
    w4 = client()
    fourth = in_background(w4.blpop, ["sorted"], 0)
    wait_blocked(r, 1)
    r.rpush("unsorted", "3", "1", "2")
    r.sort("unsorted", store="sorted")
    assert fourth() == (b"sorted", b"1")
    other.close()


def test_a_wrong_destination_type_fails_the_served_client_and_keeps_the_element(r, client):
    waiter = client()
    got = in_background(waiter.brpoplpush, "blist", "target", 0)
    wait_blocked(r, 1)
    r.set("target", "nolist")
    r.lpush("blist", "foo")
    error = got()
    assert isinstance(error, redis.ResponseError) and str(error).startswith("WRONGTYPE")
    assert r.lrange("blist", 0, -1) == [b"foo"]


def test_client_unblock(r, client):
    waiter = client()
    waiter_id = waiter.client_id()
    got = in_background(waiter.blpop, ["none"], 0)
    wait_blocked(r, 1)
    assert b"flags=b" in r.execute_command("CLIENT", "LIST")
    assert r.execute_command("CLIENT", "UNBLOCK", waiter_id, "TIMEOUT") == 1
    assert got() is None
    got = in_background(waiter.blpop, ["none"], 0)
    wait_blocked(r, 1)
    assert r.execute_command("CLIENT", "UNBLOCK", waiter_id, "ERROR") == 1
    assert str(got()) == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    assert r.execute_command("CLIENT", "UNBLOCK", waiter_id) == 0
    with pytest.raises(redis.ResponseError, match="CLIENT UNBLOCK reason should be TIMEOUT or ERROR"):
        r.execute_command("CLIENT", "UNBLOCK", waiter_id, "MAYBE")


def test_a_blocked_client_runs_its_pipelined_requests_after_it_is_served(server, r):
    c = server.raw()
    c.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n*2\r\n$4\r\nLLEN\r\n$1\r\nq\r\n")
    wait_blocked(r, 1)
    r.rpush("q", "a", "b")
    assert c.read_reply() == [b"q", b"a"]
    assert c.read_reply() == 1
    c.close()


def test_a_closed_blocked_client_is_forgotten(server, r):
    c = server.raw()
    c.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n")
    wait_blocked(r, 1)
    c.close()
    wait_blocked(r, 0)
    r.rpush("q", "a")
    assert r.lrange("q", 0, -1) == [b"a"]


def test_watch_fails_exec_after_any_write_even_one_that_changes_nothing(r, client):
    other = client()
    r.set("k", "v")
    p = r.pipeline(transaction=True)
    p.watch("k")
    other.set("k", "v")
    p.multi()
    p.get("k")
    with pytest.raises(redis.WatchError):
        p.execute()
    p.reset()
    p.watch("k")
    p.multi()
    p.get("k")
    assert p.execute() == [b"v"]


def test_watch_sees_a_served_blocked_push(r, client):
    blocked, watcher = client(), client()
    got = in_background(blocked.brpoplpush, "srclist", "dstlist", 0)
    wait_blocked(r, 1)
    p = watcher.pipeline(transaction=True)
    p.watch("dstlist")
    p.multi()
    p.get("somekey")
    r.lpush("srclist", "element")
    assert got() == b"element"
    with pytest.raises(redis.WatchError):
        p.execute()


def test_watch_fails_when_a_watched_key_expires(r):
    r.set("k", "v", px=100)
    p = r.pipeline(transaction=True)
    p.watch("k")
    time.sleep(0.2)
    p.multi()
    p.ping()
    with pytest.raises(redis.WatchError):
        p.execute()


def test_flushdb_touches_only_keys_that_exist(r, client):
    r.set("x", "1")
    p = r.pipeline(transaction=True)
    p.watch("absent")
    client().flushdb()
    p.multi()
    p.ping()
    assert p.execute() == [True]


def test_client_pause_write_holds_writes_not_reads(r, client):
    writer = client()
    r.set("k", "before")
    assert r.client_pause(100000, all=False)
    done = in_background(writer.set, "k", "after")
    time.sleep(0.2)
    assert r.get("k") == b"before"                   # reads go on; the write waits
    assert r.client_unpause()
    assert done() is True
    assert r.get("k") == b"after"


def test_clients_held_by_a_pause_count_as_blocked(r, client):
    # Redis blocks them (BLOCKED_POSTPONE): INFO's blocked_clients and CLIENT
    # LIST's b flag count them until the pause ends.
    first, second = client(), client()
    assert r.client_pause(100000, all=False)
    one = in_background(first.set, "a", "1")
    wait_blocked(r, 1)
    two = in_background(second.lpush, "l", "x")
    wait_blocked(r, 2)
    flags = [c["flags"] for c in r.client_list() if c["cmd"] in ("set", "lpush")]
    assert sorted(flags) == ["b", "b"]
    assert r.client_unpause()
    assert one() is True and two() == 1
    wait_blocked(r, 0)


def test_no_key_expires_during_a_pause(r):
    # Redis: during CLIENT PAUSE an expired key reads as absent, but neither
    # a read nor the active sweep deletes it (expired_keys stays).
    before = r.info("stats")["expired_keys"]
    r.set("a", "1", px=30)
    r.set("b", "2", px=30)
    assert r.client_pause(100000, all=False)
    time.sleep(0.3)                                   # the sweep runs meanwhile
    assert r.get("a") is None and r.exists("b") == 0
    assert r.info("stats")["expired_keys"] == before
    assert r.client_unpause()
    assert r.get("a") is None and r.get("b") is None
    assert r.info("stats")["expired_keys"] == before + 2


def test_save_and_shutdown_are_refused_inside_multi(c):
    assert c.command("MULTI") == "OK"
    assert c.command("SHUTDOWN") == ("error", "ERR Command not allowed inside a transaction")
    assert c.command("SAVE") == ("error", "ERR Command not allowed inside a transaction")
    assert c.command("EXEC") == (
        "error", "EXECABORT Transaction discarded because of previous errors.")
    assert c.command("PING") == "PONG"                # still running


def test_client_pause_ends_by_itself(r, client):
    writer = client()
    r.execute_command("CLIENT", "PAUSE", "200", "ALL")
    started = time.time()
    assert writer.ping() is True
    assert time.time() - started >= 0.1


def test_client_pause_errors(c):
    assert c.command("CLIENT", "PAUSE", "10", "READ") == ("error", "ERR CLIENT PAUSE mode must be WRITE or ALL")
    assert c.command("CLIENT", "PAUSE", "x") == ("error", "ERR timeout is not an integer or out of range")
    assert c.command("CLIENT", "PAUSE", "-1") == ("error", "ERR timeout is negative")
    assert c.command("CLIENT", "NO-EVICT", "on") == "OK"
    assert c.command("CLIENT", "NO-EVICT", "maybe") == SYNTAX
    assert c.command("WAIT", "0", "0") == 0


# ---------------------------------------------------------------------------
# A producer and a worker process passing jobs through BLPOP and BLMOVE
# ---------------------------------------------------------------------------

def producer(port, count):
    r = redis.Redis(port=port)
    for i in range(count):
        r.lpush("jobs", "job-%d" % i)
        if i % 50 == 0:
            time.sleep(0.01)
    r.lpush("jobs", "stop")


def worker(port):
    # The reliable-queue pattern: a job moves to "processing" while it is
    # worked on, then is acknowledged; results go out through another list.
    r = redis.Redis(port=port, socket_timeout=30)
    while True:
        job = r.blmove("jobs", "processing", 10, "RIGHT", "LEFT")
        if job is None or job == b"stop":
            r.lrem("processing", 1, b"stop")
            break
        r.rpush("results", b"done:" + job)
        r.lrem("processing", 1, job)
    r.rpush("results", "bye")


def collector(port, count, queue):
    r = redis.Redis(port=port, socket_timeout=30)
    seen = []
    while True:
        item = r.blpop(["results"], 10)
        if item is None or item[1] == b"bye":
            break
        seen.append(item[1])
    queue.put(seen)


def test_a_producer_and_a_worker_process_pass_jobs(server, r):
    count = 500
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    processes = [ctx.Process(target=worker, args=(server.port,)),
                 ctx.Process(target=collector, args=(server.port, count, queue))]
    for p in processes:
        p.start()
    wait_blocked(r, 2)
    maker = ctx.Process(target=producer, args=(server.port, count))
    maker.start()
    seen = queue.get(timeout=60)
    for p in processes + [maker]:
        p.join(30)
        assert p.exitcode == 0
    assert seen == [b"done:job-%d" % i for i in range(count)]
    assert r.llen("processing") == 0 and r.llen("jobs") == 0


def test_a_key_an_exec_let_expire_does_not_serve_a_blocked_client(fresh_server):
    # Redis's unit/type/list: the blocked client is served after EXEC, at
    # the time then; the key EXEC pushed has expired by then (DEBUG SLEEP
    # inside it), so the client stays blocked.
    s = fresh_server(args=["--enable-debug-command", "yes"])
    c, blocked = s.raw(), s.raw()
    assert c.command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == "OK"
    blocked_id = blocked.command("CLIENT", "ID")
    blocked.send(b"*3\r\n$5\r\nBRPOP\r\n$1\r\nk\r\n$1\r\n0\r\n")
    wait_for_blocked(c, 1)
    for command in (["MULTI"], ["RPUSH", "k", "hello"], ["PEXPIRE", "k", "100"], ["DEBUG", "SLEEP", "0.2"]):
        assert c.command(*command) in ("OK", "QUEUED")
    assert c.command("EXEC") == [1, 1, "OK"]
    assert b"flags=b" in c.command("CLIENT", "LIST", "ID", blocked_id)
    assert c.command("CLIENT", "UNBLOCK", blocked_id) == 1
    assert blocked.read_reply() is None


def test_client_pause_write_holds_scripts_that_may_write(fresh_server):
    # Redis's unit/pause: under CLIENT PAUSE WRITE an EVAL without a shebang
    # or whose shebang lacks no-writes waits (a blocked client in INFO); a
    # no-writes script and EVAL_RO run at once.
    s = fresh_server()
    c, first, second = s.raw(), s.raw(), s.raw()
    assert c.command("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    first.send(b"*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n")
    body = b"#!lua\nreturn 2"
    second.send(b"*3\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(body), body))
    wait_for_blocked(c, 2)
    assert c.command("EVAL", "#!lua flags=no-writes\nreturn 3", "0") == 3
    assert c.command("EVAL_RO", "return 4", "0") == 4
    assert c.command("CLIENT", "UNPAUSE") == "OK"
    assert first.read_reply() == 1 and second.read_reply() == 2
