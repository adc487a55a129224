"""The replication stream as a read-only feed: SYNC (and PSYNC, answered
+FULLRESYNC) sends an RDB of the data, then every write the server
propagates, exactly as Redis 7.0 sends it to a replica: SELECT when the
database changes, the deterministic rewrites (SET ... PXAT, PEXPIREAT,
LPOP for a served BLPOP, effects of scripts), MULTI/EXEC around a command's
several effects, DEL for keys found expired. Expected streams are
redis-server 7.0.15's (KVCACHE_TARGET=redis runs the tests there too);
named caches are selected by name: those tests are kvcache_only. Being a
replica is test_replica.py."""
import fnmatch
import queue
import re
import socket
import subprocess
import threading
import time

import pytest
import redis

from conftest import REDIS, Server, fail_on, free_port, require_tool


@pytest.fixture(scope="module")
def server():
    """The module's server, with DEBUG (SET-ACTIVE-EXPIRE) allowed."""
    s = Server(args=["--enable-debug-command", "yes"]).start()
    yield s
    fail_on(s.cleanup(), "the module's server")

# Redis's crc64 (Jones polynomial, reflected, no final xor).
_POLY = 0x95AC9329AC4BC9B5


def crc64(data):
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
    return crc


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Stream:
    """A connection that ran SYNC (or PSYNC) and reads the stream after the payload."""

    def __init__(self, server, psync=False, handshake=()):
        self.s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        self.buf = b""
        for args in handshake:
            self.s.sendall(encode(*args))
            assert self.line() == b"+OK"
        if psync:
            self.s.sendall(encode("PSYNC", "?", "-1"))
            self.fullresync = self.line()
        else:
            self.s.sendall(b"SYNC\r\n")
        header = self.line()
        while header == b"":  # newlines are keepalives while the RDB is made
            header = self.line()
        assert header.startswith(b"$"), header
        self.payload = self.take(int(header[1:]))

    def fill(self, timeout):
        self.s.settimeout(timeout)
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def line(self, timeout=10):
        while b"\r\n" not in self.buf and not (self.buf.startswith(b"\n")):
            self.fill(timeout)
        if self.buf.startswith(b"\n"):
            self.buf = self.buf[1:]
            return b""
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def take(self, n, timeout=10):
        while len(self.buf) < n:
            self.fill(timeout)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def command(self, timeout=5):
        """The next command of the stream, its name lowercased (as Redis's
        read_from_replication_stream), or None when nothing comes in time."""
        try:
            header = self.line(timeout)
        except socket.timeout:
            return None
        assert header.startswith(b"*"), header
        args = []
        for i in range(int(header[1:])):
            length = self.line()
            assert length.startswith(b"$")
            arg = self.take(int(length[1:]) + 2)[:-2].decode("latin-1")
            args.append(arg.lower() if i == 0 else arg)
        return args

    def expect(self, *patterns):
        """Asserts the next commands match `patterns` (strings split on
        spaces, fnmatch per argument, as Redis's assert_replication_stream)."""
        for pattern in patterns:
            got = self.command()
            assert got is not None, "nothing on the stream, expected %r" % pattern
            want = pattern.split(" ")
            assert len(got) == len(want) and all(fnmatch.fnmatchcase(g, w) for g, w in zip(got, want)), \
                "stream had %r, expected %r" % (got, pattern)

    def expect_nothing(self, timeout=0.3):
        assert self.command(timeout) is None

    def close(self):
        self.s.close()


@pytest.fixture
def stream(server, r):
    r.config_set("repl-ping-replica-period", 3600)
    feeds = []

    def attach(**kw):
        feed = Stream(server, **kw)
        feeds.append(feed)
        return feed

    yield attach
    for feed in feeds:
        feed.close()
    r.config_set("repl-ping-replica-period", 10)


def wait_for_replicas(r, n):
    for _ in range(100):
        if r.info("replication")["connected_slaves"] == n:
            return
        time.sleep(0.05)
    assert r.info("replication")["connected_slaves"] == n


# The handshake and the payload


