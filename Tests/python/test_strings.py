"""String commands, pinned to Redis 7.0.15's exact replies.

MGET, MSET, MSETNX, GETSET, GETDEL, APPEND, STRLEN, GETRANGE/SUBSTR, SETRANGE,
INCR/DECR/INCRBY/DECRBY and INCRBYFLOAT, including wrong arity for each.
Error texts are compared in full through a raw RESP connection.
"""
import pytest

from conftest import NOT_INT, arity

LLONG_MAX = 9223372036854775807
LLONG_MIN = -9223372036854775808

OVERFLOW = ("error", "ERR increment or decrement would overflow")
NOT_FLOAT = ("error", "ERR value is not a valid float")
NAN_INF = ("error", "ERR increment would produce NaN or Infinity")
OFFSET_RANGE = ("error", "ERR offset is out of range")
TOO_BIG = ("error", "ERR string exceeds maximum allowed size (proto-max-bulk-len)")

# Not an integer for Redis's strict parser: spaces, leading zeros, '+', "-0",
# decimals, exponents, hex, empty, and anything outside int64.
BAD_INTEGERS = ["abc", "", " 1", "1 ", "  ", "01", "+1", "-0", "1.0", "1.5", "1e3", "0x10",
                "9223372036854775808", "-9223372036854775809", "123456789012345678901",
                "00000000000000000000000000000000000001"]


@pytest.mark.parametrize("args", [
    ("GET",), ("GET", "a", "b"),
    ("MGET",),
    ("MSET",), ("MSET", "a"), ("MSET", "a", "1", "b"),
    ("MSETNX",), ("MSETNX", "a"), ("MSETNX", "a", "1", "b"),
    ("GETSET",), ("GETSET", "a"), ("GETSET", "a", "1", "2"),
    ("GETDEL",), ("GETDEL", "a", "b"),
    ("APPEND",), ("APPEND", "a"), ("APPEND", "a", "b", "c"),
    ("STRLEN",), ("STRLEN", "a", "b"),
    ("GETRANGE",), ("GETRANGE", "a"), ("GETRANGE", "a", "0"), ("GETRANGE", "a", "0", "1", "2"),
    ("SUBSTR", "a", "0"),
    ("SETRANGE",), ("SETRANGE", "a"), ("SETRANGE", "a", "1"), ("SETRANGE", "a", "1", "x", "y"),
    ("INCR",), ("INCR", "a", "b"),
    ("DECR",), ("DECR", "a", "b"),
    ("INCRBY",), ("INCRBY", "a"), ("INCRBY", "a", "1", "2"),
    ("DECRBY",), ("DECRBY", "a"), ("DECRBY", "a", "1", "2"),
    ("INCRBYFLOAT",), ("INCRBYFLOAT", "a"), ("INCRBYFLOAT", "a", "1", "2"),
])
def test_wrong_arity(c, args):
    # The name in the message is the lower-case command name, whatever case was sent.
    assert c.command(*args) == arity(args[0].lower())
    assert c.command(args[0].lower(), *args[1:]) == arity(args[0].lower())
    assert c.command("DBSIZE") == 0


# ---------------------------------------------------------------------------
# SET NX, XX and GET (SET's expiry options: test_expiry.py)
# ---------------------------------------------------------------------------

def test_set_arity(c):
    assert c.command("SET") == arity("set")
    assert c.command("SET", "k") == arity("set")


def test_set_nx_xx(c):
    assert c.command("SET", "k", "v", "XX") is None
    assert c.command("EXISTS", "k") == 0
    assert c.command("SET", "k", "v", "NX") == "OK"
    assert c.command("SET", "k", "v2", "NX") is None
    assert c.command("GET", "k") == b"v"
    assert c.command("SET", "k", "v3", "XX") == "OK"
    assert c.command("GET", "k") == b"v3"


def test_set_get_returns_old_value(c):
    assert c.command("SET", "k", "v1", "GET") is None
    assert c.command("GET", "k") == b"v1"
    assert c.command("SET", "k", "v2", "GET") == b"v1"
    assert c.command("GET", "k") == b"v2"


def test_set_nx_get_allowed_since_7_0(c):
    # NX together with GET is allowed since Redis 7.0 (an error in 6.2).
    assert c.command("SET", "k", "v1", "NX", "GET") is None      # missing: set, old value nil
    assert c.command("GET", "k") == b"v1"
    assert c.command("SET", "k", "v2", "GET", "NX") == b"v1"     # exists: not set, old value returned
    assert c.command("GET", "k") == b"v1"


