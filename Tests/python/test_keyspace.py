"""Keyspace commands, pinned to Redis 7.0.15's exact replies.

KEYS (glob patterns), SCAN (MATCH/COUNT/TYPE), RANDOMKEY, TYPE, RENAME,
RENAMENX, COPY, MOVE, DEL, UNLINK, TOUCH, EXISTS, TIME, SWAPDB, DBSIZE, SELECT
and FLUSHDB. Numeric databases 0..15 must behave as in Redis (kvcache-server
maps database n to the named cache "db<n>").
Error texts are compared in full through a raw RESP connection.
"""
import re
import time

import pytest

from conftest import NOT_INT, REDIS, SYNTAX, arity

NO_SUCH_KEY = ("error", "ERR no such key")
SAME_OBJECT = ("error", "ERR source and destination objects are the same")
DB_RANGE = ("error", "ERR DB index is out of range")
INVALID_CURSOR = ("error", "ERR invalid cursor")
# A DB index that parses as int64 but not as a C int (sic: "must between").
INT_RANGE = ("error", "ERR value is out of range, value must between -2147483648 and 2147483647")


@pytest.fixture
def c2(server, r):
    """A second raw connection, for looking at another database."""
    conn = server.raw()
    yield conn
    conn.close()


@pytest.mark.parametrize("args", [
    ("KEYS",), ("KEYS", "a", "b"),
    ("SCAN",),
    ("RANDOMKEY", "x"),
    ("TYPE",), ("TYPE", "a", "b"),
    ("RENAME",), ("RENAME", "a"), ("RENAME", "a", "b", "c"),
    ("RENAMENX",), ("RENAMENX", "a"), ("RENAMENX", "a", "b", "c"),
    ("COPY",), ("COPY", "a"),
    ("MOVE",), ("MOVE", "a"), ("MOVE", "a", "1", "2"),
    ("DEL",), ("UNLINK",), ("TOUCH",), ("EXISTS",),
    ("TIME", "x"),
    ("SWAPDB",), ("SWAPDB", "0"), ("SWAPDB", "0", "1", "2"),
    ("DBSIZE", "x"),
    ("SELECT",), ("SELECT", "0", "1"),
])
def test_wrong_arity(c, args):
    assert c.command(*args) == arity(args[0].lower())


# ---------------------------------------------------------------------------
# KEYS
# ---------------------------------------------------------------------------

GLOB_KEYS = ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h]llo",
             "a", "b", "c", "d", "ab", "[abc]", "a\\b", "-"]


@pytest.mark.parametrize("pattern,expected", [
    ("*", GLOB_KEYS),
    ("h?llo", ["hello", "hallo", "hxllo", "h*llo", "h?llo", "h]llo"]),
    ("h*llo", ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h]llo"]),
    ("h[ae]llo", ["hello", "hallo"]),
    ("h[^e]llo", ["hallo", "hxllo", "h*llo", "h?llo", "h]llo"]),
    ("h[!e]llo", ["hello"]),                 # '!' is a literal, not a negation
    ("h[a-e]llo", ["hello", "hallo"]),
    ("[a-c]", ["a", "b", "c"]),
    ("[c-a]", ["a", "b", "c"]),              # a reversed range is swapped
    ("[abc]", ["a", "b", "c"]),
    ("[^a]", ["b", "c", "d", "-"]),
    ("[a\\-c]", ["a", "c", "-"]),            # escaped '-' inside a class is a literal
    ("h[\\]]llo", ["h]llo"]),                # escaped ']' inside a class
    ("?", ["a", "b", "c", "d", "-"]),
    ("??", ["ab"]),
    ("h\\*llo", ["h*llo"]),
    ("h\\?llo", ["h?llo"]),
    ("\\[abc]", ["[abc]"]),
    ("a\\\\b", ["a\\b"]),
    ("a*", ["a", "ab", "a\\b"]),
    ("*llo", ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h]llo"]),
    ("h*e*llo", ["hello", "heeeello"]),
    ("**", GLOB_KEYS),
    ("hello", ["hello"]),
    ("nomatch*", []),
    ("HELLO", []),                           # case-sensitive
])
def test_keys_glob(c, pattern, expected):
    args = []
    for k in GLOB_KEYS:
        args += [k, "1"]
    c.command("MSET", *args)
    assert sorted(c.command("KEYS", pattern)) == sorted(k.encode() for k in expected)


