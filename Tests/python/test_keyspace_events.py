"""Keyspace notifications as Redis 7.0: notify-keyspace-events (its letters
and CONFIG GET's rendering), __keyspace@<db>__:<key> and
__keyevent@<db>__:<event> with Redis's event names per command, expired
events (lazy and background), evicted and new and keymiss events. A named
cache puts its name where Redis puts the database number. Expected events
are redis-server 7.0.15's (KVCACHE_TARGET=redis runs the shared ones there)."""
import time

import pytest
import redis

from conftest import REDIS


def subscriber(server, pattern="*", protocol=2):
    client = redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=10, protocol=protocol)
    ps = client.pubsub()
    ps.psubscribe(pattern)
    assert ps.get_message(timeout=5)["type"] == "psubscribe"
    return client, ps


def next_events(ps, count, timeout=5):
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        m = ps.get_message(timeout=0.2)
        if m and m["type"] == "pmessage":
            got.append((m["channel"].decode(), m["data"].decode()))
    return got


def no_more_events(ps, wait=0.3):
    return next_events(ps, 1, timeout=wait) == []


@pytest.fixture
def flags(r):
    def set_flags(value):
        assert r.config_set("notify-keyspace-events", value)
    yield set_flags
    r.config_set("notify-keyspace-events", "")


def test_flags_render_as_redis(r, flags):
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
    for given, shown in [("gKE", "gKE"), ("$lshzxeKE", "$lshzxeKE"), ("KA", "AK"), ("EA", "AE"),
                         ("Kn", "nK"), ("AKEm", "AKEm"), ("Eg$lshzxetd", "AE"), ("", "")]:
        flags(given)
        assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == shown


def test_invalid_flag_is_refused_with_redis_text(c):
    assert c.command("CONFIG", "SET", "notify-keyspace-events", "KEq") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                 "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")


def test_no_events_by_default(server, r):
    client, ps = subscriber(server)
    r.set("foo", "bar")
    assert no_more_events(ps)
    ps.close()


def test_set_gives_keyspace_then_keyevent(server, r, flags):
    flags("KEA")
    client, ps = subscriber(server)
    r.set("foo", "bar")
    assert next_events(ps, 2) == [("__keyspace@0__:foo", "set"), ("__keyevent@0__:set", "foo")]
    ps.close()


# What redis-server 7.0.15 sends, command by command, with notify-keyspace-events EA.
COMMAND_EVENTS = [
    (("SET", "foo", "bar"), [("set", "foo")]),
    (("SET", "foo", "bar", "EX", "100"), [("set", "foo"), ("expire", "foo")]),
    (("APPEND", "foo", "x"), [("append", "foo")]),
    (("SETRANGE", "foo", "0", "y"), [("setrange", "foo")]),
    (("INCR", "n"), [("incrby", "n")]),
    (("DECRBY", "n", "3"), [("incrby", "n")]),
    (("INCRBYFLOAT", "n", "1.5"), [("incrbyfloat", "n")]),
    (("EXPIRE", "foo", "100"), [("expire", "foo")]),
    (("PERSIST", "foo"), [("persist", "foo")]),
    (("EXPIRE", "nosuch", "100"), []),
    (("RENAME", "foo", "foo2"), [("rename_from", "foo"), ("rename_to", "foo2")]),
    (("DEL", "foo2", "nosuch"), [("del", "foo2")]),
    (("MSET", "a", "1", "b", "2"), [("set", "a"), ("set", "b")]),
    (("SETEX", "k2", "100", "v"), [("set", "k2"), ("expire", "k2")]),
    (("GETDEL", "k2"), [("del", "k2")]),
    (("EXPIRE", "a", "0"), [("del", "a")]),
    (("LPUSH", "l", "a", "b"), [("lpush", "l")]),
    (("RPUSH", "l", "c"), [("rpush", "l")]),
    (("LPOP", "l"), [("lpop", "l")]),
    (("RPOP", "l", "2"), [("rpop", "l"), ("del", "l")]),
    (("SADD", "s", "a", "b"), [("sadd", "s")]),
    (("SREM", "s", "x"), []),
    (("SREM", "s", "a"), [("srem", "s")]),
    (("HSET", "h", "f", "v", "n", "1"), [("hset", "h")]),
    (("HINCRBY", "h", "n", "1"), [("hincrby", "h")]),
    (("HDEL", "h", "f", "n"), [("hdel", "h"), ("del", "h")]),
    (("ZADD", "z", "1", "a"), [("zadd", "z")]),
    (("ZINCRBY", "z", "1", "a"), [("zincr", "z")]),
    (("ZREM", "z", "a"), [("zrem", "z"), ("del", "z")]),
]


def test_event_names_per_command(server, r, flags):
    flags("EA")
    client, ps = subscriber(server)
    for command, expected in COMMAND_EVENTS:
        r.execute_command(*command)
        got = next_events(ps, len(expected), timeout=3)
        assert got == [(f"__keyevent@0__:{event}", key) for event, key in expected], command
        assert no_more_events(ps, wait=0.05), command
    ps.close()