def test_set_xx_get(c):
    assert c.command("SET", "k", "v1", "XX", "GET") is None      # missing: not set
    assert c.command("EXISTS", "k") == 0
    c.command("SET", "k", "v1")
    assert c.command("SET", "k", "v2", "XX", "GET") == b"v1"
    assert c.command("GET", "k") == b"v2"


# ---------------------------------------------------------------------------
# MGET / MSET / MSETNX
# ---------------------------------------------------------------------------

def test_mget(c):
    assert c.command("MGET", "a") == [None]
    c.command("SET", "a", "1")
    c.command("SET", "c", "3")
    assert c.command("MGET", "a", "b", "c") == [b"1", None, b"3"]
    assert c.command("MGET", "c", "c", "a") == [b"3", b"3", b"1"]


def test_mset(c):
    assert c.command("MSET", "a", "1", "b", "2") == "OK"
    assert c.command("MGET", "a", "b") == [b"1", b"2"]
    assert c.command("MSET", "a", "x") == "OK"
    assert c.command("GET", "a") == b"x"
    assert c.command("MSET", "q", "1", "q", "2") == "OK"    # later pair wins
    assert c.command("GET", "q") == b"2"
    assert c.command("DBSIZE") == 3


def test_mset_binary_and_empty_values(c):
    assert c.command("MSET", "e", "", "bin", b"\x00\xff\r\n") == "OK"
    assert c.command("MGET", "e", "bin") == [b"", b"\x00\xff\r\n"]
    assert c.command("STRLEN", "bin") == 4


def test_msetnx(c):
    assert c.command("MSETNX", "x", "1", "y", "2") == 1
    assert c.command("MGET", "x", "y") == [b"1", b"2"]
    # any existing key: nothing is set
    assert c.command("MSETNX", "z", "1", "x", "9") == 0
    assert c.command("EXISTS", "z") == 0
    assert c.command("GET", "x") == b"1"
    # a key repeated in one call is fine; the later value wins
    assert c.command("MSETNX", "p", "1", "p", "2") == 1
    assert c.command("GET", "p") == b"2"


# ---------------------------------------------------------------------------
# GETSET / GETDEL / APPEND / STRLEN
# ---------------------------------------------------------------------------

def test_getset(c):
    assert c.command("GETSET", "k", "v1") is None
    assert c.command("GET", "k") == b"v1"
    assert c.command("GETSET", "k", "v2") == b"v1"
    assert c.command("GET", "k") == b"v2"


def test_getdel(c):
    assert c.command("GETDEL", "k") is None
    c.command("SET", "k", "v", "EX", "100")
    assert c.command("GETDEL", "k") == b"v"
    assert c.command("EXISTS", "k") == 0
    assert c.command("GETDEL", "k") is None


def test_append(c):
    assert c.command("APPEND", "k", "hello") == 5
    assert c.command("APPEND", "k", " world") == 11
    assert c.command("GET", "k") == b"hello world"
    assert c.command("APPEND", "k", "") == 11
    assert c.command("APPEND", "n", "") == 0
    assert c.command("EXISTS", "n") == 1           # created, empty
    assert c.command("GET", "n") == b""
    c.command("SET", "num", "12")
    assert c.command("APPEND", "num", "3") == 3
    assert c.command("INCR", "num") == 124


def test_strlen(c):
    assert c.command("STRLEN", "missing") == 0
    c.command("SET", "k", "hello world")
    assert c.command("STRLEN", "k") == 11
    c.command("SET", "e", "")
    assert c.command("STRLEN", "e") == 0
    c.command("SET", "u", "h\xe9llo")           # UTF-8: length in bytes
    assert c.command("STRLEN", "u") == 6
    c.command("SET", "i", "-12345")
    assert c.command("STRLEN", "i") == 6


