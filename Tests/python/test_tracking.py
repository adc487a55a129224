"""Client-side caching (CLIENT TRACKING) as Redis 7.0: RESP3 invalidate
pushes, REDIRECT to a RESP2 subscriber of __redis__:invalidate, BCAST with
prefixes, OPTIN/OPTOUT, NOLOOP, nulls on FLUSHDB/FLUSHALL, invalidations by
writes, expiry and eviction, and the introspection commands. Expected bytes
are redis-server 7.0.15's (KVCACHE_TARGET=redis runs the shared tests there);
the per-cache scoping and eviction by capacity are kvcache-server's own."""
import socket
import time

import pytest
import redis


class Wire:
    """A raw connection that reads exact bytes."""

    def __init__(self, server, resp3=False):
        self.s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        self.buf = b""
        if resp3:
            self.send("HELLO", "3")
            self.read_until_quiet()

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)

    def expect(self, wanted, timeout=5):
        self.s.settimeout(timeout)
        while len(self.buf) < len(wanted):
            chunk = self.s.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        got, self.buf = self.buf[:len(wanted)], self.buf[len(wanted):]
        assert got == wanted

    def read_until_quiet(self, wait=0.2):
        self.s.settimeout(wait)
        data = self.buf
        self.buf = b""
        try:
            while True:
                chunk = self.s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        return data

    def nothing_more(self, wait=0.2):
        return self.read_until_quiet(wait) == b""

    def command(self, *args, reply):
        self.send(*args)
        self.expect(reply)

    def close(self):
        self.s.close()


def client_id(w):
    w.send("CLIENT", "ID")
    line = w.read_until_quiet()
    assert line.startswith(b":")
    return int(line[1:-2])


def invalidate(*keys):
    out = b">2\r\n$10\r\ninvalidate\r\n*%d\r\n" % len(keys)
    for k in keys:
        out += b"$%d\r\n%s\r\n" % (len(k), k)
    return out


