"""Pub/Sub as Redis 7.0: SUBSCRIBE and friends on the wire (RESP2 arrays and
RESP3 pushes, byte for byte), the subscribed-context rules, PUBSUB, shard
channels, INFO and CLIENT LIST fields, CLIENT REPLY, the pubsub class of
client-output-buffer-limit, and real clients (redis-py's pubsub() in RESP2
and RESP3, redis-cli). Expected replies are redis-server 7.0.15's
(KVCACHE_TARGET=redis runs them there)."""
import shutil
import socket
import subprocess
import time

import pytest
import redis

from conftest import arity


def raw_socket(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return s


def read_exact(s, n, timeout=10):
    s.settimeout(timeout)
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def send(s, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)


def expect(s, wanted):
    got = read_exact(s, len(wanted))
    assert got == wanted


def wait_for(predicate, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


# --- the wire, RESP2 ------------------------------------------------------------------

def test_subscribe_and_messages_are_resp2_arrays(server, r):
    s = raw_socket(server)
    send(s, "SUBSCRIBE", "chan1", "chan2")
    expect(s, b"*3\r\n$9\r\nsubscribe\r\n$5\r\nchan1\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$5\r\nchan2\r\n:2\r\n")
    assert r.publish("chan1", "hello") == 1
    expect(s, b"*3\r\n$7\r\nmessage\r\n$5\r\nchan1\r\n$5\r\nhello\r\n")
    send(s, "PSUBSCRIBE", "ch*")
    expect(s, b"*3\r\n$10\r\npsubscribe\r\n$3\r\nch*\r\n:3\r\n")
    assert r.publish("chan2", "world") == 2
    expect(s, b"*3\r\n$7\r\nmessage\r\n$5\r\nchan2\r\n$5\r\nworld\r\n"
              b"*4\r\n$8\r\npmessage\r\n$3\r\nch*\r\n$5\r\nchan2\r\n$5\r\nworld\r\n")
    send(s, "UNSUBSCRIBE", "chan1", "nosuch")
    expect(s, b"*3\r\n$11\r\nunsubscribe\r\n$5\r\nchan1\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$6\r\nnosuch\r\n:2\r\n")
    assert r.publish("chan1", "gone") == 1  # the pattern still matches
    expect(s, b"*4\r\n$8\r\npmessage\r\n$3\r\nch*\r\n$5\r\nchan1\r\n$4\r\ngone\r\n")
    s.close()


def test_subscribing_twice_counts_once(server, r):
    s = raw_socket(server)
    send(s, "SUBSCRIBE", "a", "a")
    expect(s, b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
    assert r.publish("a", "x") == 1
    s.close()


def test_unsubscribe_without_subscriptions_replies_null(c):
    assert c.command("UNSUBSCRIBE") == [b"unsubscribe", None, 0]
    assert c.command("PUNSUBSCRIBE") == [b"punsubscribe", None, 0]
    assert c.command("SUNSUBSCRIBE") == [b"sunsubscribe", None, 0]
    assert c.command("PUNSUBSCRIBE", "foo.*", "bar.*") == [b"punsubscribe", b"foo.*", 0]
    assert c.read_reply() == [b"punsubscribe", b"bar.*", 0]
    # Not subscribed after all that: ordinary commands run.
    assert c.command("PING") == "PONG"


def test_unsubscribe_all_leaves_subscribed_mode(c, r):
    assert c.command("SUBSCRIBE", "x", "y") == [b"subscribe", b"x", 1]
    assert c.read_reply() == [b"subscribe", b"y", 2]
    # One confirmation per channel, in an order Redis leaves to its hash table.
    first, second = c.command("UNSUBSCRIBE"), c.read_reply()
    assert sorted([first[1], second[1]]) == [b"x", b"y"]
    assert (first[0], first[2], second[0], second[2]) == (b"unsubscribe", 1, b"unsubscribe", 0)
    assert c.command("SET", "k", "v") == "OK"
    assert r.publish("x", "m") == 0


def test_subscribed_context_allows_only_pubsub_ping_quit_reset(c):
    c.command("SUBSCRIBE", "somechannel")
    assert c.command("GET", "k") == ("error", "ERR Can't execute 'get': only (P|S)SUBSCRIBE / "
                                      "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    assert c.command("CLIENT", "LIST") == ("error", "ERR Can't execute 'client|list': only (P|S)SUBSCRIBE / "
                                           "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    assert c.command("MULTI") == ("error", "ERR Can't execute 'multi': only (P|S)SUBSCRIBE / "
                                  "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    # Unknown commands and arity errors come first, as in Redis.
    assert c.command("NOSUCH") == ("error", "ERR unknown command 'NOSUCH', with args beginning with: ")
    assert c.command("GET") == arity("get")
    assert c.command("PING") == [b"pong", b""]
    assert c.command("PING", "foo") == [b"pong", b"foo"]
    assert c.command("PSUBSCRIBE", "p*") == [b"psubscribe", b"p*", 2]
    assert c.command("UNSUBSCRIBE", "somechannel") == [b"unsubscribe", b"somechannel", 1]
    assert c.command("PUNSUBSCRIBE") == [b"punsubscribe", b"p*", 0]
    assert c.command("PING") == "PONG"


def test_reset_leaves_subscribed_mode(c, r):
    c.command("SUBSCRIBE", "a")
    c.command("PSUBSCRIBE", "b*")
    c.command("SSUBSCRIBE", "s")
    assert c.command("RESET") == "RESET"
    assert c.command("GET", "k") is None
    assert r.pubsub_numsub("a") == [(b"a", 0)]
    assert r.pubsub_numpat() == 0


def test_quit_while_subscribed(c):
    c.command("SUBSCRIBE", "a")
    assert c.command("QUIT") == "OK"
    assert c.is_closed()


# --- PUBSUB ---------------------------------------------------------------------------

def test_pubsub_introspection(server, c, r):
    s1, s2 = raw_socket(server), raw_socket(server)
    send(s1, "SUBSCRIBE", "news.1", "news.2", "other")
    read_exact(s1, 3 * 3)  # at least the start of the confirmations
    send(s2, "SUBSCRIBE", "news.1")
    send(s2, "PSUBSCRIBE", "foo*", "bar*")
    send(s1, "PSUBSCRIBE", "foo*")
    send(s2, "SSUBSCRIBE", "shard1")
    assert wait_for(lambda: c.command("PUBSUB", "NUMPAT") == 2)
    assert wait_for(lambda: c.command("PUBSUB", "SHARDNUMSUB", "shard1") == [b"shard1", 1])
    assert sorted(c.command("PUBSUB", "CHANNELS")) == [b"news.1", b"news.2", b"other"]
    assert sorted(c.command("PUBSUB", "CHANNELS", "news.*")) == [b"news.1", b"news.2"]
    assert c.command("PUBSUB", "NUMSUB", "news.1", "news.2", "none") == [b"news.1", 2, b"news.2", 1, b"none", 0]
    assert c.command("PUBSUB", "NUMSUB") == []
    assert c.command("PUBSUB", "SHARDCHANNELS") == [b"shard1"]
    assert c.command("PUBSUB", "SHARDCHANNELS", "x*") == []
    assert c.command("PUBSUB", "SHARDNUMSUB", "shard1", "none") == [b"shard1", 1, b"none", 0]
    _, fields = info(c)
    assert fields["pubsub_channels"] == "3"
    assert fields["pubsub_patterns"] == "2"
    s1.close()
    s2.close()
    assert wait_for(lambda: c.command("PUBSUB", "NUMPAT") == 0)
    assert wait_for(lambda: c.command("PUBSUB", "CHANNELS") == [])
    assert c.command("PUBSUB", "SHARDCHANNELS") == []


def test_pubsub_errors_and_help(c):
    assert c.command("PUBSUB", "NUMPAT", "x") == arity("pubsub|numpat")
    assert c.command("PUBSUB", "CHANNELS", "a", "b") == (
        "error", "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.")
    assert c.command("PUBSUB", "FOO") == ("error", "ERR unknown subcommand 'FOO'. Try PUBSUB HELP.")
    assert c.command("PUBSUB") == arity("pubsub")
    assert c.command("PUBLISH", "a") == arity("publish")
    assert c.command("SUBSCRIBE") == arity("subscribe")
    assert c.command("PSUBSCRIBE") == arity("psubscribe")
    assert c.command("SSUBSCRIBE") == arity("ssubscribe")
    help_lines = c.command("PUBSUB", "HELP")
    assert help_lines[0] == "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert help_lines[-2:] == ["HELP", "    Prints this help."]
    assert "NUMPAT" in help_lines


def test_numpat_counts_unique_patterns(server, c):
    s1, s2 = raw_socket(server), raw_socket(server)
    send(s1, "PSUBSCRIBE", "foo*", "bar*")
    send(s2, "PSUBSCRIBE", "foo*", "baz*")
    assert wait_for(lambda: c.command("PUBSUB", "NUMPAT") == 3)
    s1.close()
    s2.close()


def test_glob_patterns_as_redis(server, r):
    s = raw_socket(server)
    send(s, "PSUBSCRIBE", "h?llo", "h[^e]llo", "x\\*y", "[a-c]z")
    read_exact(s, 1)
    assert wait_for(lambda: r.pubsub_numpat() == 4)
    assert r.publish("hello", "1") == 1    # h?llo
    assert r.publish("hallo", "2") == 2    # h?llo, h[^e]llo
    assert r.publish("x*y", "3") == 1      # escaped star
    assert r.publish("xay", "4") == 0
    assert r.publish("bz", "5") == 1
    assert r.publish("dz", "6") == 0
    s.close()


# --- shard channels -------------------------------------------------------------------

def test_ssubscribe_and_spublish(server, r, c):
    s = raw_socket(server)
    send(s, "SSUBSCRIBE", "s1", "s2")
    expect(s, b"*3\r\n$10\r\nssubscribe\r\n$2\r\ns1\r\n:1\r\n*3\r\n$10\r\nssubscribe\r\n$2\r\ns2\r\n:2\r\n")
    # Shard and ordinary subscriptions count apart.
    send(s, "SUBSCRIBE", "s1")
    expect(s, b"*3\r\n$9\r\nsubscribe\r\n$2\r\ns1\r\n:1\r\n")
    send(s, "PSUBSCRIBE", "s*")
    expect(s, b"*3\r\n$10\r\npsubscribe\r\n$2\r\ns*\r\n:2\r\n")
    assert r.execute_command("SPUBLISH", "s1", "hi") == 1   # patterns do not see shard messages
    expect(s, b"*3\r\n$8\r\nsmessage\r\n$2\r\ns1\r\n$2\r\nhi\r\n")
    assert r.publish("s1", "yo") == 2
    expect(s, b"*3\r\n$7\r\nmessage\r\n$2\r\ns1\r\n$2\r\nyo\r\n*4\r\n$8\r\npmessage\r\n$2\r\ns*\r\n$2\r\ns1\r\n$2\r\nyo\r\n")
    send(s, "SUNSUBSCRIBE")
    got = read_exact(s, 2 * len(b"*3\r\n$12\r\nsunsubscribe\r\n$2\r\ns1\r\n:1\r\n"))
    assert got in (b"*3\r\n$12\r\nsunsubscribe\r\n$2\r\ns1\r\n:1\r\n*3\r\n$12\r\nsunsubscribe\r\n$2\r\ns2\r\n:0\r\n",
                   b"*3\r\n$12\r\nsunsubscribe\r\n$2\r\ns2\r\n:1\r\n*3\r\n$12\r\nsunsubscribe\r\n$2\r\ns1\r\n:0\r\n")
    assert r.execute_command("SPUBLISH", "s1", "hi") == 0
    s.close()


def test_ssubscribe_in_multi_is_refused(c):
    assert c.command("MULTI") == "OK"
    assert c.command("SSUBSCRIBE", "s") == "QUEUED"
    assert c.command("EXEC") == [("error", "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")]


def test_subscribe_in_multi_is_allowed(c):
    assert c.command("MULTI") == "OK"
    assert c.command("SUBSCRIBE", "m") == "QUEUED"
    assert c.command("EXEC") == [[b"subscribe", b"m", 1]]
    assert c.command("UNSUBSCRIBE") == [b"unsubscribe", b"m", 0]


# --- RESP3 ----------------------------------------------------------------------------

def test_resp3_pushes_and_commands_while_subscribed(server, r):
    s = raw_socket(server)
    send(s, "HELLO", "3")
    s.settimeout(10)
    time.sleep(0.2)
    s.recv(65536)  # the HELLO map
    send(s, "SUBSCRIBE", "ch")
    expect(s, b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n")
    assert r.publish("ch", "hi") == 1
    expect(s, b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n")
    # RESP3 has no subscribed context: any command runs, PING answers PONG.
    send(s, "SET", "k", "v")
    expect(s, b"+OK\r\n")
    send(s, "PING")
    expect(s, b"+PONG\r\n")
    send(s, "PSUBSCRIBE", "c*")
    expect(s, b">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n")
    assert r.publish("ch", "x") == 2
    expect(s, b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n>4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$1\r\nx\r\n")
    send(s, "UNSUBSCRIBE", "nope")
    expect(s, b">3\r\n$11\r\nunsubscribe\r\n$4\r\nnope\r\n:2\r\n")
    send(s, "SUNSUBSCRIBE")
    expect(s, b">3\r\n$12\r\nsunsubscribe\r\n_\r\n:0\r\n")
    s.close()


def test_client_reply_off_keeps_pushes(server, r):
    s = raw_socket(server)
    send(s, "HELLO", "3")
    time.sleep(0.2)
    s.recv(65536)
    send(s, "CLIENT", "REPLY", "OFF")
    send(s, "SUBSCRIBE", "channel")
    expect(s, b">3\r\n$9\r\nsubscribe\r\n$7\r\nchannel\r\n:1\r\n")
    send(s, "SET", "k", "v")        # no reply
    send(s, "PSUBSCRIBE", "ch*")
    expect(s, b">3\r\n$10\r\npsubscribe\r\n$3\r\nch*\r\n:2\r\n")
    assert r.publish("channel", "hello") == 2
    expect(s, b">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n"
              b">4\r\n$8\r\npmessage\r\n$3\r\nch*\r\n$7\r\nchannel\r\n$5\r\nhello\r\n")
    send(s, "CLIENT", "REPLY", "ON")
    expect(s, b"+OK\r\n")
    send(s, "CLIENT", "REPLY", "SKIP")
    send(s, "GET", "k")             # skipped
    send(s, "GET", "k")
    expect(s, b"$1\r\nv\r\n")
    s.close()


# --- INFO, CLIENT LIST ----------------------------------------------------------------

def info(c, section="stats"):
    text = c.command("INFO", section).decode()
    fields = {}
    for line in text.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k] = v
    return text, fields


def test_client_list_shows_subscriptions(server, c):
    s = raw_socket(server)
    send(s, "CLIENT", "SETNAME", "watcher")
    expect(s, b"+OK\r\n")
    send(s, "SUBSCRIBE", "a", "b")
    send(s, "PSUBSCRIBE", "p*")
    send(s, "SSUBSCRIBE", "x")

    def line():
        text = c.command("CLIENT", "LIST").decode()
        return next(l for l in text.splitlines() if "name=watcher" in l)

    assert wait_for(lambda: " ssub=1 " in line())
    fields = dict(kv.split("=", 1) for kv in line().split(" "))
    assert fields["sub"] == "2"
    assert fields["psub"] == "1"
    assert fields["ssub"] == "1"
    assert fields["flags"] == "P"
    assert fields["cmd"] == "ssubscribe"
    s.close()


# --- client-output-buffer-limit pubsub ------------------------------------------------

def test_default_pubsub_output_limit(c):
    value = c.command("CONFIG", "GET", "client-output-buffer-limit")[1].decode()
    assert value.endswith("pubsub 33554432 8388608 60")


def test_slow_subscriber_is_disconnected_at_the_hard_limit(server, c, r):
    assert c.command("CONFIG", "SET", "client-output-buffer-limit", "pubsub 100000 0 0") == "OK"
    try:
        slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
        slow.connect(("127.0.0.1", server.port))
        send(slow, "SUBSCRIBE", "firehose")
        expect(slow, b"*3\r\n$9\r\nsubscribe\r\n$8\r\nfirehose\r\n:1\r\n")
        fast = raw_socket(server)
        send(fast, "SUBSCRIBE", "firehose")
        expect(fast, b"*3\r\n$9\r\nsubscribe\r\n$8\r\nfirehose\r\n:1\r\n")
        payload = b"x" * 10000
        frame = b"*3\r\n$7\r\nmessage\r\n$8\r\nfirehose\r\n$10000\r\n" + payload + b"\r\n"
        published = 0
        while published < 20000 and r.pubsub_numsub("firehose")[0][1] == 2:
            pipe = r.pipeline(transaction=False)
            for _ in range(50):
                pipe.publish("firehose", payload)
            pipe.execute()
            published += 50
            read_exact(fast, 50 * len(frame))   # the reading subscriber keeps up
        assert r.pubsub_numsub("firehose") == [(b"firehose", 1)]
        assert published < 20000
        # The slow one is closed: after what was sent, EOF.
        slow.settimeout(10)
        while True:
            chunk = slow.recv(1 << 20)
            if not chunk:
                break
        # The fast one still gets messages.
        assert r.publish("firehose", "last") == 1
        expect(fast, b"*3\r\n$7\r\nmessage\r\n$8\r\nfirehose\r\n$4\r\nlast\r\n")
        fast.close()
    finally:
        c.command("CONFIG", "SET", "client-output-buffer-limit", "pubsub 33554432 8388608 60")


# --- real clients ---------------------------------------------------------------------

@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub(server, protocol):
    sub = redis.Redis(host="127.0.0.1", port=server.port, protocol=protocol, socket_timeout=10)
    pub = server.client()
    ps = sub.pubsub()
    ps.subscribe("news")
    ps.psubscribe("n*")
    assert ps.get_message(timeout=5) == {"type": "subscribe", "pattern": None, "channel": b"news", "data": 1}
    assert ps.get_message(timeout=5) == {"type": "psubscribe", "pattern": None, "channel": b"n*", "data": 2}
    assert pub.publish("news", "hello") == 2
    assert ps.get_message(timeout=5) == {"type": "message", "pattern": None, "channel": b"news", "data": b"hello"}
    assert ps.get_message(timeout=5) == {"type": "pmessage", "pattern": b"n*", "channel": b"news", "data": b"hello"}
    ps.unsubscribe("news")
    assert ps.get_message(timeout=5) == {"type": "unsubscribe", "pattern": None, "channel": b"news", "data": 1}
    assert pub.pubsub_numsub("news") == [(b"news", 0)]
    ps.ping()
    pong = ps.get_message(timeout=5)
    assert pong["type"] == "pong"
    ps.close()
    sub.close()
    pub.close()


def test_redis_py_pubsub_callbacks_in_a_thread(server):
    sub = server.client()
    pub = server.client()
    got = []
    ps = sub.pubsub()
    ps.subscribe(**{"jobs": lambda m: got.append(m["data"])})
    thread = ps.run_in_thread(sleep_time=0.01)
    try:
        assert wait_for(lambda: pub.pubsub_numsub("jobs") == [(b"jobs", 1)])
        for i in range(100):
            pub.publish("jobs", str(i))
        assert wait_for(lambda: len(got) == 100)
        assert got == [str(i).encode() for i in range(100)]
    finally:
        thread.stop()
        thread.join(5)
        ps.close()


def test_redis_cli_subscriber(server, r):
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip("redis-cli is not installed")
    proc = subprocess.Popen([cli, "-p", str(server.port), "SUBSCRIBE", "alerts"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: r.pubsub_numsub("alerts") == [(b"alerts", 1)])
        assert r.publish("alerts", "disk full") == 1
        assert wait_for(lambda: r.publish("alerts", "bye") == 1)
        time.sleep(0.3)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    lines = out.decode().splitlines()
    assert lines[:6] == ["subscribe", "alerts", "1", "message", "alerts", "disk full"]
    assert r.pubsub_numsub("alerts") == [(b"alerts", 0)] or wait_for(
        lambda: r.pubsub_numsub("alerts") == [(b"alerts", 0)])


def test_client_kill_type_pubsub(server, c):
    sub = raw_socket(server)
    send(sub, "SUBSCRIBE", "k")
    expect(sub, b"*3\r\n$9\r\nsubscribe\r\n$1\r\nk\r\n:1\r\n")
    plain = raw_socket(server)
    send(plain, "PING")
    expect(plain, b"+PONG\r\n")
    assert c.command("CLIENT", "KILL", "TYPE", "pubsub") == 1
    sub.settimeout(5)
    assert sub.recv(10) == b""
    send(plain, "PING")
    expect(plain, b"+PONG\r\n")
    plain.close()


def test_client_reply_off_skip_on(server):
    s = raw_socket(server)
    send(s, "CLIENT", "REPLY", "OFF")
    send(s, "PING", "pong")
    send(s, "CLIENT", "REPLY", "ON")
    expect(s, b"+OK\r\n")
    send(s, "CLIENT", "REPLY", "SKIP")
    send(s, "PING", "skipped")
    send(s, "PING", "pong2")
    expect(s, b"$5\r\npong2\r\n")
    # ON right after SKIP answers, and stops the skip (Redis clears both flags).
    send(s, "CLIENT", "REPLY", "SKIP")
    send(s, "CLIENT", "REPLY", "ON")
    expect(s, b"+OK\r\n")
    send(s, "PING")
    expect(s, b"+PONG\r\n")
    send(s, "CLIENT", "REPLY", "MAYBE")
    expect(s, b"-ERR syntax error\r\n")
    s.close()
