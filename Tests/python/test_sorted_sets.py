"""Sorted-set commands, pinned to Redis 7.0.15's exact replies."""
import pytest

from conftest import NOT_FLOAT, NOT_INT, SYNTAX


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


def test_a_score_of_minus_zero_is_kept_as_zero_in_a_small_sorted_set(c):
    # Redis's listpack keeps a whole-number score as that integer: -0 is 0 there.
    assert c.command("ZADD", "z", "-0.0", "a") == 1
    assert c.command("ZSCORE", "z", "a") == b"0"
    assert c.command("ZADD", "z", "0.0", "a") == 0
    assert c.command("ZSCORE", "z", "a") == b"0"
    assert c.command("ZINCRBY", "z", "-0.0", "a") == b"0"
    # The member that makes the set large goes in as -0 (Redis converts first),
    # and a union computed in a skiplist answers -0.
    c.command("ZADD", "big", *[x for i in range(128) for x in (str(i + 1), f"m{i}")])
    assert c.command("ZADD", "big", "-0.0", "last") == 1
    assert c.command("ZSCORE", "big", "last") == b"-0"
    assert c.command("ZUNION", "1", "z", "WEIGHTS", "-1", "WITHSCORES") == [b"a", b"-0"]


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
