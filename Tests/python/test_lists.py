"""List commands, pinned to Redis 7.0.15's exact replies (KVCACHE_TARGET=redis
checks them against redis-server). The arity table covers every collection
command."""
import pytest

from conftest import MUST_BE_POSITIVE, NOT_INT, SYNTAX, arity


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
