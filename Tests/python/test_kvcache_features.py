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

from conftest import NOT_INT, SYNTAX, arity

pytestmark = pytest.mark.kvcache_only

CAPACITY = 2048                 # "2kb"
VALUE = "v" * 100
ENTRY = 4 + len(VALUE)          # key "kNN_" is 4 bytes: "k" + 2 digits + "_"
FIT = CAPACITY // ENTRY         # 19

OOM = ("error", "OOM command not allowed when used memory > 'maxmemory'.")
DEBUG_REFUSED = ("error", "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
                          "you can run it from a local connection, otherwise you need to set this option in the "
                          "configuration file, and then restart the server.")


def key(i):
    return f"k{i:02d}_"


def too_large(size, capacity=CAPACITY):
    return ("error", f"ERR entry of {size} bytes is larger than the cache capacity of {capacity} bytes")


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


# The figures of an INFO caches line the tests below compare whole.
FIGURES = ("keys", "expires", "avg_ttl", "bytes", "capacity", "policy", "evicted", "expired")


def cache_info(c, cache="db0", whole=False):
    """The INFO caches line of `cache` as a dict (ints where numeric), or None;
    only FIGURES unless `whole`."""
    line = info_section(c, "caches").get("cache_" + cache)
    if line is None:
        return None
    out = {}
    for item in line.split(","):
        name, _, value = item.partition("=")
        out[name] = int(value) if value.lstrip("-").isdigit() else value
    return out if whole else {name: out[name] for name in FIGURES}


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
    assert cache_info(c) == {"keys": FIT, "expires": 0, "avg_ttl": 0, "bytes": FIT * ENTRY, "capacity": CAPACITY,
                           "policy": "fifo", "evicted": 0, "expired": 0}
    # Reading does not matter to fifo; rewriting a key makes it new.
    assert c.command("GET", key(0)) == VALUE.encode()
    assert c.command("SET", key(1), VALUE) == "OK"
    fill(c, range(FIT, FIT + 5))                           # 5 more: 5 evictions
    ks = cache_info(c)
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
    ks = cache_info(c, "lrucache")
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
    ks = cache_info(c)
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
    assert cache_info(c, "ttlcache")["expires"] == 3
    fill(c, range(FIT, FIT + 4))
    ks = cache_info(c, "ttlcache")
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
    ks = cache_info(c)
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (FIT + 1, CAPACITY, CAPACITY, "noeviction", 0)
    assert present(c, range(FIT + 1)) == list(range(FIT))
    assert c.command("GET", key(0)) == b"w" * 100
    assert c.command("GET", "x") == b"y" * room
    # Deleting makes room again.
    assert c.command("DEL", key(1)) == 1
    assert c.command("SET", key(FIT), VALUE) == "OK"


@pytest.mark.parametrize("policy", ["fifo", "lru", "volatile-ttl", "noeviction"])
def test_entry_larger_than_capacity_is_refused(fresh_server, policy):
    s = fresh_server(args=["--cache", "db0", "2kb", policy])
    c = s.raw()
    assert c.command("SET", "small", "v") == "OK"
    assert c.command("SET", "big", "x" * 2100) == too_large(2103)
    assert c.command("KVCACHE.PUT", "big", "*", "m" * 2000, "x" * 100) == too_large(2103)
    assert c.command("EXISTS", "big") == 0
    assert c.command("GET", "small") == b"v"
    ks = cache_info(c)
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (1, 6, CAPACITY, policy, 0)


def test_policy_given_as_redis_names(fresh_server):
    s = fresh_server(config_text="cache a 2kb allkeys-lru\ncache b 2kb volatile-ttl\ncache c 2kb noeviction\n"
                                 "default-capacity 1kb\neviction-policy noeviction\n")
    conn = s.raw()
    for cache, capacity, policy in [("a", CAPACITY, "lru"), ("b", CAPACITY, "volatile-ttl"),
                                    ("c", CAPACITY, "noeviction"), ("d", 1024, "noeviction")]:
        assert conn.command("SELECT", cache) == "OK"
        assert conn.command("SET", "k", "v") == "OK"
        ks = cache_info(conn, cache)
        assert (ks["capacity"], ks["policy"]) == (capacity, policy), cache
    assert conn.command("CONFIG", "GET", "cache") == [b"cache", b"a 2048 lru b 2048 volatile-ttl c 2048 noeviction"]
    assert conn.command("CONFIG", "GET", "default-capacity") == [b"default-capacity", b"1024"]
    assert conn.command("CONFIG", "GET", "eviction-policy") == [b"eviction-policy", b"noeviction"]


