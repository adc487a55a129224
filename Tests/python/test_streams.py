"""Streams as Redis 7.0 has them: XADD (IDs, NOMKSTREAM, MAXLEN and MINID
with = and ~ and LIMIT), XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID, XREAD
without BLOCK (RESP2 and RESP3 shapes), XINFO STREAM, the type everywhere
(TYPE, OBJECT ENCODING, SCAN TYPE, WRONGTYPE, DEL, EXPIRE, RENAME, COPY,
MOVE), keyspace events, COMMAND and ACL key specs, MEMORY USAGE. Expected
replies are redis-server 7.0.15's: KVCACHE_TARGET=redis runs them there."""
import socket

import pytest
import redis

from conftest import SYNTAX, WRONGTYPE, arity

INVALID_ID = ("error", "ERR Invalid stream ID specified as stream command argument")


def entry(sid, *fields):
    return [sid.encode(), [f if isinstance(f, bytes) else str(f).encode() for f in fields]]


def test_xadd_with_explicit_and_generated_ids(c):
    assert c.command("XADD", "s", "1-1", "a", "1") == b"1-1"
    assert c.command("XADD", "s", "1-*", "b", "2") == b"1-2"
    assert c.command("XADD", "s", "7", "c", "3") == b"7-0"
    generated = c.command("XADD", "s", "*", "d", "4")
    ms, seq = generated.split(b"-")
    assert int(ms) > 7 and int(seq) == 0
    assert c.command("XLEN", "s") == 4
    assert c.command("XADD", "s", "5-0", "x", "y") == (
        "error", "ERR The ID specified in XADD is equal or smaller than the target stream top item")
    assert c.command("XADD", "t", "0-0", "x", "y") == ("error", "ERR The ID specified in XADD must be greater than 0-0")
    assert c.command("EXISTS", "t") == 0
    assert c.command("XADD", "t", "0-*", "x", "y") == b"0-1"
    assert c.command("XADD", "u", "1-18446744073709551615", "a", "b") == b"1-18446744073709551615"
    assert c.command("XADD", "u", "1-*", "a", "b") == ("error", "ERR Elements are too large to be stored")
    assert c.command("XADD", "v", "18446744073709551615-18446744073709551615", "a", "b").startswith(b"1844")
    assert c.command("XADD", "v", "*", "a", "b") == (
        "error", "ERR The stream has exhausted the last possible ID, unable to add more items")


