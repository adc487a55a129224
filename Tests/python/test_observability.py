"""SLOWLOG, MONITOR, OBJECT, CLIENT LIST/KILL and INFO as
Redis 7 shows them (these run against redis-server too)."""
import os
import time

import pytest

from conftest import REDIS, wait_for_blocked


@pytest.fixture
def c(server, r):
    conn = server.raw()
    yield conn
    conn.close()


def info(c, section):
    text = c.command("INFO", section).decode()
    fields = {}
    for line in text.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k] = v
    return text, fields


# --- SLOWLOG ------------------------------------------------------------------------

def test_slowlog_records_slow_commands(c):
    assert c.command("CONFIG", "SET", "slowlog-log-slower-than", "0") == "OK"
    try:
        assert c.command("SLOWLOG", "RESET") == "OK"
        assert c.command("SET", "slow:k", "v" * 200) == "OK"
        entries = c.command("SLOWLOG", "GET", "1")
        assert len(entries) == 1
        entry = entries[0]
        assert isinstance(entry[0], int) and isinstance(entry[1], int) and isinstance(entry[2], int)
        assert entry[3][:2] == [b"SET", b"slow:k"]
        assert entry[3][2] == b"v" * 128 + b"... (72 more bytes)"
        assert c.command("SLOWLOG", "LEN") >= 1
        assert c.command("SLOWLOG", "RESET") == "OK"
        assert c.command("SLOWLOG", "LEN") in (0, 1)  # RESET itself may be logged
    finally:
        c.command("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_slowlog_logs_what_exec_ran_and_a_blocked_command_once_served(fresh_server):
    # Redis 7.0: EXEC is not logged (skip_slowlog), the commands it ran
    # are; a command that blocks is logged when it is served, as sent.
    s = fresh_server()
    c, blocked = s.raw(), s.raw()
    assert c.command("CONFIG", "SET", "slowlog-log-slower-than", "0") == "OK"
    blocked.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n")
    wait_for_blocked(c, 1)
    assert c.command("MULTI") == "OK"
    assert c.command("LPUSH", "l", "foo") == "QUEUED"
    assert c.command("SLOWLOG", "RESET") == "QUEUED"
    assert c.command("EXEC") == [1, "OK"]
    assert blocked.read_reply() == [b"l", b"foo"]
    commands = [entry[3] for entry in c.command("SLOWLOG", "GET", "-1")]
    assert commands == [[b"BLPOP", b"l", b"0"], [b"SLOWLOG", b"RESET"]], commands  # newest first; no EXEC


def test_slowlog_errors(c):
    assert c.command("SLOWLOG", "GET", "-2") == ("error", "ERR count should be greater than or equal to -1")
    assert c.command("SLOWLOG", "NOPE")[1].startswith("ERR unknown subcommand 'NOPE'")


# --- MONITOR ------------------------------------------------------------------------

def test_monitor_sees_other_clients_commands(server, c):
    m = server.raw()
    assert m.command("MONITOR") == "OK"
    assert c.command("SET", "mon:k", "a b\n") == "OK"
    line = m.read_reply()
    assert isinstance(line, str)
    stamp, rest = line.split(" ", 1)
    assert float(stamp) > 1e9
    assert rest.startswith("[0 127.0.0.1:")
    assert rest.endswith('] "SET" "mon:k" "a b\\n"')
    m.close()


def test_monitor_shows_transactions_and_scripts_in_redis_order(server, c):
    # Redis 7.0: MULTI, then the commands EXEC ran, then EXEC; EVAL before
    # its script's commands, which come from "lua".
    m = server.raw()
    assert m.command("MONITOR") == "OK"
    assert c.command("MULTI") == "OK"
    assert c.command("SET", "mon:t", "1") == "QUEUED"
    assert c.command("EXEC") == ["OK"]
    assert c.command("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "mon:e") == "OK"
    lines = [m.read_reply() for _ in range(5)]
    assert [line.split("] ", 1)[1] for line in lines] == [
        '"MULTI"', '"SET" "mon:t" "1"', '"EXEC"', '"EVAL" "return redis.call(\'set\', KEYS[1], \'v\')" "1" "mon:e"',
        '"set" "mon:e" "v"']
    assert " [0 lua] " in lines[4] and " [0 127.0.0.1:" in lines[0]
    m.close()


def test_config_set_refuses_a_setting_named_twice_and_client_kill_without_arguments(c):
    assert c.command("CONFIG", "SET", "maxmemory-samples", "5", "maxmemory-samples", "6") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - duplicate parameter")
    assert c.command("CLIENT", "KILL") == ("error", "ERR wrong number of arguments for 'client|kill' command")


# --- OBJECT ---------------------------------------------------------------------------

@pytest.mark.parametrize("value, encoding", [("12345", "int"), ("hello", "embstr"), ("x" * 44, "embstr"),
                                             ("x" * 45, "raw"), ("012", "embstr")])
def test_object_encoding_of_strings(c, value, encoding):
    assert c.command("SET", "o:k", value) == "OK"
    assert c.command("OBJECT", "ENCODING", "o:k") == encoding.encode()


def test_object_refcount_and_missing_key(c):
    assert c.command("SET", "o:n", "100") == "OK"
    assert c.command("OBJECT", "REFCOUNT", "o:n") == 2147483647
    assert c.command("SET", "o:s", "a string") == "OK"
    assert c.command("OBJECT", "REFCOUNT", "o:s") == 1
    assert c.command("OBJECT", "ENCODING", "o:none") is None


# --- CLIENT LIST / KILL -------------------------------------------------------------

def test_client_list_shows_every_client(server, c):
    other = server.raw()
    assert other.command("CLIENT", "SETNAME", "other-one") == "OK"
    listing = c.command("CLIENT", "LIST").decode()
    lines = [l for l in listing.split("\n") if l]
    assert any("name=other-one" in l for l in lines)
    assert all(l.startswith("id=") and " addr=127.0.0.1:" in l and " cmd=" in l for l in lines)


def test_client_kill_by_id_and_address(server, c):
    victim = server.raw()
    vid = victim.command("CLIENT", "ID")
    assert c.command("CLIENT", "KILL", "ID", str(vid)) == 1
    assert victim.is_closed()
    victim2 = server.raw()
    addr = [l for l in victim2.command("CLIENT", "INFO").decode().split(" ") if l.startswith("addr=")][0][5:]
    assert c.command("CLIENT", "KILL", addr) == "OK"
    assert victim2.is_closed()
    assert c.command("CLIENT", "KILL", "127.0.0.1:1") == ("error", "ERR No such client")
    assert c.command("CLIENT", "KILL", "ID", "999999") == 0
    assert c.command("PING") == "PONG"


def test_client_kill_skipme(server, c):
    own = c.command("CLIENT", "ID")
    assert c.command("CLIENT", "KILL", "ID", str(own), "SKIPME", "yes") == 0
    assert c.command("PING") == "PONG"


# --- INFO -----------------------------------------------------------------------------

def test_info_has_redis_default_sections(c):
    text, _ = info(c, "default")
    for header in ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU",
                   "# Modules", "# Errorstats", "# Cluster", "# Keyspace"]:
        assert header in text


def test_errorstats_of_a_script_subcommand_and_an_unblocked_client(fresh_server):
    # Redis's unit/info: a subcommand a script calls counts as itself, and
    # CLIENT UNBLOCK ... ERROR counts an UNBLOCKED error.
    s = fresh_server()
    c, blocked = s.raw(), s.raw()
    assert c.command("EVAL", "redis.pcall('XGROUP', 'CREATECONSUMER', 's1', 'mygroup', 'consumer') return", "0") is None
    _, stats = info(c, "commandstats")
    assert stats["cmdstat_xgroup|createconsumer"].startswith("calls=1,")
    assert stats["cmdstat_xgroup|createconsumer"].endswith("rejected_calls=0,failed_calls=1")
    assert stats["cmdstat_eval"].endswith("rejected_calls=0,failed_calls=0")
    blocked_id = blocked.command("CLIENT", "ID")
    blocked.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n")
    wait_for_blocked(c, 1)
    assert c.command("CLIENT", "UNBLOCK", blocked_id, "ERROR") == 1
    assert blocked.read_reply() == ("error", "UNBLOCKED client unblocked via CLIENT UNBLOCK")
    _, errors = info(c, "errorstats")
    assert errors["errorstat_UNBLOCKED"] == "count=1"
    _, stats = info(c, "commandstats")
    assert stats["cmdstat_blpop"].endswith("rejected_calls=0,failed_calls=1")


def test_info_commandstats_and_errorstats(c):
    c.command("GET", "is:k")
    c.command("GET")  # wrong arity: a rejected call
    text, fields = info(c, "commandstats")
    assert text.startswith("# Commandstats")
    get = fields["cmdstat_get"]
    assert "calls=" in get and "usec=" in get and "usec_per_call=" in get
    assert "rejected_calls=" in get and "failed_calls=" in get
    assert int(get.split("rejected_calls=")[1].split(",")[0]) >= 1
    _, errors = info(c, "errorstats")
    assert "errorstat_ERR" in errors and errors["errorstat_ERR"].startswith("count=")


def test_info_fields_for_dashboards(c):
    _, fields = info(c, "everything")
    for name in ["uptime_in_seconds", "connected_clients", "used_memory", "used_memory_rss", "role",
                 "total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
                 "total_net_input_bytes", "total_net_output_bytes", "rejected_connections", "expired_keys",
                 "evicted_keys", "keyspace_hits", "keyspace_misses", "used_cpu_sys", "used_cpu_user",
                 "connected_slaves", "master_repl_offset", "maxmemory", "mem_fragmentation_ratio"]:
        assert name in fields, name
    assert fields["role"] == "master"


# --- INFO keyspace (Redis's lines) and INFO caches (this server's figures) ------------

def test_info_keyspace_is_redis_lines_by_index(server, c):
    # db10 after db3, as Redis orders them (by index, not by name).
    for db, args in ((0, ("SET", "a", "1")), (3, ("SET", "b", "2", "EX", "100")), (10, ("SET", "c", "3"))):
        assert c.command("SELECT", str(db)) == "OK"
        assert c.command(*args) == "OK"
    text, fields = info(c, "keyspace")
    assert text.startswith("# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\ndb3:keys=1,expires=1,avg_ttl=")
    assert list(fields) == ["db0", "db3", "db10"]
    assert fields["db10"] == "keys=1,expires=0,avg_ttl=0"
    # Redis estimates avg_ttl by sampling in its expiry cycle (0 until it
    # has); here it is the exact mean.
    assert (0 if REDIS else 90_000) <= int(fields["db3"].split("avg_ttl=")[1]) <= 100_000


def test_info_keyspace_leaves_out_empty_databases(c):
    assert c.command("SELECT", "5") == "OK"
    assert c.command("SET", "k", "v") == "OK"
    assert c.command("DEL", "k") == 1
    assert c.command("INFO", "keyspace") == b"# Keyspace\r\n"


@pytest.mark.kvcache_only
def test_info_keyspace_shows_numbered_caches_only(server, c):
    # Named caches, and db16 (a name when there are 16 databases), stay out
    # of Redis's section: the exporter reads any field starting with "db"
    # as a numbered database.
    for cache in ("sessions", "db16", "0"):
        assert c.command("SELECT", cache) == "OK"
        assert c.command("SET", "k", "v") == "OK"
    text, _ = info(c, "keyspace")
    assert text == "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n"
    _, caches = info(c, "caches")
    assert ["cache_db0", "cache_db16", "cache_sessions"] == [n for n in caches if n in
                                                               ("cache_db0", "cache_db16", "cache_sessions")]


@pytest.mark.kvcache_only
def test_no_info_field_outside_keyspace_starts_with_db(server, c):
    for cache in ("sessions", "dbx", "db16", "3"):
        assert c.command("SELECT", cache) == "OK"
        assert c.command("SET", "k", "v", "EX", "100") == "OK"
    text = c.command("INFO", "everything").decode()
    section = None
    for line in text.split("\r\n"):
        if line.startswith("# "):
            section = line[2:]
        elif line.startswith("db"):
            assert section == "Keyspace", line
            name, _, value = line.partition(":")
            assert name in ("db0", "db3") and value.startswith("keys=1,expires=1,avg_ttl=")
            assert value.count(",") == 2, line


CACHE_FIELDS = ["keys", "expires", "avg_ttl", "bytes", "capacity", "policy", "hits", "misses", "evicted", "expired",
                "tier_entries", "tier_bytes", "file_bytes", "wal_bytes", "unapplied_bytes", "available"]


def cache_line(c, name):
    _, fields = info(c, "caches")
    line = fields.get("cache_" + name)
    if line is None:
        return None
    pairs = [item.partition("=") for item in line.split(",")]
    return {k: (int(v) if v.isdigit() else v) for k, _, v in pairs}


@pytest.mark.kvcache_only
def test_info_caches_has_every_cache_numbered_first(server, c):
    for cache in ("zeta", "12", "alpha", "db16", "2"):
        assert c.command("SELECT", cache) == "OK"
    text, fields = info(c, "caches")
    assert text.startswith("# Caches\r\n")
    # db16 is a name when there are 16 databases: among the named caches.
    wanted = ["cache_db0", "cache_db2", "cache_db12", "cache_alpha", "cache_db16", "cache_zeta"]
    assert [n for n in fields if n in wanted] == wanted
    line = cache_line(c, "alpha")
    assert list(line) == CACHE_FIELDS
    assert line["keys"] == 0 and line["available"] == 1 and line["policy"] == "fifo"
    # In INFO, INFO all and INFO everything, after Keyspace.
    for args in ((), ("all",), ("everything",), ("default",)):
        text = c.command("INFO", *args).decode()
        assert "\r\n# Keyspace\r\n" in text and "\r\n# Caches\r\n" in text, args
        assert text.index("# Keyspace") < text.index("# Caches")


@pytest.mark.kvcache_only
def test_info_caches_counts_move(fresh_server):
    s = fresh_server(config_text="cache small 1kb\n", args=["--enable-debug-command", "yes"])
    c = s.raw()
    assert c.command("SELECT", "small") == "OK"
    for i in range(20):
        assert c.command("SET", "k%02d" % i, "v" * 98) == "OK"       # 101 bytes each: 10 fit
    assert c.command("SET", "t", "x", "PX", "1") == "OK"
    assert c.command("GET", "k19") == b"v" * 98
    assert c.command("GET", "k00") is None                             # evicted: a miss
    time.sleep(0.3)
    line = cache_line(c, "small")
    assert line["capacity"] == 1024 and line["bytes"] <= 1024
    assert (line["hits"], line["misses"]) == (1, 1)
    assert line["evicted"] >= 10 and line["expired"] == 1
    assert line["keys"] == c.command("DBSIZE")
    assert c.command("SAVE") == "OK"
    line = cache_line(c, "small")
    assert line["file_bytes"] > 0 and line["unapplied_bytes"] == 0
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    assert c.command("SET", "late", "1") == "OK"
    time.sleep(1.2)                                                     # past a seal
    assert cache_line(c, "small")["unapplied_bytes"] > 0
    assert c.command("DEBUG", "WRITER", "RESUME") == "OK"


@pytest.mark.kvcache_only
def test_info_caches_shows_an_unavailable_cache(fresh_server):
    s = fresh_server(start=False)
    os.makedirs(os.path.join(s.data_dir(), "broken.sqlite"))
    s.start()
    c = s.raw()
    assert cache_line(c, "broken") == {"available": 0}


@pytest.mark.kvcache_only
def test_info_counts_every_cache_with_a_file_after_a_restart(fresh_server):
    s = fresh_server()
    c = s.raw()
    for cache, n in (("4", 3), ("sessions", 2)):
        assert c.command("SELECT", cache) == "OK"
        for i in range(n):
            assert c.command("SET", "k%d" % i, "v", "EX", "1000") == "OK"
    c.close()
    s.restart()
    c = s.raw()                                                         # never selects them
    _, fields = info(c, "keyspace")
    assert fields["db4"].startswith("keys=3,expires=3,avg_ttl=")
    assert cache_line(c, "sessions")["keys"] == 2
