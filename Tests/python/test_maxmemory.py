"""maxmemory with Redis's meaning: a server-wide limit on data, enforced
before each command by maxmemory-policy (Redis's eight policies and fifo),
-OOM under noeviction and for MULTI as Redis answers, OBJECT FREQ and
IDLETIME, RESTORE's IDLETIME and FREQ. The first tests run against both
servers (KVCACHE_TARGET=redis); the eviction tests size the data by
kvcache-server's own measure (INFO's maxmemory_used) and run on it only."""
import socket
import time

import pytest

import benchlib

OOM = ("error", "OOM command not allowed when used memory > 'maxmemory'.")


@pytest.fixture
def limited(c):
    """Sets maxmemory to 1 byte (every server holds more than that) and puts it back."""
    yield c
    c.command("CONFIG", "SET", "maxmemory", "0")
    c.command("CONFIG", "SET", "maxmemory-policy", "noeviction")


def test_noeviction_refuses_writes_that_take_room(limited):
    c = limited
    c.command("SET", "k", "v")
    c.command("RPUSH", "l", "a")
    assert c.command("CONFIG", "SET", "maxmemory", "1") == "OK"
    assert c.command("SET", "k2", "v") == OOM
    assert c.command("RPUSH", "l", "b") == OOM
    assert c.command("GET", "k") == b"v"                    # reads go on
    assert c.command("LPOP", "l") == b"a"                   # so do writes that free room
    assert c.command("DEL", "k") == 1
    assert c.command("CONFIG", "SET", "maxmemory", "0") == "OK"
    assert c.command("SET", "k2", "v") == "OK"


def test_multi_under_oom(limited, server):
    c = limited
    other = server.raw()
    assert c.command("MULTI") == "OK"
    assert c.command("SET", "a", "1") == "QUEUED"
    assert other.command("CONFIG", "SET", "maxmemory", "1") == "OK"
    assert c.command("GET", "a") == OOM                    # inside MULTI, anything but EXEC/DISCARD is refused
    assert c.command("EXEC")[1].startswith("EXECABORT")
    assert c.command("MULTI") == "OK"
    assert c.command("SET", "x", "1") == OOM
    assert c.command("DISCARD") == "OK"
    assert other.command("CONFIG", "SET", "maxmemory", "0") == "OK"
    assert c.command("MULTI") == "OK"
    assert c.command("SET", "x", "1") == "QUEUED"
    assert other.command("CONFIG", "SET", "maxmemory", "1") == "OK"
    assert c.command("EXEC") == ("error", "EXECABORT Transaction discarded because of: "
                                 "OOM command not allowed when used memory > 'maxmemory'.")
    assert other.command("CONFIG", "SET", "maxmemory", "0") == "OK"
    other.close()


def test_maxmemory_settings_round_trip(limited):
    c = limited
    for name, value in [("maxmemory-policy", "allkeys-lfu"), ("maxmemory-samples", "10"), ("lfu-log-factor", "5"),
                        ("lfu-decay-time", "2"), ("maxmemory", "104857600")]:
        assert c.command("CONFIG", "SET", name, value) == "OK"
        assert c.command("CONFIG", "GET", name) == [name.encode(), value.encode()]
    assert c.command("CONFIG", "SET", "maxmemory-policy", "lru-ish")[0] == "error"
    for name, value in [("maxmemory-samples", "5"), ("lfu-log-factor", "10"), ("lfu-decay-time", "1")]:
        c.command("CONFIG", "SET", name, value)


def stat(c, field, section="stats"):
    return int(benchlib.info_fields(c, section)[field])


def test_config_resetstat_zeroes_evicted_and_expired_keys(limited):
    c = limited
    c.command("SET", "gone", "v", "PX", "1")
    time.sleep(0.05)
    assert c.command("GET", "gone") is None                 # expired on access
    for i in range(20):
        c.command("SET", f"k{i}", "x" * 1000)
    c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    c.command("CONFIG", "SET", "maxmemory", "1")
    c.command("GET", "k0")                                  # evicts before it runs
    assert stat(c, "evicted_keys") > 0 and stat(c, "expired_keys") > 0
    assert c.command("CONFIG", "RESETSTAT") == "OK"
    assert (stat(c, "evicted_keys"), stat(c, "expired_keys")) == (0, 0)


