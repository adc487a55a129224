"""Key expiry, pinned to Redis 7.0.15's exact replies.

Covers SET's EX|PX|EXAT|PXAT|KEEPTTL|NX|XX|GET options, SETEX, PSETEX, SETNX,
GETEX, EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT with NX|XX|GT|LT, TTL/PTTL,
EXPIRETIME/PEXPIRETIME and PERSIST.

Error texts are compared in full through a raw RESP connection ("ERR ..."),
since redis-py would hide or reword them. Absolute timestamps far in the future
(FAR_MS, year 2096) make results exact where relative TTLs would drift.
"""
import time

import pytest

from conftest import NOT_INT, SYNTAX, arity

FAR_S = 4000000000              # 2096-10-02, seconds
FAR_MS = FAR_S * 1000           # the same instant, milliseconds
LLONG_MAX = 9223372036854775807
LLONG_MIN = -9223372036854775808

NX_CONFLICT = ("error", "ERR NX and XX, GT or LT options at the same time are not compatible")
GT_LT_CONFLICT = ("error", "ERR GT and LT options at the same time are not compatible")


def invalid_expire(command):
    # The command name is always the lower-case table name, whatever case the client sent.
    return ("error", f"ERR invalid expire time in '{command}' command")


# ---------------------------------------------------------------------------
# SET options
# ---------------------------------------------------------------------------

def test_set_ex_px_set_ttl(c):
    assert c.command("SET", "k", "v", "EX", "100") == "OK"
    assert c.command("TTL", "k") == 100
    assert 99000 < c.command("PTTL", "k") <= 100000
    assert c.command("SET", "k2", "v", "PX", "5000") == "OK"
    assert 4500 < c.command("PTTL", "k2") <= 5000
    assert c.command("TTL", "k2") == 5
    assert c.command("GET", "k2") == b"v"


def test_set_exat_pxat_set_exact_deadline(c):
    assert c.command("SET", "k", "v", "EXAT", FAR_S) == "OK"
    assert c.command("EXPIRETIME", "k") == FAR_S
    assert c.command("PEXPIRETIME", "k") == FAR_MS
    assert c.command("SET", "k", "v", "PXAT", FAR_MS + 123) == "OK"
    assert c.command("PEXPIRETIME", "k") == FAR_MS + 123
    assert c.command("EXPIRETIME", "k") == FAR_S


def test_set_exat_pxat_in_the_past_reply_ok_and_key_is_gone(c):
    assert c.command("SET", "k", "v", "EXAT", "1") == "OK"
    assert c.command("EXISTS", "k") == 0
    assert c.command("GET", "k") is None
    assert c.command("SET", "k", "v", "PXAT", "1") == "OK"
    assert c.command("EXISTS", "k") == 0


def test_set_options_are_case_insensitive(c):
    assert c.command("set", "k", "v", "ex", "100") == "OK"
    assert c.command("SET", "k", "v2", "Ex", "50", "Xx", "GeT") == b"v"
    assert c.command("TTL", "k") == 50
    assert c.command("GET", "k") == b"v2"


@pytest.mark.parametrize("unit", ["EX", "PX", "EXAT", "PXAT"])
@pytest.mark.parametrize("value", ["0", "-1", "-100"])
def test_set_zero_or_negative_expire_is_invalid(c, unit, value):
    assert c.command("SET", "k", "v", unit, value) == invalid_expire("set")
    assert c.command("EXISTS", "k") == 0


@pytest.mark.parametrize("unit", ["EX", "PX", "EXAT", "PXAT"])
@pytest.mark.parametrize("value", ["abc", "1.5", "", "+10", "010", " 10", "9223372036854775808"])
def test_set_non_integer_expire(c, unit, value):
    assert c.command("SET", "k", "v", unit, value) == NOT_INT
    assert c.command("EXISTS", "k") == 0


