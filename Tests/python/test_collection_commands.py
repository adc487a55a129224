"""Issue 15's collection commands, pinned to Redis 7.0.15's replies: the
moves and multi-key pops of lists, set and sorted-set algebra, the *SCAN
cursors, random picks, ZPOP*/ZMPOP, ZREMRANGEBY*, ZRANGESTORE, SORT,
BITOP/BITPOS/BITFIELD, and the encodings OBJECT ENCODING reports. Run with
KVCACHE_TARGET=redis to check them against redis-server."""
import pytest

from conftest import NOT_INT, SYNTAX, arity

WRONGTYPE = ("error", "WRONGTYPE Operation against a key holding the wrong kind of value")


def flat_pairs(items):
    return dict(zip(items[::2], items[1::2]))


# ---------------------------------------------------------------------------
# Lists: LMOVE, RPOPLPUSH, LMPOP
# ---------------------------------------------------------------------------

def test_lmove_moves_between_ends_and_rotates_onto_itself(c):
    c.command("RPUSH", "src", "a", "b", "c")
    assert c.command("LMOVE", "src", "dst", "LEFT", "RIGHT") == b"a"
    assert c.command("LMOVE", "src", "dst", "right", "left") == b"c"
    assert c.command("LRANGE", "dst", "0", "-1") == [b"c", b"a"]
    assert c.command("LRANGE", "src", "0", "-1") == [b"b"]
    assert c.command("RPOPLPUSH", "src", "dst") == b"b"
    assert c.command("EXISTS", "src") == 0                       # emptied: deleted
    assert c.command("LMOVE", "src", "dst", "LEFT", "LEFT") is None
    c.command("RPUSH", "ring", "1", "2", "3")
    assert c.command("LMOVE", "ring", "ring", "LEFT", "RIGHT") == b"1"
    assert c.command("LRANGE", "ring", "0", "-1") == [b"2", b"3", b"1"]
    c.command("RPUSH", "one", "x")
    assert c.command("RPOPLPUSH", "one", "one") == b"x"
    assert c.command("LRANGE", "one", "0", "-1") == [b"x"]


def test_lmove_errors(c):
    c.command("RPUSH", "l", "a")
    c.command("SET", "s", "v")
    assert c.command("LMOVE", "l", "d", "UP", "LEFT") == SYNTAX
    assert c.command("LMOVE", "l", "s", "LEFT", "LEFT") == WRONGTYPE
    assert c.command("LRANGE", "l", "0", "-1") == [b"a"]        # nothing moved
    assert c.command("LMOVE", "s", "d", "LEFT", "LEFT") == WRONGTYPE
    assert c.command("RPOPLPUSH", "l") == arity("rpoplpush")


def test_lmpop(c):
    c.command("RPUSH", "l2", "a", "b", "c")
    assert c.command("LMPOP", "2", "l1", "l2", "LEFT") == [b"l2", [b"a"]]
    assert c.command("LMPOP", "2", "l1", "l2", "RIGHT", "COUNT", "5") == [b"l2", [b"c", b"b"]]
    assert c.command("LMPOP", "2", "l1", "l2", "LEFT") is None
    assert c.command("LMPOP", "0", "l1", "LEFT") == ("error", "ERR numkeys should be greater than 0")
    assert c.command("LMPOP", "x", "l1", "LEFT") == ("error", "ERR numkeys should be greater than 0")
    assert c.command("LMPOP", "2", "l1", "LEFT") == SYNTAX
    assert c.command("LMPOP", "1", "l1", "MIDDLE") == SYNTAX
    assert c.command("LMPOP", "1", "l1", "LEFT", "COUNT", "0") == ("error", "ERR count should be greater than 0")
    assert c.command("LMPOP", "1", "l1", "LEFT", "COUNT", "1", "COUNT", "2") == SYNTAX
    c.command("SET", "s", "v")
    assert c.command("LMPOP", "2", "s", "l1", "LEFT") == WRONGTYPE


# ---------------------------------------------------------------------------
# Sets
# ---------------------------------------------------------------------------