# ---------------------------------------------------------------------------
# GETRANGE / SUBSTR
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("start,end,expected", [
    (0, 4, b"Hello"),
    (-5, -1, b"World"),
    (0, -1, b"Hello World"),
    (6, 6, b"W"),
    (10, 10, b"d"),
    (11, 11, b""),
    (-100, -1, b"Hello World"),     # start clamped to 0
    (0, 100, b"Hello World"),       # end clamped to the last byte
    (5, 2, b""),                    # start > end
    (-1, -5, b""),
    (-1, 0, b""),
    (20, 30, b""),                  # start past the end
    # An end more negative than -len is clamped to 0, so the first byte is
    # returned. Redis 7.0-7.x behaviour; a change to return "" was merged and
    # then reverted (redis#12272), so keep this.
    (0, -100, b"H"),
    (-100, -100, b"H"),
    (-100, -99, b"H"),
    (1, -100, b""),
    (0, LLONG_MAX, b"Hello World"),
    (LLONG_MIN, -1, b"Hello World"),
])
def test_getrange(c, start, end, expected):
    c.command("SET", "s", "Hello World")
    assert c.command("GETRANGE", "s", start, end) == expected
    assert c.command("SUBSTR", "s", start, end) == expected


def test_getrange_missing_and_empty(c):
    assert c.command("GETRANGE", "missing", "0", "-1") == b""
    assert c.command("GETRANGE", "missing", "0", "10") == b""
    c.command("SET", "e", "")
    assert c.command("GETRANGE", "e", "0", "-1") == b""
    assert c.command("GETRANGE", "e", "0", "0") == b""
    assert c.command("GETRANGE", "e", "-1", "-1") == b""


def test_getrange_on_integer_value(c):
    c.command("SET", "n", "12345")
    assert c.command("GETRANGE", "n", "1", "2") == b"23"
    assert c.command("GETRANGE", "n", "-2", "-1") == b"45"


@pytest.mark.parametrize("start,end", [("a", "1"), ("0", "b"), ("0", "9223372036854775808"),
                                       ("1.5", "2"), ("0", ""), ("-0", "2"), (" 0", "1")])
def test_getrange_non_integer(c, start, end):
    c.command("SET", "s", "Hello")
    assert c.command("GETRANGE", "s", start, end) == NOT_INT
    assert c.command("GETRANGE", "missing", start, end) == NOT_INT


# ---------------------------------------------------------------------------
# SETRANGE
# ---------------------------------------------------------------------------

def test_setrange_pads_missing_key_with_zero_bytes(c):
    assert c.command("SETRANGE", "k", "5", "abc") == 8
    assert c.command("GET", "k") == b"\x00\x00\x00\x00\x00abc"
    assert c.command("STRLEN", "k") == 8
    assert c.command("SETRANGE", "k", "0", "XY") == 8
    assert c.command("GET", "k") == b"XY\x00\x00\x00abc"
    assert c.command("SETRANGE", "k", "8", "Z") == 9          # appends at the end
    assert c.command("GET", "k") == b"XY\x00\x00\x00abcZ"
    assert c.command("SETRANGE", "k", "12", "!") == 13        # pads past the end
    assert c.command("GET", "k") == b"XY\x00\x00\x00abcZ\x00\x00\x00!"


def test_setrange_overwrites_and_extends(c):
    c.command("SET", "v", "hello")
    assert c.command("SETRANGE", "v", "4", "xx") == 6
    assert c.command("GET", "v") == b"hellxx"
    c.command("SET", "n", "1234")
    assert c.command("SETRANGE", "n", "1", "9") == 4
    assert c.command("GET", "n") == b"1934"
    assert c.command("INCR", "n") == 1935


def test_setrange_empty_value(c):
    # On a missing key: reply 0 and create nothing, whatever the offset.
    assert c.command("SETRANGE", "missing", "0", "") == 0
    assert c.command("SETRANGE", "missing", "10", "") == 0
    assert c.command("SETRANGE", "missing", "536870912", "") == 0     # even past the size limit
    assert c.command("EXISTS", "missing") == 0
    # On an existing key: reply its length, unchanged.
    c.command("SET", "k", "hello")
    assert c.command("SETRANGE", "k", "1", "") == 5
    assert c.command("SETRANGE", "k", "100", "") == 5
    assert c.command("SETRANGE", "k", "536870912", "") == 5
    assert c.command("GET", "k") == b"hello"


def test_setrange_negative_offset(c):
    c.command("SET", "k", "hello")
    assert c.command("SETRANGE", "k", "-1", "x") == OFFSET_RANGE
    assert c.command("SETRANGE", "missing", "-1", "x") == OFFSET_RANGE
    assert c.command("SETRANGE", "missing", "-1", "") == OFFSET_RANGE     # checked before the empty-value case
    assert c.command("SETRANGE", "k", str(LLONG_MIN), "x") == OFFSET_RANGE
    assert c.command("GET", "k") == b"hello"
    assert c.command("EXISTS", "missing") == 0