def test_xadd_argument_errors(c):
    assert c.command("XADD", "s") == arity("xadd")
    assert c.command("XADD", "s", "*") == arity("xadd")
    assert c.command("XADD", "s", "*", "f") == arity("xadd")
    assert c.command("XADD", "s", "*", "f", "v", "g") == arity("xadd")
    assert c.command("XADD", "s", "bad", "f", "v") == INVALID_ID
    assert c.command("XADD", "s", "MAXLEN", "-1", "*", "f", "v") == ("error", "ERR The MAXLEN argument must be >= 0.")
    assert c.command("XADD", "s", "MAXLEN", "x", "*", "f", "v") == ("error", "ERR value is not an integer or out of range")
    assert c.command("XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v") == (
        "error", "ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
    assert c.command("XADD", "s", "LIMIT", "5", "*", "f", "v") == (
        "error", "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    assert c.command("XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "f", "v") == (
        "error", "ERR syntax error, LIMIT cannot be used without the special ~ option")
    assert c.command("XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "*", "f", "v") == (
        "error", "ERR The LIMIT argument must be >= 0.")
    assert c.command("EXISTS", "s") == 0


def test_nomkstream_maxlen_and_minid(c):
    assert c.command("XADD", "s", "NOMKSTREAM", "*", "f", "v") is None
    assert c.command("EXISTS", "s") == 0
    for i in range(1, 11):
        c.command("XADD", "s", "MAXLEN", "=", "5", str(i), "f", str(i))
    assert c.command("XRANGE", "s", "-", "+") == [entry("%d-0" % i, "f", i) for i in range(6, 11)]
    assert c.command("XADD", "s", "MINID", "9", "11", "f", "11") == b"11-0"
    assert [e[0] for e in c.command("XRANGE", "s", "-", "+")] == [b"9-0", b"10-0", b"11-0"]
    # MAXLEN 0 keeps an empty stream: the key stays.
    assert c.command("XADD", "e", "MAXLEN", "0", "*", "f", "v")
    assert c.command("EXISTS", "e") == 1 and c.command("XLEN", "e") == 0


def test_approximate_trimming_removes_whole_nodes(c):
    assert c.command("CONFIG", "SET", "stream-node-max-entries", "10") == "OK"
    try:
        for i in range(1, 101):
            c.command("XADD", "s", str(i), "f", "v")
        # Whole nodes of 10 go while LIMIT allows (71 left, then 62: as Redis's test).
        c.command("XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "101", "f", "v")
        assert c.command("XLEN", "s") == 71
        c.command("XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "102", "f", "v")
        assert c.command("XLEN", "s") == 62
        assert c.command("XTRIM", "s", "MAXLEN", "~", "30") == 30
        assert c.command("XTRIM", "s", "MAXLEN", "~", "30") == 0
        # Exact by ID: two whole nodes, then four entries of the next marked deleted.
        assert c.command("XTRIM", "s", "MINID", "95") == 24
        assert c.command("XRANGE", "s", "-", "+", "COUNT", "1") == [entry("95-0", "f", "v")]
        assert c.command("XINFO", "STREAM", "s")[:6] == [b"length", 8, b"radix-tree-keys", 2, b"radix-tree-nodes", 6]
    finally:
        c.command("CONFIG", "SET", "stream-node-max-entries", "100")
    assert c.command("CONFIG", "GET", "stream-node-max-bytes") == [b"stream-node-max-bytes", b"4096"]


def test_xtrim_and_xdel(c):
    for i in range(1, 6):
        c.command("XADD", "s", str(i), "f", str(i))
    assert c.command("XDEL", "s", "2", "9-9", "2-0") == 1
    assert c.command("XDEL", "s", "bad") == INVALID_ID
    assert c.command("XDEL", "missing", "bad") == 0
    assert c.command("XTRIM", "s", "MAXLEN", "2") == 2
    assert c.command("XRANGE", "s", "-", "+") == [entry("4-0", "f", 4), entry("5-0", "f", 5)]
    assert c.command("XTRIM", "s") == arity("xtrim")
    assert c.command("XTRIM", "s", "LIMIT", "1") == (
        "error", "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    assert c.command("XTRIM", "s", "LIMIT", "0") == ("error", "ERR syntax error, XTRIM must be called with a trimming strategy")
    assert c.command("XTRIM", "s", "FOO", "1") == SYNTAX
    assert c.command("XTRIM", "s", "MAXLEN", "1", "NOMKSTREAM") == SYNTAX
    assert c.command("XTRIM", "missing", "MAXLEN", "1") == 0
    assert c.command("XTRIM", "s", "MAXLEN", "1", "LIMIT", "3") == (
        "error", "ERR syntax error, LIMIT cannot be used without the special ~ option")


def test_ranges_counts_and_exclusive_bounds(c):
    for sid in ["0-1", "1-0", "42-0", "42-42", "18446744073709551615-18446744073709551614"]:
        c.command("XADD", "s", sid, "f", "v")
    assert len(c.command("XRANGE", "s", "-", "+")) == 5
    assert [e[0] for e in c.command("XRANGE", "s", "(0-1", "(42-42")] == [b"1-0", b"42-0"]
    assert [e[0] for e in c.command("XREVRANGE", "s", "+", "-", "COUNT", "2")] == [
        b"18446744073709551615-18446744073709551614", b"42-42"]
    assert [e[0] for e in c.command("XRANGE", "s", "42", "42")] == [b"42-0", b"42-42"]
    assert c.command("XRANGE", "s", "-", "+", "COUNT", "0") is None
    assert c.command("XRANGE", "s", "-", "+", "COUNT", "-5") is None
    assert c.command("XRANGE", "missing", "-", "+", "COUNT", "0") == []
    assert c.command("XRANGE", "s", "(-", "+") == INVALID_ID
    assert c.command("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+") == (
        "error", "ERR invalid start ID for the interval")
    assert c.command("XRANGE", "s", "-", "(0-0") == ("error", "ERR invalid end ID for the interval")
    assert c.command("XRANGE", "s", "-", "+", "COUNT") == SYNTAX
    assert c.command("XRANGE", "s", "-", "+", "LIMIT", "1") == SYNTAX


def test_xread_replies_in_resp2_and_resp3(server, c):
    c.command("XADD", "a", "1-0", "f", "1")
    c.command("XADD", "b", "2-0", "f", "2")
    assert c.command("XREAD", "STREAMS", "a", "b", "0", "0") == [[b"a", [entry("1-0", "f", 1)]],
                                                                  [b"b", [entry("2-0", "f", 2)]]]
    assert c.command("XREAD", "COUNT", "1", "STREAMS", "a", "missing", "0", "0") == [[b"a", [entry("1-0", "f", 1)]]]
    assert c.command("XREAD", "STREAMS", "a", "$") is None
    assert c.command("XREAD", "STREAMS", "a", "1-0") is None
    r3 = redis.Redis(port=server.port, protocol=3)
    assert r3.xread({"a": "0", "b": "1"}) == {b"a": [[(b"1-0", {b"f": b"1"})]], b"b": [[(b"2-0", {b"f": b"2"})]]}
    r3.close()
    # On the wire: a map of key to entries, and RESP3's null when nothing is there.
    replies = resp3_replies(server.port, ("XREAD", "STREAMS", "a", "0"), ("XREAD", "STREAMS", "a", "$"))
    assert replies.endswith(b"%1\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\n1\r\n_\r\n")


def resp3_replies(port, *commands):
    """The bytes a RESP3 connection (HELLO 3) gets for `commands`."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"".join(encode(*args) for args in (("HELLO", "3"),) + commands))
    data = b""
    s.settimeout(0.5)
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    s.close()
    return data


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_xread_argument_errors(c):
    c.command("SET", "str", "x")
    assert c.command("XREAD", "STREAMS", "str", "0") == WRONGTYPE
    assert c.command("XREAD", "STREAMS", "s", "t", "0") == (
        "error", "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    assert c.command("XREAD", "COUNT", "1", "s", "0") == SYNTAX
    assert c.command("XREAD", "GROUP", "g", "c", "STREAMS", "s", "0") == (
        "error", "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
    assert c.command("XREAD", "NOACK", "STREAMS", "s", "0") == (
        "error", "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
    assert c.command("XREAD", "STREAMS", "s", ">") == (
        "error", "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
    assert c.command("XREAD", "BLOCK", "x", "STREAMS", "s", "0") == (
        "error", "ERR timeout is not an integer or out of range")
    assert c.command("XREAD", "BLOCK", "-1", "STREAMS", "s", "0") == ("error", "ERR timeout is negative")
    assert c.command("XREAD", "STREAMS", "s", "-") == INVALID_ID


def test_xsetid(c):
    assert c.command("XSETID", "missing", "1-1") == ("error", "ERR no such key")
    assert c.command("XSETID", "missing", "1-1", "0") == SYNTAX
    c.command("XADD", "s", "5-0", "f", "v")
    assert c.command("XSETID", "s", "1-1") == (
        "error", "ERR The ID specified in XSETID is smaller than the target stream top item")
    assert c.command("XSETID", "s", "6-0", "ENTRIESADDED", "0") == (
        "error", "ERR The entries_added specified in XSETID is smaller than the target stream length")
    assert c.command("XSETID", "s", "6-0", "ENTRIESADDED", "-1") == ("error", "ERR entries_added must be positive")
    assert c.command("XSETID", "s", "6-0", "MAXDELETEDID", "7-0") == (
        "error", "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
    assert c.command("XSETID", "s", "9-0", "ENTRIESADDED", "10", "MAXDELETEDID", "3-0") == "OK"
    info = c.command("XINFO", "STREAM", "s")
    fields = dict(zip(info[::2], info[1::2]))
    assert fields[b"last-generated-id"] == b"9-0" and fields[b"entries-added"] == 10
    assert fields[b"max-deleted-entry-id"] == b"3-0"
    assert c.command("XADD", "s", "8-0", "f", "v") == (
        "error", "ERR The ID specified in XADD is equal or smaller than the target stream top item")


def test_xinfo_stream_fields_in_redis_order(c):
    c.command("XADD", "s", "1-0", "a", "1")
    c.command("XADD", "s", "2-0", "b", "2")
    c.command("XDEL", "s", "1-0")
    assert c.command("XINFO", "STREAM", "s") == [
        b"length", 1, b"radix-tree-keys", 1, b"radix-tree-nodes", 2, b"last-generated-id", b"2-0",
        b"max-deleted-entry-id", b"1-0", b"entries-added", 2, b"recorded-first-entry-id", b"2-0", b"groups", 0,
        b"first-entry", entry("2-0", "b", 2), b"last-entry", entry("2-0", "b", 2)]
    full = c.command("XINFO", "STREAM", "s", "FULL", "COUNT", "0")
    assert full[14:] == [b"entries", [entry("2-0", "b", 2)], b"groups", []]
    assert c.command("XINFO", "STREAM", "s", "FULL", "COUNT") == (
        "error", "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.")
    assert c.command("XINFO", "STREAM", "missing") == ("error", "ERR no such key")
    assert c.command("XINFO", "HELP", "x") == arity("xinfo|help")
    assert c.command("XINFO", "FOO", "s") == ("error", "ERR unknown subcommand 'FOO'. Try XINFO HELP.")
    assert c.command("XINFO", "HELP")[0] == "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"


def test_the_type_everywhere(c):
    c.command("XADD", "s", "1-0", "f", "v")
    assert c.command("TYPE", "s") == "stream"
    assert c.command("OBJECT", "ENCODING", "s") == b"stream"
    c.command("SET", "str", "x")
    assert c.command("SCAN", "0", "TYPE", "stream") == [b"0", [b"s"]]
    for command in [("LPUSH", "s", "x"), ("GET", "s"), ("HGET", "s", "f"), ("SADD", "s", "m"), ("ZCARD", "s"),
                    ("XADD", "str", "*", "f", "v"), ("XLEN", "str"), ("XRANGE", "str", "-", "+"), ("SORT", "s")]:
        assert c.command(*command) == WRONGTYPE, command
    assert c.command("EXPIRE", "s", "100") == 1 and 0 < c.command("TTL", "s") <= 100
    assert c.command("RENAME", "s", "s2") == "OK" and c.command("XLEN", "s2") == 1
    assert c.command("COPY", "s2", "s3") == 1 and c.command("XRANGE", "s3", "-", "+") == [entry("1-0", "f", "v")]
    assert c.command("MOVE", "s3", "1") == 1
    assert c.command("SELECT", "1") == "OK" and c.command("XLEN", "s3") == 1 and c.command("SELECT", "0") == "OK"
    assert c.command("DEL", "s2") == 1 and c.command("EXISTS", "s2") == 0
    c.command("XADD", "u", "1-0", "f", "v")
    assert c.command("UNLINK", "u") == 1


def test_copy_keeps_groups_consumers_and_pending_entries(c):
    for i in range(100, 106):
        c.command("XADD", "x", str(i), "f", str(i))
    c.command("XGROUP", "CREATE", "x", "g1", "0")
    c.command("XGROUP", "CREATE", "x", "g2", "0")
    c.command("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "1", "STREAMS", "x", ">")
    c.command("XREADGROUP", "GROUP", "g1", "bob", "NOACK", "COUNT", "1", "STREAMS", "x", ">")
    c.command("XREADGROUP", "GROUP", "g2", "carol", "COUNT", "4", "STREAMS", "x", ">")
    c.command("XDEL", "x", "103")
    assert c.command("COPY", "x", "y") == 1
    info = c.command("XINFO", "STREAM", "x", "FULL")
    assert c.command("XINFO", "STREAM", "y", "FULL") == info
    assert c.command("DEL", "x") == 1
    assert c.command("XINFO", "STREAM", "y", "FULL") == info


def test_keyspace_events_of_stream_commands(server, r):
    r.config_set("notify-keyspace-events", "KEA")
    try:
        sub = server.client().pubsub()
        sub.psubscribe("__keyspace@0__:*")
        assert sub.get_message(timeout=5)["type"] == "psubscribe"
        r.xadd("s", {"f": "v"}, id="1-0")
        r.xadd("s", {"f": "v"}, id="2-0", maxlen=1, approximate=False)
        r.xdel("s", "2-0")
        r.xadd("s", {"f": "v"}, id="3-0")
        r.xtrim("s", maxlen=0)
        r.xgroup_create("s", "g", "$")
        r.xgroup_createconsumer("s", "g", "c")
        r.xgroup_setid("s", "g", "0")
        r.xgroup_delconsumer("s", "g", "c")
        r.xgroup_destroy("s", "g")
        r.execute_command("XSETID", "s", "9-0")
        got = []
        while len(got) < 12:
            m = sub.get_message(timeout=2)
            if m is None:
                break
            if m["type"] == "pmessage":
                got.append(m["data"].decode())
        assert got == ["xadd", "xadd", "xtrim", "xdel", "xadd", "xtrim", "xgroup-create",
                       "xgroup-createconsumer", "xgroup-setid", "xgroup-delconsumer", "xgroup-destroy", "xsetid"]
        sub.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_command_info_getkeys_and_acl_key_specs(server, c):
    info = c.command("COMMAND", "INFO", "xadd", "xread")
    assert info[0][:7] == [b"xadd", -5, ["write", "denyoom", "fast"], 1, 1, 1, ["@write", "@stream", "@fast"]]
    assert info[1][:7] == [b"xread", -4, ["readonly", "blocking", "movablekeys"], 0, 0, 0,
                           ["@read", "@stream", "@slow", "@blocking"]]
    assert c.command("COMMAND", "GETKEYS", "XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0") == [b"a", b"b"]
    assert c.command("COMMAND", "GETKEYS", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">") == [b"a"]
    assert c.command("ACL", "SETUSER", "reader", "on", "nopass", "+@stream", "~s*") == "OK"
    try:
        u = server.raw()
        assert u.command("AUTH", "reader", "x") == "OK"
        assert u.command("XADD", "s1", "1-0", "f", "v") == b"1-0"
        assert u.command("XREAD", "STREAMS", "s1", "0") == [[b"s1", [entry("1-0", "f", "v")]]]
        denied = u.command("XREAD", "STREAMS", "s1", "t1", "0", "0")
        assert denied[0] == "error" and denied[1].startswith("NOPERM")
        assert u.command("GET", "s1")[1].startswith("NOPERM")
        u.close()
    finally:
        c.command("ACL", "DELUSER", "reader")


def test_memory_usage_is_redis_figure(c):
    c.command("XADD", "s", "1-1", "a", "1", "b", "2")
    c.command("XADD", "s", "1-2", "a", "3", "b", "4")
    c.command("XADD", "s", "5-0", "other", "x")
    c.command("XDEL", "s", "1-2")
    # redis-server 7.0.15's MEMORY USAGE for this key (its 4096-byte node allocated up front).
    assert c.command("MEMORY", "USAGE", "s") == 4728
    assert c.command("RESTORE", "r", "0", c.command("DUMP", "s")) == "OK"
    assert c.command("MEMORY", "USAGE", "r") == 712  # restored: allocated to fit


def test_tracking_invalidates_stream_reads_as_redis(server, r):
    r.xadd("s", {"f": "v"}, id="1-0")
    r.xadd("t", {"f": "v"}, id="1-0")
    r.xgroup_create("s", "g", "0")
    listener = server.raw()
    listener_id = listener.command("CLIENT", "ID")
    assert listener.command("SUBSCRIBE", "__redis__:invalidate") == [b"subscribe", b"__redis__:invalidate", 1]
    reader = server.raw()
    assert reader.command("CLIENT", "TRACKING", "on", "REDIRECT", str(listener_id)) == "OK"
    reader.command("XRANGE", "s", "-", "+")
    reader.command("XREAD", "STREAMS", "t", "0")
    # Group bookkeeping does not touch the key (Redis calls no signalModifiedKey for it).
    r.xreadgroup("g", "c", {"s": ">"})
    r.xgroup_createconsumer("s", "g", "d")
    assert listener.command("PING") == [b"pong", b""]  # no invalidation came before it
    r.xadd("s", {"f": "w"}, id="2-0")
    r.xadd("t", {"f": "w"}, id="2-0")
    assert listener.read_reply() == [b"message", b"__redis__:invalidate", [b"s"]]
    assert listener.read_reply() == [b"message", b"__redis__:invalidate", [b"t"]]
    reader.close()
    listener.close()


def test_watch_sees_the_changes_redis_signals(server, c):
    c.command("XADD", "s", "1-0", "f", "v")
    c.command("XGROUP", "CREATE", "s", "g", "0")
    other = server.raw()

    def watched_exec(change):
        assert c.command("WATCH", "s") == "OK"
        other.command(*change)
        assert c.command("MULTI") == "OK"
        assert c.command("PING") == "QUEUED"
        return c.command("EXEC")
    # Group bookkeeping leaves a watched stream alone, as in Redis 7.0.
    assert watched_exec(("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")) == ["PONG"]
    assert watched_exec(("XACK", "s", "g", "1-0")) == ["PONG"]
    assert watched_exec(("XGROUP", "CREATECONSUMER", "s", "g", "d")) == ["PONG"]
    # New entries, deletes and trims change it.
    assert watched_exec(("XADD", "s", "2-0", "f", "v")) is None
    assert watched_exec(("XDEL", "s", "2-0")) is None
    assert watched_exec(("XDEL", "s", "9-0")) == ["PONG"]  # deleted nothing
    assert watched_exec(("XTRIM", "s", "MAXLEN", "0")) is None
    other.close()