def test_set_algebra_and_store(c):
    c.command("SADD", "a", "1", "2", "3", "x")
    c.command("SADD", "b", "2", "3", "4")
    c.command("SADD", "c", "3", "x")
    assert sorted(c.command("SINTER", "a", "b")) == [b"2", b"3"]
    assert c.command("SINTER", "a", "b", "c") == [b"3"]
    assert c.command("SINTER", "a", "missing") == []
    assert sorted(c.command("SUNION", "a", "b", "missing")) == [b"1", b"2", b"3", b"4", b"x"]
    assert sorted(c.command("SDIFF", "a", "b")) == [b"1", b"x"]
    assert c.command("SDIFF", "a", "a") == []
    assert c.command("SDIFF", "missing", "a") == []
    assert c.command("SINTERSTORE", "d", "a", "b") == 2
    assert c.command("OBJECT", "ENCODING", "d") == b"intset"
    assert sorted(c.command("SMEMBERS", "d")) == [b"2", b"3"]
    c.command("EXPIRE", "d", "100")
    assert c.command("SUNIONSTORE", "d", "a", "c") == 4
    assert c.command("TTL", "d") == -1                           # a new value: no expiry
    assert c.command("OBJECT", "ENCODING", "d") == b"hashtable"
    assert c.command("SDIFFSTORE", "d", "a", "a") == 0
    assert c.command("EXISTS", "d") == 0                         # empty result: deleted
    c.command("SET", "str", "v")
    assert c.command("SINTER", "a", "str") == WRONGTYPE
    assert c.command("SUNIONSTORE", "str", "a") == 4             # the destination is overwritten
    assert c.command("TYPE", "str") == "set"


def test_sintercard(c):
    c.command("SADD", "a", "1", "2", "3", "4")
    c.command("SADD", "b", "2", "3", "4", "5")
    assert c.command("SINTERCARD", "2", "a", "b") == 3
    assert c.command("SINTERCARD", "2", "a", "b", "LIMIT", "2") == 2
    assert c.command("SINTERCARD", "2", "a", "b", "LIMIT", "0") == 3
    assert c.command("SINTERCARD", "2", "a", "missing") == 0
    assert c.command("SINTERCARD", "0", "a") == ("error", "ERR numkeys should be greater than 0")
    assert c.command("SINTERCARD", "3", "a", "b") == ("error", "ERR Number of keys can't be greater than number of args")
    assert c.command("SINTERCARD", "2", "a", "b", "LIMIT", "-1") == ("error", "ERR LIMIT can't be negative")
    assert c.command("SINTERCARD", "2", "a", "b", "FOO", "1") == SYNTAX


@pytest.mark.parametrize("members", [[str(i) for i in range(20)], ["m%d" % i for i in range(1000)]])
def test_sscan_returns_every_member(c, members):
    c.command("SADD", "s", *members)
    seen, cursor = set(), b"0"
    for _ in range(10000):
        cursor, batch = c.command("SSCAN", "s", cursor, "COUNT", "50")
        seen.update(batch)
        if cursor == b"0":
            break
    assert seen == {m.encode() for m in members}


def test_sscan_survives_removals_during_the_scan(c):
    members = ["m%d" % i for i in range(2000)]
    c.command("SADD", "s", *members)
    kept = {m.encode() for m in members[1000:]}
    seen, cursor, removed = set(), b"0", 0
    while True:
        cursor, batch = c.command("SSCAN", "s", cursor, "COUNT", "100")
        seen.update(batch)
        if removed < 1000:
            c.command("SREM", "s", *members[removed:removed + 100])
            removed += 100
        if cursor == b"0":
            break
    assert kept <= seen


@pytest.mark.parametrize("kind", ["set", "hash", "zset"])
def test_a_collection_scan_returns_no_member_twice_after_a_removal(c, kind):
    # As fakeredis's own tests check against a real server: a member not
    # yet returned is removed mid-scan; every other one comes back once.
    names = ["%d" % i for i in range(600)]
    add, remove, scan, step = {
        "set": ("SADD", "SREM", "SSCAN", 1),
        "hash": ("HSET", "HDEL", "HSCAN", 2),
        "zset": ("ZADD", "ZREM", "ZSCAN", 2),
    }[kind]
    args = names if kind == "set" else [x for n in names for x in ((n, "v") if kind == "hash" else ("1", n))]
    c.command(add, "k", *args)
    cursor, batch = c.command(scan, "k", "0")
    seen = batch[::step]
    assert cursor != b"0" and len(seen) < 600
    victim = next(n.encode() for n in names if n.encode() not in seen)
    assert c.command(remove, "k", victim) == 1
    while cursor != b"0":
        cursor, batch = c.command(scan, "k", cursor)
        seen += batch[::step]
    assert len(seen) == len(set(seen)) == 599 and victim not in seen