# ---------------------------------------------------------------------------
# 2. CONFIG SET / GET of capacities and policies
# ---------------------------------------------------------------------------

def test_config_set_cache_takes_effect_and_shrinks(fresh_server):
    s = fresh_server()
    c = s.raw()
    fill(c, range(30))
    ks = cache_info(c)
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"]) == (30, 30 * ENTRY, 0, "fifo")
    assert c.command("CONFIG", "GET", "cache") == [b"cache", b""]

    assert c.command("CONFIG", "SET", "cache", "db0 2kb fifo") == "OK"
    ks = poll(lambda: (lambda k: k if k["bytes"] <= CAPACITY else None)(cache_info(c)))
    assert ks == {"keys": FIT, "expires": 0, "avg_ttl": 0, "bytes": FIT * ENTRY, "capacity": CAPACITY,
                  "policy": "fifo", "evicted": 30 - FIT, "expired": 0}
    assert present(c, range(30)) == list(range(30 - FIT, 30))
    assert c.command("CONFIG", "GET", "cache") == [b"cache", b"db0 2048 fifo"]

    # Without a policy the cache follows eviction-policy; a second cache adds a line.
    assert c.command("CONFIG", "SET", "cache", "db0 1kb") == "OK"
    ks = poll(lambda: (lambda k: k if k["bytes"] <= 1024 else None)(cache_info(c)))
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (9, 9 * ENTRY, 1024, "fifo", 30 - 9)
    assert present(c, range(30)) == list(range(21, 30))
    assert c.command("CONFIG", "SET", "cache", "sessions 1mb lru") == "OK"
    assert c.command("CONFIG", "GET", "cache") == [b"cache", b"db0 1024 sessions 1048576 lru"]
    assert c.command("SELECT", "sessions") == "OK"
    assert c.command("SET", "k", "v") == "OK"
    ks = cache_info(c, "sessions")
    assert (ks["capacity"], ks["policy"]) == (1048576, "lru")

    # Writes are evicted against the new capacity at once.
    assert c.command("SELECT", "0") == "OK"
    fill(c, range(30, 32))
    assert present(c, range(32)) == list(range(23, 32))

    assert c.command("CONFIG", "SET", "cache", "db0") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'cache') - "
                 "usage: cache <name> <size> [fifo|lru|volatile-ttl|noeviction]")
    assert c.command("CONFIG", "SET", "cache", "db0 lots") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'cache') - "
                 "cache size must be a memory value (like 256mb): 'lots'")
    assert c.command("CONFIG", "SET", "cache", "../x 1kb") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'cache') - "
                 "invalid cache name '../x': use 1 to 64 of a-z 0-9 . _ -")
    assert c.command("CONFIG", "GET", "cache") == [b"cache", b"db0 1024 sessions 1048576 lru"]


def test_config_set_default_capacity_and_eviction_policy(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("CONFIG", "GET", "default-capacity") == [b"default-capacity", b"0"]
    assert c.command("CONFIG", "GET", "eviction-policy") == [b"eviction-policy", b"fifo"]
    fill(c, range(15))
    assert c.command("CONFIG", "SET", "default-capacity", "1kb") == "OK"
    assert c.command("CONFIG", "GET", "default-capacity") == [b"default-capacity", b"1024"]
    ks = poll(lambda: (lambda k: k if k["bytes"] <= 1024 else None)(cache_info(c)))
    assert (ks["keys"], ks["bytes"], ks["capacity"], ks["policy"], ks["evicted"]) == (9, 9 * ENTRY, 1024, "fifo", 6)
    assert present(c, range(15)) == list(range(6, 15))

    # To LRU (by its Redis name): the key read now survives the next eviction.
    assert c.command("CONFIG", "SET", "eviction-policy", "allkeys-lru") == "OK"
    assert c.command("CONFIG", "GET", "eviction-policy") == [b"eviction-policy", b"lru"]
    # maxmemory-policy is Redis's server-wide setting, apart from a cache's policy.
    assert c.command("CONFIG", "GET", "maxmemory-policy") == [b"maxmemory-policy", b"noeviction"]
    assert cache_info(c)["policy"] == "lru"
    assert c.command("GET", key(6)) == VALUE.encode()
    fill(c, [15])
    assert present(c, range(16)) == [6] + list(range(8, 16))

    # To noeviction: the next write that would pass capacity is refused.
    assert c.command("CONFIG", "SET", "eviction-policy", "noeviction") == "OK"
    assert c.command("SET", key(16), VALUE) == OOM
    assert present(c, range(17)) == [6] + list(range(8, 16))

    # A cache opened later gets the defaults in force.
    assert c.command("SELECT", "other") == "OK"
    assert c.command("SET", "k", "v") == "OK"
    ks = cache_info(c, "other")
    assert (ks["capacity"], ks["policy"]) == (1024, "noeviction")

    assert c.command("CONFIG", "SET", "eviction-policy", "bogus") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'eviction-policy') - "
                 "unknown eviction policy 'bogus' (use fifo, lru, volatile-ttl or noeviction)")
    assert c.command("CONFIG", "SET", "default-capacity", "lots") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'default-capacity') - "
                 "argument must be a memory value")
    assert c.command("CONFIG", "GET", "eviction-policy") == [b"eviction-policy", b"noeviction"]
    assert c.command("CONFIG", "GET", "default-capacity") == [b"default-capacity", b"1024"]


