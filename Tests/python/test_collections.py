"""What lists, sets, hashes and sorted sets share: WRONGTYPE from every
string command and the reverse, TYPE, MGET, SET over any kind, RESP3 reply
types, OBJECT ENCODING and its thresholds, expiry, SCAN, RENAME, COPY, MOVE
and transactions over collections, and persistence; pinned to Redis
7.0.15's exact replies (KVCACHE_TARGET=redis checks them against
redis-server). Each type's own commands: test_lists.py, test_sets.py,
test_hashes.py, test_sorted_sets.py; DUMP/RESTORE: test_dump_restore.py.
"""
import time

import pytest

from conftest import WRONGTYPE


# ---------------------------------------------------------------------------
# RESP3: a small reader that keeps the reply types
# ---------------------------------------------------------------------------

def read3(conn):
    """One RESP3 reply, typed: ('set', [...]), ('map', [(k, v), ...]),
    ('double', text), ('null',), ('array', [...]), ('int', n), bytes, str,
    ('error', text)."""
    line = conn.read_line()
    kind, rest = line[:1], line[1:]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return ("error", rest.decode())
    if kind == b":":
        return ("int", int(rest))
    if kind == b",":
        return ("double", rest.decode())
    if kind == b"_":
        return ("null",)
    if kind == b"$":
        n = int(rest)
        while len(conn.buf) < n + 2:
            conn._fill()
        data, conn.buf = conn.buf[:n], conn.buf[n + 2:]
        return data
    if kind in (b"*", b"~"):
        items = [read3(conn) for _ in range(int(rest))]
        return ("array" if kind == b"*" else "set", items)
    if kind == b"%":
        return ("map", [(read3(conn), read3(conn)) for _ in range(int(rest))])
    raise ValueError(f"unexpected RESP3 line {line!r}")