def test_sync_sends_a_valid_rdb_of_the_data(stream, r):
    r.set("before", "x")
    feed = stream()
    payload = feed.payload
    assert payload.startswith(b"REDIS0010")
    # The EOF opcode, then the checksum of everything before it, little endian.
    assert payload[-9] == 0xFF
    assert int.from_bytes(payload[-8:], "little") == crc64(payload[:-8])
    # The snapshot holds the key: SELECTDB 0, then type 0 (a string), its name and value.
    assert b"\xfe\x00" in payload and b"\x00\x06before\x01x" in payload


def test_psync_answers_fullresync_with_the_replication_id(stream, r):
    feed = stream(psync=True)
    replid = r.info("replication")["master_replid"]
    m = re.fullmatch(rb"\+FULLRESYNC ([0-9a-f]{40}) (\d+)", feed.fullresync)
    assert m and m.group(1).decode() == replid
    r.set("k", "v")
    feed.expect("select *", "set k v")


def test_replconf_answers_as_redis(c):
    assert c.command("REPLCONF", "listening-port", "6380") == "OK"
    assert c.command("REPLCONF", "capa", "eof", "capa", "psync2") == "OK"
    assert c.command("REPLCONF") == "OK"
    assert c.command("REPLCONF", "capa") == ("error", "ERR syntax error")
    assert c.command("REPLCONF", "listening-port", "x") == ("error", "ERR value is not an integer or out of range")
    assert c.command("REPLCONF", "nosuch", "1") == ("error", "ERR Unrecognized REPLCONF option: nosuch")
    assert c.command("REPLCONF", "rdb-only", "2") == ("error", "ERR value is out of range, value must between 0 and 1")
    assert c.command("REPLCONF", "rdb-filter-only", "") == "OK"
    # ACK answers nothing: the next reply is PING's.
    c.send(encode("REPLCONF", "ack", "0"))
    assert c.command("PING") == "PONG"


def test_sync_is_refused_inside_multi(c):
    assert c.command("MULTI") == "OK"
    assert c.command("SYNC") == ("error", "ERR Command not allowed inside a transaction")


def test_info_counts_the_feeds_and_closing_one_detaches_it(stream, r):
    assert r.info("replication")["connected_slaves"] == 0
    first, second = stream(), stream()
    wait_for_replicas(r, 2)
    r.set("k", "v")
    first.expect("select *", "set k v")
    second.expect("select *", "set k v")
    first.close()
    wait_for_replicas(r, 1)
    assert "slave0" in r.info("replication")


def test_role_answers_master_with_each_feed_and_its_acknowledged_offset(stream, c):
    role = c.command("ROLE")
    assert role[0] == b"master" and isinstance(role[1], int) and role[2] == []
    feed = stream(handshake=[("REPLCONF", "listening-port", "6380")])
    feed.s.sendall(encode("REPLCONF", "ACK", "0"))
    c.command("SET", "k", "v")
    feed.expect("select *", "set k v")
    feed.s.sendall(encode("REPLCONF", "ACK", "7"))
    for _ in range(100):
        role = c.command("ROLE")
        if role[2] and role[2][0][2] == b"7":
            break
        time.sleep(0.05)
    assert role[0] == b"master" and role[1] > 0
    assert role[2] == [[b"127.0.0.1", b"6380", b"7"]]
    # INFO's slave line gives the same feed: its acknowledged offset, and
    # the seconds since that ACK as its lag. Redis takes the ACK's time from
    # its cached clock and subtracts it from time(NULL), glibc's coarse
    # clock, which can be a tick behind: so its lag can read -1 right after
    # an ACK (seen in CI against redis-server 7.0.15).
    info = dict(line.split(":", 1) for line in c.command("INFO", "replication").decode().splitlines() if ":" in line)
    fields = dict(kv.split("=") for kv in info["slave0"].split(","))
    assert (fields["ip"], fields["port"], fields["state"], fields["offset"]) == ("127.0.0.1", "6380", "online", "7")
    assert fields["lag"] in ("-1", "0", "1"), fields