def test_config_set_immutable_and_unknown_settings(c):
    assert c.command("CONFIG", "SET", "databases", "1234") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")
    assert c.command("CONFIG", "SET", "dir", "/tmp") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set immutable config")
    assert c.command("CONFIG", "SET", "nope", "1") == (
        "error", "ERR Unknown option or number of arguments for CONFIG SET - 'nope'")
    # All or nothing: a good setting before a bad one is not applied.
    before = c.command("CONFIG", "GET", "default-capacity")
    assert c.command("CONFIG", "SET", "default-capacity", "5kb", "databases", "1") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")
    assert c.command("CONFIG", "GET", "default-capacity") == before


# ---------------------------------------------------------------------------
# 3. INFO
# ---------------------------------------------------------------------------

def test_info_counts_expired_and_evicted_keys_and_reports_ttls(fresh_server):
    s = fresh_server(config_text="cache db0 2kb fifo\n")
    c = s.raw()
    assert stat(c, "expired_keys") == 0
    assert stat(c, "evicted_keys") == 0
    assert c.command("SET", "a", "v", "EX", "100") == "OK"
    assert c.command("SET", "b", "v", "EX", "200") == "OK"
    assert c.command("SET", "c", "v") == "OK"
    ks = cache_info(c)
    assert (ks["keys"], ks["expires"], ks["bytes"]) == (3, 2, 6)
    assert 148000 <= ks["avg_ttl"] <= 150000, ks

    assert c.command("SET", "gone", "v", "PX", "50") == "OK"
    assert poll(lambda: stat(c, "expired_keys") == 1)
    ks = cache_info(c)
    assert (ks["keys"], ks["expires"], ks["expired"]) == (3, 2, 1)
    assert c.command("GET", "gone") is None

    # 20 more entries of 104 bytes: a, b, c (2 bytes each, oldest) and k00 go.
    fill(c, range(FIT + 1))
    assert stat(c, "evicted_keys") == 4
    assert stat(c, "expired_keys") == 1
    ks = cache_info(c)
    assert (ks["keys"], ks["expires"], ks["avg_ttl"], ks["bytes"], ks["evicted"]) == (FIT, 0, 0, FIT * ENTRY, 4)


# ---------------------------------------------------------------------------
# 4. Expiry across restarts
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["running", "restart", pytest.param("kill9", marks=pytest.mark.commit_durability)])
def test_expiry_survives_restart(fresh_server, how):
    s = fresh_server()
    c = s.raw()
    sent = time.time()
    assert c.command("SET", "short", "v", "EX", "2") == "OK"
    t0 = time.time()                  # the key expires by t0 + 2 s
    assert c.command("SET", "long", "w", "EX", "100") == "OK"
    assert c.command("SET", "plain", "x") == "OK"
    c.close()
    if how == "restart":
        s.restart()
    elif how == "kill9":
        s.kill9()
        s.start()
    c = s.raw()
    # Before its TTL the key must be there: a restart slower than that
    # cannot check it, which is a failure here, not a skip.
    assert time.time() - sent < 1.6, "the restart took %.1fs: too slow to check the key before it expires" % (
        time.time() - sent)
    assert c.command("GET", "short") == b"v"
    assert 90 <= c.command("TTL", "long") <= 100
    assert c.command("GET", "long") == b"w"
    assert c.command("TTL", "plain") == -1
    time.sleep(max(0.0, t0 + 2.1 - time.time()))
    assert c.command("GET", "short") is None
    assert c.command("EXISTS", "short") == 0
    assert c.command("TTL", "short") == -2
    assert poll(lambda: c.command("DBSIZE") == 2, timeout=max(0.0, t0 + 2.5 - time.time()))
    assert sorted(c.command("KEYS", "*")) == [b"long", b"plain"]
    if how != "running":
        s.restart()
        c = s.raw()
        assert sorted(c.command("KEYS", "*")) == [b"long", b"plain"]
        assert 90 <= c.command("TTL", "long") <= 100