def test_setrange_non_integer_offset(c):
    c.command("SET", "k", "hello")
    for offset in ["abc", "1.5", "", "+1", "01", "9223372036854775808"]:
        assert c.command("SETRANGE", "k", offset, "x") == NOT_INT, offset
    assert c.command("GET", "k") == b"hello"


def test_setrange_past_512mb_is_rejected(c):
    # offset + len(value) must not exceed proto-max-bulk-len (512 MB = 536870912 bytes).
    c.command("SET", "k", "hello")
    assert c.command("SETRANGE", "k", "536870912", "x") == TOO_BIG
    assert c.command("SETRANGE", "k", "536870911", "xy") == TOO_BIG
    assert c.command("SETRANGE", "k", str(LLONG_MAX), "x") == TOO_BIG
    assert c.command("SETRANGE", "missing", "536870912", "x") == TOO_BIG
    assert c.command("GET", "k") == b"hello"
    assert c.command("EXISTS", "missing") == 0


# ---------------------------------------------------------------------------
# INCR / DECR / INCRBY / DECRBY
# ---------------------------------------------------------------------------

def test_incr_decr_basics(c):
    assert c.command("INCR", "n") == 1
    assert c.command("INCR", "n") == 2
    assert c.command("DECR", "n") == 1
    assert c.command("DECR", "m") == -1
    assert c.command("INCRBY", "n", "10") == 11
    assert c.command("INCRBY", "n", "-20") == -9
    assert c.command("DECRBY", "n", "5") == -14
    assert c.command("DECRBY", "n", "-5") == -9
    assert c.command("INCRBY", "n", "0") == -9
    assert c.command("GET", "n") == b"-9"
    assert c.command("INCRBY", "fresh", "-7") == -7
    assert c.command("DECRBY", "fresh2", "7") == -7


def test_incr_stores_canonical_decimal(c):
    c.command("SET", "n", "-1")
    assert c.command("INCR", "n") == 0
    assert c.command("GET", "n") == b"0"
    assert c.command("STRLEN", "n") == 1
    assert c.command("APPEND", "n", "7") == 2
    assert c.command("INCR", "n") == NOT_INT            # "07": leading zero
    c.command("SET", "n", "9")
    assert c.command("APPEND", "n", "9") == 2
    assert c.command("INCR", "n") == 100


@pytest.mark.parametrize("value", BAD_INTEGERS)
def test_incr_on_non_integer_value(c, value):
    c.command("SET", "s", value)
    for args in [("INCR", "s"), ("DECR", "s"), ("INCRBY", "s", "1"), ("DECRBY", "s", "1")]:
        assert c.command(*args) == NOT_INT, args
    assert c.command("GET", "s") == value.encode()


@pytest.mark.parametrize("increment", BAD_INTEGERS)
def test_incrby_non_integer_increment(c, increment):
    c.command("SET", "n", "5")
    assert c.command("INCRBY", "n", increment) == NOT_INT
    assert c.command("DECRBY", "n", increment) == NOT_INT
    assert c.command("INCRBY", "missing", increment) == NOT_INT
    assert c.command("GET", "n") == b"5"
    assert c.command("EXISTS", "missing") == 0


def test_int64_limits(c):
    c.command("SET", "n", str(LLONG_MAX))
    assert c.command("INCRBY", "n", "0") == LLONG_MAX
    assert c.command("INCR", "n") == OVERFLOW
    assert c.command("DECR", "n") == LLONG_MAX - 1
    c.command("SET", "n", str(LLONG_MAX - 1))
    assert c.command("INCRBY", "n", "1") == LLONG_MAX
    assert c.command("INCRBY", "n", "1") == OVERFLOW
    assert c.command("GET", "n") == str(LLONG_MAX).encode()
    c.command("SET", "m", str(LLONG_MIN))
    assert c.command("DECR", "m") == OVERFLOW
    assert c.command("INCR", "m") == LLONG_MIN + 1
    assert c.command("INCRBY", "m", "-1") == LLONG_MIN
    assert c.command("DECRBY", "m", "1") == OVERFLOW
    assert c.command("GET", "m") == str(LLONG_MIN).encode()