def test_replicaof_no_one_is_ok_on_a_master(c):
    for command in ("REPLICAOF", "SLAVEOF"):
        assert c.command(command, "NO", "ONE") == "OK"
        assert c.command(command, "no", "one") == "OK"
        assert c.command(command, "127.0.0.1") == ("error", f"ERR wrong number of arguments for '{command.lower()}' command")
        assert c.command(command, "127.0.0.1", "x") == ("error", "ERR Invalid master port")
        assert c.command(command, "127.0.0.1", "65536") == ("error", "ERR Invalid master port")
    assert c.command("ROLE")[0] == b"master"


def test_the_feed_ignores_acks_and_is_dropped_for_a_command_with_a_reply(stream, r):
    feed = stream()
    feed.s.sendall(encode("REPLCONF", "ACK", "0"))
    r.set("k", "v")
    feed.expect("select *", "set k v")
    # Redis: "Replica generated a reply to command 'ping', disconnecting it".
    feed.s.sendall(encode("PING"))
    with pytest.raises(EOFError):
        feed.command(timeout=5)
    wait_for_replicas(r, 0)


def test_client_kill_type_replica_closes_the_feeds(stream, r):
    feed = stream()
    wait_for_replicas(r, 1)
    assert r.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes") == 0
    assert r.execute_command("CLIENT", "KILL", "TYPE", "slave") == 1
    with pytest.raises(EOFError):
        feed.command(timeout=5)
    wait_for_replicas(r, 0)


def test_ping_every_repl_ping_replica_period(stream, r):
    feed = stream()
    r.config_set("repl-ping-replica-period", 1)
    assert feed.command(timeout=4) == ["ping"]


# What propagates, and how


def test_writes_that_change_nothing_do_not_propagate(stream, r):
    feed = stream()
    r.delete("missing")
    r.expire("missing", 10)
    r.get("k")
    r.set("k", "v")
    feed.expect("select *", "set k v")
    feed.expect_nothing()


def test_set_with_an_expiry_propagates_as_set_pxat(stream, r):
    feed = stream()
    at = int(time.time() * 1000) + 100000
    r.set("a", "1", ex=100)
    r.set("a", "1", px=100000, nx=False)
    r.execute_command("SET", "a", "1", "EXAT", int(time.time()) + 100)
    r.execute_command("SET", "a", "1", "PXAT", at)
    r.execute_command("SETEX", "a", 100, "1")
    r.execute_command("PSETEX", "a", 100000, "1")
    r.execute_command("SET", "a", "2", "XX", "EX", "100")
    feed.expect("select *", *["set a 1 PXAT *"] * 3, "set a 1 PXAT %d" % at, *["set a 1 PXAT *"] * 2,
                "set a 2 PXAT *")


def test_expire_family_propagates_as_pexpireat(stream, r):
    r.set("k", "v")
    feed = stream()
    r.expire("k", 100)
    r.pexpire("k", 100000)
    r.expireat("k", int(time.time()) + 100)
    r.execute_command("EXPIRE", "k", "200", "GT")
    r.expireat("k", int(time.time()) - 100)
    feed.expect("select *", "pexpireat k *", "pexpireat k *", "pexpireat k *", "pexpireat k * GT", "del k")
    r.set("k", "v")
    r.expire("k", 100)
    feed.expect("set k v")
    got = feed.command()
    assert got[0] == "pexpireat" and abs(int(got[2]) - (time.time() * 1000 + 100000)) < 5000


def test_getex_getdel_and_persist(stream, r):
    feed = stream()
    r.set("foo", "bar", ex=100)
    r.getex("foo", persist=True)
    r.getex("foo")
    r.getex("foo", px=200000)
    r.getex("foo", exat=int(time.time()) - 100)
    r.set("foo", "bar")
    r.getdel("foo")
    feed.expect("select *", "set foo bar PXAT *", "persist foo", "pexpireat foo *", "del foo", "set foo bar",
                "del foo")


def test_getset_propagates_as_set(stream, r):
    feed = stream()
    r.set("k", "a")
    assert r.getset("k", "b") == b"a"
    r.set("k", "c", get=True)
    r.execute_command("SET", "k", "d", "GET", "XX", "get")
    feed.expect("select *", "set k a", "set k b", "set k c", "set k d XX")