def test_keys_on_empty_db(c):
    assert c.command("KEYS", "*") == []


def test_keys_binary_safe(c):
    c.command("SET", b"k\x00ey", "1")
    c.command("SET", b"k\xffey", "1")
    assert sorted(c.command("KEYS", "k?ey")) == [b"k\x00ey", b"k\xffey"]


# ---------------------------------------------------------------------------
# SCAN
# ---------------------------------------------------------------------------

def check_scan_reply(reply):
    """SCAN replies with [cursor as a bulk string of decimal digits, [keys as bulk strings]]."""
    assert isinstance(reply, list) and len(reply) == 2, reply
    cursor, keys = reply
    assert isinstance(cursor, bytes) and re.fullmatch(rb"[0-9]+", cursor), cursor
    assert isinstance(keys, list) and all(isinstance(k, bytes) for k in keys), keys
    return cursor, keys


def scan_all(c, *options, between_calls=None, limit=10000):
    cursor, seen, calls = b"0", [], 0
    while True:
        cursor, keys = check_scan_reply(c.command("SCAN", cursor, *options))
        seen += keys
        calls += 1
        assert calls < limit, "SCAN did not return to cursor 0"
        if cursor == b"0":
            return seen, calls
        if between_calls:
            between_calls(calls)


def test_scan_empty_db(c):
    assert c.command("SCAN", "0") == [b"0", []]
    assert c.command("SCAN", "0", "MATCH", "*", "COUNT", "100") == [b"0", []]


def test_scan_small_keyspace_in_one_call(c):
    c.command("MSET", "a", "1", "b", "2", "c", "3")
    cursor, keys = check_scan_reply(c.command("SCAN", "0"))
    assert cursor == b"0"
    assert sorted(keys) == [b"a", b"b", b"c"]
    cursor, keys = check_scan_reply(c.command("SCAN", "0", "COUNT", "100"))
    assert cursor == b"0"
    assert sorted(keys) == [b"a", b"b", b"c"]


def test_scan_iterates_every_key(c):
    names = [f"key:{i}" for i in range(300)]
    args = []
    for n in names:
        args += [n, "v"]
    c.command("MSET", *args)
    seen, calls = scan_all(c, "COUNT", "10")
    assert set(seen) == {n.encode() for n in names}
    assert calls > 1          # COUNT 10 over 300 keys takes several calls
    seen, _ = scan_all(c)     # default COUNT
    assert set(seen) == {n.encode() for n in names}


def test_scan_count_1_returns_few_keys_per_call(c):
    c.command("MSET", *[x for i in range(20) for x in (f"k{i}", "v")])
    cursor, keys = check_scan_reply(c.command("SCAN", "0", "COUNT", "1"))
    assert cursor != b"0"
    assert len(keys) < 20          # COUNT limits the work per call
    seen, _ = scan_all(c, "COUNT", "1")
    assert set(seen) == {f"k{i}".encode() for i in range(20)}


def test_scan_cursors_survive_a_lua_number(c):
    """A cursor is below 2^53, as Redis's are, so a script's tonumber(cursor)
    (a Lua double) gives it back exactly: the usual SCAN-and-DEL script
    (fakeredis's test_deleting_while_scan) once met "invalid cursor"."""
    c.command("MSET", *[x for i in range(300) for x in (f"key-{i}", "v")])
    cursor = b"0"
    while True:
        cursor, _ = check_scan_reply(c.command("SCAN", cursor, "COUNT", "7"))
        assert int(cursor) < 2 ** 53
        if cursor == b"0":
            break
    script = """
        local cursor = 0
        local seen = 0
        repeat
            local result = redis.call('SCAN', cursor)
            for _, key in ipairs(result[2]) do
                seen = seen + 1
                redis.call('DEL', key)
            end
            cursor = tonumber(result[1])
        until cursor == 0
        return seen
    """
    assert c.command("EVAL", script, "0") == 300
    assert c.command("DBSIZE") == 0