# ---------------------------------------------------------------------------
# 5. KVCACHE.PUT / KVCACHE.GET
# ---------------------------------------------------------------------------

FAR_S = 4000000000
FAR_MS = FAR_S * 1000
META = b"\x00\xffmeta\r\n"
BLOB = b"\x00\x01value\r\n\xfe"


def test_kvcache_put_get_round_trip(c):
    assert c.command("KVCACHE.PUT", "k", "1700000000123", META, BLOB) == "OK"
    assert c.command("KVCACHE.GET", "k") == [b"k", 1700000000123, META, BLOB]
    assert c.command("GET", "k") == BLOB
    assert c.command("TTL", "k") == -1
    assert c.command("kvcache.put", "zero", "0", "", "") == "OK"
    assert c.command("KVCACHE.GET", "zero") == [b"zero", 0, b"", b""]
    # A missing key is a nil array.
    c.send(b"*2\r\n$11\r\nKVCACHE.GET\r\n$7\r\nmissing\r\n")
    assert c.read_line() == b"*-1"


def test_kvcache_put_star_is_now(c):
    before = int(time.time() * 1000)
    assert c.command("KVCACHE.PUT", "k", "*", "m", "v") == "OK"
    after = int(time.time() * 1000)
    reply = c.command("KVCACHE.GET", "k")
    assert reply[0] == b"k" and reply[2:] == [b"m", b"v"]
    assert before - 5 <= reply[1] <= after + 5


def test_kvcache_put_expiry_options(c):
    assert c.command("KVCACHE.PUT", "k", "*", "m", "v", "EX", "100") == "OK"
    assert c.command("TTL", "k") == 100
    assert c.command("KVCACHE.PUT", "k", "*", "m2", "v2", "KEEPTTL") == "OK"
    assert 99 <= c.command("TTL", "k") <= 100
    assert c.command("KVCACHE.GET", "k")[2:] == [b"m2", b"v2"]
    assert c.command("KVCACHE.PUT", "k", "*", "m3", "v3") == "OK"
    assert c.command("TTL", "k") == -1
    assert c.command("KVCACHE.PUT", "p", "*", "m", "v", "px", "5000") == "OK"
    assert 4500 < c.command("PTTL", "p") <= 5000
    assert c.command("KVCACHE.PUT", "a", "*", "m", "v", "EXAT", FAR_S) == "OK"
    assert c.command("EXPIRETIME", "a") == FAR_S
    assert c.command("KVCACHE.PUT", "a", "*", "m", "v", "PXAT", FAR_MS + 7) == "OK"
    assert c.command("PEXPIRETIME", "a") == FAR_MS + 7
    assert c.command("KVCACHE.PUT", "n", "*", "m", "v", "KEEPTTL") == "OK"
    assert c.command("TTL", "n") == -1
    assert c.command("KVCACHE.PUT", "gone", "*", "m", "v", "PXAT", "1") == "OK"
    assert c.command("KVCACHE.GET", "gone") is None


@pytest.mark.parametrize("args,reply", [
    (("k", "abc", "m", "v"), ("error", "ERR storage date must be milliseconds since 1970 or *")),
    (("k", "1.5", "m", "v"), ("error", "ERR storage date must be milliseconds since 1970 or *")),
    (("k", "", "m", "v"), ("error", "ERR storage date must be milliseconds since 1970 or *")),
    (("k", "**", "m", "v"), ("error", "ERR storage date must be milliseconds since 1970 or *")),
    (("k", "1", "m", "v", "FOO"), SYNTAX),
    (("k", "1", "m", "v", "EX"), SYNTAX),
    (("k", "1", "m", "v", "EX", "10", "KEEPTTL"), SYNTAX),
    (("k", "1", "m", "v", "KEEPTTL", "EX", "10"), SYNTAX),
    (("k", "1", "m", "v", "EX", "10", "PX", "10"), SYNTAX),
    (("k", "1", "m", "v", "EX", "10", "extra"), SYNTAX),
    (("k", "1", "m", "v", "EX", "abc"), NOT_INT),
    (("k", "1", "m", "v", "EX", "0"), ("error", "ERR invalid expire time in 'kvcache.put' command")),
    (("k", "1", "m"), arity("kvcache.put")),
    (("k",), arity("kvcache.put")),
])
def test_kvcache_put_errors(c, args, reply):
    assert c.command("KVCACHE.PUT", *args) == reply
    assert c.command("EXISTS", "k") == 0