def test_float_increments_propagate_their_result(stream, r):
    feed = stream()
    r.set("n", "1.5", ex=100)
    r.incrbyfloat("n", "0.25")
    r.hincrbyfloat("h", "f", "2.5")
    feed.expect("select *", "set n 1.5 PXAT *", "set n 1.75 KEEPTTL", "hset h f 2.5")


def test_restore_with_a_relative_ttl_propagates_absttl(stream, r):
    r.set("src", "v")
    dump = r.dump("src")
    feed = stream()
    r.restore("dst", 100000, dump)
    r.restore("dst2", 0, dump)
    feed.expect("select *", "restore dst * * ABSTTL", "restore dst2 0 *")


def test_spop_propagates_as_srem_or_del(stream, r):
    r.sadd("s", "a")
    r.sadd("t", "a", "b", "c")
    feed = stream()
    r.spop("s")
    r.spop("t", 5)
    feed.expect("select *", "srem s a", "del t")


def test_select_is_emitted_when_the_database_changes(stream, server, r):
    feed = stream()
    one, two = server.client(db=1), server.client(db=2)
    one.set("a", "1")
    one.set("b", "2")
    two.set("c", "3")
    one.set("d", "4")
    r.flushall()
    feed.expect("select 1", "set a 1", "set b 2", "select 2", "set c 3", "select 1", "set d 4", "select 0", "flushall")
    one.close()
    two.close()


@pytest.mark.kvcache_only
def test_a_named_cache_is_selected_by_name(stream, server, r):
    feed = stream()
    named = server.client()
    named.execute_command("SELECT", "sessions")
    named.set("a", "1")
    r.set("b", "2")
    feed.expect("select sessions", "set a 1", "select 0", "set b 2")
    named.close()


def test_multi_exec_is_wrapped_and_a_single_write_is_not(stream, r):
    feed = stream()
    p = r.pipeline(transaction=True)
    p.set("a", "1").execute_command("INCR", "n").get("a")
    p.execute()
    p = r.pipeline(transaction=True)
    p.get("a").set("b", "2")
    p.execute()
    p = r.pipeline(transaction=True)
    p.get("a").get("b")
    p.execute()
    r.set("c", "3")
    feed.expect("select *", "multi", "set a 1", "incr n", "exec", "set b 2", "set c 3")


def test_scripts_propagate_their_effects(stream, r):
    feed = stream()
    r.eval("redis.call('set', KEYS[1], 'x'); redis.call('incr', KEYS[2]); return redis.call('get', KEYS[1])", 2,
           "a", "n")
    r.eval("redis.call('get', KEYS[1]); return redis.call('set', KEYS[1], 'y', 'EX', 100)", 1, "a")
    r.eval("return redis.call('get', KEYS[1])", 1, "a")
    r.set("z", "1")
    feed.expect("select *", "multi", "set a x", "incr n", "exec", "set a y PXAT *", "set z 1")


def test_commands_of_scripts_propagate_their_own_rewrites(stream, r):
    r.sadd("myset", "a", "b", "c")
    feed = stream()
    r.eval("return redis.call('spop', 'myset')", 0)
    r.eval("return redis.call('incrbyfloat', KEYS[1], 1)", 1, "key")
    r.eval("return redis.call('expire', KEYS[1], ARGV[1])", 1, "key", 3)
    r.eval("return redis.call('mget', 'a', 'b')", 0)
    feed.expect("select *", "srem myset *", "set key 1 KEEPTTL", "pexpireat key *")
    feed.expect_nothing()


def test_eviction_for_maxmemory_propagates_del(stream, r):
    r.set("asdf1", "1")
    r.set("asdf2", "2")
    feed = stream()
    r.set("asdf3", "3")
    r.config_set("maxmemory-policy", "allkeys-lru")
    try:
        r.config_set("maxmemory", 1)
        for _ in range(200):
            if r.dbsize() == 0:
                break
            time.sleep(0.02)
        assert r.dbsize() == 0
    finally:
        r.config_set("maxmemory", 0)
        r.config_set("maxmemory-policy", "noeviction")
    r.set("asdf4", "4")
    feed.expect("select *", "set asdf3 3", "del asdf*", "del asdf*", "del asdf*", "set asdf4 4")