def test_incrby_overflow(c):
    c.command("SET", "n", "5")
    assert c.command("INCRBY", "n", str(LLONG_MAX)) == OVERFLOW
    c.command("SET", "n", "-5")
    assert c.command("DECRBY", "n", str(LLONG_MAX)) == OVERFLOW
    assert c.command("INCRBY", "n", str(LLONG_MIN)) == OVERFLOW
    assert c.command("GET", "n") == b"-5"
    assert c.command("INCRBY", "z", str(LLONG_MIN)) == LLONG_MIN
    assert c.command("DECRBY", "y", str(LLONG_MAX)) == -LLONG_MAX


def test_decrby_llong_min_has_its_own_error(c):
    # Negating LLONG_MIN is rejected before the key is even looked at.
    DECR_OVERFLOW = ("error", "ERR decrement would overflow")
    for value in ["0", "100", "-1", "abc"]:
        c.command("SET", "n", value)
        assert c.command("DECRBY", "n", str(LLONG_MIN)) == DECR_OVERFLOW, value
        assert c.command("GET", "n") == value.encode()
    assert c.command("DECRBY", "missing", str(LLONG_MIN)) == DECR_OVERFLOW
    assert c.command("EXISTS", "missing") == 0


# ---------------------------------------------------------------------------
# INCRBYFLOAT
#
# Redis computes in C `long double` (80-bit x87 extended precision on x86-64)
# and prints with "%.17Lf", then strips trailing zeros and a trailing '.',
# and turns "-0" into "0". No exponent notation is ever produced.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("steps", [
    # (initial value or None, [(increment, reply), ...])
    ("10.50", [("0.1", b"10.6"), ("-5", b"5.6")]),              # documented example
    ("5.0e3", [("2.0e2", b"5200")]),                             # documented example
    (None, [("10.5", b"10.5"), ("0.1", b"10.6"), ("-5", b"5.6")]),
    (None, [("5.0e3", b"5000"), ("2.0e2", b"5200"), ("3.0e3", b"8200")]),
    ("3.0e3", [("3.0e3", b"6000")]),
    ("1.5", [("1.5", b"3")]),
    (None, [("1", b"1"), ("1.0", b"2"), ("0", b"2")]),
    (None, [("0.0", b"0"), ("-0.0", b"0")]),
    (None, [("-1.5", b"-1.5"), ("1.5", b"0")]),
    (None, [("0.1", b"0.1"), ("0.2", b"0.3"), ("-0.3", b"0")]),  # long double + 17 digits hide the binary error
    (None, [("1e20", b"100000000000000000000")]),
    (None, [("100", b"100"), ("1e17", b"100000000000000100")]),
    (None, [("1e-5", b"0.00001")]),
    (None, [("1.5e-10", b"0.00000000015")]),
    (None, [("1e-17", b"0.00000000000000001"), ("1e-18", b"0.00000000000000001")]),
    (None, [("-1e-20", b"0")]),                                  # "-0.00000000000000000" -> "0"
    (None, [("1.23456789012345678901234567890", b"1.23456789012345679")]),
    ("7", [("0.25", b"7.25")]),
    ("-3", [("1", b"-2")]),
])
def test_incrbyfloat_formatting(c, steps):
    initial, sequence = steps
    if initial is not None:
        c.command("SET", "f", initial)
    for increment, reply in sequence:
        assert c.command("INCRBYFLOAT", "f", increment) == reply, increment
        assert c.command("GET", "f") == reply       # the formatted text is what is stored


@pytest.mark.parametrize("increment,reply", [
    (".5", b"0.5"), ("5.", b"5"), ("+2", b"2"), ("-.5", b"-0.5"), ("1E2", b"100"),
    ("0x10", b"16"),              # strtold accepts hexadecimal
    ("007", b"7"),
])
def test_incrbyfloat_accepted_number_syntax(c, increment, reply):
    assert c.command("INCRBYFLOAT", "f", increment) == reply


@pytest.mark.parametrize("value,reply", [
    ("1e2", b"101"), ("0x10", b"17"), (" 2", None), ("1.5", b"2.5"), ("+3", b"4"), ("-0", b"1"),
])
def test_incrbyfloat_parses_stored_value(c, value, reply):
    c.command("SET", "f", value)
    result = c.command("INCRBYFLOAT", "f", "1")
    assert result == (NOT_FLOAT if reply is None else reply)