def test_masks_select_classes(server, r, flags):
    flags("KEl")
    client, ps = subscriber(server)
    r.set("foo", "bar")
    r.lpush("mylist", "a")
    assert next_events(ps, 2) == [("__keyspace@0__:mylist", "lpush"), ("__keyevent@0__:lpush", "mylist")]
    ps.close()


def test_events_in_a_numbered_database(server, r, flags):
    flags("KEA")
    client, ps = subscriber(server, "__key*@3__:*")
    db3 = server.client(db=3)
    db3.set("k", "v")
    r.set("k", "v")  # db 0: not matched
    assert next_events(ps, 2) == [("__keyspace@3__:k", "set"), ("__keyevent@3__:set", "k")]
    assert no_more_events(ps)
    ps.close()


def test_expired_event_lazy(fresh_server):
    server = fresh_server(args=["--enable-debug-command", "yes", "--notify-keyspace-events", "Ex"])
    r = server.client()
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    client, ps = subscriber(server)
    r.psetex("foo", 100, "1")
    time.sleep(0.2)
    assert no_more_events(ps, wait=0.05)
    assert r.get("foo") is None  # the read finds it expired
    assert next_events(ps, 1) == [("__keyevent@0__:expired", "foo")]
    ps.close()


def test_expired_event_background(server, r, flags):
    flags("KEx")
    client, ps = subscriber(server)
    r.psetex("foo", 100, "1")
    assert next_events(ps, 2, timeout=5) == [("__keyspace@0__:foo", "expired"), ("__keyevent@0__:expired", "foo")]
    ps.close()


def test_new_key_events(server, r, flags):
    flags("En")
    client, ps = subscriber(server)
    r.set("foo", "bar")
    r.set("foo", "baz")
    r.set("bar", "bar")
    assert next_events(ps, 2) == [("__keyevent@0__:new", "foo"), ("__keyevent@0__:new", "bar")]
    assert no_more_events(ps)
    ps.close()


def test_keymiss_events(server, r, flags):
    flags("Em")
    client, ps = subscriber(server)
    r.get("nosuch")
    r.set("here", "1")
    r.get("here")
    assert next_events(ps, 1) == [("__keyevent@0__:keymiss", "nosuch")]
    assert no_more_events(ps)
    ps.close()


def test_resp3_subscriber_gets_pushes(server, r, flags):
    flags("KEA")
    client, ps = subscriber(server, protocol=3)
    r.set("foo", "bar")
    assert next_events(ps, 2) == [("__keyspace@0__:foo", "set"), ("__keyevent@0__:set", "foo")]
    ps.close()


def test_events_inside_multi_exec(server, r, flags):
    flags("EA")
    client, ps = subscriber(server)
    pipe = r.pipeline(transaction=True)
    pipe.set("a", "1").lpush("l", "x").delete("a")
    pipe.execute()
    assert next_events(ps, 3) == [("__keyevent@0__:set", "a"), ("__keyevent@0__:lpush", "l"),
                                  ("__keyevent@0__:del", "a")]
    ps.close()


# --- named caches (kvcache-server's own) ----------------------------------------------

@pytest.mark.kvcache_only
def test_named_cache_puts_its_name_in_the_channel(server, r, flags):
    flags("KEA")
    client, ps = subscriber(server)
    sessions = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10)
    sessions.execute_command("SELECT", "sessions")
    sessions.set("user:1", "alice")
    assert next_events(ps, 2) == [("__keyspace@sessions__:user:1", "set"), ("__keyevent@sessions__:set", "user:1")]
    sessions.close()
    ps.close()


@pytest.mark.kvcache_only
def test_named_cache_expired_event(server, r, flags):
    flags("Ex")
    client, ps = subscriber(server, "__keyevent@sessions__:*")
    sessions = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10)
    sessions.execute_command("SELECT", "sessions")
    sessions.psetex("token", 100, "x")
    r.psetex("token", 100, "x")  # db0's expiry is not on this channel
    assert next_events(ps, 1) == [("__keyevent@sessions__:expired", "token")]
    assert no_more_events(ps, wait=0.5)
    sessions.close()
    ps.close()


@pytest.mark.kvcache_only
def test_evicted_events_on_a_named_and_a_numbered_cache(fresh_server):
    server = fresh_server(config_text="cache tiny 4kb fifo\ncache db5 4kb fifo\nnotify-keyspace-events Ee\n")
    client, ps = subscriber(server)
    for name in ["tiny", "5"]:
        c = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10)
        c.execute_command("SELECT", name)
        for i in range(8):
            c.set(f"k{i}", "x" * 1000)
        got = next_events(ps, 4)
        assert got[:4] == [(f"__keyevent@{name}__:evicted", f"k{i}") for i in range(4)]
        assert c.dbsize() == 4
        c.close()
    ps.close()


def test_script_commands_name_their_events(server, r, flags):
    flags("EA")
    client, ps = subscriber(server)
    r.eval("redis.call('set', KEYS[1], 'v'); redis.call('lpush', KEYS[2], 'x'); return 1", 2, "sk", "sl")
    assert next_events(ps, 2) == [("__keyevent@0__:set", "sk"), ("__keyevent@0__:lpush", "sl")]
    assert no_more_events(ps)
    ps.close()