@pytest.mark.parametrize("args", [
    ("EX", str(LLONG_MAX)),            # seconds * 1000 overflows
    ("EX", "9223372036854775"),        # * 1000 fits, + now overflows
    ("PX", str(LLONG_MAX)),            # + now overflows
    ("EXAT", str(LLONG_MAX)),          # * 1000 overflows
    ("EXAT", "9223372036854776"),      # * 1000 overflows (> LLONG_MAX / 1000)
])
def test_set_overflowing_expire_is_invalid(c, args):
    assert c.command("SET", "k", "v", *args) == invalid_expire("set")
    assert c.command("EXISTS", "k") == 0


def test_set_largest_absolute_expire_is_accepted(c):
    # EXAT LLONG_MAX/1000 and PXAT LLONG_MAX do not overflow: accepted as-is.
    assert c.command("SET", "k", "v", "EXAT", "9223372036854775") == "OK"
    assert c.command("EXPIRETIME", "k") == 9223372036854775
    assert c.command("PEXPIRETIME", "k") == 9223372036854775000
    assert c.command("SET", "k", "v", "PXAT", str(LLONG_MAX)) == "OK"
    assert c.command("PEXPIRETIME", "k") == LLONG_MAX
    assert c.command("GET", "k") == b"v"


@pytest.mark.parametrize("args", [
    ("EX", "10", "PX", "200"),
    ("PX", "100", "EX", "100"),
    ("EXAT", "10", "PXAT", "10"),
    ("EX", "10", "KEEPTTL"),
    ("KEEPTTL", "PX", "10"),
    ("NX", "XX"),
    ("XX", "NX"),
    ("EX",),                 # missing value
    ("EX", "10", "PX"),
    ("FOO",),
    ("PERSIST",),            # GETEX option, not a SET option
    ("EX", "10", "extra"),
])
def test_set_invalid_option_combinations_are_syntax_errors(c, args):
    assert c.command("SET", "k", "v", *args) == SYNTAX
    assert c.command("EXISTS", "k") == 0


def test_set_syntax_errors_come_before_value_checks(c):
    # All options are parsed first; the expire value is checked only afterwards.
    assert c.command("SET", "k", "v", "EX", "abc", "NX", "XX") == SYNTAX
    assert c.command("SET", "k", "v", "NX", "XX", "EX", "abc") == SYNTAX
    assert c.command("SET", "k", "v", "EX", "0", "NX", "XX") == SYNTAX


def test_set_repeated_identical_options_are_accepted(c):
    assert c.command("SET", "k", "v", "EX", "10", "EX", "20") == "OK"
    assert c.command("TTL", "k") == 20        # the last one wins
    assert c.command("SET", "k", "v", "KEEPTTL", "KEEPTTL") == "OK"
    assert c.command("TTL", "k") == 20
    assert c.command("SET", "k", "v2", "GET", "GET") == b"v"
    assert c.command("SET", "k", "v3", "NX", "NX") is None


def test_set_get_with_expire(c):
    c.command("SET", "k", "old")
    assert c.command("SET", "k", "new", "EX", "100", "GET") == b"old"
    assert c.command("TTL", "k") == 100
    assert c.command("GET", "k") == b"new"


def test_set_without_keepttl_clears_ttl(c):
    c.command("SET", "k", "v", "EX", "100")
    assert c.command("SET", "k", "v2") == "OK"
    assert c.command("TTL", "k") == -1
    c.command("SET", "k", "v", "EX", "100")
    assert c.command("SET", "k", "v3", "GET") == b"v"
    assert c.command("TTL", "k") == -1
    c.command("SET", "k", "v", "EX", "100")
    assert c.command("SET", "k", "v4", "XX") == "OK"
    assert c.command("TTL", "k") == -1


def test_set_keepttl_keeps_ttl(c):
    c.command("SET", "k", "v", "PXAT", FAR_MS + 7)
    assert c.command("SET", "k", "v2", "KEEPTTL") == "OK"
    assert c.command("PEXPIRETIME", "k") == FAR_MS + 7
    assert c.command("GET", "k") == b"v2"
    assert c.command("SET", "k", "v3", "KEEPTTL", "GET", "XX") == b"v2"
    assert c.command("PEXPIRETIME", "k") == FAR_MS + 7
    # KEEPTTL on a key without TTL (or a missing key) leaves it without TTL.
    assert c.command("SET", "n", "v", "KEEPTTL") == "OK"
    assert c.command("TTL", "n") == -1