def test_object_refcount_shares_small_integers_unless_the_policy_ranks_by_access(limited):
    c = limited
    c.command("SET", "a", "1")
    assert c.command("OBJECT", "REFCOUNT", "a") > 1           # without maxmemory: shared
    c.command("CONFIG", "SET", "maxmemory", "1073741824")
    c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    c.command("SET", "a", "1")
    assert c.command("OBJECT", "REFCOUNT", "a") > 1
    for policy in ("allkeys-lru", "volatile-lfu"):
        c.command("CONFIG", "SET", "maxmemory-policy", policy)
        c.command("SET", "a", "1")
        assert c.command("OBJECT", "REFCOUNT", "a") == 1, policy


def test_buffers_of_clients_gone_stop_counting_at_once(limited, server):
    """Replies piled up for clients that never read count against maxmemory
    and evict keys; once those clients are gone, their buffers stop
    counting at once: a fill right after neither evicts nor gets -OOM (as
    Redis's unit/maxmemory "eviction due to output buffers" tests)."""
    c = limited
    c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    c.command("SET", "big", "x" * 100_000)
    c.command("CONFIG", "SET", "maxmemory", str(stat(c, "used_memory", "memory") + 3_000_000))
    clients = stat(c, "connected_clients", "clients")
    hogs = [socket.create_connection((benchlib.HOST, server.port)) for _ in range(20)]
    for h in hogs:
        h.setblocking(False)
    request = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 8
    deadline = time.time() + 20
    while stat(c, "evicted_keys") == 0 and time.time() < deadline:
        for h in hogs:
            try:
                h.send(request)
            except BlockingIOError:
                pass
    assert stat(c, "evicted_keys") > 0, "unread replies did not count against maxmemory"
    for h in hogs:
        h.close()
    deadline = time.time() + 10
    while stat(c, "connected_clients", "clients") > clients and time.time() < deadline:
        time.sleep(0.01)
    c.command("FLUSHALL")
    c.command("CONFIG", "RESETSTAT")
    for i in range(20):
        assert c.command("SET", f"k{i}", "x" * 100_000) == "OK"
    assert c.command("DBSIZE") == 20
    assert stat(c, "evicted_keys") == 0


def names_listed(c):
    return {part[5:] for line in c.command("CLIENT", "LIST").decode().splitlines()
            for part in line.split() if part.startswith("name=")}


def wait_gone(c, name, timeout=10):
    deadline = time.time() + timeout
    while name in names_listed(c) and time.time() < deadline:
        time.sleep(0.01)
    return name not in names_listed(c)