@pytest.mark.parametrize("increment", ["abc", "", " 1", "1 ", "1e", "1_0", "nan", "NaN", "1.5.5", "--1"])
def test_incrbyfloat_invalid_increment(c, increment):
    c.command("SET", "f", "1")
    assert c.command("INCRBYFLOAT", "f", increment) == NOT_FLOAT
    assert c.command("INCRBYFLOAT", "missing", increment) == NOT_FLOAT
    assert c.command("GET", "f") == b"1"
    assert c.command("EXISTS", "missing") == 0


@pytest.mark.parametrize("value", ["abc", " 1", "1 ", "nan", "1,5"])
def test_incrbyfloat_on_invalid_value(c, value):
    c.command("SET", "f", value)
    assert c.command("INCRBYFLOAT", "f", "1") == NOT_FLOAT
    assert c.command("GET", "f") == value.encode()


@pytest.mark.parametrize("value,increment", [
    (None, "inf"), (None, "+inf"), (None, "-inf"), (None, "Infinity"),
    ("inf", "1"), ("-inf", "1"), ("inf", "-inf"),
])
def test_incrbyfloat_nan_or_infinity(c, value, increment):
    if value is not None:
        c.command("SET", "f", value)
    assert c.command("INCRBYFLOAT", "f", increment) == NAN_INF
    assert c.command("GET", "f") == (None if value is None else value.encode())


def test_incrbyfloat_on_integer_then_incr(c):
    c.command("SET", "n", "10")
    assert c.command("INCRBYFLOAT", "n", "5") == b"15"
    assert c.command("INCR", "n") == 16                 # still a valid integer
    assert c.command("INCRBYFLOAT", "n", "0.5") == b"16.5"
    assert c.command("INCR", "n") == NOT_INT


# --- bits and LCS (Redis 7.0 texts) ---------------------------------------------

def test_setbit_getbit_bitcount(r):
    c = r
    assert c.setbit("b:k", 7, 1) == 0
    assert c.get("b:k") == b"\x01"
    assert c.setbit("b:k", 7, 0) == 1
    assert c.setbit("b:k", 100, 1) == 0
    assert c.strlen("b:k") == 13
    assert c.getbit("b:k", 100) == 1
    assert c.getbit("b:k", 101) == 0
    assert c.getbit("b:missing", 5) == 0
    assert c.bitcount("b:k") == 1
    c.set("b:s", "foobar")
    assert c.bitcount("b:s") == 26
    assert c.bitcount("b:s", 1, 1) == 6
    assert c.bitcount("b:s", 5, 30, "bit") == 17
    assert c.bitcount("b:s", -2, -1) == 7


def test_bit_errors(server, r):
    raw = server.raw()
    assert raw.command("SETBIT", "b:e", "-1", "1") == ("error", "ERR bit offset is not an integer or out of range")
    assert raw.command("SETBIT", "b:e", "4294967296", "1") == ("error", "ERR bit offset is not an integer or out of range")
    assert raw.command("SETBIT", "b:e", "0", "2") == ("error", "ERR bit is not an integer or out of range")
    assert raw.command("GETBIT", "b:e", "x") == ("error", "ERR bit offset is not an integer or out of range")
    assert raw.command("BITCOUNT", "b:e", "0") == 0  # a missing key answers 0 first
    assert raw.command("SET", "b:e", "x") == "OK"
    assert raw.command("BITCOUNT", "b:e", "0") == ("error", "ERR syntax error")
    assert raw.command("BITCOUNT", "b:e", "0", "1", "nibble") == ("error", "ERR syntax error")


def test_lcs(server, r):
    r.set("l:a", "ohmytext")
    r.set("l:b", "mynewtext")
    raw = server.raw()
    assert raw.command("LCS", "l:a", "l:b") == b"mytext"
    assert raw.command("LCS", "l:a", "l:b", "LEN") == 6
    assert raw.command("LCS", "l:a", "l:b", "IDX") == [b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
    assert raw.command("LCS", "l:a", "l:b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN") == \
        [b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    assert raw.command("LCS", "l:a", "l:b", "LEN", "IDX") == \
        ("error", "ERR If you want both the length and indexes, please just use IDX.")
    assert raw.command("LCS", "l:a", "l:missing") == b""