def test_set_nx_on_existing_key_leaves_its_ttl(c):
    c.command("SET", "k", "v", "PXAT", FAR_MS)
    assert c.command("SET", "k", "v2", "NX", "EX", "10") is None
    assert c.command("PEXPIRETIME", "k") == FAR_MS


# ---------------------------------------------------------------------------
# SETEX / PSETEX / SETNX
# ---------------------------------------------------------------------------

def test_setex_psetex(c):
    assert c.command("SETEX", "k", "100", "v") == "OK"
    assert c.command("TTL", "k") == 100
    assert c.command("GET", "k") == b"v"
    assert c.command("SETEX", "k", "50", "v2") == "OK"     # overwrites value and TTL
    assert c.command("TTL", "k") == 50
    assert c.command("GET", "k") == b"v2"
    assert c.command("PSETEX", "p", "50000", "v") == "OK"
    assert 49000 < c.command("PTTL", "p") <= 50000
    assert c.command("GET", "p") == b"v"


@pytest.mark.parametrize("value", ["0", "-1"])
def test_setex_psetex_invalid_expire(c, value):
    assert c.command("SETEX", "k", value, "v") == invalid_expire("setex")
    assert c.command("PSETEX", "k", value, "v") == invalid_expire("psetex")
    assert c.command("EXISTS", "k") == 0


def test_setex_psetex_overflow_and_non_integer(c):
    assert c.command("SETEX", "k", str(LLONG_MAX), "v") == invalid_expire("setex")
    assert c.command("PSETEX", "k", str(LLONG_MAX), "v") == invalid_expire("psetex")
    assert c.command("SETEX", "k", "abc", "v") == NOT_INT
    assert c.command("SETEX", "k", "1.5", "v") == NOT_INT
    assert c.command("PSETEX", "k", "abc", "v") == NOT_INT
    assert c.command("EXISTS", "k") == 0


def test_setex_psetex_setnx_arity(c):
    assert c.command("SETEX", "k", "10") == arity("setex")
    assert c.command("SETEX", "k", "10", "v", "extra") == arity("setex")
    assert c.command("PSETEX", "k", "10") == arity("psetex")
    assert c.command("SETNX", "k") == arity("setnx")
    assert c.command("SETNX", "k", "v", "x") == arity("setnx")


def test_setnx(c):
    assert c.command("SETNX", "k", "v") == 1
    assert c.command("SETNX", "k", "v2") == 0
    assert c.command("GET", "k") == b"v"
    c.command("PEXPIREAT", "k", FAR_MS)
    assert c.command("SETNX", "k", "v3") == 0
    assert c.command("PEXPIRETIME", "k") == FAR_MS


# ---------------------------------------------------------------------------
# GETEX
# ---------------------------------------------------------------------------

def test_getex_without_options_is_get(c):
    assert c.command("GETEX", "missing") is None
    c.command("SET", "k", "v", "PXAT", FAR_MS)
    assert c.command("GETEX", "k") == b"v"
    assert c.command("PEXPIRETIME", "k") == FAR_MS     # untouched


def test_getex_sets_expiry(c):
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", "EX", "100") == b"v"
    assert c.command("TTL", "k") == 100
    assert c.command("GETEX", "k", "PX", "5000") == b"v"
    assert 4500 < c.command("PTTL", "k") <= 5000
    assert c.command("GETEX", "k", "EXAT", FAR_S) == b"v"
    assert c.command("PEXPIRETIME", "k") == FAR_MS
    assert c.command("GETEX", "k", "PXAT", FAR_MS + 1) == b"v"
    assert c.command("PEXPIRETIME", "k") == FAR_MS + 1
    assert c.command("getex", "k", "persist") == b"v"
    assert c.command("TTL", "k") == -1
    assert c.command("GETEX", "k", "PERSIST") == b"v"     # already persistent: still the value
    assert c.command("TTL", "k") == -1