def test_kvcache_get_arity(c):
    assert c.command("KVCACHE.GET") == arity("kvcache.get")
    assert c.command("KVCACHE.GET", "a", "b") == arity("kvcache.get")


def test_kvcache_metadata_counts_and_fifo_follows_storage_date(fresh_server):
    s = fresh_server(config_text="cache db0 2kb fifo\n")
    c = s.raw()
    assert c.command("KVCACHE.PUT", "m", "1000", "x" * 50, "y" * 100) == "OK"
    assert cache_info(c)["bytes"] == 151
    # The value alone would fit; with its metadata the entry does not.
    assert c.command("KVCACHE.PUT", "big", "*", "x" * 2000, "y" * 100) == too_large(2103)
    assert c.command("DEL", "m") == 1

    fill(c, range(FIT - 1))
    # Written last, but stamped 1970: the oldest entry, so the first to go.
    assert c.command("KVCACHE.PUT", "old_", "1000", "", VALUE) == "OK"
    assert cache_info(c)["bytes"] == FIT * ENTRY
    fill(c, [FIT])
    assert c.command("KVCACHE.GET", "old_") is None
    assert present(c, range(FIT + 1)) == list(range(FIT - 1)) + [FIT]
    # Among given dates, the older goes first whatever the write order.
    assert c.command("DEL", key(0), key(1)) == 2
    assert c.command("KVCACHE.PUT", "b", "3000", "", "x" * 103) == "OK"    # 104 bytes
    assert c.command("KVCACHE.PUT", "a", "2000", "", "x" * 103) == "OK"
    assert cache_info(c)["bytes"] == FIT * ENTRY
    fill(c, [20])
    assert (c.command("EXISTS", "a"), c.command("EXISTS", "b")) == (0, 1)
    fill(c, [21])
    assert (c.command("EXISTS", "a"), c.command("EXISTS", "b")) == (0, 0)
    assert present(c, range(22)) == list(range(2, FIT - 1)) + [FIT, 20, 21]
    ks = cache_info(c)
    assert (ks["keys"], ks["bytes"], ks["evicted"]) == (FIT, FIT * ENTRY, 3)


@pytest.mark.parametrize("date, accepted", [
    ("-1000", True),
    ("-62135596800000", True),                 # 0001-01-01T00:00:00Z, the first date kept
    ("-62135596800001", False),                # before year 1: refused
    ("-9223372036854775808", False),
    ("253402300799999", True),                 # 9999-12-31T23:59:59.999Z, the last date kept
    ("253402300800000", False),                # year 10000: refused
    ("9007199254740993", False),               # beyond year 9999: refused
    ("9223372036854775807", False),
])
def test_kvcache_extreme_storage_dates_round_trip_or_are_refused(fresh_server, date, accepted):
    s = fresh_server()
    c = s.raw()
    reply = c.command("KVCACHE.PUT", "k", date, "m", "v")
    if not accepted:
        assert reply == ("error", "ERR storage date must be milliseconds since 1970 or *")
        assert c.command("KVCACHE.GET", "k") is None  # nothing was written
    else:
        assert reply == "OK"
        assert c.command("KVCACHE.GET", "k") == [b"k", int(date), b"m", b"v"]
        assert c.command("MOVE", "k", "1") == 1
        c1 = raw_in(s, "1")
        assert c1.command("KVCACHE.GET", "k") == [b"k", int(date), b"m", b"v"]
    assert c.command("PING") == "PONG"


# ---------------------------------------------------------------------------
# 6. Named caches with MOVE, COPY and SWAPDB
# ---------------------------------------------------------------------------

def sqlite_files(s):
    return sorted(f for f in os.listdir(s.data_dir()) if f.endswith(".sqlite"))


