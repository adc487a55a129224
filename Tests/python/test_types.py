"""Lists, sets, hashes and sorted sets, WRONGTYPE, TYPE, OBJECT ENCODING,
DUMP and RESTORE, pinned to Redis 7.0.15's exact replies.

Most checks go through a raw RESP2 connection, so error texts and reply
types are compared in full; a few read RESP3 replies (after HELLO 3) to
check sets, maps, doubles and nulls. Run with KVCACHE_TARGET=redis to check
them against redis-server.
"""
import time

import pytest

from conftest import NOT_INT, SYNTAX, arity

WRONGTYPE = ("error", "WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_FLOAT = ("error", "ERR value is not a valid float")
MUST_BE_POSITIVE = ("error", "ERR value is out of range, must be positive")


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
# Lists
# ---------------------------------------------------------------------------

def test_push_pop_and_range(c):
    assert c.command("RPUSH", "l", "a", "b", "c") == 3
    assert c.command("LPUSH", "l", "x", "y") == 5               # y x a b c
    assert c.command("LRANGE", "l", "0", "-1") == [b"y", b"x", b"a", b"b", b"c"]
    assert c.command("LLEN", "l") == 5
    assert c.command("LPOP", "l") == b"y"
    assert c.command("RPOP", "l") == b"c"
    assert c.command("LPOP", "l", "2") == [b"x", b"a"]
    assert c.command("RPUSH", "l", "d", "e") == 3
    assert c.command("RPOP", "l", "2") == [b"e", b"d"]
    assert c.command("RPOP", "l", "10") == [b"b"]
    assert c.command("EXISTS", "l") == 0                         # an emptied list is deleted
    assert c.command("LPOP", "l") is None
    assert c.command("LPOP", "l", "2") is None                   # a null array in RESP2
    assert c.command("LLEN", "l") == 0


def test_pop_count_rules(c):
    c.command("RPUSH", "l", "a", "b")
    assert c.command("LPOP", "l", "0") == []
    assert c.command("LPOP", "missing", "0") is None
    assert c.command("LPOP", "l", "-1") == MUST_BE_POSITIVE
    assert c.command("LPOP", "l", "x") == MUST_BE_POSITIVE
    assert c.command("LPOP", "l", "1", "2") == arity("lpop")
    assert c.command("RPOP", "l", "1", "2") == arity("rpop")
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"b"]


def test_pushx(c):
    assert c.command("LPUSHX", "l", "a") == 0
    assert c.command("RPUSHX", "l", "a") == 0
    assert c.command("EXISTS", "l") == 0
    c.command("RPUSH", "l", "m")
    assert c.command("LPUSHX", "l", "a", "b") == 3
    assert c.command("RPUSHX", "l", "z") == 4
    assert c.command("LRANGE", "l", "0", "-1") == [b"b", b"a", b"m", b"z"]


@pytest.mark.parametrize("start,stop,expected", [
    ("0", "-1", "abcde"), ("1", "3", "bcd"), ("-2", "-1", "de"), ("-100", "1", "ab"), ("3", "100", "de"),
    ("4", "2", ""), ("5", "10", ""), ("-1", "-2", ""), ("0", "0", "a"),
])
def test_lrange(c, start, stop, expected):
    c.command("RPUSH", "l", *"abcde")
    assert c.command("LRANGE", "l", start, stop) == [x.encode() for x in expected]


def test_lrange_errors_and_missing(c):
    assert c.command("LRANGE", "missing", "0", "-1") == []
    assert c.command("LRANGE", "missing", "a", "-1") == NOT_INT
    c.command("RPUSH", "l", "a")
    assert c.command("LRANGE", "l", "0", "1.5") == NOT_INT


def test_lindex_and_lset(c):
    c.command("RPUSH", "l", "a", "b", "c")
    assert c.command("LINDEX", "l", "0") == b"a"
    assert c.command("LINDEX", "l", "-1") == b"c"
    assert c.command("LINDEX", "l", "3") is None
    assert c.command("LINDEX", "l", "-4") is None
    assert c.command("LINDEX", "l", "x") == NOT_INT
    assert c.command("LINDEX", "missing", "x") is None          # the key is looked up first
    assert c.command("LSET", "l", "1", "B") == "OK"
    assert c.command("LSET", "l", "-1", "C") == "OK"
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"B", b"C"]
    assert c.command("LSET", "l", "3", "x") == ("error", "ERR index out of range")
    assert c.command("LSET", "l", "x", "x") == NOT_INT
    assert c.command("LSET", "missing", "0", "x") == ("error", "ERR no such key")


def test_lrem(c):
    c.command("RPUSH", "l", *"axbxcxdx")
    assert c.command("LREM", "l", "2", "x") == 2
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"b", b"c", b"x", b"d", b"x"]
    assert c.command("LREM", "l", "-1", "x") == 1
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"b", b"c", b"x", b"d"]
    assert c.command("LREM", "l", "0", "x") == 1
    assert c.command("LREM", "l", "0", "nope") == 0
    assert c.command("LREM", "missing", "0", "x") == 0
    assert c.command("LREM", "l", "z", "x") == NOT_INT
    for x in "abcd":
        c.command("LREM", "l", "0", x)
    assert c.command("EXISTS", "l") == 0