def test_getex_past_deadline_returns_value_then_deletes(c):
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", "PXAT", "1") == b"v"
    assert c.command("EXISTS", "k") == 0
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", "EXAT", "1") == b"v"
    assert c.command("EXISTS", "k") == 0


def test_getex_repeated_options(c):
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", "EX", "10", "EX", "20") == b"v"
    assert c.command("TTL", "k") == 20
    assert c.command("GETEX", "k", "PERSIST", "PERSIST") == b"v"
    assert c.command("TTL", "k") == -1


@pytest.mark.parametrize("args", [
    ("EX", "10", "PX", "10"),
    ("EX", "10", "PERSIST"),
    ("PERSIST", "EX", "10"),
    ("PERSIST", "extra"),
    ("EX",),
    ("EX", "10", "foo"),
    ("KEEPTTL",),      # SET option, not GETEX
    ("NX",),
    ("foo",),
])
def test_getex_syntax_errors(c, args):
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", *args) == SYNTAX
    assert c.command("TTL", "k") == -1


@pytest.mark.parametrize("unit", ["EX", "PX", "EXAT", "PXAT"])
def test_getex_invalid_expire(c, unit):
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", unit, "0") == invalid_expire("getex")
    assert c.command("GETEX", "k", unit, "-1") == invalid_expire("getex")
    assert c.command("GETEX", "k", unit, "abc") == NOT_INT
    assert c.command("GETEX", "k", unit, "1.5") == NOT_INT
    assert c.command("TTL", "k") == -1


def test_getex_overflow(c):
    c.command("SET", "k", "v")
    assert c.command("GETEX", "k", "EX", str(LLONG_MAX)) == invalid_expire("getex")
    assert c.command("GETEX", "k", "PX", str(LLONG_MAX)) == invalid_expire("getex")
    assert c.command("GETEX", "k", "EXAT", "9223372036854776") == invalid_expire("getex")
    assert c.command("GETEX", "k", "EXAT", "9223372036854775") == b"v"
    assert c.command("EXPIRETIME", "k") == 9223372036854775


def test_getex_on_missing_key_checks_syntax_but_not_the_expire_value(c):
    # Syntax is checked before the lookup; the expire value only after finding the key.
    assert c.command("GETEX", "missing", "foo") == SYNTAX
    assert c.command("GETEX", "missing", "EX", "10", "PX", "10") == SYNTAX
    assert c.command("GETEX", "missing", "EX", "0") is None
    assert c.command("GETEX", "missing", "EX", "abc") is None
    assert c.command("GETEX", "missing", "EX", "10") is None
    assert c.command("EXISTS", "missing") == 0


def test_getex_arity(c):
    assert c.command("GETEX") == arity("getex")


# ---------------------------------------------------------------------------
# EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT
# ---------------------------------------------------------------------------

def test_expire_family_basic(c):
    c.command("SET", "k", "v")
    assert c.command("EXPIRE", "k", "100") == 1
    assert c.command("TTL", "k") == 100
    assert c.command("PEXPIRE", "k", "5000") == 1
    assert 4500 < c.command("PTTL", "k") <= 5000
    assert c.command("EXPIREAT", "k", FAR_S) == 1
    assert c.command("PEXPIRETIME", "k") == FAR_MS
    assert c.command("PEXPIREAT", "k", FAR_MS + 5) == 1
    assert c.command("PEXPIRETIME", "k") == FAR_MS + 5
    assert c.command("GET", "k") == b"v"


def test_expire_family_on_missing_key_returns_zero(c):
    assert c.command("EXPIRE", "missing", "10") == 0
    assert c.command("PEXPIRE", "missing", "10") == 0
    assert c.command("EXPIREAT", "missing", FAR_S) == 0
    assert c.command("PEXPIREAT", "missing", FAR_MS) == 0
    assert c.command("EXPIRE", "missing", "10", "NX") == 0
    assert c.command("EXPIRE", "missing", "-1") == 0
    assert c.command("EXISTS", "missing") == 0


