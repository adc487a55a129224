"""kvcache-server's own features, over the wire: capacities and eviction
policies, run-time CONFIG SET of them, the INFO fields that report them,
expiry across restarts, the whole-entry KVCACHE.PUT / KVCACHE.GET commands,
named caches with MOVE / COPY / SWAPDB, DEBUG, unavailable caches, and cache
names.

Replies are compared in full through raw RESP connections. Sizes are content
bytes: len(key) + len(value) + len(metadata). Most tests use caches of 2kb
(2048 bytes) filled with 104-byte entries (a 4-byte key, a 100-byte value),
so 19 entries (1976 bytes) fit and the 20th forces an eviction.
"""
import os
import time

import pytest

pytestmark = pytest.mark.kvcache_only

CAPACITY = 2048                 # "2kb"
VALUE = "v" * 100
ENTRY = 4 + len(VALUE)          # key "kNN_" is 4 bytes: "k" + 2 digits + "_"
FIT = CAPACITY // ENTRY         # 19

SYNTAX = ("error", "ERR syntax error")
NOT_INT = ("error", "ERR value is not an integer or out of range")
OOM = ("error", "OOM command not allowed when used memory > 'maxmemory'.")
DEBUG_REFUSED = ("error", "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
                          "you can run it from a local connection, otherwise you need to set this option in the "
                          "configuration file, and then restart the server.")


def key(i):
    return f"k{i:02d}_"


def too_large(size, capacity=CAPACITY):
    return ("error", f"ERR entry of {size} bytes is larger than the cache capacity of {capacity} bytes")


def arity(command):
    return ("error", f"ERR wrong number of arguments for '{command}' command")


def fill(c, indices):
    for i in indices:
        assert c.command("SET", key(i), VALUE) == "OK"


def present(c, indices):
    """The indices whose key exists in the connection's selected cache."""
    return [i for i in indices if c.command("EXISTS", key(i)) == 1]


def info_section(c, section):
    text = c.command("INFO", section)
    assert isinstance(text, bytes), text
    fields = {}
    for line in text.decode().split("\r\n"):
        if line and not line.startswith("#"):
            name, _, value = line.partition(":")
            fields[name] = value
    return fields


def keyspace(c, cache="db0"):
    """The INFO keyspace line of `cache` as a dict (ints where numeric), or None."""
    line = info_section(c, "keyspace").get(cache)
    if line is None:
        return None
    out = {}
    for item in line.split(","):
        name, _, value = item.partition("=")
        out[name] = int(value) if value.lstrip("-").isdigit() else value
    return out


def stat(c, name):
    return int(info_section(c, "stats")[name])


def poll(predicate, timeout=3.0, interval=0.02):
    """Waits (bounded) for predicate() to be truthy; returns its last value."""
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value or time.time() >= deadline:
            return value
        time.sleep(interval)


@pytest.fixture
def c(server, r):
    """A raw connection to the shared, freshly flushed server."""
    conn = server.raw()
    yield conn
    conn.close()


def raw_in(s, cache):
    conn = s.raw()
    assert conn.command("SELECT", cache) == "OK"
    return conn


# ---------------------------------------------------------------------------
# 1. Eviction policies
# ---------------------------------------------------------------------------

def test_fifo_evicts_oldest_writes_first(fresh_server):
    s = fresh_server(config_text="cache db0 2kb fifo\n")
    c = s.raw()
    fill(c, range(FIT))
    assert keyspace(c) == {"keys": FIT, "expires": 0, "avg_ttl": 0, "bytes": FIT * ENTRY, "capacity": CAPACITY,
                           "policy": "fifo", "evicted": 0, "expired": 0}
    # Reading does not matter to fifo; rewriting a key makes it new.
    assert c.command("GET", key(0)) == VALUE.encode()
    assert c.command("SET", key(1), VALUE) == "OK"
    fill(c, range(FIT, FIT + 5))                           # 5 more: 5 evictions
    ks = keyspace(c)
    assert ks["bytes"] <= CAPACITY
    assert ks == {"keys": FIT, "expires": 0, "avg_ttl": 0, "bytes": FIT * ENTRY, "capacity": CAPACITY,
                  "policy": "fifo", "evicted": 5, "expired": 0}
    # Gone: k00 (oldest, read but not rewritten), then k02..k05; k01 was rewritten.
    assert present(c, range(FIT + 5)) == [1] + list(range(6, FIT + 5))