def test_scan_returns_keys_present_throughout_despite_changes(c):
    stable = {f"stable:{i}".encode() for i in range(200)}
    doomed = [f"doomed:{i}" for i in range(100)]
    c.command("MSET", *[x for k in stable for x in (k, b"v")])
    c.command("MSET", *[x for k in doomed for x in (k, "v")])
    added = []

    def mutate(call):
        # delete some keys and add others while the iteration runs
        if call <= 10:
            for k in doomed[(call - 1) * 10:call * 10]:
                c.command("DEL", k)
            for i in range(10):
                name = f"new:{call}:{i}"
                c.command("SET", name, "v")
                added.append(name)

    seen, _ = scan_all(c, "COUNT", "10", between_calls=mutate)
    seen = set(seen)
    assert stable <= seen
    everything = stable | {k.encode() for k in doomed} | {k.encode() for k in added}
    assert seen <= everything


def test_scan_match(c):
    c.command("MSET", *[x for i in range(100) for x in (f"user:{i}", "v")])
    c.command("MSET", *[x for i in range(50) for x in (f"order:{i}", "v")])
    seen, _ = scan_all(c, "MATCH", "user:*", "COUNT", "7")
    assert sorted(set(seen)) == sorted(f"user:{i}".encode() for i in range(100))
    seen, _ = scan_all(c, "MATCH", "order:?")
    assert sorted(set(seen)) == sorted(f"order:{i}".encode() for i in range(10))
    seen, _ = scan_all(c, "MATCH", "user:1[0-2]")
    assert sorted(set(seen)) == [b"user:10", b"user:11", b"user:12"]


def test_scan_match_without_matches(c):
    c.command("MSET", *[x for i in range(100) for x in (f"k{i}", "v")])
    seen, _ = scan_all(c, "MATCH", "nothing*", "COUNT", "10")
    assert seen == []


def test_scan_type(c):
    c.command("MSET", "a", "1", "b", "2", "c", "")
    seen, _ = scan_all(c, "TYPE", "string")
    assert sorted(seen) == [b"a", b"b", b"c"]
    seen, _ = scan_all(c, "TYPE", "STRING")         # case-insensitive
    assert sorted(seen) == [b"a", b"b", b"c"]
    for other in ["list", "hash", "set", "zset", "stream"]:
        seen, _ = scan_all(c, "TYPE", other)
        assert seen == [], other


def test_scan_unknown_type_matches_nothing(c):
    # Redis 7.0.15: an unknown TYPE name silently matches no key (no error). Some
    # later builds briefly replied "unknown type name"; upstream kept the empty
    # reply for compatibility (redis#14830 was closed), so pin the empty reply.
    c.command("MSET", "a", "1", "b", "2")
    assert c.command("SCAN", "0", "TYPE", "foo") == [b"0", []]


def test_scan_combined_options(c):
    c.command("MSET", "aa", "1", "ab", "2", "ba", "3")
    seen, _ = scan_all(c, "count", "10", "match", "a*", "type", "string")
    assert sorted(seen) == [b"aa", b"ab"]
    seen, _ = scan_all(c, "TYPE", "string", "MATCH", "b*", "COUNT", "1")
    assert seen == [b"ba"]
    # a repeated option: the last one wins
    seen, _ = scan_all(c, "MATCH", "a*", "MATCH", "b*")
    assert seen == [b"ba"]


@pytest.mark.parametrize("cursor", ["abc", "1.5", " 1", "1 ", "18446744073709551616", "0x10", "1a"])
def test_scan_invalid_cursor(c, cursor):
    c.command("SET", "a", "1")
    assert c.command("SCAN", cursor) == INVALID_CURSOR
    # the cursor is checked before the options
    assert c.command("SCAN", cursor, "COUNT", "0") == INVALID_CURSOR


def test_scan_empty_cursor_means_zero(c):
    # The cursor is parsed with strtoul: an empty string reads as cursor 0.
    c.command("SET", "a", "1")
    assert c.command("SCAN", "") == [b"0", [b"a"]]


@pytest.mark.parametrize("options,expected", [
    (("COUNT", "0"), SYNTAX),
    (("COUNT", "-1"), SYNTAX),
    (("COUNT", "abc"), NOT_INT),
    (("COUNT", "1.5"), NOT_INT),
    (("COUNT",), SYNTAX),
    (("MATCH",), SYNTAX),
    (("TYPE",), SYNTAX),
    (("FOO", "bar"), SYNTAX),
    (("FOO",), SYNTAX),
    (("MATCH", "*", "COUNT"), SYNTAX),
    (("COUNT", "0", "FOO"), SYNTAX),
])
def test_scan_option_errors(c, options, expected):
    c.command("SET", "a", "1")
    assert c.command("SCAN", "0", *options) == expected