def test_ltrim(c):
    c.command("RPUSH", "l", *"abcde")
    assert c.command("LTRIM", "l", "1", "-2") == "OK"
    assert c.command("LRANGE", "l", "0", "-1") == [b"b", b"c", b"d"]
    assert c.command("LTRIM", "l", "0", "100") == "OK"
    assert c.command("LLEN", "l") == 3
    assert c.command("LTRIM", "l", "2", "1") == "OK"            # empty range: the list goes
    assert c.command("EXISTS", "l") == 0
    assert c.command("LTRIM", "missing", "0", "1") == "OK"
    assert c.command("LTRIM", "missing", "a", "1") == NOT_INT


def test_linsert(c):
    assert c.command("LINSERT", "l", "BEFORE", "a", "x") == 0
    assert c.command("EXISTS", "l") == 0
    c.command("RPUSH", "l", "a", "b", "a")
    assert c.command("LINSERT", "l", "before", "a", "x") == 4    # the first match from the head
    assert c.command("LINSERT", "l", "AFTER", "b", "y") == 5
    assert c.command("LINSERT", "l", "AFTER", "zz", "y") == -1
    assert c.command("LRANGE", "l", "0", "-1") == [b"x", b"a", b"b", b"y", b"a"]
    assert c.command("LINSERT", "l", "middle", "a", "x") == SYNTAX
    assert c.command("LINSERT", "missing", "middle", "a", "x") == SYNTAX


def test_lpos(c):
    c.command("RPUSH", "l", *"abcabc")
    assert c.command("LPOS", "l", "b") == 1
    assert c.command("LPOS", "l", "b", "RANK", "2") == 4
    assert c.command("LPOS", "l", "b", "RANK", "-1") == 4
    assert c.command("LPOS", "l", "b", "COUNT", "0") == [1, 4]
    assert c.command("LPOS", "l", "c", "RANK", "-1", "COUNT", "2") == [5, 2]
    assert c.command("LPOS", "l", "c", "MAXLEN", "2") is None
    assert c.command("LPOS", "l", "z") is None
    assert c.command("LPOS", "missing", "z", "COUNT", "1") == []
    assert c.command("LPOS", "l", "b", "RANK", "0") == (
        "error", "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
                 "or use negative to start from the end of the list")
    assert c.command("LPOS", "l", "b", "COUNT", "-1") == ("error", "ERR COUNT can't be negative")
    assert c.command("LPOS", "l", "b", "MAXLEN", "-1") == ("error", "ERR MAXLEN can't be negative")
    assert c.command("LPOS", "l", "b", "BOGUS") == SYNTAX


def test_long_lists_read_from_both_ends(c):
    # Elements of many sizes (lengths past one and two bytes of length prefix).
    items = [(b"%d:" % i) + b"x" * (i * 37 % 400) for i in range(300)]
    for i in range(0, 300, 50):
        assert c.command("RPUSH", "l", *items[i:i + 50]) == i + 50
    assert c.command("LRANGE", "l", "0", "-1") == items
    assert c.command("LRANGE", "l", "-5", "-2") == items[-5:-1]
    assert c.command("LRANGE", "l", "140", "160") == items[140:161]
    assert [c.command("LINDEX", "l", str(i)) for i in (0, 149, 150, 299, -1, -300)] == \
        [items[0], items[149], items[150], items[299], items[-1], items[0]]
    assert c.command("RPOP", "l", "3") == items[-1:-4:-1]
    assert c.command("LPOP", "l", "3") == items[:3]
    assert c.command("RPOP", "l") == items[-4]
    assert c.command("LPUSH", "l", "head") == 294
    assert c.command("LRANGE", "l", "0", "-1") == [b"head"] + items[3:-4]
    assert c.command("LPOP", "l", "1000") == [b"head"] + items[3:-4]
    assert c.command("EXISTS", "l") == 0


def test_list_binary_elements(c):
    c.command("RPUSH", "l", b"\x00\r\n", b"", "12")
    assert c.command("LRANGE", "l", "0", "-1") == [b"\x00\r\n", b"", b"12"]