def test_scan_options_and_errors(c):
    c.command("SADD", "s", "apple", "banana", "avocado")
    cursor, found = c.command("SSCAN", "s", "0", "MATCH", "a*")
    assert cursor == b"0" and sorted(found) == [b"apple", b"avocado"]
    assert c.command("SSCAN", "s", "x") == ("error", "ERR invalid cursor")
    assert c.command("SSCAN", "s", "0", "COUNT", "0") == SYNTAX
    assert c.command("SSCAN", "s", "0", "TYPE", "set") == SYNTAX
    assert c.command("SSCAN", "missing", "0") == [b"0", []]
    c.command("HSET", "h", "f1", "v1", "f2", "v2")
    assert flat_pairs(c.command("HSCAN", "h", "0")[1]) == {b"f1": b"v1", b"f2": b"v2"}
    c.command("ZADD", "z", "1.5", "a", "2", "b")
    assert c.command("ZSCAN", "z", "0") == [b"0", [b"a", b"1.5", b"b", b"2"]]
    assert c.command("HSCAN", "s", "0") == WRONGTYPE


def test_hscan_and_zscan_walk_large_collections(c):
    c.command("HSET", "h", *[x for i in range(600) for x in ("f%d" % i, "v%d" % i)])
    c.command("ZADD", "z", *[x for i in range(300) for x in (str(i), "m%d" % i)])
    for key, command, expected in [("h", "HSCAN", 600), ("z", "ZSCAN", 300)]:
        pairs, cursor = {}, b"0"
        while True:
            cursor, batch = c.command(command, key, cursor, "COUNT", "37")
            pairs.update(flat_pairs(batch))
            if cursor == b"0":
                break
        assert len(pairs) == expected
    assert pairs[b"m17"] == b"17"


def test_srandmember_and_spop(c):
    c.command("SADD", "s", *[str(i) for i in range(10)])
    assert len(set(c.command("SRANDMEMBER", "s", "5"))) == 5
    assert len(c.command("SRANDMEMBER", "s", "-30")) == 30
    assert sorted(c.command("SRANDMEMBER", "s", "100")) == sorted(str(i).encode() for i in range(10))
    popped = c.command("SPOP", "s", "4")
    assert len(set(popped)) == 4 and c.command("SCARD", "s") == 6
    assert c.command("SMISMEMBER", "s", *popped) == [0, 0, 0, 0]
    assert c.command("SPOP", "s", "100") and c.command("EXISTS", "s") == 0


def test_smove(c):
    c.command("SADD", "a", "x", "y")
    c.command("SET", "str", "v")
    assert c.command("SMOVE", "missing", "str", "x") == 0       # a missing source: 0 before any type check
    assert c.command("SMOVE", "a", "str", "x") == WRONGTYPE
    assert c.command("SMOVE", "a", "b", "x") == 1
    assert c.command("SMOVE", "a", "b", "nope") == 0
    assert c.command("SMOVE", "a", "a", "y") == 1
    assert c.command("SMOVE", "a", "b", "y") == 1 and c.command("EXISTS", "a") == 0
    assert sorted(c.command("SMEMBERS", "b")) == [b"x", b"y"]


# ---------------------------------------------------------------------------
# Hashes
# ---------------------------------------------------------------------------