@pytest.mark.parametrize("args", [
    ("EXPIRE", "0"), ("EXPIRE", "-1"), ("PEXPIRE", "0"), ("PEXPIRE", "-1"),
    ("EXPIREAT", "1"), ("EXPIREAT", "0"), ("EXPIREAT", "-1"),
    ("PEXPIREAT", "1"), ("PEXPIREAT", "0"),
    ("EXPIRE", "-9223372036854775"),          # large but not overflowing: deletes
    ("PEXPIRE", str(LLONG_MIN)),              # allowed: LLONG_MIN + now does not overflow
])
def test_expire_in_the_past_deletes_and_returns_one(c, args):
    command, value = args
    c.command("SET", "k", "v")
    assert c.command(command, "k", value) == 1
    assert c.command("EXISTS", "k") == 0
    assert c.command("GET", "k") is None
    assert c.command("TTL", "k") == -2


@pytest.mark.parametrize("command,value", [
    ("EXPIRE", str(LLONG_MAX)),           # seconds * 1000 overflows
    ("EXPIRE", "9223372036854775"),       # * 1000 fits, + now overflows
    ("EXPIRE", "9223372036854776"),
    ("EXPIRE", str(LLONG_MIN)),           # seconds * 1000 underflows
    ("EXPIRE", "-9223372036854776"),
    ("PEXPIRE", str(LLONG_MAX)),          # + now overflows
    ("EXPIREAT", str(LLONG_MAX)),
    ("EXPIREAT", "9223372036854776"),
])
def test_expire_overflow_is_invalid(c, command, value):
    c.command("SET", "k", "v")
    assert c.command(command, "k", value) == invalid_expire(command.lower())
    # checked before the key lookup: a missing key gets the same error
    assert c.command(command, "missing", value) == invalid_expire(command.lower())
    assert c.command("TTL", "k") == -1


def test_expire_largest_absolute_values_are_accepted(c):
    c.command("SET", "k", "v")
    assert c.command("EXPIREAT", "k", "9223372036854775") == 1
    assert c.command("EXPIRETIME", "k") == 9223372036854775
    assert c.command("PEXPIREAT", "k", str(LLONG_MAX)) == 1
    assert c.command("PEXPIRETIME", "k") == LLONG_MAX
    assert c.command("EXISTS", "k") == 1