def test_lru_evicts_least_recently_used_first(fresh_server):
    s = fresh_server(args=["--cache", "lrucache", "2kb", "lru"])
    c = raw_in(s, "lrucache")
    fill(c, range(FIT))
    for i in (0, 1, 2):
        assert c.command("GET", key(i)) == VALUE.encode()
    fill(c, range(FIT, FIT + 5))
    ks = keyspace(c, "lrucache")
    assert ks["bytes"] <= CAPACITY
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (FIT, FIT * ENTRY, CAPACITY, "lru", 5)
    # k03..k07 were the least recently used; the keys read survive.
    assert present(c, range(FIT + 5)) == [0, 1, 2] + list(range(8, FIT + 5))


def test_lru_from_redis_policy_name_and_default_capacity(fresh_server):
    s = fresh_server(config_text="default-capacity 2kb\neviction-policy allkeys-lru\n")
    c = s.raw()
    fill(c, range(FIT))
    assert c.command("GET", key(0)) == VALUE.encode()
    fill(c, range(FIT, FIT + 2))
    ks = keyspace(c)
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (FIT, FIT * ENTRY, CAPACITY, "lru", 2)
    assert present(c, range(FIT + 2)) == [0] + list(range(3, FIT + 2))


def test_volatile_ttl_evicts_soonest_expiry_first_then_oldest(fresh_server):
    s = fresh_server(config_text="cache ttlcache 2kb volatile-ttl\n")
    c = raw_in(s, "ttlcache")
    fill(c, range(5))
    assert c.command("SET", key(5), VALUE, "EX", "1000") == "OK"
    assert c.command("SET", key(6), VALUE, "EX", "500") == "OK"
    assert c.command("SET", key(7), VALUE, "EX", "2000") == "OK"
    fill(c, range(8, FIT))
    assert keyspace(c, "ttlcache")["expires"] == 3
    fill(c, range(FIT, FIT + 4))
    ks = keyspace(c, "ttlcache")
    assert ks["bytes"] <= CAPACITY
    assert (ks["keys"], ks["expires"], ks["bytes"], ks["policy"], ks["evicted"]) == (FIT, 0, FIT * ENTRY, "volatile-ttl", 4)
    # k06 (500 s), k05 (1000 s), k07 (2000 s), then the oldest without expiry, k00.
    assert present(c, range(FIT + 4)) == [1, 2, 3, 4] + list(range(8, FIT + 4))


def test_noeviction_refuses_writes_past_capacity(fresh_server):
    s = fresh_server(config_text="cache db0 2kb noeviction\n")
    c = s.raw()
    fill(c, range(FIT))
    assert c.command("SET", key(FIT), VALUE) == OOM
    assert c.command("KVCACHE.PUT", key(FIT), "*", "", VALUE) == OOM
    # Replacing a key with one of the same size does not grow the cache.
    assert c.command("SET", key(0), "w" * 100) == "OK"
    # Up to exactly the capacity is allowed, one byte more is not.
    room = CAPACITY - FIT * ENTRY - 1
    assert c.command("SET", "x", "y" * room) == "OK"
    assert c.command("SET", "z", "") == OOM
    assert c.command("APPEND", "x", "y") == OOM
    ks = keyspace(c)
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (FIT + 1, CAPACITY, CAPACITY, "noeviction", 0)
    assert present(c, range(FIT + 1)) == list(range(FIT))
    assert c.command("GET", key(0)) == b"w" * 100
    assert c.command("GET", "x") == b"y" * room
    # Deleting makes room again.
    assert c.command("DEL", key(1)) == 1
    assert c.command("SET", key(FIT), VALUE) == "OK"