def test_hrandfield(c):
    fields = {"f%d" % i: "v%d" % i for i in range(8)}
    c.command("HSET", "h", *[x for kv in fields.items() for x in kv])
    assert c.command("HRANDFIELD", "h").decode() in fields
    assert len(set(c.command("HRANDFIELD", "h", "5"))) == 5
    assert len(c.command("HRANDFIELD", "h", "-20")) == 20
    pairs = c.command("HRANDFIELD", "h", "3", "WITHVALUES")
    assert len(pairs) == 6 and all(fields[k.decode()] == v.decode() for k, v in flat_pairs(pairs).items())
    assert c.command("HRANDFIELD", "missing") is None
    assert c.command("HRANDFIELD", "missing", "3") == []
    assert c.command("HRANDFIELD", "h", "0") == []
    assert c.command("HRANDFIELD", "h", "1", "WITHVALUE") == SYNTAX
    assert c.command("HRANDFIELD", "h", "x") == NOT_INT
    assert c.command("HRANDFIELD", "h", "-9223372036854775808") == \
        ("error", "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    assert c.command("HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES") == ("error", "ERR value is out of range")


def test_hash_encoding_follows_the_thresholds(c):
    c.command("CONFIG", "SET", "hash-max-listpack-entries", "4")
    try:
        c.command("HSET", "h", "a", "1", "b", "2")
        assert c.command("OBJECT", "ENCODING", "h") == b"listpack"
        c.command("HSET", "h", "c", "3", "d", "4", "e", "5")
        assert c.command("OBJECT", "ENCODING", "h") == b"hashtable"
        c.command("HDEL", "h", "a", "b", "c")
        assert c.command("OBJECT", "ENCODING", "h") == b"hashtable"   # never converted back
        assert flat_pairs(c.command("HGETALL", "h")) == {b"d": b"4", b"e": b"5"}
    finally:
        c.command("CONFIG", "SET", "hash-max-listpack-entries", "512")


# ---------------------------------------------------------------------------
# Sorted sets
# ---------------------------------------------------------------------------

def test_zpopmin_zpopmax_and_zmpop(c):
    c.command("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    assert c.command("ZPOPMIN", "z") == [b"a", b"1"]
    assert c.command("ZPOPMAX", "z", "2") == [b"d", b"4", b"c", b"3"]
    assert c.command("ZPOPMIN", "z", "0") == []
    assert c.command("ZPOPMIN", "z", "-1") == ("error", "ERR value is out of range, must be positive")
    assert c.command("ZPOPMIN", "z", "1", "2") == SYNTAX
    assert c.command("ZPOPMIN", "missing") == []
    c.command("ZADD", "z2", "5", "x", "6", "y")
    assert c.command("ZMPOP", "3", "missing", "z", "z2", "MAX", "COUNT", "10") == [b"z", [[b"b", b"2"]]]
    assert c.command("EXISTS", "z") == 0
    assert c.command("ZMPOP", "2", "z", "z2", "MIN") == [b"z2", [[b"x", b"5"]]]
    assert c.command("ZMPOP", "1", "z", "MIN") is None
    assert c.command("ZMPOP", "1", "z2", "LOW") == SYNTAX
    assert c.command("ZMPOP", "0", "z2", "MIN") == ("error", "ERR numkeys should be greater than 0")


def test_zremrange_and_zlexcount(c):
    c.command("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    assert c.command("ZREMRANGEBYRANK", "z", "0", "1") == 2
    assert c.command("ZREMRANGEBYSCORE", "z", "(3", "+inf") == 2
    assert c.command("ZRANGE", "z", "0", "-1") == [b"c"]
    assert c.command("ZREMRANGEBYRANK", "z", "5", "10") == 0
    assert c.command("ZREMRANGEBYSCORE", "z", "x", "1") == ("error", "ERR min or max is not a float")
    c.command("ZADD", "lex", "0", "alpha", "0", "bar", "0", "cool", "0", "down", "0", "elephant")
    assert c.command("ZLEXCOUNT", "lex", "-", "+") == 5
    assert c.command("ZLEXCOUNT", "lex", "[bar", "(down") == 2
    assert c.command("ZLEXCOUNT", "lex", "bar", "+") == ("error", "ERR min or max not valid string range item")
    assert c.command("ZREMRANGEBYLEX", "lex", "[bar", "[cool") == 2
    assert c.command("ZRANGE", "lex", "0", "-1") == [b"alpha", b"down", b"elephant"]
    assert c.command("ZREMRANGEBYLEX", "lex", "-", "+") == 3 and c.command("EXISTS", "lex") == 0
    assert c.command("ZREMRANGEBYRANK", "missing", "0", "-1") == 0


def test_zunion_zinter_zdiff(c):
    c.command("ZADD", "a", "1", "x", "2", "y", "3", "z")
    c.command("ZADD", "b", "10", "y", "20", "z", "30", "w")
    c.command("SADD", "s", "x", "w")
    assert c.command("ZUNION", "2", "a", "b", "WITHSCORES") == [b"x", b"1", b"y", b"12", b"z", b"23", b"w", b"30"]
    assert c.command("ZINTER", "2", "a", "b", "AGGREGATE", "MAX", "WITHSCORES") == [b"y", b"10", b"z", b"20"]
    assert c.command("ZINTER", "2", "a", "b", "WEIGHTS", "2", "0.5", "WITHSCORES") == [b"y", b"9", b"z", b"16"]
    assert c.command("ZUNION", "2", "a", "s", "AGGREGATE", "MIN", "WITHSCORES") == [b"w", b"1", b"x", b"1", b"y", b"2", b"z", b"3"]
    assert c.command("ZDIFF", "2", "a", "b", "WITHSCORES") == [b"x", b"1"]
    assert c.command("ZDIFF", "2", "a", "a") == []
    assert c.command("ZINTERCARD", "2", "a", "b") == 2
    assert c.command("ZINTERCARD", "2", "a", "b", "LIMIT", "1") == 1
    assert c.command("ZUNIONSTORE", "d", "2", "a", "b") == 4
    assert c.command("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"x", b"1", b"y", b"12", b"z", b"23", b"w", b"30"]
    assert c.command("ZINTERSTORE", "d", "2", "a", "missing") == 0 and c.command("EXISTS", "d") == 0
    assert c.command("ZDIFFSTORE", "d", "2", "b", "a") == 1
    assert c.command("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"w", b"30"]
    assert c.command("ZUNION", "0", "a") == ("error", "ERR at least 1 input key is needed for 'zunion' command")
    assert c.command("ZUNIONSTORE", "d", "0", "a") == ("error", "ERR at least 1 input key is needed for 'zunionstore' command")
    assert c.command("ZUNION", "3", "a", "b") == SYNTAX
    assert c.command("ZUNION", "2", "a", "b", "WEIGHTS", "1", "x") == ("error", "ERR weight value is not a float")
    assert c.command("ZDIFF", "2", "a", "b", "AGGREGATE", "MIN") == SYNTAX
    assert c.command("ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES") == SYNTAX
    assert c.command("ZINTERCARD", "2", "a", "b", "LIMIT", "-1") == ("error", "ERR LIMIT can't be negative")
    assert c.command("ZINTERCARD", "2", "a", "b", "LIMIT", "a") == ("error", "ERR LIMIT can't be negative")
    c.command("SET", "str", "v")
    assert c.command("ZUNION", "2", "a", "str") == WRONGTYPE


def test_zunionstore_inf_plus_minus_inf_is_zero(c):
    c.command("ZADD", "a", "inf", "x")
    c.command("ZADD", "b", "-inf", "x")
    assert c.command("ZUNIONSTORE", "d", "2", "a", "b") == 1
    assert c.command("ZSCORE", "d", "x") == b"0"


def test_zrangestore(c):
    c.command("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    assert c.command("ZRANGESTORE", "d", "z", "1", "2") == 2
    assert c.command("ZRANGE", "d", "0", "-1", "WITHSCORES") == [b"b", b"2", b"c", b"3"]
    assert c.command("ZRANGESTORE", "d", "z", "(1", "3", "BYSCORE", "LIMIT", "1", "5") == 1
    assert c.command("ZRANGE", "d", "0", "-1") == [b"c"]
    assert c.command("ZRANGESTORE", "d", "z", "+", "-", "BYLEX", "REV") == 4
    assert c.command("ZRANGESTORE", "d", "z", "5", "6") == 0 and c.command("EXISTS", "d") == 0
    assert c.command("ZRANGESTORE", "d", "missing", "0", "-1") == 0
    assert c.command("ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES") == SYNTAX


def test_zrandmember(c):
    c.command("ZADD", "z", *[x for i in range(10) for x in (str(i), "m%d" % i)])
    assert c.command("ZRANDMEMBER", "z").startswith(b"m")
    picked = c.command("ZRANDMEMBER", "z", "4", "WITHSCORES")
    assert len(picked) == 8 and all(int(s) == int(m[1:]) for m, s in zip(picked[::2], picked[1::2]))
    assert len(set(c.command("ZRANDMEMBER", "z", "4"))) == 4
    assert len(c.command("ZRANDMEMBER", "z", "-25")) == 25
    assert c.command("ZRANDMEMBER", "missing") is None
    assert c.command("ZRANDMEMBER", "missing", "2") == []


def test_zset_large_ranges(c):
    # Ranks, scores and ranges on a skiplist-encoded set of 5,000 members.
    c.command("ZADD", "z", *[x for i in range(5000) for x in (str(i // 2), "m%05d" % i)])
    assert c.command("OBJECT", "ENCODING", "z") == b"skiplist"
    assert c.command("ZRANK", "z", "m03001") == 3001
    assert c.command("ZREVRANK", "z", "m03001") == 1998
    assert c.command("ZCOUNT", "z", "100", "(200") == 200
    assert c.command("ZRANGE", "z", "1000", "(1001", "BYSCORE") == [b"m02000", b"m02001"]
    assert c.command("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2") == [b"m04999", b"m04998"]
    assert c.command("ZRANGE", "z", "-2", "-1") == [b"m04998", b"m04999"]
    assert c.command("ZREMRANGEBYSCORE", "z", "0", "999") == 2000
    assert c.command("ZCARD", "z") == 3000 and c.command("ZRANK", "z", "m03001") == 1001


# ---------------------------------------------------------------------------
# SORT
# ---------------------------------------------------------------------------

def test_sort_numeric_alpha_limit_by_get_store(c):
    c.command("RPUSH", "l", "3", "1", "2", "10")
    assert c.command("SORT", "l") == [b"1", b"2", b"3", b"10"]
    assert c.command("SORT", "l", "DESC", "LIMIT", "0", "2") == [b"10", b"3"]
    assert c.command("SORT", "l", "ALPHA") == [b"1", b"10", b"2", b"3"]
    c.command("MSET", "w_1", "30", "w_2", "20", "w_3", "10", "w_10", "40")
    c.command("HSET", "o_1", "name", "one")
    assert c.command("SORT", "l", "BY", "w_*") == [b"3", b"2", b"1", b"10"]
    assert c.command("SORT", "l", "BY", "w_*", "GET", "#", "GET", "o_*->name", "LIMIT", "2", "1") == [b"1", b"one"]
    assert c.command("SORT", "l", "BY", "nosort") == [b"3", b"1", b"2", b"10"]
    assert c.command("SORT", "l", "STORE", "dst") == 4
    assert c.command("LRANGE", "dst", "0", "-1") == [b"1", b"2", b"3", b"10"]
    assert c.command("SORT_RO", "l", "LIMIT", "0", "1") == [b"1"]
    assert c.command("SORT_RO", "l", "STORE", "dst") == SYNTAX
    c.command("RPUSH", "bad", "1", "x")
    assert c.command("SORT", "bad") == ("error", "ERR One or more scores can't be converted into double")
    c.command("SET", "str", "v")
    assert c.command("SORT", "str") == WRONGTYPE
    assert c.command("SORT", "missing", "STORE", "dst") == 0 and c.command("EXISTS", "dst") == 0
    c.command("SADD", "s", "b", "a", "c")
    assert c.command("SORT", "s", "ALPHA") == [b"a", b"b", b"c"]
    c.command("ZADD", "z", "3", "x", "1", "y", "2", "z")
    assert c.command("SORT", "z", "BY", "nosort", "DESC") == [b"x", b"z", b"y"]


# ---------------------------------------------------------------------------
# BITOP, BITPOS, BITFIELD
# ---------------------------------------------------------------------------

def test_bitop(c):
    c.command("SET", "a", b"\xff\x0f")
    c.command("SET", "b", b"\x0f")
    assert c.command("BITOP", "AND", "d", "a", "b") == 2 and c.command("GET", "d") == b"\x0f\x00"
    assert c.command("BITOP", "OR", "d", "a", "b") == 2 and c.command("GET", "d") == b"\xff\x0f"
    assert c.command("BITOP", "XOR", "d", "a", "b") == 2 and c.command("GET", "d") == b"\xf0\x0f"
    assert c.command("BITOP", "NOT", "d", "a") == 2 and c.command("GET", "d") == b"\x00\xf0"
    assert c.command("BITOP", "NOT", "d", "a", "b") == ("error", "ERR BITOP NOT must be called with a single source key.")
    assert c.command("BITOP", "NAND", "d", "a") == SYNTAX
    assert c.command("BITOP", "AND", "d", "missing1", "missing2") == 0 and c.command("EXISTS", "d") == 0
    c.command("RPUSH", "l", "x")
    assert c.command("BITOP", "AND", "d", "a", "l") == WRONGTYPE


def test_bitpos(c):
    c.command("SET", "k", b"\xff\xf0\x00")
    assert c.command("BITPOS", "k", "0") == 12
    assert c.command("BITPOS", "k", "1", "2") == -1
    assert c.command("BITPOS", "k", "0", "2") == 16
    assert c.command("BITPOS", "k", "1", "1", "-1") == 8
    assert c.command("BITPOS", "k", "0", "0", "0") == -1          # an explicit end: no padding
    assert c.command("BITPOS", "k", "1", "9", "15", "BIT") == 9
    assert c.command("BITPOS", "k", "0", "0", "11", "BIT") == -1
    c.command("SET", "ones", b"\xff")
    assert c.command("BITPOS", "ones", "0") == 8                 # padded with zeros on the right
    assert c.command("BITPOS", "missing", "0") == 0
    assert c.command("BITPOS", "missing", "1") == -1
    assert c.command("BITPOS", "k", "2") == ("error", "ERR The bit argument must be 1 or 0.")
    assert c.command("BITPOS", "k", "1", "0", "1", "WORD") == SYNTAX


def test_bitfield(c):
    assert c.command("BITFIELD", "bf", "SET", "u8", "0", "255", "GET", "u8", "0") == [0, 255]
    assert c.command("BITFIELD", "bf", "INCRBY", "u8", "0", "10") == [9]
    assert c.command("BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "300") == [255]
    assert c.command("BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1") == [None]
    assert c.command("BITFIELD", "bf", "SET", "i8", "#1", "-3", "GET", "i8", "8", "GET", "u4", "8") == [0, -3, 15]
    assert c.command("BITFIELD", "bf", "OVERFLOW", "WRAP", "INCRBY", "i8", "8", "200") == [-59]
    assert c.command("BITFIELD", "bf", "GET", "u16", "0", "GET", "i16", "0") == [0xFFC5, -59]
    assert c.command("BITFIELD", "bf", "GET", "i64", "0", "GET", "u63", "1") == [-16607023625928704, 0x7FC5000000000000]
    assert c.command("BITFIELD_RO", "bf", "GET", "u8", "0") == [255]
    assert c.command("BITFIELD_RO", "bf", "SET", "u8", "0", "1") == ("error", "ERR BITFIELD_RO only supports the GET subcommand")
    assert c.command("BITFIELD", "bf", "GET", "u64", "0") == \
        ("error", "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
    assert c.command("BITFIELD", "bf", "GET", "u8", "-1") == ("error", "ERR bit offset is not an integer or out of range")
    assert c.command("BITFIELD", "bf", "OVERFLOW", "MAYBE") == ("error", "ERR Invalid OVERFLOW type specified")
    assert c.command("BITFIELD", "bf", "GET", "u8") == SYNTAX
    assert c.command("BITFIELD", "new", "GET", "u8", "0") == [0] and c.command("EXISTS", "new") == 0
    assert c.command("BITFIELD", "new2", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "9") == [None]
    assert c.command("STRLEN", "new2") == 13                     # created and padded all the same, as Redis