@pytest.mark.parametrize("command", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
@pytest.mark.parametrize("value", ["abc", "1.5", "", "+10", "010", " 10", "9223372036854775808"])
def test_expire_non_integer(c, command, value):
    c.command("SET", "k", "v")
    assert c.command(command, "k", value) == NOT_INT
    assert c.command(command, "missing", value) == NOT_INT
    assert c.command("TTL", "k") == -1


@pytest.mark.parametrize("command", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_expire_family_arity(c, command):
    name = command.lower()
    assert c.command(command) == arity(name)
    assert c.command(command, "k") == arity(name)


@pytest.mark.parametrize("options,expected", [
    (("NX", "XX"), NX_CONFLICT),
    (("XX", "NX"), NX_CONFLICT),
    (("nx", "xx"), NX_CONFLICT),
    (("NX", "GT"), NX_CONFLICT),
    (("NX", "LT"), NX_CONFLICT),
    (("GT", "NX"), NX_CONFLICT),
    (("GT", "LT"), GT_LT_CONFLICT),
    (("LT", "GT"), GT_LT_CONFLICT),
    (("XX", "GT", "LT"), GT_LT_CONFLICT),
    (("GT", "LT", "NX"), NX_CONFLICT),           # the NX check comes first
    (("NX", "XX", "GT", "LT"), NX_CONFLICT),
    (("foo",), ("error", "ERR Unsupported option foo")),
    (("FoO",), ("error", "ERR Unsupported option FoO")),        # echoed as typed
    (("NX", "XX", "bar"), ("error", "ERR Unsupported option bar")),  # unknown beats conflicts
    (("bar", "NX", "XX"), ("error", "ERR Unsupported option bar")),
    (("XX", "GT", "LT", "baz"), ("error", "ERR Unsupported option baz")),
])
def test_expire_option_errors(c, options, expected):
    c.command("SET", "k", "v")
    for command in ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"):
        assert c.command(command, "k", "100", *options) == expected
        assert c.command(command, "missing", "100", *options) == expected
    assert c.command("TTL", "k") == -1


def test_expire_options_checked_before_the_value(c):
    c.command("SET", "k", "v")
    assert c.command("EXPIRE", "k", "abc", "NX", "XX") == NX_CONFLICT
    assert c.command("EXPIRE", "k", "abc", "foo") == ("error", "ERR Unsupported option foo")
    assert c.command("EXPIRE", "k", str(LLONG_MAX), "GT", "LT") == GT_LT_CONFLICT


NO_TTL = None
LESS, EQUAL, GREATER = FAR_MS - 1000, FAR_MS, FAR_MS + 1000


# (options, current deadline or NO_TTL, new deadline, reply)
TRUTH_TABLE = [
    ((), NO_TTL, EQUAL, 1),
    ((), FAR_MS, LESS, 1),
    ((), FAR_MS, GREATER, 1),
    (("NX",), NO_TTL, EQUAL, 1),
    (("NX",), FAR_MS, LESS, 0),
    (("NX",), FAR_MS, GREATER, 0),
    (("XX",), NO_TTL, EQUAL, 0),
    (("XX",), FAR_MS, LESS, 1),
    (("XX",), FAR_MS, GREATER, 1),
    # GT: a key without TTL counts as an infinite TTL, so GT never applies to it.
    (("GT",), NO_TTL, EQUAL, 0),
    (("GT",), FAR_MS, LESS, 0),
    (("GT",), FAR_MS, EQUAL, 0),
    (("GT",), FAR_MS, GREATER, 1),
    # LT: any deadline is less than "infinite", so LT always applies to a key without TTL.
    (("LT",), NO_TTL, EQUAL, 1),
    (("LT",), FAR_MS, LESS, 1),
    (("LT",), FAR_MS, EQUAL, 0),
    (("LT",), FAR_MS, GREATER, 0),
    (("XX", "GT"), NO_TTL, EQUAL, 0),
    (("XX", "GT"), FAR_MS, LESS, 0),
    (("XX", "GT"), FAR_MS, GREATER, 1),
    (("GT", "XX"), FAR_MS, GREATER, 1),
    (("XX", "LT"), NO_TTL, EQUAL, 0),
    (("XX", "LT"), FAR_MS, LESS, 1),
    (("XX", "LT"), FAR_MS, GREATER, 0),
    (("xx", "lt"), FAR_MS, LESS, 1),
    (("NX", "NX"), NO_TTL, EQUAL, 1),
    (("gT",), FAR_MS, GREATER, 1),
]


@pytest.mark.parametrize("command", ["PEXPIREAT", "EXPIREAT"])
@pytest.mark.parametrize("options,current,new,reply", TRUTH_TABLE)
def test_expire_option_truth_table(c, command, options, current, new, reply):
    c.command("SET", "k", "v")
    if current is not NO_TTL:
        c.command("PEXPIREAT", "k", current)
    value = new if command == "PEXPIREAT" else new // 1000
    assert c.command(command, "k", value, *options) == reply
    if reply == 1:
        expected = new
    else:
        expected = -1 if current is NO_TTL else current
    assert c.command("PEXPIRETIME", "k") == expected


def test_expire_relative_options(c):
    c.command("SET", "k", "v")
    assert c.command("EXPIRE", "k", "10", "XX") == 0
    assert c.command("EXPIRE", "k", "10", "GT") == 0
    assert c.command("TTL", "k") == -1
    assert c.command("EXPIRE", "k", "10", "LT") == 1
    assert c.command("TTL", "k") == 10
    assert c.command("EXPIRE", "k", "20", "NX") == 0
    assert c.command("EXPIRE", "k", "20", "XX") == 1
    assert c.command("TTL", "k") == 20
    assert c.command("EXPIRE", "k", "30", "GT") == 1
    assert c.command("EXPIRE", "k", "10", "GT") == 0
    assert c.command("TTL", "k") == 30
    assert c.command("EXPIRE", "k", "5", "LT") == 1
    assert c.command("EXPIRE", "k", "50", "LT") == 0
    assert c.command("TTL", "k") == 5
    assert c.command("PEXPIRE", "k", "100000", "XX", "GT") == 1
    assert c.command("TTL", "k") == 100
    assert c.command("PEXPIRE", "k", "200000", "NX") == 0
    assert c.command("TTL", "k") == 100


def test_expire_options_in_the_past(c):
    # GT on a key without TTL never applies, not even with a past deadline: the key survives.
    c.command("SET", "k", "v")
    assert c.command("EXPIRE", "k", "0", "GT") == 0
    assert c.command("EXPIRE", "k", "-5", "GT") == 0
    assert c.command("EXPIRE", "k", "-5", "XX") == 0
    assert c.command("EXISTS", "k") == 1
    # LT on a key without TTL applies: the past deadline deletes it.
    assert c.command("EXPIRE", "k", "-1", "LT") == 1
    assert c.command("EXISTS", "k") == 0
    c.command("SET", "k", "v")
    assert c.command("EXPIREAT", "k", "1", "NX") == 1
    assert c.command("EXISTS", "k") == 0
    # NX on a key with a TTL does not apply, even to delete it.
    c.command("SET", "k", "v", "EX", "100")
    assert c.command("PEXPIRE", "k", "-1", "NX") == 0
    assert c.command("EXISTS", "k") == 1
    assert c.command("PEXPIRE", "k", "-1", "GT") == 0
    assert c.command("EXISTS", "k") == 1
    assert c.command("PEXPIRE", "k", "-1", "XX", "LT") == 1
    assert c.command("EXISTS", "k") == 0


# ---------------------------------------------------------------------------
# TTL / PTTL / EXPIRETIME / PEXPIRETIME / PERSIST
# ---------------------------------------------------------------------------

def test_ttl_missing_and_persistent(c):
    assert c.command("TTL", "missing") == -2
    assert c.command("PTTL", "missing") == -2
    assert c.command("EXPIRETIME", "missing") == -2
    assert c.command("PEXPIRETIME", "missing") == -2
    c.command("SET", "k", "v")
    assert c.command("TTL", "k") == -1
    assert c.command("PTTL", "k") == -1
    assert c.command("EXPIRETIME", "k") == -1
    assert c.command("PEXPIRETIME", "k") == -1


def test_ttl_rounds_to_the_nearest_second(c):
    c.command("SET", "k", "v")
    # TTL = (PTTL + 500) / 1000, integer division: 1900 ms -> 2, 1100 ms -> 1
    c.command("PEXPIRE", "k", "1900")
    assert c.command("TTL", "k") == 2
    c.command("PEXPIRE", "k", "1100")
    assert c.command("TTL", "k") == 1
    c.command("PEXPIRE", "k", "2900")
    assert c.command("TTL", "k") == 3
    c.command("PEXPIRE", "k", "300")
    assert c.command("TTL", "k") == 0


def test_expiretime_rounds_half_up(c):
    c.command("SET", "k", "v")
    for ms, seconds in [(123, FAR_S), (499, FAR_S), (500, FAR_S + 1), (999, FAR_S + 1), (0, FAR_S)]:
        assert c.command("PEXPIREAT", "k", FAR_MS + ms) == 1
        assert c.command("EXPIRETIME", "k") == seconds
        assert c.command("PEXPIRETIME", "k") == FAR_MS + ms


def test_persist(c):
    assert c.command("PERSIST", "missing") == 0
    c.command("SET", "k", "v")
    assert c.command("PERSIST", "k") == 0
    c.command("EXPIRE", "k", "100")
    assert c.command("PERSIST", "k") == 1
    assert c.command("TTL", "k") == -1
    assert c.command("PERSIST", "k") == 0
    assert c.command("GET", "k") == b"v"


@pytest.mark.parametrize("command", ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "PERSIST"])
def test_single_key_commands_arity(c, command):
    assert c.command(command) == arity(command.lower())
    assert c.command(command, "a", "b") == arity(command.lower())


# ---------------------------------------------------------------------------
# Which commands keep, replace or clear a TTL
# ---------------------------------------------------------------------------

def test_overwriting_commands_clear_ttl(c):
    for args in [("GETSET", "k", "x"), ("MSET", "k", "x"), ("SET", "k", "x")]:
        c.command("SET", "k", "v", "PXAT", FAR_MS)
        c.command(*args)
        assert c.command("TTL", "k") == -1, args


def test_modifying_commands_keep_ttl(c):
    for args, value in [(("APPEND", "k", "x"), b"1x"), (("SETRANGE", "k", "0", "9"), b"9"),
                        (("INCR", "k"), b"2"), (("DECRBY", "k", "3"), b"-2"),
                        (("INCRBYFLOAT", "k", "0.5"), b"1.5")]:
        c.command("SET", "k", "1", "PXAT", FAR_MS)
        c.command(*args)
        assert c.command("GET", "k") == value, args
        assert c.command("PEXPIRETIME", "k") == FAR_MS, args


def test_rename_copy_move_carry_ttl(c):
    c.command("SET", "k", "v", "PXAT", FAR_MS)
    assert c.command("COPY", "k", "k2") == 1
    assert c.command("PEXPIRETIME", "k2") == FAR_MS
    assert c.command("RENAME", "k", "k3") == "OK"
    assert c.command("PEXPIRETIME", "k3") == FAR_MS
    # RENAME onto a key with a TTL: the destination gets the source's (absent) TTL
    c.command("SET", "p", "v")
    assert c.command("RENAME", "p", "k3") == "OK"
    assert c.command("TTL", "k3") == -1


# ---------------------------------------------------------------------------
# Keys actually expire (the only tests that sleep)
# ---------------------------------------------------------------------------

def test_ex_1_key_is_gone_after_1_1_seconds(c):
    assert c.command("SET", "k", "v", "EX", "1") == "OK"
    assert c.command("TTL", "k") == 1
    assert c.command("GET", "k") == b"v"
    time.sleep(1.1)
    assert c.command("GET", "k") is None
    assert c.command("EXISTS", "k") == 0
    assert c.command("TTL", "k") == -2
    assert c.command("PTTL", "k") == -2


def test_expired_keys_are_invisible(c):
    c.command("SET", "a", "1", "PX", "200")
    c.command("SET", "b", "2", "PX", "200")
    c.command("SET", "n", "5", "PX", "200")
    c.command("SET", "s", "hello", "PX", "200")
    c.command("SET", "g", "old", "PX", "200")
    c.command("SET", "x", "keep")
    c.command("PEXPIRE", "x2", "200")          # missing: no effect
    c.command("SET", "p", "v")
    assert c.command("PEXPIRE", "p", "200") == 1
    assert c.command("EXISTS", "a", "b", "p", "x") == 4
    time.sleep(0.3)
    assert c.command("EXISTS", "a", "b", "p", "x") == 1
    assert c.command("GET", "a") is None
    assert c.command("MGET", "a", "b", "x") == [None, None, b"keep"]
    assert c.command("TTL", "a") == -2
    assert c.command("PTTL", "p") == -2
    assert c.command("EXPIRETIME", "b") == -2
    assert c.command("STRLEN", "s") == 0
    assert c.command("GETRANGE", "s", "0", "-1") == b""
    assert c.command("SET", "g", "new", "GET") is None
    assert c.command("EXPIRE", "b", "100") == 0
    assert c.command("PERSIST", "b") == 0
    assert c.command("SETNX", "a", "fresh") == 1
    assert c.command("GET", "a") == b"fresh"
    assert c.command("TTL", "a") == -1
    assert c.command("INCR", "n") == 1          # starts from an absent key
    assert c.command("TTL", "n") == -1
    assert c.command("APPEND", "s", "x") == 1
    assert sorted(c.command("KEYS", "*")) == [b"a", b"g", b"n", b"s", b"x"]