def test_move_and_copy_to_a_named_cache(fresh_server):
    s = fresh_server()
    c = s.raw()
    sessions = raw_in(s, "sessions")
    assert c.command("SET", "k", "v", "EX", "100") == "OK"
    assert c.command("MOVE", "k", "sessions") == 1
    assert c.command("EXISTS", "k") == 0
    assert sessions.command("GET", "k") == b"v"
    assert 99 <= sessions.command("TTL", "k") <= 100
    assert c.command("SET", "u", "1") == "OK"
    assert c.command("MOVE", "u", "SESSIONS") == 1
    assert sessions.command("GET", "u") == b"1"

    assert c.command("SET", "a", "1") == "OK"
    assert c.command("COPY", "a", "b", "DB", "sessions") == 1
    assert sessions.command("GET", "b") == b"1"
    assert c.command("GET", "a") == b"1"
    assert c.command("EXISTS", "b") == 0
    assert c.command("COPY", "a", "b", "DB", "sessions") == 0
    assert c.command("SET", "a", "2") == "OK"
    assert c.command("COPY", "a", "b", "DB", "sessions", "REPLACE") == 1
    assert sessions.command("GET", "b") == b"2"

    # A cache never created is not a target.
    assert c.command("MOVE", "a", "nosuch") == NOT_INT
    assert c.command("COPY", "a", "b", "DB", "nosuch") == NOT_INT
    assert c.command("GET", "a") == b"2"
    assert sqlite_files(s) == ["db0.sqlite", "sessions.sqlite"]

    # After a restart the cache is known from its file.
    s.restart()
    c = s.raw()
    assert c.command("SET", "m", "1") == "OK"
    assert c.command("MOVE", "m", "sessions") == 1
    sessions = raw_in(s, "sessions")
    assert sorted(sessions.command("KEYS", "*")) == [b"b", b"k", b"m", b"u"]


def test_swapdb_swaps_contents_files_stay_named(fresh_server):
    s = fresh_server()
    c0 = s.raw()
    c1 = raw_in(s, "1")
    assert c0.command("SET", "a", "zero", "EX", "100") == "OK"
    assert c0.command("SET", "shared", "from0") == "OK"
    assert c1.command("SET", "b", "one") == "OK"
    assert c1.command("SET", "shared", "from1") == "OK"
    assert c0.command("SWAPDB", "0", "1") == "OK"

    assert c1.command("GET", "a") == b"zero"
    assert 99 <= c1.command("TTL", "a") <= 100
    assert c1.command("GET", "shared") == b"from0"
    assert c1.command("EXISTS", "b") == 0
    assert c0.command("GET", "b") == b"one"
    assert c0.command("GET", "shared") == b"from1"
    assert c0.command("EXISTS", "a") == 0
    assert (c0.command("DBSIZE"), c1.command("DBSIZE")) == (2, 2)
    assert (cache_info(c0, "db0")["expires"], cache_info(c0, "db1")["expires"]) == (0, 1)
    assert sqlite_files(s) == ["db0.sqlite", "db1.sqlite"]
    assert not [f for f in os.listdir(s.data_dir()) if f.startswith(".swap")]
    # Writes after the swap land in the swapped files.
    assert c1.command("SET", "after", "1") == "OK"

    s.restart()
    c0 = s.raw()
    c1 = raw_in(s, "1")
    assert c1.command("GET", "a") == b"zero"
    assert 90 <= c1.command("TTL", "a") <= 100
    assert c1.command("GET", "shared") == b"from0"
    assert c1.command("GET", "after") == b"1"
    assert c0.command("GET", "b") == b"one"
    assert c0.command("GET", "shared") == b"from1"
    assert c0.command("TTL", "b") == -1
    assert sqlite_files(s) == ["db0.sqlite", "db1.sqlite"]


# ---------------------------------------------------------------------------
# 7. DEBUG
# ---------------------------------------------------------------------------

def test_debug_refused_by_default(c):
    assert c.command("DEBUG", "RELOAD") == DEBUG_REFUSED
    assert c.command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == DEBUG_REFUSED


def test_debug_reload_and_set_active_expire(fresh_server):
    s = fresh_server(args=["--enable-debug-command", "yes"])
    c = s.raw()
    sessions = raw_in(s, "sessions")
    assert c.command("SET", "a", "1") == "OK"
    assert c.command("KVCACHE.PUT", "t", "1234", "m", "v", "EX", "100") == "OK"
    assert sessions.command("SET", "s", "2") == "OK"
    assert c.command("DEBUG", "RELOAD") == "OK"
    assert c.command("GET", "a") == b"1"
    assert c.command("KVCACHE.GET", "t") == [b"t", 1234, b"m", b"v"]
    assert 99 <= c.command("TTL", "t") <= 100
    assert sessions.command("GET", "s") == b"2"
    assert c.command("DBSIZE") == 2

    assert c.command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == "OK"
    assert c.command("SET", "e1", "v", "PX", "50") == "OK"
    assert c.command("SET", "e2", "v", "PX", "50") == "OK"
    time.sleep(0.4)
    assert c.command("DBSIZE") == 4          # expired, not yet swept
    assert c.command("GET", "e1") is None
    assert c.command("TTL", "e2") == -2
    assert c.command("DEBUG", "SET-ACTIVE-EXPIRE", "1") == "OK"
    assert poll(lambda: c.command("DBSIZE") == 2, timeout=2)
    assert sorted(c.command("KEYS", "*")) == [b"a", b"t"]