def test_scan_huge_count_is_accepted(c):
    c.command("MSET", "a", "1", "b", "2")
    for count in ["2147483648", "9223372036854775807"]:
        cursor, keys = check_scan_reply(c.command("SCAN", "0", "COUNT", count))
        assert cursor == b"0"
        assert sorted(keys) == [b"a", b"b"]


# ---------------------------------------------------------------------------
# RANDOMKEY / TYPE
# ---------------------------------------------------------------------------

def test_randomkey(c):
    assert c.command("RANDOMKEY") is None
    c.command("SET", "only", "1")
    for _ in range(5):
        assert c.command("RANDOMKEY") == b"only"
    c.command("MSET", "a", "1", "b", "2", "c", "3")
    for _ in range(20):
        assert c.command("RANDOMKEY") in {b"only", b"a", b"b", b"c"}
    c.command("SELECT", "1")
    assert c.command("RANDOMKEY") is None


def test_type(c):
    c.command("SET", "s", "v")
    c.command("SET", "e", "")
    c.command("SET", "n", "12")
    assert c.command("TYPE", "s") == "string"     # a simple string (+string), not a bulk
    assert c.command("TYPE", "e") == "string"
    assert c.command("TYPE", "n") == "string"
    assert c.command("TYPE", "missing") == "none"


# ---------------------------------------------------------------------------
# RENAME / RENAMENX
# ---------------------------------------------------------------------------

def test_rename(c):
    c.command("SET", "a", "1")
    assert c.command("RENAME", "a", "b") == "OK"
    assert c.command("EXISTS", "a") == 0
    assert c.command("GET", "b") == b"1"
    c.command("SET", "c", "3")
    assert c.command("RENAME", "b", "c") == "OK"      # overwrites
    assert c.command("GET", "c") == b"1"
    assert c.command("DBSIZE") == 1


def test_rename_missing(c):
    assert c.command("RENAME", "missing", "b") == NO_SUCH_KEY
    assert c.command("RENAME", "missing", "missing") == NO_SUCH_KEY
    assert c.command("EXISTS", "b") == 0


def test_rename_to_itself(c):
    c.command("SET", "a", "1", "PXAT", "4000000000000")
    assert c.command("RENAME", "a", "a") == "OK"
    assert c.command("GET", "a") == b"1"
    assert c.command("PEXPIRETIME", "a") == 4000000000000


def test_rename_moves_ttl(c):
    c.command("SET", "a", "1", "PXAT", "4000000000000")
    c.command("SET", "b", "2", "PXAT", "4000000001000")
    c.command("SET", "p", "3")
    assert c.command("RENAME", "a", "x") == "OK"
    assert c.command("PEXPIRETIME", "x") == 4000000000000
    assert c.command("RENAME", "p", "b") == "OK"     # the destination loses its own TTL
    assert c.command("TTL", "b") == -1
    assert c.command("GET", "b") == b"3"


def test_renamenx(c):
    assert c.command("RENAMENX", "missing", "x") == NO_SUCH_KEY
    assert c.command("RENAMENX", "missing", "missing") == NO_SUCH_KEY
    c.command("SET", "x", "1")
    c.command("SET", "y", "2")
    assert c.command("RENAMENX", "x", "y") == 0
    assert c.command("MGET", "x", "y") == [b"1", b"2"]
    assert c.command("RENAMENX", "x", "x") == 0
    assert c.command("GET", "x") == b"1"
    assert c.command("RENAMENX", "x", "z") == 1
    assert c.command("MGET", "x", "y", "z") == [None, b"2", b"1"]


# ---------------------------------------------------------------------------
# COPY
# ---------------------------------------------------------------------------

def test_copy(c):
    assert c.command("COPY", "missing", "b") == 0
    assert c.command("EXISTS", "b") == 0
    c.command("SET", "a", "1")
    assert c.command("COPY", "a", "b") == 1
    assert c.command("MGET", "a", "b") == [b"1", b"1"]
    c.command("SET", "a", "2")
    assert c.command("COPY", "a", "b") == 0              # destination exists
    assert c.command("GET", "b") == b"1"
    assert c.command("COPY", "a", "b", "REPLACE") == 1
    assert c.command("GET", "b") == b"2"
    assert c.command("COPY", "a", "b", "replace", "REPLACE") == 1
    # the copy is independent of the source
    c.command("APPEND", "b", "x")
    assert c.command("MGET", "a", "b") == [b"2", b"2x"]