def command3(conn, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else str(a).encode() if isinstance(a, int) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    conn.send(out)
    return read3(conn)


@pytest.fixture
def c3(server, r):
    conn = server.raw()
    assert command3(conn, "HELLO", "3")[0] == "map"
    yield conn
    conn.close()


# ---------------------------------------------------------------------------
# WRONGTYPE from every string command; TYPE; MGET; SET overwrites
# ---------------------------------------------------------------------------

STRING_COMMANDS = [
    ("GET", "k"), ("GETRANGE", "k", "0", "-1"), ("SUBSTR", "k", "0", "-1"), ("STRLEN", "k"),
    ("APPEND", "k", "x"), ("INCR", "k"), ("DECR", "k"), ("INCRBY", "k", "2"), ("DECRBY", "k", "2"),
    ("INCRBYFLOAT", "k", "1.5"), ("INCRBYFLOAT", "k", "abc"), ("SETRANGE", "k", "0", "x"),
    ("SETBIT", "k", "1", "1"), ("GETBIT", "k", "1"), ("BITCOUNT", "k"), ("BITCOUNT", "k", "0", "1"),
    ("GETDEL", "k"), ("GETEX", "k"), ("GETEX", "k", "EX", "100"), ("GETSET", "k", "v"),
    ("SET", "k", "v", "GET"), ("SET", "k", "v", "NX", "GET"), ("SET", "k", "v", "XX", "GET"),
]


@pytest.mark.parametrize("setup", [("RPUSH", "k", "a"), ("SADD", "k", "a"), ("HSET", "k", "f", "v"),
                                   ("ZADD", "k", "1", "a")])
@pytest.mark.parametrize("args", STRING_COMMANDS)
def test_string_commands_refuse_collections(c, setup, args):
    c.command(*setup)
    assert c.command(*args) == WRONGTYPE
    assert c.command("TYPE", "k") == {"RPUSH": "list", "SADD": "set", "HSET": "hash", "ZADD": "zset"}[setup[0]]


@pytest.mark.kvcache_only
def test_kvcache_get_refuses_collections(c):
    c.command("RPUSH", "k", "a")
    assert c.command("KVCACHE.GET", "k") == WRONGTYPE
    assert c.command("KVCACHE.PUT", "k", "*", "m", "v") == "OK"     # a put overwrites, as SET does
    assert c.command("TYPE", "k") == "string"


def test_lcs_has_its_own_error(c):
    c.command("RPUSH", "l", "a")
    c.command("SET", "s", "abc")
    for args in [("LCS", "l", "s"), ("LCS", "s", "l"), ("LCS", "l", "missing"), ("LCS", "l", "s", "BOGUS")]:
        assert c.command(*args) == ("error", "ERR The specified keys must contain string values")


def test_mget_reads_collections_as_nil(c):
    c.command("SET", "s", "v")
    c.command("RPUSH", "l", "a")
    c.command("HSET", "h", "f", "v")
    assert c.command("MGET", "s", "l", "h", "missing") == [b"v", None, None, None]


def test_set_overwrites_any_kind_and_keeps_ttl_when_asked(c):
    c.command("RPUSH", "k", "a")
    assert c.command("SET", "k", "v") == "OK"
    assert c.command("TYPE", "k") == "string"
    assert c.command("GET", "k") == b"v"
    c.command("DEL", "k")
    c.command("SADD", "k", "a")
    c.command("EXPIRE", "k", "100")
    assert c.command("SET", "k", "v", "KEEPTTL") == "OK"
    assert 0 < c.command("TTL", "k") <= 100
    c.command("DEL", "k")
    c.command("ZADD", "k", "1", "a")
    assert c.command("SET", "k", "v", "NX") is None             # exists: not set, no type check
    assert c.command("TYPE", "k") == "zset"
    assert c.command("SET", "k", "v", "XX") == "OK"
    assert c.command("GET", "k") == b"v"
    c.command("DEL", "k")
    c.command("HSET", "k", "f", "v")
    assert c.command("SETNX", "k", "v") == 0
    assert c.command("MSETNX", "k", "v", "other", "1") == 0
    assert c.command("GETSET", "k", "v") == WRONGTYPE
    assert c.command("TYPE", "k") == "hash"                     # a refused write changes nothing


def test_type_of_each_kind(c):
    c.command("SET", "s", "v")
    c.command("LPUSH", "l", "a")
    c.command("SADD", "st", "a")
    c.command("HSET", "h", "f", "v")
    c.command("ZADD", "z", "1", "a")
    assert [c.command("TYPE", k) for k in ["s", "l", "st", "h", "z", "none"]] == \
        ["string", "list", "set", "hash", "zset", "none"]


COLLECTION_COMMANDS = {
    "list": [("LPUSH", "k", "a"), ("RPUSH", "k", "a"), ("LPUSHX", "k", "a"), ("RPUSHX", "k", "a"), ("LPOP", "k"),
             ("RPOP", "k"), ("LPOP", "k", "2"), ("LRANGE", "k", "0", "-1"), ("LLEN", "k"), ("LINDEX", "k", "0"),
             ("LSET", "k", "0", "x"), ("LREM", "k", "0", "a"), ("LTRIM", "k", "0", "1"),
             ("LINSERT", "k", "BEFORE", "a", "b"), ("LPOS", "k", "a")],
    "set": [("SADD", "k", "a"), ("SREM", "k", "a"), ("SMEMBERS", "k"), ("SISMEMBER", "k", "a"),
            ("SMISMEMBER", "k", "a"), ("SCARD", "k"), ("SRANDMEMBER", "k"), ("SRANDMEMBER", "k", "2"),
            ("SPOP", "k"), ("SPOP", "k", "2"), ("SMOVE", "k", "other", "a")],
    "hash": [("HSET", "k", "f", "v"), ("HMSET", "k", "f", "v"), ("HSETNX", "k", "f", "v"), ("HGET", "k", "f"),
             ("HMGET", "k", "f"), ("HGETALL", "k"), ("HDEL", "k", "f"), ("HLEN", "k"), ("HEXISTS", "k", "f"),
             ("HKEYS", "k"), ("HVALS", "k"), ("HINCRBY", "k", "f", "1"), ("HINCRBYFLOAT", "k", "f", "1"),
             ("HSTRLEN", "k", "f")],
    "zset": [("ZADD", "k", "1", "a"), ("ZINCRBY", "k", "1", "a"), ("ZSCORE", "k", "a"), ("ZMSCORE", "k", "a"),
             ("ZCARD", "k"), ("ZREM", "k", "a"), ("ZRANGE", "k", "0", "-1"), ("ZRANGE", "k", "0", "1", "BYSCORE"),
             ("ZRANGE", "k", "-", "+", "BYLEX"), ("ZREVRANGE", "k", "0", "-1"), ("ZRANGEBYSCORE", "k", "0", "1"),
             ("ZRANK", "k", "a"), ("ZREVRANK", "k", "a"), ("ZCOUNT", "k", "0", "1")],
}


@pytest.mark.parametrize("args", [a for kind in COLLECTION_COMMANDS.values() for a in kind],
                         ids=lambda a: " ".join(a))
def test_collection_commands_refuse_strings_and_other_kinds(c, args):
    c.command("SET", "k", "v")
    assert c.command(*args) == WRONGTYPE
    assert c.command("GET", "k") == b"v"
    # ... and every other kind of collection
    kinds = {"list": ("RPUSH", "k", "x"), "set": ("SADD", "k", "x"), "hash": ("HSET", "k", "x", "y"),
             "zset": ("ZADD", "k", "1", "x")}
    mine = next(kind for kind, commands in COLLECTION_COMMANDS.items() if args in commands)
    for kind, setup in kinds.items():
        if kind == mine:
            continue
        c.command("DEL", "k")
        c.command(*setup)
        assert c.command(*args) == WRONGTYPE, kind


# ---------------------------------------------------------------------------
# RESP3 reply types
# ---------------------------------------------------------------------------

def test_resp3_reply_types(c3):
    c = c3
    command3(c, "SADD", "s", "1", "2")
    assert command3(c, "SMEMBERS", "s") == ("set", [b"1", b"2"])
    assert command3(c, "SMEMBERS", "missing") == ("set", [])
    assert command3(c, "SPOP", "missing", "1") == ("set", [])
    assert command3(c, "SRANDMEMBER", "s", "5") == ("array", [b"1", b"2"])
    command3(c, "HSET", "h", "f", "v")
    assert command3(c, "HGETALL", "h") == ("map", [(b"f", b"v")])
    assert command3(c, "HGETALL", "missing") == ("map", [])
    assert command3(c, "HKEYS", "h") == ("array", [b"f"])
    command3(c, "ZADD", "z", "1.5", "a", "2", "b")
    assert command3(c, "ZSCORE", "z", "a") == ("double", "1.5")
    assert command3(c, "ZSCORE", "z", "nope") == ("null",)
    assert command3(c, "ZINCRBY", "z", "1", "b") == ("double", "3")
    assert command3(c, "ZRANGE", "z", "0", "-1", "WITHSCORES") == \
        ("array", [("array", [b"a", ("double", "1.5")]), ("array", [b"b", ("double", "3")])])
    assert command3(c, "ZRANGE", "z", "0", "-1") == ("array", [b"a", b"b"])
    assert command3(c, "ZADD", "z", "inf", "c") == ("int", 1)
    assert command3(c, "ZMSCORE", "z", "c", "x") == ("array", [("double", "inf"), ("null",)])
    assert command3(c, "LPOP", "missing", "2") == ("null",)
    assert command3(c, "LPOP", "missing") == ("null",)
    assert command3(c, "ZRANK", "z", "nope") == ("null",)


# ---------------------------------------------------------------------------
# OBJECT ENCODING, and the thresholds behind it
# ---------------------------------------------------------------------------

def test_object_encoding_by_size(c):
    c.command("RPUSH", "l", "a")
    assert c.command("OBJECT", "ENCODING", "l") == b"quicklist"     # every list is a quicklist in 7.0
    c.command("SADD", "s", *[str(i) for i in range(512)])
    assert c.command("OBJECT", "ENCODING", "s") == b"intset"
    c.command("SADD", "s", "512")
    assert c.command("OBJECT", "ENCODING", "s") == b"hashtable"
    c.command("SREM", "s", *[str(i) for i in range(10, 513)])
    assert c.command("OBJECT", "ENCODING", "s") == b"hashtable"    # never converted back
    c.command("SADD", "t", "1", "2")
    c.command("SADD", "t", "x")
    assert c.command("OBJECT", "ENCODING", "t") == b"hashtable"
    c.command("SADD", "u", "x")
    assert c.command("OBJECT", "ENCODING", "u") == b"hashtable"
    c.command("HSET", "h", "f", "x" * 64)
    assert c.command("OBJECT", "ENCODING", "h") == b"listpack"
    c.command("HSET", "h", "g", "x" * 65)
    assert c.command("OBJECT", "ENCODING", "h") == b"hashtable"
    c.command("HSET", "h3", "f", "1")
    c.command("HINCRBYFLOAT", "h3", "g" * 65, "1")                 # HINCRBY* check the field too
    assert c.command("OBJECT", "ENCODING", "h3") == b"hashtable"
    for i in range(512):
        c.command("HSET", "h2", "f%d" % i, "v")
    assert c.command("OBJECT", "ENCODING", "h2") == b"listpack"
    c.command("HSET", "h2", "one-more", "v")
    assert c.command("OBJECT", "ENCODING", "h2") == b"hashtable"
    c.command("ZADD", "z", *[x for i in range(128) for x in (str(i), "m%d" % i)])
    assert c.command("OBJECT", "ENCODING", "z") == b"listpack"
    c.command("ZADD", "z", "0", "m0")                               # an update adds nothing
    assert c.command("OBJECT", "ENCODING", "z") == b"listpack"
    c.command("ZADD", "z", "1", "another")
    assert c.command("OBJECT", "ENCODING", "z") == b"skiplist"
    c.command("ZADD", "z2", "1", "m" * 65)
    assert c.command("OBJECT", "ENCODING", "z2") == b"skiplist"
    assert c.command("OBJECT", "REFCOUNT", "z2") == 1
    assert c.command("OBJECT", "ENCODING", "missing") is None


def test_encoding_thresholds_follow_config_set(c):
    assert c.command("CONFIG", "GET", "zset-max-ziplist-entries") == [b"zset-max-ziplist-entries", b"128"]
    assert c.command("CONFIG", "SET", "zset-max-ziplist-entries", "0") == "OK"
    try:
        assert c.command("CONFIG", "GET", "zset-max-listpack-entries") == [b"zset-max-listpack-entries", b"0"]
        c.command("ZADD", "z", "1", "a")
        assert c.command("OBJECT", "ENCODING", "z") == b"skiplist"
    finally:
        c.command("CONFIG", "SET", "zset-max-listpack-entries", "128")
    assert c.command("CONFIG", "SET", "hash-max-listpack-entries", "1", "set-max-intset-entries", "2") == "OK"
    try:
        c.command("HSET", "h", "a", "1")
        assert c.command("OBJECT", "ENCODING", "h") == b"listpack"
        c.command("HSET", "h", "b", "1")
        assert c.command("OBJECT", "ENCODING", "h") == b"hashtable"
        c.command("SADD", "s", "1", "2")
        assert c.command("OBJECT", "ENCODING", "s") == b"intset"
        c.command("SADD", "s", "3")
        assert c.command("OBJECT", "ENCODING", "s") == b"hashtable"
    finally:
        c.command("CONFIG", "SET", "hash-max-listpack-entries", "512", "set-max-intset-entries", "512")


def test_writes_to_large_sets_and_hashes(c):
    c.command("SADD", "s", *["m%d" % i for i in range(600)])
    assert c.command("OBJECT", "ENCODING", "s") == b"hashtable"
    assert c.command("SADD", "s", "m1", "new", "new", "m599", "other") == 2
    assert c.command("SCARD", "s") == 602
    assert c.command("SMISMEMBER", "s", "new", "other", "m0", "m600") == [1, 1, 1, 0]
    c.command("HSET", "h", *[x for i in range(600) for x in ("f%d" % i, "v%d" % i)])
    assert c.command("OBJECT", "ENCODING", "h") == b"hashtable"
    assert c.command("HSET", "h", "f1", "one", "new", "a", "f2", "two", "new", "b", "f1", "uno") == 1
    assert c.command("HMGET", "h", "f1", "f2", "new", "f3", "nope") == [b"uno", b"two", b"b", b"v3", None]
    assert c.command("HLEN", "h") == 601
    assert c.command("HMSET", "h", "f599", "last") == "OK"
    assert c.command("HGET", "h", "f599") == b"last"
    assert c.command("HSTRLEN", "h", "f599") == 4
    all_pairs = c.command("HGETALL", "h")
    assert len(all_pairs) == 1202 and dict(zip(all_pairs[::2], all_pairs[1::2]))[b"f0"] == b"v0"


def test_sorted_set_built_one_member_at_a_time_stays_in_order(c):
    expected = {}
    for i in range(300):
        member, score = "m%d" % (i * 7 % 150), str((i * 13) % 17 - 8)
        c.command("ZADD", "z", score, member)
        expected[member] = float(score)
    c.command("ZINCRBY", "z", "100", "m3")
    expected["m3"] += 100
    c.command("ZADD", "z", "GT", "CH", "-100", "m4")
    flat = c.command("ZRANGE", "z", "0", "-1", "WITHSCORES")
    got = [(flat[i], float(flat[i + 1])) for i in range(0, len(flat), 2)]
    assert got == sorted(((m.encode(), s) for m, s in expected.items()), key=lambda p: (p[1], p[0]))
    assert c.command("OBJECT", "ENCODING", "z") == b"skiplist"
    assert c.command("ZRANK", "z", "m3") == 149


# ---------------------------------------------------------------------------
# Keys holding collections: expiry, SCAN, RENAME, COPY, MOVE, transactions
# ---------------------------------------------------------------------------

def test_changes_keep_the_ttl(c):
    c.command("RPUSH", "l", "a", "b")
    c.command("EXPIRE", "l", "100")
    c.command("RPUSH", "l", "c")
    c.command("LPOP", "l")
    assert 98 <= c.command("TTL", "l") <= 100
    c.command("HSET", "h", "f", "v")
    c.command("PEXPIRE", "h", "100000")
    c.command("HINCRBY", "h", "n", "1")
    assert c.command("TTL", "h") == 100
    c.command("ZADD", "z", "1", "a")
    c.command("PEXPIRE", "z", "50")
    time.sleep(0.2)
    assert c.command("ZCARD", "z") == 0
    assert c.command("EXISTS", "z") == 0
    c.command("SADD", "s", "a")
    c.command("EXPIRE", "s", "100")
    c.command("SREM", "s", "a")
    c.command("SADD", "s", "b")                        # a new set: no TTL
    assert c.command("TTL", "s") == -1


def test_scan_type_and_keys(c):
    c.command("SET", "s", "v")
    c.command("RPUSH", "l1", "a")
    c.command("RPUSH", "l2", "a")
    c.command("SADD", "st", "a")
    c.command("HSET", "h", "f", "v")
    c.command("ZADD", "z", "1", "a")
    for kind, expected in [("list", [b"l1", b"l2"]), ("set", [b"st"]), ("hash", [b"h"]), ("zset", [b"z"]),
                           ("string", [b"s"]), ("LIST", [b"l1", b"l2"]), ("stream", [])]:
        cursor, seen = b"0", []
        while True:
            cursor, keys = c.command("SCAN", cursor, "TYPE", kind)
            seen += keys
            if cursor == b"0":
                break
        assert sorted(seen) == expected, kind
    assert sorted(c.command("KEYS", "*")) == [b"h", b"l1", b"l2", b"s", b"st", b"z"]
    assert c.command("DEL", "l1", "st", "h", "z") == 4
    assert c.command("DBSIZE") == 2


def test_rename_copy_move_keep_the_kind(c):
    c.command("ZADD", "z", "1", "a", "2", "b")
    c.command("EXPIRE", "z", "100")
    assert c.command("RENAME", "z", "z2") == "OK"
    assert c.command("TYPE", "z2") == "zset"
    assert c.command("TTL", "z2") == 100
    assert c.command("COPY", "z2", "z3") == 1
    assert c.command("ZRANGE", "z3", "0", "-1", "WITHSCORES") == [b"a", b"1", b"b", b"2"]
    c.command("SADD", "s", "1", "2", "3")
    assert c.command("COPY", "s", "s2") == 1
    assert c.command("OBJECT", "ENCODING", "s2") == b"intset"
    c.command("DEL", "s")
    assert c.command("SMEMBERS", "s2") == [b"1", b"2", b"3"]
    c.command("HSET", "h", "f", "v")
    assert c.command("MOVE", "h", "1") == 1
    c.command("SELECT", "1")
    assert c.command("HGETALL", "h") == [b"f", b"v"]
    assert c.command("RENAMENX", "h", "h") == 0
    c.command("FLUSHDB")


@pytest.mark.kvcache_only
def test_copy_keeps_the_digest(fresh_server):
    c = fresh_server(args=["--enable-debug-command", "yes"]).raw()
    c.command("RPUSH", "l", "a", "b")
    c.command("COPY", "l", "l2")
    first, second, none = c.command("DEBUG", "DIGEST-VALUE", "l", "l2", "missing")
    assert first == second and len(first) == 40 and none == b"0" * 40


def test_transactions_and_watch(c, server):
    assert c.command("MULTI") == "OK"
    assert c.command("RPUSH", "l", "a", "b") == "QUEUED"
    assert c.command("LPOP", "l") == "QUEUED"
    assert c.command("GET", "l") == "QUEUED"
    assert c.command("SADD", "s", "x") == "QUEUED"
    assert c.command("EXEC") == [2, b"a", WRONGTYPE, 1]
    other = server.raw()
    try:
        assert c.command("WATCH", "l") == "OK"
        assert other.command("RPUSH", "l", "c") == 2
        c.command("MULTI")
        c.command("LLEN", "l")
        assert c.command("EXEC") is None
    finally:
        other.close()


# ---------------------------------------------------------------------------
# Persistence
# ---------------------------------------------------------------------------

@pytest.mark.kvcache_only
def test_collections_survive_a_restart(fresh_server):
    s = fresh_server()
    c = s.raw()
    c.command("RPUSH", "l", "a", "b")
    c.command("SADD", "s", "1", "x")
    c.command("HSET", "h", "f", "v")
    c.command("ZADD", "z", "2", "b", "1", "a")
    c.command("EXPIRE", "z", "1000")
    c.close()
    s.restart()
    c = s.raw()
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"b"]
    assert c.command("SMEMBERS", "s") == [b"1", b"x"]
    assert c.command("OBJECT", "ENCODING", "s") == b"hashtable"
    assert c.command("HGETALL", "h") == [b"f", b"v"]
    assert c.command("ZRANGE", "z", "0", "-1") == [b"a", b"b"]
    assert 990 < c.command("TTL", "z") <= 1000
    assert [c.command("TYPE", k) for k in ["l", "s", "h", "z"]] == ["list", "set", "hash", "zset"]
    c.close()
