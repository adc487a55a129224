"""Hash commands, pinned to Redis 7.0.15's exact replies."""
from conftest import NOT_FLOAT, NOT_INT, arity


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