def test_copy_carries_ttl(c):
    c.command("SET", "a", "1", "PXAT", "4000000000000")
    assert c.command("COPY", "a", "b") == 1
    assert c.command("PEXPIRETIME", "b") == 4000000000000
    c.command("SET", "p", "2")
    assert c.command("COPY", "p", "b", "REPLACE") == 1
    assert c.command("TTL", "b") == -1


def test_copy_to_same_key(c):
    c.command("SET", "a", "1")
    assert c.command("COPY", "a", "a") == SAME_OBJECT
    assert c.command("COPY", "a", "a", "REPLACE") == SAME_OBJECT
    assert c.command("COPY", "a", "a", "DB", "0") == SAME_OBJECT
    assert c.command("COPY", "missing", "missing") == SAME_OBJECT     # checked before the lookup


def test_copy_to_other_db(c, c2):
    c.command("SET", "a", "1", "PXAT", "4000000000000")
    assert c.command("COPY", "a", "a", "DB", "1") == 1
    assert c.command("COPY", "a", "b", "DB", "2") == 1
    assert c.command("GET", "a") == b"1"           # the source stays in db 0
    c2.command("SELECT", "1")
    assert c2.command("GET", "a") == b"1"
    assert c2.command("PEXPIRETIME", "a") == 4000000000000
    c2.command("SELECT", "2")
    assert c2.command("KEYS", "*") == [b"b"]
    c.command("SET", "a", "new")
    assert c.command("COPY", "a", "a", "DB", "1") == 0
    assert c.command("COPY", "a", "a", "DB", "1", "REPLACE") == 1
    c2.command("SELECT", "1")
    assert c2.command("GET", "a") == b"new"
    # a repeated DB option: the last one wins
    assert c.command("COPY", "a", "x", "DB", "1", "DB", "3") == 1
    assert c2.command("EXISTS", "x") == 0
    c2.command("SELECT", "3")
    assert c2.command("GET", "x") == b"new"


@pytest.mark.parametrize("options,expected", [
    (("DB", "16"), DB_RANGE),
    (("DB", "-1"), DB_RANGE),
    (("DB", "abc"), NOT_INT),
    (("DB", "01"), NOT_INT),
    (("DB", "2147483647"), DB_RANGE),
    (("DB", "99999999999"), INT_RANGE),        # fits int64, not an int
    (("DB", "2147483648"), INT_RANGE),
    (("DB", "-2147483649"), INT_RANGE),
    (("DB", "9223372036854775808"), NOT_INT),  # does not even fit int64
    (("DB",), SYNTAX),
    (("FOO",), SYNTAX),
    (("DB", "1", "FOO"), SYNTAX),
])
def test_copy_option_errors(c, options, expected):
    c.command("SET", "a", "1")
    assert c.command("COPY", "a", "x", *options) == expected
    assert c.command("COPY", "missing", "x", *options) == expected   # options are parsed first
    assert c.command("EXISTS", "x") == 0


# ---------------------------------------------------------------------------
# MOVE
# ---------------------------------------------------------------------------

def test_move(c, c2):
    assert c.command("MOVE", "missing", "1") == 0
    c.command("SET", "a", "1", "PXAT", "4000000000000")
    assert c.command("MOVE", "a", "1") == 1
    assert c.command("EXISTS", "a") == 0
    c2.command("SELECT", "1")
    assert c2.command("GET", "a") == b"1"
    assert c2.command("PEXPIRETIME", "a") == 4000000000000
    # the destination already has the key: nothing moves
    c.command("SET", "a", "2")
    assert c.command("MOVE", "a", "1") == 0
    assert c.command("GET", "a") == b"2"
    assert c2.command("GET", "a") == b"1"
    # and back from db 1 to db 0
    assert c2.command("MOVE", "a", "0") == 0
    c.command("DEL", "a")
    assert c2.command("MOVE", "a", "0") == 1
    assert c.command("GET", "a") == b"1"
    assert c2.command("DBSIZE") == 0