@pytest.mark.parametrize("args", [
    ("LPUSH", "k"), ("RPUSH", "k"), ("LPUSHX", "k"), ("RPUSHX", "k"), ("LPOP",), ("RPOP",), ("LRANGE", "k", "0"),
    ("LLEN",), ("LLEN", "k", "x"), ("LINDEX", "k"), ("LSET", "k", "0"), ("LREM", "k", "0"), ("LTRIM", "k", "0"),
    ("LINSERT", "k", "BEFORE", "a"), ("LPOS", "k"),
    ("SADD", "k"), ("SREM", "k"), ("SMEMBERS",), ("SISMEMBER", "k"), ("SMISMEMBER", "k"), ("SCARD",),
    ("SRANDMEMBER",), ("SPOP",), ("SMOVE", "a", "b"),
    ("HSET", "k", "f"), ("HMSET", "k", "f"), ("HSETNX", "k", "f"), ("HGET", "k"), ("HMGET", "k"), ("HGETALL",),
    ("HDEL", "k"), ("HLEN",), ("HEXISTS", "k"), ("HKEYS",), ("HVALS",), ("HINCRBY", "k", "f"),
    ("HINCRBYFLOAT", "k", "f"), ("HSTRLEN", "k"),
    ("ZADD", "k", "1"), ("ZINCRBY", "k", "1"), ("ZSCORE", "k"), ("ZMSCORE", "k"), ("ZCARD",), ("ZREM", "k"),
    ("ZRANGE", "k", "0"), ("ZRANK", "k"), ("ZREVRANK", "k"), ("ZCOUNT", "k", "0"), ("ZREVRANGE", "k", "0"),
    ("ZRANGEBYSCORE", "k", "0"), ("ZRANGEBYLEX", "k", "-"),
    ("DUMP",), ("RESTORE", "k", "0"),
])
def test_wrong_arity(c, args):
    assert c.command(*args) == arity(args[0].lower())


# ---------------------------------------------------------------------------
# Sets
# ---------------------------------------------------------------------------

def test_sadd_srem_scard(c):
    assert c.command("SADD", "s", "a", "b", "a") == 2
    assert c.command("SADD", "s", "b", "c") == 1
    assert c.command("SCARD", "s") == 3
    assert c.command("SREM", "s", "a", "zz") == 1
    assert c.command("SREM", "missing", "a") == 0
    assert c.command("SISMEMBER", "s", "b") == 1
    assert c.command("SISMEMBER", "s", "a") == 0
    assert c.command("SISMEMBER", "missing", "a") == 0
    assert c.command("SMISMEMBER", "s", "a", "b", "c") == [0, 1, 1]
    assert c.command("SMISMEMBER", "missing", "a", "b") == [0, 0]
    assert c.command("SREM", "s", "b", "c") == 2
    assert c.command("EXISTS", "s") == 0
    assert c.command("SCARD", "s") == 0


def test_smembers(c):
    assert c.command("SMEMBERS", "missing") == []
    c.command("SADD", "ints", "30", "-5", "100", "7")
    assert c.command("SMEMBERS", "ints") == [b"-5", b"7", b"30", b"100"]   # an intset is sorted
    c.command("SADD", "words", "b", "a", "c")
    assert sorted(c.command("SMEMBERS", "words")) == [b"a", b"b", b"c"]


