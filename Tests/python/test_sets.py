"""Set commands, pinned to Redis 7.0.15's exact replies."""
from conftest import MUST_BE_POSITIVE, NOT_INT, SYNTAX, WRONGTYPE


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