def test_move_errors(c):
    c.command("SET", "a", "1")
    assert c.command("MOVE", "a", "0") == SAME_OBJECT
    assert c.command("MOVE", "missing", "0") == SAME_OBJECT      # checked before the lookup
    assert c.command("MOVE", "a", "16") == DB_RANGE
    assert c.command("MOVE", "a", "-1") == DB_RANGE
    assert c.command("MOVE", "missing", "16") == DB_RANGE
    assert c.command("MOVE", "a", "abc") == NOT_INT
    assert c.command("MOVE", "a", "01") == NOT_INT
    assert c.command("MOVE", "missing", "abc") == NOT_INT
    assert c.command("MOVE", "a", "2147483647") == DB_RANGE
    assert c.command("MOVE", "a", "99999999999") == INT_RANGE
    assert c.command("MOVE", "a", "9223372036854775808") == NOT_INT
    c.command("SELECT", "5")
    assert c.command("MOVE", "a", "5") == SAME_OBJECT
    c.command("SELECT", "0")
    assert c.command("GET", "a") == b"1"


# ---------------------------------------------------------------------------
# DEL / UNLINK / TOUCH / EXISTS
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["DEL", "UNLINK"])
def test_del_unlink(c, command):
    c.command("MSET", "u", "1", "v", "2", "w", "3")
    assert c.command(command, "u") == 1
    assert c.command(command, "u") == 0
    assert c.command(command, "v", "w", "missing", "v") == 2     # each deleted key counted once
    assert c.command("DBSIZE") == 0


def test_touch_and_exists_count_repeats(c):
    c.command("MSET", "u", "1", "v", "2")
    assert c.command("TOUCH", "u", "v", "w", "u") == 3
    assert c.command("TOUCH", "missing") == 0
    assert c.command("EXISTS", "u", "u", "u", "missing") == 3
    assert c.command("EXISTS", "missing") == 0
    assert c.command("EXISTS", "u", "v") == 2


# ---------------------------------------------------------------------------
# TIME
# ---------------------------------------------------------------------------

def test_time(c):
    before = time.time()
    reply = c.command("TIME")
    after = time.time()
    assert isinstance(reply, list) and len(reply) == 2
    seconds, micros = reply
    assert isinstance(seconds, bytes) and re.fullmatch(rb"[1-9][0-9]*", seconds)
    assert isinstance(micros, bytes) and re.fullmatch(rb"0|[1-9][0-9]{0,5}", micros)
    value = int(seconds) + int(micros) / 1e6
    assert before - 1 <= value <= after + 1


# ---------------------------------------------------------------------------
# SELECT / DBSIZE / FLUSHDB / SWAPDB
# ---------------------------------------------------------------------------

def test_databases_are_separate(c, c2):
    c.command("SET", "k", "zero")
    assert c2.command("SELECT", "15") == "OK"
    assert c2.command("GET", "k") is None
    c2.command("SET", "k", "fifteen")
    assert c.command("GET", "k") == b"zero"
    assert c2.command("GET", "k") == b"fifteen"
    assert c.command("DBSIZE") == 1
    assert c2.command("DBSIZE") == 1


def test_select_errors(c):
    assert c.command("SELECT", "16") == DB_RANGE
    assert c.command("SELECT", "-1") == DB_RANGE
    if REDIS:
        # kvcache-server: a non-numeric argument names a cache (README).
        assert c.command("SELECT", "abc") == NOT_INT
        assert c.command("SELECT", "1.0") == NOT_INT
    assert c.command("SELECT", "01") == NOT_INT
    assert c.command("SELECT", "+1") == NOT_INT
    assert c.command("SELECT", "2147483647") == DB_RANGE
    assert c.command("SELECT", "2147483648") == INT_RANGE
    assert c.command("SELECT", "-2147483649") == INT_RANGE
    assert c.command("SELECT", "9223372036854775808") == NOT_INT
    assert c.command("SET", "still", "db0") == "OK"
    c.command("SELECT", "0")
    assert c.command("GET", "still") == b"db0"


def test_dbsize_exact(c):
    assert c.command("DBSIZE") == 0
    c.command("MSET", *[x for i in range(57) for x in (f"k{i}", "v")])
    assert c.command("DBSIZE") == 57
    c.command("SET", "k0", "again")
    assert c.command("DBSIZE") == 57
    c.command("DEL", "k1", "k2", "nope")
    assert c.command("DBSIZE") == 55
    c.command("SET", "e", "")
    assert c.command("DBSIZE") == 56
    c.command("SELECT", "1")
    assert c.command("DBSIZE") == 0