def test_a_key_found_expired_propagates_del(stream, r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.set("gone", "v", px=50)
        feed = stream()
        time.sleep(0.15)
        assert r.get("gone") is None
        # A write that finds the key expired: the DEL, then the write, in one transaction.
        r.set("gone2", "v", px=50)
        time.sleep(0.15)
        r.lpush("gone2", "x")
        feed.expect("select *", "del gone", "set gone2 v PXAT *", "multi", "del gone2", "lpush gone2 x", "exec")
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_scan_sends_its_expired_keys_unwrapped(stream, r):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.set("foo1", "v", px=50)
        r.set("foo2", "v", px=50)
        time.sleep(0.15)
        feed = stream()
        r.scan(0)
        feed.expect("select *", "del foo*", "del foo*")
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_blocking_pops_propagate_as_plain_pops(stream, server, r):
    feed = stream()
    r.rpush("l", "a", "b")
    r.blpop("l", 1)
    waiter = server.client()
    waiter_result = []
    t = threading.Thread(target=lambda: waiter_result.append(waiter.brpop("w", 5)))
    t.start()
    for _ in range(100):
        if r.info("clients")["blocked_clients"] == 1:
            break
        time.sleep(0.02)
    r.lpush("w", "x")
    t.join()
    assert waiter_result == [(b"w", b"x")]
    r.execute_command("BLMPOP", "0", "1", "l", "RIGHT", "COUNT", "5")
    feed.expect("select *", "rpush l a b", "lpop l", "lpush w x", "rpop w", "rpop l 1")
    waiter.close()


def test_redis_cli_replica_shows_the_writes(server, r):
    cli = require_tool("redis-cli")
    r.config_set("repl-ping-replica-period", 3600)
    if REDIS:
        r.config_set("repl-diskless-sync-delay", 0)  # redis-cli asks for a diskless payload
    # Line-buffered: redis-cli prints the stream's commands with printf.
    proc = subprocess.Popen(["stdbuf", "-oL", cli, "-p", str(server.port), "--replica"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in iter(proc.stdout.readline, b"")], daemon=True).start()
    seen = []
    try:
        wait_for_replicas(r, 1)
        # Redis streams once the replica's first ACK came: write until a write shows.
        deadline = time.time() + 15
        while b'"set","watched","value"\n' not in [line.lower() for line in seen] and time.time() < deadline:
            r.set("watched", "value")
            try:
                while True:
                    seen.append(lines.get(timeout=0.5))
            except queue.Empty:
                pass
        text = b"".join(seen).decode().lower()
        assert "sync done" in text and "logging commands from master." in text
        assert '"set","watched","value"' in text
    finally:
        proc.kill()
        proc.wait()
        r.config_set("repl-ping-replica-period", 10)


def test_a_redis_replica_follows_the_writes_from_its_sync_on(server, r, tmp_path):
    """A real redis-server replica (REPLICAOF) loads the payload and applies the stream."""
    redis_server = require_tool("redis-server")
    r.set("before", "x")
    port = free_port()
    proc = subprocess.Popen([redis_server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path),
                             "--save", "", "--replicaof", "127.0.0.1", str(server.port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        replica = redis.Redis(port=port, socket_timeout=5)
        for _ in range(200):
            try:
                if replica.info("replication")["master_link_status"] == "up":
                    break
            except redis.ConnectionError:
                pass
            time.sleep(0.05)
        assert replica.info("replication")["master_link_status"] == "up"
        r.set("a", "1", ex=100)
        r.rpush("l", "x", "y")
        r.select(1)
        r.set("in1", "v")
        r.select(0)
        r.delete("a")
        r.set("last", "1")
        for _ in range(100):
            if replica.get("last") == b"1":
                break
            time.sleep(0.05)
        assert replica.get("last") == b"1"
        assert replica.lrange("l", 0, -1) == [b"x", b"y"]
        assert replica.exists("a") == 0
        assert redis.Redis(port=port, db=1).get("in1") == b"v"
        assert replica.info("replication")["role"] == "slave"
        assert replica.get("before") == b"x"  # the payload carries the data
        info = r.info("replication")
        assert info["connected_slaves"] == 1 and info["slave0"]["port"] == port
    finally:
        proc.terminate()
        proc.wait()