# ---------------------------------------------------------------------------
# 8. A cache whose file cannot be opened
# ---------------------------------------------------------------------------

def test_unavailable_cache_answers_errors_others_serve(fresh_server):
    s = fresh_server(start=False)
    os.makedirs(os.path.join(s.data_dir(), "broken.sqlite"))
    s.start()
    c = s.raw()
    broken = s.raw()
    assert broken.command("SELECT", "broken") == "OK"
    for command in (("GET", "k"), ("SET", "k", "v"), ("KVCACHE.GET", "k")):
        reply = broken.command(*command)
        assert isinstance(reply, tuple) and reply[1].startswith("ERR cache unavailable:"), (command, reply)
    assert c.command("SET", "k", "v") == "OK"
    assert c.command("GET", "k") == b"v"
    assert cache_info(c)["keys"] == 1
    # Writing into it from elsewhere fails the same way and loses nothing.
    for command in (("MOVE", "k", "broken"), ("COPY", "k", "k", "DB", "broken")):
        reply = c.command(*command)
        assert isinstance(reply, tuple) and reply[1].startswith("ERR cache unavailable:"), (command, reply)
    assert c.command("GET", "k") == b"v"
    assert c.command("FLUSHALL") == "OK"
    assert c.command("EXISTS", "k") == 0
    assert c.command("SET", "k", "v") == "OK"
    assert broken.command("SELECT", "0") == "OK"
    assert broken.command("GET", "k") == b"v"


# ---------------------------------------------------------------------------
# 9. Cache names
# ---------------------------------------------------------------------------

def test_cache_names_are_case_insensitive(fresh_server):
    s = fresh_server()
    a = raw_in(s, "Sessions")
    assert a.command("SET", "k", "v") == "OK"
    b = raw_in(s, "sessions")
    assert b.command("GET", "k") == b"v"
    assert b.command("SELECT", "SESSIONS") == "OK"
    assert b.command("DBSIZE") == 1
    assert sqlite_files(s) == ["db0.sqlite", "sessions.sqlite"]
    assert cache_info(b, "sessions")["keys"] == 1


@pytest.mark.parametrize("name", ["../x", "a/b", "n" * 65, ".", "..", "", "a b", "caf\u00e9"])
def test_invalid_cache_names(c, name):
    assert c.command("SELECT", name) == (
        "error", f"ERR invalid cache name '{name}': use 1 to 64 of a-z 0-9 . _ - or a DB index")


def test_longest_cache_name(fresh_server):
    s = fresh_server()
    c = raw_in(s, "n" * 64)
    assert c.command("SET", "k", "v") == "OK"
    assert sqlite_files(s) == ["db0.sqlite", "n" * 64 + ".sqlite"]


def test_max_caches(fresh_server):
    s = fresh_server(args=["--max-caches", "3"])
    c = s.raw()                                   # db0 is the first cache
    assert c.command("SELECT", "a") == "OK"
    assert c.command("SELECT", "b") == "OK"
    assert c.command("SET", "k", "v") == "OK"
    assert c.command("SELECT", "x") == ("error", "ERR max-caches reached (3): cannot create cache 'x'")
    assert c.command("SELECT", "5") == ("error", "ERR max-caches reached (3): cannot create cache 'db5'")
    assert c.command("GET", "k") == b"v"            # still in b
    assert c.command("SELECT", "a") == "OK"
    assert c.command("SELECT", "0") == "OK"
    assert sqlite_files(s) == ["a.sqlite", "b.sqlite", "db0.sqlite"]
    s.restart()
    c = s.raw()
    assert c.command("SELECT", "x") == ("error", "ERR max-caches reached (3): cannot create cache 'x'")
    assert c.command("SELECT", "b") == "OK"
    assert c.command("GET", "k") == b"v"


# ---------------------------------------------------------------------------
# More on capacity, recency and swaps
# ---------------------------------------------------------------------------

def test_lru_recency_survives_restart(fresh_server):
    s = fresh_server(args=["--cache", "db0", "2kb", "lru"])
    c = s.raw()
    fill(c, range(FIT))
    assert c.command("GET", key(0)) == VALUE.encode()
    s.restart()
    c = s.raw()
    fill(c, [FIT])
    assert present(c, range(FIT + 1)) == [0] + list(range(2, FIT + 1))


def test_cache_line_names_are_case_insensitive(fresh_server):
    s = fresh_server(config_text="cache Sessions 2kb lru\n")
    c = raw_in(s, "sessions")
    assert c.command("SET", "k", "v") == "OK"
    ks = cache_info(c, "sessions")
    assert (ks["capacity"], ks["policy"]) == (CAPACITY, "lru")
    assert c.command("CONFIG", "GET", "cache") == [b"cache", b"sessions 2048 lru"]