def test_resp3_invalidation_by_another_clients_write(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    r.set("a", "1")
    r.set("b", "1")
    w.command("GET", "a", reply=b"$1\r\n1\r\n")
    r.incr("b")  # never read: no invalidation
    r.incr("a")
    w.expect(invalidate(b"a"))
    r.incr("a")  # the key left the table: told once
    assert w.nothing_more()
    w.command("MGET", "a", "b", reply=b"*2\r\n$1\r\n3\r\n$1\r\n2\r\n")
    r.delete("a", "b")
    got = w.read_until_quiet(0.5)
    assert got in (invalidate(b"a") + invalidate(b"b"), invalidate(b"b") + invalidate(b"a"))
    w.close()


def test_own_write_is_invalidated_after_the_reply(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    w.command("HSET", "myhash", "f", "1", reply=b":1\r\n")
    w.command("HGET", "myhash", "f", reply=b"$1\r\n1\r\n")
    w.command("HDEL", "myhash", "f", reply=b":1\r\n" + invalidate(b"myhash"))
    w.close()


def test_noloop_skips_own_writes(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", "NOLOOP", reply=b"+OK\r\n")
    w.command("GET", "k", reply=b"_\r\n")
    w.command("SET", "k", "1", reply=b"+OK\r\n")
    assert w.nothing_more()
    w.command("GET", "k", reply=b"$1\r\n1\r\n")
    r.set("k", "2")
    w.expect(invalidate(b"k"))
    w.close()


def test_transaction_invalidation_follows_exec_reply(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    w.command("MSET", "a", "1", "b", "2", reply=b"+OK\r\n")
    w.command("GET", "a", reply=b"$1\r\n1\r\n")
    w.command("MULTI", reply=b"+OK\r\n")
    w.command("INCR", "a", reply=b"+QUEUED\r\n")
    w.command("GET", "b", reply=b"+QUEUED\r\n")
    w.command("EXEC", reply=b"*2\r\n:2\r\n$1\r\n2\r\n" + invalidate(b"a"))
    w.close()


def test_redirect_to_a_resp2_subscriber(server, r):
    sub = Wire(server)
    redir = client_id(sub)
    sub.command("SUBSCRIBE", "__redis__:invalidate",
                reply=b"*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n")
    tracker_conn = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10,
                               protocol=2)
    assert tracker_conn.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", redir) == b"OK"
    assert tracker_conn.execute_command("CLIENT", "GETREDIR") == redir
    r.set("x", "1")
    assert tracker_conn.get("x") == b"1"
    r.set("x", "2")
    sub.expect(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nx\r\n")
    assert tracker_conn.get("x") == b"2"
    r.flushdb()
    # The null is in the tracking client's protocol (RESP2 here), as Redis sends it.
    sub.expect(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n")
    tracker_conn.close()
    sub.close()


def test_redirect_errors(c):
    assert c.command("CLIENT", "TRACKING", "on", "REDIRECT", "999999") == (
        "error", "ERR The client ID you want redirect to does not exist")
    assert c.command("CLIENT", "TRACKING", "on", "PREFIX", "a") == (
        "error", "ERR PREFIX option requires BCAST mode to be enabled")
    assert c.command("CLIENT", "TRACKING", "on", "BCAST", "OPTIN") == (
        "error", "ERR OPTIN and OPTOUT are not compatible with BCAST")
    assert c.command("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT") == (
        "error", "ERR You can't specify both OPTIN mode and OPTOUT mode")
    assert c.command("CLIENT", "TRACKING", "maybe") == ("error", "ERR syntax error")
    assert c.command("CLIENT", "TRACKING", "on", "FOO") == ("error", "ERR syntax error")
    assert c.command("CLIENT", "CACHING", "yes") == (
        "error", "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT "
                 "mode enabled")
    assert c.command("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "foo", "PREFIX", "fo") == (
        "error", "ERR Prefix 'foo' overlaps with another provided prefix 'fo'. "
                 "Prefixes for a single client must not overlap.")
    assert c.command("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "bar") == "OK"
    assert c.command("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "barb") == (
        "error", "ERR Prefix 'barb' overlaps with an existing prefix 'bar'. "
                 "Prefixes for a single client must not overlap.")
    assert c.command("CLIENT", "TRACKING", "on") == (
        "error", "ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
                 "and then re-enabling it with a different mode.")
    assert c.command("CLIENT", "TRACKING", "off") == "OK"
    assert c.command("CLIENT", "TRACKING", "on", "OPTIN") == "OK"
    assert c.command("CLIENT", "CACHING", "no") == (
        "error", "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    assert c.command("CLIENT", "TRACKING", "off") == "OK"


def test_bcast_prefixes(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "cart:", reply=b"+OK\r\n")
    r.set("user:1", "a")
    w.expect(invalidate(b"user:1"))
    r.set("other", "x")
    assert w.nothing_more()
    r.mset({"cart:9": "1"})
    w.expect(invalidate(b"cart:9"))
    w.send("CLIENT", "TRACKINGINFO")
    info = w.read_until_quiet()
    assert info == (b"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n"
                    b"$8\r\nprefixes\r\n*2\r\n$5\r\nuser:\r\n$5\r\ncart:\r\n") or \
        info == (b"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n"
                 b"$8\r\nprefixes\r\n*2\r\n$5\r\ncart:\r\n$5\r\nuser:\r\n")
    w.close()


def test_optin_tracks_only_after_caching_yes(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", "OPTIN", reply=b"+OK\r\n")
    r.set("k1", "1")
    r.set("k2", "1")
    w.command("GET", "k1", reply=b"$1\r\n1\r\n")
    w.command("CLIENT", "CACHING", "yes", reply=b"+OK\r\n")
    w.command("GET", "k2", reply=b"$1\r\n1\r\n")
    r.set("k1", "2")
    r.set("k2", "2")
    w.expect(invalidate(b"k2"))
    assert w.nothing_more()
    w.close()


def test_optout_skips_after_caching_no(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", "OPTOUT", reply=b"+OK\r\n")
    w.command("CLIENT", "CACHING", "no", reply=b"+OK\r\n")
    w.command("GET", "k1", reply=b"_\r\n")
    w.command("GET", "k2", reply=b"_\r\n")
    r.set("k1", "2")
    r.set("k2", "2")
    w.expect(invalidate(b"k2"))
    assert w.nothing_more()
    w.close()


def test_flush_sends_a_null(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    w.command("GET", "k", reply=b"_\r\n")
    r.flushall()
    w.expect(b">2\r\n$10\r\ninvalidate\r\n_\r\n")
    w.close()


def test_expiry_invalidates(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    r.set("soon", "1", px=100)
    w.command("GET", "soon", reply=b"$1\r\n1\r\n")
    w.expect(invalidate(b"soon"), timeout=5)  # the sweep removes it
    w.close()


def test_tracking_info_fields(server, r, c):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    w.command("MGET", "a", "b", reply=b"*2\r\n_\r\n_\r\n")
    b = Wire(server)
    b.command("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:", reply=b"+OK\r\n")
    fields = {}
    for line in c.command("INFO").decode().split("\r\n"):
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v
    assert fields["tracking_clients"] == "2"
    assert fields["tracking_total_keys"] == "2"
    assert fields["tracking_total_items"] == "2"
    assert fields["tracking_total_prefixes"] == "1"
    text = c.command("CLIENT", "LIST").decode()
    flags = sorted(dict(kv.split("=", 1) for kv in line.split(" "))["flags"] for line in text.splitlines())
    assert "t" in flags and "tB" in flags
    w.close()
    b.close()


def test_redir_broken(server, r):
    target = Wire(server)
    redir = client_id(target)
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", "REDIRECT", redir, reply=b"+OK\r\n")
    w.command("GET", "k", reply=b"_\r\n")
    target.close()
    time.sleep(0.2)
    r.set("k", "1")
    w.expect(b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % redir)
    w.close()


# --- kvcache-server's own: scoped by cache, eviction by capacity ---------------------

@pytest.mark.kvcache_only
def test_invalidations_are_scoped_by_cache(server, r):
    w = Wire(server, resp3=True)
    w.command("SELECT", "sessions", reply=b"+OK\r\n")
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    w.command("GET", "user:1", reply=b"_\r\n")
    r.set("user:1", "db0")  # the same name in db0: not this client's key
    assert w.nothing_more()
    other = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10)
    other.execute_command("SELECT", "sessions")
    other.set("user:1", "alice")
    w.expect(invalidate(b"user:1"))
    other.close()
    w.close()


@pytest.mark.kvcache_only
def test_bcast_hears_its_selected_cache_only(server, r):
    w = Wire(server, resp3=True)
    w.command("SELECT", "sessions", reply=b"+OK\r\n")
    w.command("CLIENT", "TRACKING", "on", "BCAST", reply=b"+OK\r\n")
    r.set("k", "db0")
    assert w.nothing_more()
    other = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10)
    other.execute_command("SELECT", "sessions")
    other.set("k", "v")
    w.expect(invalidate(b"k"))
    other.close()
    w.close()


@pytest.mark.kvcache_only
def test_eviction_invalidates(fresh_server):
    server = fresh_server(config_text="cache tiny 4kb fifo\n")
    w = Wire(server, resp3=True)
    w.command("SELECT", "tiny", reply=b"+OK\r\n")
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    other = redis.Redis(host="127.0.0.1", port=server.port, single_connection_client=True, socket_timeout=10)
    other.execute_command("SELECT", "tiny")
    other.set("first", "x" * 1000)
    w.command("GET", "first", reply=b"$1000\r\n" + b"x" * 1000 + b"\r\n")
    for i in range(6):
        other.set(f"k{i}", "x" * 1000)
    w.expect(invalidate(b"first"))
    assert other.exists("first") == 0
    other.close()
    w.close()


@pytest.mark.parametrize("cache", ["0", "sessions"])
def test_client_side_cache_example(server, cache):
    """Clients/examples/client_side_cache.py: a redis-py cache kept fresh by REDIRECT invalidations."""
    if cache != "0" and server.target == "redis":
        pytest.skip("named caches are kvcache-server's")
    import os
    import subprocess
    import sys
    from conftest import ROOT
    done = subprocess.run([sys.executable, os.path.join(ROOT, "Clients", "examples", "client_side_cache.py"),
                           str(server.port), cache], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["read: hello server", "read: hello local", "read: bonjour server",
                                        "after expiry: False"]


def test_script_that_reads_tracks_its_declared_keys(server, r):
    w = Wire(server, resp3=True)
    w.command("CLIENT", "TRACKING", "on", reply=b"+OK\r\n")
    w.command("EVAL", "redis.call('set', KEYS[1], 'x')", "1", "k1", reply=b"_\r\n")  # no read: nothing tracked
    r.set("k1", "y")
    assert w.nothing_more()
    w.command("EVAL", "redis.call('get', 'other')", "1", "k1", reply=b"_\r\n")   # a read: KEYS are tracked
    r.set("k1", "z")
    w.expect(invalidate(b"k1"))
    w.close()
