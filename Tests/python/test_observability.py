"""SLOWLOG, MONITOR, OBJECT, CLIENT LIST/KILL and INFO as
Redis 7 shows them (these run against redis-server too)."""
import pytest


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