def test_debug_local_allows_loopback_clients(fresh_server):
    s = fresh_server(args=["--enable-debug-command", "local"])
    c = s.raw()
    assert c.command("DEBUG", "SET-ACTIVE-EXPIRE", "1") == "OK"
    assert c.command("DEBUG", "RELOAD") == "OK"


def test_swapdb_after_pipelined_write_and_expiry_moves_along(fresh_server):
    s = fresh_server()
    c0 = s.raw()
    c1 = raw_in(s, "1")
    # SET, SWAPDB, GET, SET in one packet: the first write is swapped away with db0's old contents.
    c0.send(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n"
            b"*5\r\n$3\r\nSET\r\n$4\r\nsoon\r\n$1\r\n1\r\n$2\r\nPX\r\n$3\r\n300\r\n"
            b"*3\r\n$6\r\nSWAPDB\r\n$1\r\n0\r\n$1\r\n1\r\n"
            b"*2\r\n$3\r\nGET\r\n$1\r\nx\r\n"
            b"*3\r\n$3\r\nSET\r\n$1\r\ny\r\n$1\r\n2\r\n")
    assert [c0.read_reply() for _ in range(5)] == ["OK", "OK", "OK", None, "OK"]
    assert c1.command("GET", "x") == b"1"
    assert c1.command("EXISTS", "y") == 0
    assert c0.command("GET", "y") == b"2"
    assert cache_info(c1, "db1")["expires"] == 1
    # The swapped-in key with a TTL is still swept when it expires.
    assert poll(lambda: c1.command("DBSIZE") == 1, timeout=2)
    assert c1.command("KEYS", "*") == [b"x"]
    s.restart()
    c0 = s.raw()
    c1 = raw_in(s, "1")
    assert (c0.command("KEYS", "*"), c1.command("KEYS", "*")) == ([b"y"], [b"x"])


def within_capacity(c, cache="db0"):
    ks = cache_info(c, cache)
    return ks if ks["bytes"] <= ks["capacity"] else None


@pytest.mark.parametrize("restart", [False, True], ids=["in-memory", "file-only"])
def test_cut_after_every_key_was_rewritten_keeps_the_newest_writes(fresh_server, restart):
    # Rewrites in the file keep the rows' places in the age index (the
    # writer's cheap path); the cut must still go by the last writes.
    s = fresh_server(config_text="\n")
    c = s.raw()
    fill(c, range(30))
    assert c.command("SAVE") == "OK"                       # in the file
    order = [7, 3, 29, 0, 18, 11, 25, 1, 14, 9, 22, 5, 27, 16, 2, 20, 12, 28, 6, 24, 10, 19, 4, 26, 13, 8, 21, 15,
             23, 17]
    fill(c, order)
    assert c.command("SAVE") == "OK"                       # rewritten in the file
    if restart:                                            # nothing in memory: every row read from the file
        s.stop()
        s.start()
        c = s.raw()
    assert c.command("CONFIG", "SET", "cache", f"db0 {CAPACITY} fifo") == "OK"
    ks = poll(lambda: within_capacity(c), timeout=10)
    assert ks and (ks["keys"], ks["bytes"], ks["evicted"]) == (FIT, FIT * ENTRY, 30 - FIT)
    assert sorted(present(c, range(30))) == sorted(order[-FIT:])


def test_swapdb_into_smaller_cache_evicts_to_its_capacity(fresh_server):
    s = fresh_server(config_text="cache db0 2kb fifo\n")
    c0 = s.raw()
    c1 = raw_in(s, "1")
    fill(c1, range(30))
    assert c0.command("SWAPDB", "0", "1") == "OK"
    ks = poll(lambda: within_capacity(c0), timeout=2)
    assert ks and (ks["keys"], ks["bytes"], ks["evicted"]) == (FIT, FIT * ENTRY, 30 - FIT)
    assert present(c0, range(30)) == list(range(30 - FIT, 30))


def test_restart_with_smaller_capacity_evicts_to_it(fresh_server):
    s = fresh_server(config_text="\n")
    c = s.raw()
    fill(c, range(30))
    s.stop()
    s.config_text = "cache db0 2kb fifo\n"
    s.start()
    c = s.raw()
    ks = poll(lambda: within_capacity(c), timeout=2)
    assert ks and (ks["keys"], ks["bytes"], ks["evicted"]) == (FIT, FIT * ENTRY, 30 - FIT)
    assert present(c, range(30)) == list(range(30 - FIT, 30))