def test_srandmember(c):
    assert c.command("SRANDMEMBER", "missing") is None
    assert c.command("SRANDMEMBER", "missing", "3") == []
    c.command("SADD", "s", "1", "2", "3", "4", "5")
    assert c.command("SRANDMEMBER", "s") in [b"1", b"2", b"3", b"4", b"5"]
    three = c.command("SRANDMEMBER", "s", "3")
    assert len(three) == 3 and len(set(three)) == 3 and set(three) <= {b"1", b"2", b"3", b"4", b"5"}
    assert c.command("SRANDMEMBER", "s", "10") == [b"1", b"2", b"3", b"4", b"5"]   # all, in intset order
    many = c.command("SRANDMEMBER", "s", "-20")
    assert len(many) == 20 and set(many) <= {b"1", b"2", b"3", b"4", b"5"}
    assert c.command("SRANDMEMBER", "s", "0") == []
    assert c.command("SRANDMEMBER", "s", "x") == NOT_INT
    assert c.command("SRANDMEMBER", "s", "-9223372036854775808") == (
        "error", "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    assert c.command("SRANDMEMBER", "s", "1", "2") == SYNTAX
    assert c.command("SCARD", "s") == 5


def test_spop(c):
    assert c.command("SPOP", "missing") is None
    assert c.command("SPOP", "missing", "2") == []
    c.command("SADD", "s", "a", "b", "c", "d")
    first = c.command("SPOP", "s")
    assert first in [b"a", b"b", b"c", b"d"]
    two = c.command("SPOP", "s", "2")
    assert len(two) == 2 and first not in two
    assert c.command("SCARD", "s") == 1
    assert c.command("SPOP", "s", "0") == []
    assert c.command("SPOP", "s", "-1") == MUST_BE_POSITIVE
    assert c.command("SPOP", "s", "x") == MUST_BE_POSITIVE
    assert c.command("SPOP", "s", "1", "2") == SYNTAX
    last = c.command("SPOP", "s", "5")
    assert len(last) == 1
    assert sorted([first] + two + last) == [b"a", b"b", b"c", b"d"]
    assert c.command("EXISTS", "s") == 0


def test_smove(c):
    c.command("SADD", "a", "x", "y")
    assert c.command("SMOVE", "a", "b", "x") == 1
    assert c.command("SMOVE", "a", "b", "nope") == 0
    assert c.command("SMOVE", "missing", "b", "x") == 0
    assert c.command("SMEMBERS", "b") == [b"x"]
    assert c.command("SMOVE", "a", "a", "y") == 1
    assert c.command("SMOVE", "a", "b", "y") == 1
    assert c.command("EXISTS", "a") == 0
    c.command("SET", "str", "v")
    assert c.command("SMOVE", "missing", "str", "x") == 0          # a missing source answers before types
    assert c.command("SMOVE", "b", "str", "x") == WRONGTYPE
    assert c.command("SCARD", "b") == 2


# ---------------------------------------------------------------------------
# Hashes
# ---------------------------------------------------------------------------

def test_hset_hget_hgetall(c):
    assert c.command("HSET", "h", "f1", "v1", "f2", "v2") == 2
    assert c.command("HSET", "h", "f1", "V1", "f3", "v3") == 1
    assert c.command("HGET", "h", "f1") == b"V1"
    assert c.command("HGET", "h", "nope") is None
    assert c.command("HGET", "missing", "f") is None
    assert c.command("HGETALL", "h") == [b"f1", b"V1", b"f2", b"v2", b"f3", b"v3"]   # a listpack keeps order
    assert c.command("HKEYS", "h") == [b"f1", b"f2", b"f3"]
    assert c.command("HVALS", "h") == [b"V1", b"v2", b"v3"]
    assert c.command("HMGET", "h", "f2", "nope", "f1") == [b"v2", None, b"V1"]
    assert c.command("HMGET", "missing", "a", "b") == [None, None]
    assert c.command("HGETALL", "missing") == []
    assert c.command("HKEYS", "missing") == []
    assert c.command("HLEN", "h") == 3
    assert c.command("HLEN", "missing") == 0
    assert c.command("HEXISTS", "h", "f2") == 1
    assert c.command("HEXISTS", "h", "zz") == 0
    assert c.command("HSTRLEN", "h", "f2") == 2
    assert c.command("HSTRLEN", "h", "zz") == 0
    assert c.command("HSET", "h", "a", "b", "c") == arity("hset")
    assert c.command("HMSET", "h", "a", "b", "c") == arity("hmset")
    assert c.command("HMSET", "h", "f4", "v4") == "OK"


def test_hsetnx_and_hdel(c):
    assert c.command("HSETNX", "h", "f", "1") == 1
    assert c.command("HSETNX", "h", "f", "2") == 0
    assert c.command("HGET", "h", "f") == b"1"
    c.command("HSET", "h", "g", "2")
    assert c.command("HDEL", "h", "f", "nope", "f") == 1
    assert c.command("HDEL", "missing", "f") == 0
    assert c.command("HDEL", "h", "g") == 1
    assert c.command("EXISTS", "h") == 0


def test_hincrby(c):
    assert c.command("HINCRBY", "h", "n", "5") == 5
    assert c.command("HINCRBY", "h", "n", "-7") == -2
    c.command("HSET", "h", "s", "abc", "big", "9223372036854775807")
    assert c.command("HINCRBY", "h", "s", "1") == ("error", "ERR hash value is not an integer")
    assert c.command("HINCRBY", "h", "big", "1") == ("error", "ERR increment or decrement would overflow")
    assert c.command("HINCRBY", "h", "n", "x") == NOT_INT
    assert c.command("HGET", "h", "n") == b"-2"


def test_hincrbyfloat(c):
    assert c.command("HINCRBYFLOAT", "h", "f", "10.5") == b"10.5"
    assert c.command("HINCRBYFLOAT", "h", "f", "0.1") == b"10.6"
    assert c.command("HINCRBYFLOAT", "h", "f", "-10.6") == b"0"
    assert c.command("HINCRBYFLOAT", "h", "f", "5.0e3") == b"5000"
    c.command("HSET", "h", "s", "abc")
    assert c.command("HINCRBYFLOAT", "h", "s", "1") == ("error", "ERR hash value is not a float")
    assert c.command("HINCRBYFLOAT", "h", "f", "x") == NOT_FLOAT
    assert c.command("HINCRBYFLOAT", "h", "f", "inf") == ("error", "ERR value is NaN or Infinity")
    c.command("HSET", "h", "max", "1e4932")                      # near long double's largest
    assert c.command("HINCRBYFLOAT", "h", "max", "1e4932") == ("error", "ERR increment would produce NaN or Infinity")


# ---------------------------------------------------------------------------
# Sorted sets
# ---------------------------------------------------------------------------

def test_zadd_and_scores(c):
    assert c.command("ZADD", "z", "1", "a", "2", "b", "0.1", "c") == 3
    assert c.command("ZADD", "z", "3", "a") == 0
    assert c.command("ZSCORE", "z", "a") == b"3"
    assert c.command("ZSCORE", "z", "c") == b"0.10000000000000001"     # %.17g
    assert c.command("ZSCORE", "z", "nope") is None
    assert c.command("ZSCORE", "missing", "a") is None
    assert c.command("ZADD", "z", "-inf", "lo", "+inf", "hi") == 2
    assert c.command("ZMSCORE", "z", "lo", "hi", "nope") == [b"-inf", b"inf", None]
    assert c.command("ZMSCORE", "missing", "a") == [None]
    assert c.command("ZCARD", "z") == 5
    assert c.command("ZCARD", "missing") == 0
    assert c.command("ZRANGE", "z", "0", "-1") == [b"lo", b"c", b"b", b"a", b"hi"]


def test_zadd_options(c):
    c.command("ZADD", "z", "1", "a", "2", "b")
    assert c.command("ZADD", "z", "NX", "5", "a", "3", "c") == 1
    assert c.command("ZSCORE", "z", "a") == b"1"
    assert c.command("ZADD", "z", "XX", "5", "a", "4", "d") == 0
    assert c.command("ZSCORE", "z", "a") == b"5"
    assert c.command("ZSCORE", "z", "d") is None
    assert c.command("ZADD", "z", "XX", "CH", "6", "a", "2", "b") == 1
    assert c.command("ZADD", "z", "GT", "CH", "1", "a", "9", "b", "7", "e") == 2
    assert c.command("ZRANGE", "z", "0", "-1", "WITHSCORES") == [b"c", b"3", b"a", b"6", b"e", b"7", b"b", b"9"]
    assert c.command("ZADD", "z", "LT", "CH", "8", "b", "10", "c") == 1
    assert c.command("ZADD", "z", "INCR", "1.5", "a") == b"7.5"
    assert c.command("ZADD", "z", "INCR", "NX", "1", "a") is None
    assert c.command("ZADD", "z", "INCR", "GT", "-1", "a") is None
    assert c.command("ZADD", "z", "INCR", "XX", "1", "zz") is None
    assert c.command("ZADD", "missing", "XX", "1", "a") == 0
    assert c.command("ZADD", "missing", "XX", "INCR", "1", "a") is None
    assert c.command("EXISTS", "missing") == 0
    assert c.command("ZINCRBY", "z", "2", "new") == b"2"
    assert c.command("ZINCRBY", "z", "-2", "new") == b"0"


def test_zadd_errors(c):
    assert c.command("ZADD", "z", "NX", "XX", "1", "a") == ("error", "ERR XX and NX options at the same time are not compatible")
    for flags in [("GT", "LT"), ("NX", "GT"), ("NX", "LT")]:
        assert c.command("ZADD", "z", *flags, "1", "a") == (
            "error", "ERR GT, LT, and/or NX options at the same time are not compatible")
    assert c.command("ZADD", "z", "INCR", "1", "a", "2", "b") == (
        "error", "ERR INCR option supports a single increment-element pair")
    assert c.command("ZADD", "z", "1", "a", "2") == SYNTAX
    assert c.command("ZADD", "z", "NX", "1") == SYNTAX
    for bad in ["x", "", " 1", "nan", "1e400", "1.5.5"]:
        assert c.command("ZADD", "z", bad, "a") == NOT_FLOAT, bad
    assert c.command("ZADD", "z", "1", "a", "x", "b") == NOT_FLOAT     # all scores are checked first
    assert c.command("EXISTS", "z") == 0
    c.command("ZADD", "z", "inf", "a")
    assert c.command("ZINCRBY", "z", "-inf", "a") == ("error", "ERR resulting score is not a number (NaN)")
    assert c.command("ZINCRBY", "z", "x", "a") == NOT_FLOAT
    assert c.command("ZINCRBY", "z", "incr", "a") == SYNTAX            # ZINCRBY is ZADD INCR: options parse


def test_zrem_zrank(c):
    c.command("ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d")
    assert c.command("ZRANK", "z", "a") == 0
    assert c.command("ZRANK", "z", "c") == 2
    assert c.command("ZREVRANK", "z", "a") == 3
    assert c.command("ZRANK", "z", "nope") is None
    assert c.command("ZRANK", "missing", "a") is None
    assert c.command("ZREM", "z", "a", "nope", "a") == 1
    assert c.command("ZREM", "missing", "a") == 0
    assert c.command("ZREM", "z", "b", "c", "d") == 3
    assert c.command("EXISTS", "z") == 0


def test_equal_scores_order_by_member(c):
    c.command("ZADD", "z", "1", "b", "1", "a", "1", "ab", "0", "z")
    assert c.command("ZRANGE", "z", "0", "-1") == [b"z", b"a", b"ab", b"b"]


@pytest.mark.parametrize("args,expected", [
    (("0", "-1"), [b"a", b"b", b"c", b"d", b"e"]),
    (("1", "2"), [b"b", b"c"]),
    (("-2", "-1"), [b"d", b"e"]),
    (("3", "1"), []),
    (("0", "1", "REV"), [b"e", b"d"]),
    (("0", "0", "WITHSCORES"), [b"a", b"1"]),
    (("2", "4", "BYSCORE"), [b"b", b"c", b"d"]),
    (("(2", "4", "BYSCORE"), [b"c", b"d"]),
    (("2", "(4", "BYSCORE"), [b"b", b"c"]),
    (("-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"), [b"b", b"c"]),
    (("-inf", "+inf", "BYSCORE", "LIMIT", "1", "-1"), [b"b", b"c", b"d", b"e"]),
    (("-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"), []),
    (("-inf", "+inf", "BYSCORE", "LIMIT", "5", "2"), []),
    (("4", "2", "BYSCORE", "REV"), [b"d", b"c", b"b"]),
    (("4", "2", "BYSCORE", "REV", "WITHSCORES", "LIMIT", "0", "2"), [b"d", b"4", b"c", b"3"]),
    (("3", "3", "BYSCORE"), [b"c"]),
    (("(3", "3", "BYSCORE"), []),
    (("5", "1", "BYSCORE"), []),
    (("-", "+", "BYLEX"), [b"a", b"b", b"c", b"d", b"e"]),
    (("[b", "(d", "BYLEX"), [b"b", b"c"]),
    (("+", "-", "BYLEX", "REV", "LIMIT", "1", "2"), [b"d", b"c"]),
])
def test_zrange_forms(c, args, expected):
    c.command("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    assert c.command("ZRANGE", "z", *args) == expected


def test_lex_ranges_over_mixed_scores_walk_as_redis_does(c):
    # Meant for members of one score; with mixed scores Redis walks from the
    # first member past the min and stops at the first past the max.
    c.command("ZADD", "z", "1", "c", "2", "a", "3", "d", "4", "b")
    assert c.command("ZRANGE", "z", "[b", "[z", "BYLEX") == [b"c", b"a", b"d", b"b"]
    assert c.command("ZRANGE", "z", "[b", "[c", "BYLEX") == [b"c", b"a"]
    assert c.command("ZRANGE", "z", "[a", "[b", "BYLEX") == []       # the first member is past the max
    assert c.command("ZRANGE", "z", "[c", "[b", "BYLEX", "REV") == [b"b", b"d"]
    assert c.command("ZRANGE", "z", "[z", "[d", "BYLEX", "REV") == []  # the last member is below the min
    assert c.command("ZRANGE", "z", "-", "+", "BYLEX", "LIMIT", "1", "2") == [b"a", b"d"]


def test_zrange_errors(c):
    c.command("ZADD", "z", "1", "a")
    assert c.command("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1") == (
        "error", "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
    assert c.command("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES") == (
        "error", "ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    assert c.command("ZRANGE", "z", "x", "1", "BYSCORE") == ("error", "ERR min or max is not a float")
    assert c.command("ZRANGE", "z", "a", "+", "BYLEX") == ("error", "ERR min or max not valid string range item")
    assert c.command("ZRANGE", "z", "x", "1") == NOT_INT
    assert c.command("ZRANGE", "z", "0", "1", "BOGUS") == SYNTAX
    assert c.command("ZRANGE", "z", "0", "1", "REV", "REV") == SYNTAX
    assert c.command("ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX") == SYNTAX
    assert c.command("ZRANGE", "z", "0", "1", "LIMIT", "x", "1", "BYSCORE") == NOT_INT
    assert c.command("ZRANGE", "missing", "0", "-1") == []
    assert c.command("ZRANGE", "missing", "x", "-1") == NOT_INT         # arguments before the key


def test_older_range_commands(c):
    c.command("ZADD", "z", "1", "a", "2", "b", "3", "c")
    assert c.command("ZREVRANGE", "z", "0", "1", "WITHSCORES") == [b"c", b"3", b"b", b"2"]
    assert c.command("ZREVRANGE", "z", "0", "1", "REV") == SYNTAX
    assert c.command("ZRANGEBYSCORE", "z", "2", "+inf") == [b"b", b"c"]
    assert c.command("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "1", "WITHSCORES") == [b"b", b"2"]
    assert c.command("ZRANGEBYSCORE", "z", "0", "1", "BYSCORE") == SYNTAX
    assert c.command("ZREVRANGEBYSCORE", "z", "+inf", "2") == [b"c", b"b"]
    assert c.command("ZRANGEBYLEX", "z", "[b", "+") == [b"b", b"c"]
    assert c.command("ZREVRANGEBYLEX", "z", "+", "[b") == [b"c", b"b"]
    assert c.command("ZCOUNT", "z", "(1", "3") == 2
    assert c.command("ZCOUNT", "z", "-inf", "+inf") == 3
    assert c.command("ZCOUNT", "missing", "0", "1") == 0
    assert c.command("ZCOUNT", "z", "x", "1") == ("error", "ERR min or max is not a float")


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
# DUMP and RESTORE
# ---------------------------------------------------------------------------

# Payloads DUMPed by redis-server 7.0.15 (in its compact encodings).
REDIS_PAYLOADS = {
    "list": "120102c3172f0f2f00000004008161020101ded4029e78e01400011fff0a009cd8e4b9c1ba2326",
    "intset": "0b0e02000000030000000100020003000a00a5025ce26d6e4d1b",
    "set": "0202016201610a0075d99d835ef85f65",
    "hash": "1012120000000400816602817602816e020c01ff0a0001369481d35b8974",
    "zset": "1114140000000400816102010181620283322e3504ff0a00d44c6ea4f644d9d7",
    "string": "000568656c6c6f0a006372df766534200a",
    "int": "00c1c7cf0a0067eda236b4db26d0",
    "lzf": "00c30a2802616261e01a010161620a00f727ec340732c3b6",
}


def test_dump_strings_as_redis_does(c):
    c.command("SET", "s", "hello")
    c.command("SET", "i", "-12345")
    c.command("SET", "lz", "ab" * 20)
    assert c.command("DUMP", "s").hex() == REDIS_PAYLOADS["string"]
    assert c.command("DUMP", "i").hex() == REDIS_PAYLOADS["int"]
    assert c.command("DUMP", "lz").hex() == REDIS_PAYLOADS["lzf"]
    assert c.command("DUMP", "missing") is None


def test_restore_payloads_from_redis(c):
    for name, payload in REDIS_PAYLOADS.items():
        assert c.command("RESTORE", name, "0", bytes.fromhex(payload)) == "OK", name
    assert c.command("LRANGE", "list", "0", "-1") == [b"a", b"1", b"-300", b"x" * 30]
    assert c.command("SMEMBERS", "intset") == [b"1", b"2", b"3"]
    assert c.command("OBJECT", "ENCODING", "intset") == b"intset"
    assert sorted(c.command("SMEMBERS", "set")) == [b"a", b"b"]
    assert c.command("HGETALL", "hash") == [b"f", b"v", b"n", b"12"]
    assert c.command("ZRANGE", "zset", "0", "-1", "WITHSCORES") == [b"a", b"1", b"b", b"2.5"]
    assert c.command("GET", "string") == b"hello"
    assert c.command("GET", "int") == b"-12345"
    assert c.command("GET", "lzf") == b"ab" * 20
    assert c.command("TTL", "list") == -1


def test_dump_restore_round_trip_of_each_kind(c):
    c.command("RPUSH", "l", "a", "12", "x" * 100, "")
    c.command("SADD", "s", "5", "-1")
    c.command("SADD", "w", "a", "b", "c")
    c.command("HSET", "h", "f", "v", "big", "y" * 200)
    c.command("ZADD", "z", "1.5", "a", "-inf", "b", "3", "c" * 80)
    c.command("SET", "str", "q" * 1000)
    for key in ["l", "s", "w", "h", "z", "str"]:
        payload = c.command("DUMP", key)
        assert c.command("RESTORE", key + "2", "0", payload) == "OK"
        assert c.command("TYPE", key + "2") == c.command("TYPE", key)
        assert c.command("OBJECT", "ENCODING", key + "2") == c.command("OBJECT", "ENCODING", key), key
    assert c.command("LRANGE", "l2", "0", "-1") == [b"a", b"12", b"x" * 100, b""]
    assert c.command("SMEMBERS", "s2") == [b"-1", b"5"]
    assert sorted(c.command("SMEMBERS", "w2")) == [b"a", b"b", b"c"]
    assert sorted(c.command("HGETALL", "h2")) == sorted([b"f", b"v", b"big", b"y" * 200])
    assert c.command("ZRANGE", "z2", "0", "-1", "WITHSCORES") == [b"b", b"-inf", b"a", b"1.5", b"c" * 80, b"3"]
    assert c.command("GET", "str2") == b"q" * 1000


def test_restore_options_and_errors(c):
    c.command("SET", "s", "hello")
    payload = c.command("DUMP", "s")
    assert c.command("RESTORE", "s", "0", payload) == ("error", "BUSYKEY Target key name already exists.")
    assert c.command("RESTORE", "s", "0", payload, "REPLACE") == "OK"
    assert c.command("RESTORE", "t", "-1", payload) == ("error", "ERR Invalid TTL value, must be >= 0")
    assert c.command("RESTORE", "t", "x", payload) == NOT_INT
    assert c.command("RESTORE", "t", "0", payload[:-1] + b"\x00") == (
        "error", "ERR DUMP payload version or checksum are wrong")
    assert c.command("RESTORE", "t", "0", b"short") == ("error", "ERR DUMP payload version or checksum are wrong")
    newer = bytearray(payload)
    newer[-10] = 11
    assert c.command("RESTORE", "t", "0", bytes(newer)) == ("error", "ERR DUMP payload version or checksum are wrong")
    assert c.command("RESTORE", "t", "0", payload, "BOGUS") == SYNTAX
    assert c.command("RESTORE", "t", "0", payload, "IDLETIME", "-1") == ("error", "ERR Invalid IDLETIME value, must be >= 0")
    assert c.command("RESTORE", "t", "0", payload, "FREQ", "256") == (
        "error", "ERR Invalid FREQ value, must be >= 0 and <= 255")
    assert c.command("RESTORE", "t", "0", payload, "IDLETIME", "1", "FREQ", "1") == SYNTAX
    assert c.command("RESTORE", "t", "0", payload, "IDLETIME", "10") == "OK"
    assert c.command("RESTORE", "u", "5000", payload) == "OK"
    assert 4000 < c.command("PTTL", "u") <= 5000
    future = int(time.time() * 1000) + 100000
    assert c.command("RESTORE", "v", str(future), payload, "ABSTTL") == "OK"
    assert 99 <= c.command("TTL", "v") <= 100
    assert c.command("RESTORE", "w", "1000", payload, "ABSTTL") == "OK"   # already expired: not created
    assert c.command("EXISTS", "w") == 0
    c.command("RPUSH", "x", "a")
    assert c.command("RESTORE", "x", "1000", payload, "ABSTTL", "REPLACE") == "OK"   # replaced by nothing
    assert c.command("EXISTS", "x") == 0


def test_restore_refuses_bad_data(c):
    # A valid footer around an unknown type, and around an empty list.
    for body in [b"\x63\x00", b"\x01\x00", b"\x00\xc3\x05\x10abc"]:
        assert c.command("RESTORE", "k", "0", with_footer(body)) == ("error", "ERR Bad data format"), body
    assert c.command("EXISTS", "k") == 0


def crc64(data):
    """Redis's crc64 (Jones polynomial, reflected)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc


def with_footer(body):
    body = body + b"\x0a\x00"
    return body + crc64(body).to_bytes(8, "little")


@pytest.mark.kvcache_only
def test_restore_survives_mutated_payloads(c):
    """Damaged payloads with a valid footer are refused or stored whole:
    every value RESTORE accepts reads, changes and DUMPs again."""
    import random
    c.command("RPUSH", "l", "a", "12", "x" * 100)
    c.command("SADD", "s", "1", "2")
    c.command("HSET", "h", "f", "v")
    c.command("ZADD", "z", "1", "a", "2", "b")
    bodies = [c.command("DUMP", k)[:-10] for k in ["l", "s", "h", "z"]] + \
        [bytes.fromhex(p)[:-10] for p in REDIS_PAYLOADS.values()]
    rnd = random.Random(7)
    touch = {"list": ("RPOP", "k"), "set": ("SADD", "k", "q"), "hash": ("HSET", "k", "f", "z"),
             "zset": ("ZADD", "k", "5", "q"), "string": ("GET", "k")}
    for _ in range(1500):
        body = bytearray(rnd.choice(bodies))
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(body))
            if rnd.random() < 0.6:
                body[at] = rnd.randrange(256)
            else:
                del body[at]
        reply = c.command("RESTORE", "k", "0", with_footer(bytes(body)), "REPLACE")
        assert reply in ("OK", ("error", "ERR Bad data format"))
        if reply == "OK":
            assert not isinstance(c.command(*touch[c.command("TYPE", "k")]), tuple)
            payload = c.command("DUMP", "k")
            if payload is not None:
                assert c.command("RESTORE", "k", "0", payload, "REPLACE") == "OK"
    assert c.command("PING") == "PONG"


def test_crc64_matches_redis_check_value():
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA


@pytest.mark.kvcache_only
def test_dumps_restore_in_redis(c, real_redis):
    """Payloads DUMPed here RESTORE in redis-server 7.0, and back."""
    real = real_redis.raw()
    c.command("RPUSH", "l", "a", "7", "x" * 300)
    c.command("SADD", "s", "3", "1")
    c.command("SADD", "w", "a", "b")
    c.command("HSET", "h", "f", "v", "n", "1")
    c.command("ZADD", "z", "1.5", "a", "2", "b", "inf", "c")
    c.command("SET", "str", "hello " * 50)
    for key, read in [("l", ("LRANGE", "0", "-1")), ("s", ("SMEMBERS",)), ("h", ("HGETALL",)),
                      ("z", ("ZRANGE", "0", "-1", "WITHSCORES")), ("str", ("GET",))]:
        assert real.command("RESTORE", key, "0", c.command("DUMP", key)) == "OK", key
        assert real.command(read[0], key, *read[1:]) == c.command(read[0], key, *read[1:]), key
        assert real.command("OBJECT", "ENCODING", key) == c.command("OBJECT", "ENCODING", key), key
        assert c.command("RESTORE", key + "-back", "0", real.command("DUMP", key)) == "OK"
        assert c.command(read[0], key + "-back", *read[1:]) == c.command(read[0], key, *read[1:]), key
    assert real.command("RESTORE", "w", "0", c.command("DUMP", "w")) == "OK"
    assert sorted(real.command("SMEMBERS", "w")) == [b"a", b"b"]
    real.close()


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