def test_flushdb_only_selected_db(c, c2):
    c.command("SET", "a", "1")
    c2.command("SELECT", "1")
    c2.command("SET", "b", "1")
    assert c2.command("FLUSHDB") == "OK"
    assert c2.command("DBSIZE") == 0
    assert c.command("DBSIZE") == 1
    assert c.command("FLUSHDB", "ASYNC") == "OK"
    assert c.command("FLUSHDB", "sync") == "OK"
    assert c.command("DBSIZE") == 0
    assert c.command("FLUSHDB", "x") == SYNTAX
    assert c.command("FLUSHALL", "x") == SYNTAX


def test_swapdb(c, c2):
    c.command("SET", "a", "0", "PXAT", "4000000000000")
    c2.command("SELECT", "1")
    c2.command("MSET", "b", "1", "c", "1")
    assert c.command("SWAPDB", "0", "1") == "OK"
    # connections stay on their database number and see the swapped contents
    assert sorted(c.command("KEYS", "*")) == [b"b", b"c"]
    assert c.command("DBSIZE") == 2
    assert c2.command("KEYS", "*") == [b"a"]
    assert c2.command("PEXPIRETIME", "a") == 4000000000000    # TTLs travel with the data
    assert c.command("SWAPDB", "1", "0") == "OK"
    assert c.command("KEYS", "*") == [b"a"]
    assert c.command("SWAPDB", "0", "0") == "OK"
    assert c.command("KEYS", "*") == [b"a"]


def test_swapdb_with_empty_db(c, c2):
    c.command("SET", "a", "1")
    assert c.command("SWAPDB", "0", "9") == "OK"
    assert c.command("DBSIZE") == 0
    c2.command("SELECT", "9")
    assert c2.command("GET", "a") == b"1"


@pytest.mark.parametrize("first,second,expected", [
    ("0", "16", DB_RANGE),
    ("16", "0", DB_RANGE),
    ("-1", "0", DB_RANGE),
    # Not a number (and, for kvcache-server, not the name of an existing cache).
    ("no-such-cache", "0", ("error", "ERR invalid first DB index")),
    ("0", "no-such-cache", ("error", "ERR invalid second DB index")),
    ("no-such-cache", "16", ("error", "ERR invalid first DB index")),   # both parsed before the range check
    ("16", "no-such-cache", ("error", "ERR invalid second DB index")),
    ("no-such-cache", "no-such-either", ("error", "ERR invalid first DB index")),
    ("00", "1", ("error", "ERR invalid first DB index")),
    ("0", "-0", ("error", "ERR invalid second DB index")),
    ("0", "9999999999", ("error", "ERR invalid second DB index")),   # does not fit an int
    ("2147483648", "0", ("error", "ERR invalid first DB index")),
])
def test_swapdb_errors(c, first, second, expected):
    c.command("SET", "a", "1")
    assert c.command("SWAPDB", first, second) == expected
    assert c.command("GET", "a") == b"1"


# ---------------------------------------------------------------------------
# Expired keys are invisible to the keyspace commands (one short sleep)
# ---------------------------------------------------------------------------

def test_expired_keys_invisible_to_keyspace_commands(c):
    c.command("SET", "live", "1")
    for k in ["gone1", "gone2", "gone3", "gone4", "gone5"]:
        c.command("SET", k, "1", "PX", "200")
    c.command("SET", "dst", "1", "PX", "200")
    assert c.command("EXISTS", "gone1", "gone2", "dst") == 3
    time.sleep(0.3)
    assert c.command("KEYS", "*") == [b"live"]
    seen, _ = scan_all(c)
    assert seen == [b"live"]
    for _ in range(10):
        assert c.command("RANDOMKEY") == b"live"
    assert c.command("TYPE", "gone1") == "none"
    assert c.command("RENAME", "gone1", "x") == NO_SUCH_KEY
    assert c.command("RENAMENX", "gone2", "x") == NO_SUCH_KEY
    assert c.command("COPY", "gone3", "x") == 0
    assert c.command("MOVE", "gone4", "1") == 0
    assert c.command("TOUCH", "gone5", "live") == 1
    assert c.command("DEL", "gone5", "live2") == 0
    # an expired destination counts as absent
    assert c.command("RENAMENX", "live", "dst") == 1
    assert c.command("GET", "dst") == b"1"
    assert c.command("DBSIZE") == 1