def test_maxmemory_clients_closes_the_client_whose_query_buffer_passes_it(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("CONFIG", "SET", "maxmemory-clients", "1mb") == "OK"
    assert c.command("CONFIG", "GET", "maxmemory-clients") == [b"maxmemory-clients", b"1048576"]
    hog = s.raw()
    assert hog.command("CLIENT", "SETNAME", "hog") == "OK"
    try:
        hog.sock.sendall(b"*1\r\n$3000000\r\n" + b"v" * 1_500_000)   # an argument half sent
    except (ConnectionResetError, BrokenPipeError):
        pass                       # closed while still sending (Redis takes room for all of it at the header)
    assert wait_gone(c, "hog"), "a 1.5 MB query buffer outlived maxmemory-clients 1mb"
    assert stat(c, "evicted_clients") == 1
    assert c.command("PING") == "PONG"                     # the small client stays
    assert c.command("CONFIG", "SET", "maxmemory-clients", "0") == "OK"
    big = s.raw()
    assert big.command("SET", "k", "v" * 1_500_000) == "OK"   # off: nothing is closed
    assert big.command("STRLEN", "k") == 1_500_000
    assert stat(c, "evicted_clients") == 1
    hog.close()
    big.close()
    c.close()


def test_maxmemory_clients_never_closes_a_no_evict_client_and_takes_a_percentage(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("CLIENT", "NO-EVICT", "on") == "OK"
    assert c.command("CONFIG", "SET", "maxmemory-clients", "10%") == "OK"   # of maxmemory 0: off
    keeper = s.raw()
    assert keeper.command("CLIENT", "NO-EVICT", "on") == "OK"
    assert keeper.command("CLIENT", "SETNAME", "keeper") == "OK"
    keeper.sock.sendall(b"*1\r\n$3000000\r\n" + b"v" * 1_500_000)
    time.sleep(0.3)
    assert "keeper" in names_listed(c) and stat(c, "evicted_clients") == 0
    assert c.command("CONFIG", "SET", "maxmemory", "10mb") == "OK"           # 10% of it: 1 MB
    time.sleep(0.3)
    assert "keeper" in names_listed(c)                     # over the limit, but never evicted
    other = s.raw()
    try:
        other.command("CLIENT", "SETNAME", "other")        # evictable: the first to go
    except (ConnectionError, OSError):
        pass                                               # closed before it ran: as Redis
    assert wait_gone(c, "other")
    assert "keeper" in names_listed(c)
    assert stat(c, "evicted_clients") >= 1
    assert c.command("CONFIG", "SET", "maxmemory", "0") == "OK"
    keeper.close()
    other.close()
    c.close()


def client_field(observer, client_id, field):
    line = observer.command("CLIENT", "LIST", "ID", str(client_id)).decode()
    return int(line.split(f" {field}=")[1].split()[0])


def test_client_memory_counts_watched_keys_and_queued_commands(c, server):
    """CLIENT LIST's multi-mem (the queued arguments) and tot-mem (which
    maxmemory-clients goes by, watched keys included), as Redis's."""
    observer = server.raw()
    me = c.command("CLIENT", "ID")
    assert client_field(observer, me, "multi-mem") == 0
    before = client_field(observer, me, "tot-mem")
    c.command("WATCH", *[f"w{i}" for i in range(1000)])
    assert client_field(observer, me, "tot-mem") >= before + 1000 * 40
    assert client_field(observer, me, "multi-mem") == 0
    assert c.command("MULTI") == "OK"
    assert c.command("SET", "k", "v" * 10_000) == "QUEUED"
    assert client_field(observer, me, "multi-mem") >= 10_000
    assert c.command("EXEC") == ["OK"]
    assert client_field(observer, me, "multi-mem") == 0
    observer.close()


def test_object_freq_and_idletime(limited):
    c = limited
    c.command("SET", "k", "v")
    assert c.command("OBJECT", "FREQ", "k")[0] == "error"
    time.sleep(1.2)
    assert c.command("OBJECT", "IDLETIME", "k") >= 1
    c.command("TYPE", "k")
    c.command("TTL", "k")
    c.command("EXISTS", "k")
    assert c.command("OBJECT", "IDLETIME", "k") >= 1       # TYPE, TTL and EXISTS do not count as a use
    c.command("GET", "k")
    assert c.command("OBJECT", "IDLETIME", "k") == 0
    assert c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu") == "OK"
    assert c.command("OBJECT", "IDLETIME", "k")[0] == "error"
    before = c.command("OBJECT", "FREQ", "k")
    for _ in range(200):
        c.command("GET", "k")
    assert c.command("OBJECT", "FREQ", "k") > before


def test_restore_sets_idletime_and_freq(limited):
    c = limited
    c.command("SET", "k", "v")
    payload = c.command("DUMP", "k")
    assert c.command("RESTORE", "r1", "0", payload, "IDLETIME", "1000") == "OK"
    assert c.command("OBJECT", "IDLETIME", "r1") >= 1000
    assert c.command("RESTORE", "r3", "0", payload, "IDLETIME", "1001") == "OK"
    assert c.command("OBJECT", "IDLETIME", "r3") >= 1001
    # The largest idle time a client can send is taken, not a crash.
    assert c.command("RESTORE", "r4", "0", payload, "IDLETIME", "9223372036854775807") == "OK"
    assert c.command("PING") == "PONG"
    c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    assert c.command("RESTORE", "r2", "0", payload, "FREQ", "100") == "OK"
    assert c.command("OBJECT", "FREQ", "r2") == 100


# ---------------------------------------------------------------------------
# Eviction (kvcache-server's measure of the data)
# ---------------------------------------------------------------------------

def used(c):
    text = c.command("INFO", "memory").decode()
    return int(dict(line.split(":", 1) for line in text.splitlines() if ":" in line)["maxmemory_used"])


def fill(c, prefix, count, size=1000, ttl=None):
    for i in range(count):
        args = ["SET", "%s%d" % (prefix, i), "x" * size]
        if ttl is not None:
            args += ["EX", str(ttl + i)]
        c.command(*args)


@pytest.mark.kvcache_only
@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lru"])
def test_eviction_refuses_no_write_while_the_writer_lags(fresh_server, policy):
    """With the writer held, every eviction stays a delete in memory: random
    samples of memory then mostly find those deletes. A write must still
    find a live key to evict, never get OOM while keys remain (CI's loaded
    run refused some under allkeys-random)."""
    c = fresh_server(args=["--enable-debug-command", "yes"]).raw()
    base = used(c)
    c.command("CONFIG", "SET", "maxmemory-policy", policy)
    c.command("CONFIG", "SET", "maxmemory", str(base + 100_000))
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    try:
        replies = [c.command("SET", "k%d" % i, "x" * 1000) for i in range(1000)]
    finally:
        assert c.command("DEBUG", "WRITER", "RESUME") == "OK"
    assert replies == ["OK"] * 1000
    assert 50 <= c.command("DBSIZE") < 110


@pytest.mark.kvcache_only
@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random", "fifo"])
def test_allkeys_policies_keep_the_data_within_the_limit(limited, policy):
    c = limited
    base = used(c)
    c.command("CONFIG", "SET", "maxmemory-policy", policy)
    c.command("CONFIG", "SET", "maxmemory", str(base + 200_000))
    fill(c, "k", 1000)
    assert used(c) <= base + 200_000 + 2000
    assert 150 <= c.command("DBSIZE") < 210
    info = c.command("INFO", "stats").decode()
    assert int(dict(l.split(":", 1) for l in info.splitlines() if ":" in l)["evicted_keys"]) >= 790


@pytest.mark.kvcache_only
def test_lru_keeps_what_is_read(limited):
    c = limited
    base = used(c)
    c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    c.command("CONFIG", "SET", "maxmemory-samples", "10")
    c.command("CONFIG", "SET", "maxmemory", str(base + 300_000))
    fill(c, "hot", 50)
    time.sleep(1.1)
    for round_ in range(10):
        for i in range(50):
            c.command("GET", "hot%d" % i)
        fill(c, "cold%d-" % round_, 60)
    hot = sum(c.command("EXISTS", "hot%d" % i) for i in range(50))
    assert hot >= 45, "only %d of 50 hot keys survived LRU eviction" % hot


@pytest.mark.kvcache_only
def test_volatile_ttl_evicts_the_soonest_to_expire_and_never_the_others(limited):
    c = limited
    base = used(c)
    fill(c, "keep", 50)
    c.command("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
    c.command("CONFIG", "SET", "maxmemory", str(base + 150_000))
    fill(c, "vol", 200, ttl=1000)
    assert all(c.command("EXISTS", "keep%d" % i) for i in range(50))
    assert c.command("EXISTS", "vol199") == 1 and c.command("EXISTS", "vol0") == 0
    c.command("CONFIG", "SET", "maxmemory", str(base + 40_000))
    # Eviction goes on in the background past a command's time budget, as
    # in Redis; once only persistent keys are left, nothing may go.
    replies = [c.command("SET", "more%d" % i, "x") for i in range(100)]
    assert OOM in replies
    assert all(c.command("EXISTS", "keep%d" % i) for i in range(50))
    assert c.command("DBSIZE") <= 50 + replies.index(OOM)


def test_function_load_and_restore_are_refused_over_maxmemory(limited):
    # FUNCTION LOAD and RESTORE are denyoom in Redis, though FUNCTION is not.
    c = limited
    c.command("FUNCTION", "FLUSH")
    library = "#!lua name=oomlib\nredis.register_function('oomf', function() return 1 end)"
    assert c.command("FUNCTION", "LOAD", library) == b"oomlib"
    payload = c.command("FUNCTION", "DUMP")
    c.command("FUNCTION", "FLUSH")
    c.command("CONFIG", "SET", "maxmemory", "1")
    assert c.command("FUNCTION", "LOAD", library) == OOM
    assert c.command("FUNCTION", "RESTORE", payload) == OOM
    assert c.command("FUNCTION", "LIST") == []
    c.command("CONFIG", "SET", "maxmemory", "0")
    assert c.command("FUNCTION", "RESTORE", payload) == "OK"
    c.command("FUNCTION", "FLUSH")


def test_exec_holding_function_load_is_refused_over_maxmemory(limited, server):
    # Redis sums the flags of the queued subcommands: FUNCTION LOAD makes
    # the EXEC denyoom, though the FUNCTION container is not.
    c = limited
    other = server.raw()
    c.command("FUNCTION", "FLUSH")
    library = "#!lua name=oomlib\nredis.register_function('oomf', function() return 1 end)"
    assert c.command("MULTI") == "OK"
    assert c.command("FUNCTION", "LOAD", library) == "QUEUED"
    assert other.command("CONFIG", "SET", "maxmemory", "1") == "OK"
    assert c.command("EXEC") == ("error", "EXECABORT Transaction discarded because of: "
                                 "OOM command not allowed when used memory > 'maxmemory'.")
    assert other.command("CONFIG", "SET", "maxmemory", "0") == "OK"
    assert c.command("FUNCTION", "LIST") == []
    # A transaction of FUNCTION LIST alone is not denyoom: it runs over maxmemory.
    assert c.command("MULTI") == "OK"
    assert c.command("FUNCTION", "LIST") == "QUEUED"
    assert other.command("CONFIG", "SET", "maxmemory", "1") == "OK"
    assert c.command("EXEC") == [[]]
    assert other.command("CONFIG", "SET", "maxmemory", "0") == "OK"
    other.close()


@pytest.mark.kvcache_only
def test_volatile_random_finds_the_one_key_with_an_expiry_among_many(limited):
    """One key with an expiry among 300 without, all of them just written
    (in memory, not yet in the cache file): volatile-random evicts that key
    and no other, as Redis's volatile sampling of its expires dict does
    (Redis's tracking test of eviction invalidations depends on it)."""
    c = limited
    fill(c, "keep", 300, size=100)
    c.command("SET", "volatile-key", "x", "EX", "10000")
    c.command("CONFIG", "SET", "maxmemory-policy", "volatile-random")
    c.command("CONFIG", "SET", "maxmemory", str(used(c) - 10))
    assert c.command("GET", "keep0") is not None  # a command: eviction runs before it
    assert c.command("EXISTS", "volatile-key") == 0
    assert all(c.command("EXISTS", "keep%d" % i) for i in range(300))
    assert c.command("SET", "more", "x") == OOM


@pytest.mark.kvcache_only
def test_maxmemory_spans_every_cache_and_capacity_still_holds(limited, server):
    c = limited
    base = used(c)
    c.command("CONFIG", "SET", "cache", "db1 50000")
    c.command("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    c.command("CONFIG", "SET", "maxmemory", str(base + 300_000))
    fill(c, "a", 150)
    assert c.command("SELECT", "1") == "OK"
    fill(c, "b", 150)
    assert c.command("DBSIZE") <= 50                       # db1's own capacity
    assert used(c) <= base + 300_000 + 2000
    c.command("SELECT", "0")
    c.command("CONFIG", "SET", "cache", "db1 0")
