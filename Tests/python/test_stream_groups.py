"""Consumer groups as Redis 7.0 has them: XGROUP (CREATE with MKSTREAM and
ENTRIESREAD, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP), XREADGROUP
(`>`, history IDs, COUNT, NOACK), XACK, XPENDING (summary, extended, IDLE,
consumer), XCLAIM (IDLE, TIME, RETRYCOUNT, FORCE, JUSTID, LASTID),
XAUTOCLAIM (COUNT, JUSTID, the deleted IDs), XINFO GROUPS, CONSUMERS and
STREAM FULL, the read counter and lag. Expected replies are redis-server
7.0.15's: KVCACHE_TARGET=redis runs them there."""
import time

from conftest import SYNTAX, WRONGTYPE, arity


def entry(sid, *fields):
    return [sid.encode(), [f if isinstance(f, bytes) else str(f).encode() for f in fields]]


def fields(flat):
    return dict(zip(flat[::2], flat[1::2]))


def stream_of(c, key, n, group=None, start="0"):
    for i in range(1, n + 1):
        c.command("XADD", key, "%d-0" % i, "f", str(i))
    if group:
        assert c.command("XGROUP", "CREATE", key, group, start) == "OK"


def test_xgroup_create_and_its_errors(c):
    assert c.command("XGROUP", "CREATE", "s", "g", "$") == (
        "error", "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
                 "the MKSTREAM option to create an empty stream automatically.")
    assert c.command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == "OK"
    assert c.command("XGROUP", "CREATE", "s", "g", "$") == ("error", "BUSYGROUP Consumer Group name already exists")
    assert c.command("XGROUP", "CREATE", "s", "h", "bad") == (
        "error", "ERR Invalid stream ID specified as stream command argument")
    assert c.command("XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "-2") == (
        "error", "ERR value for ENTRIESREAD must be positive or -1")
    assert c.command("XGROUP", "CREATE", "s", "h", "0", "FOO") == (
        "error", "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
    assert c.command("XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "3") == "OK"
    assert c.command("XGROUP", "FOO", "s", "g") == ("error", "ERR unknown subcommand 'FOO'. Try XGROUP HELP.")
    assert c.command("XGROUP", "CREATE", "s") == arity("xgroup|create")
    assert c.command("XGROUP", "HELP", "x") == arity("xgroup|help")
    assert c.command("XGROUP", "HELP")[0] == "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    c.command("SET", "str", "x")
    assert c.command("XGROUP", "CREATE", "str", "g", "$") == WRONGTYPE
    groups = c.command("XINFO", "GROUPS", "s")
    assert [fields(g)[b"name"] for g in groups] == [b"g", b"h"]
    assert fields(groups[1])[b"entries-read"] == 3 and fields(groups[0])[b"entries-read"] is None


def test_xgroup_setid_destroy_and_consumers(c):
    stream_of(c, "s", 3, "g")
    assert c.command("XGROUP", "SETID", "s", "nog", "0") == ("error", "NOGROUP No such consumer group 'nog' for key name 's'")
    assert c.command("XGROUP", "SETID", "s", "g", "$") == "OK"
    assert fields(c.command("XINFO", "GROUPS", "s")[0])[b"last-delivered-id"] == b"3-0"
    assert c.command("XGROUP", "SETID", "s", "g", "-", "ENTRIESREAD", "0") == "OK"
    assert c.command("XGROUP", "CREATECONSUMER", "s", "g", "alice") == 1
    assert c.command("XGROUP", "CREATECONSUMER", "s", "g", "alice") == 0
    assert c.command("XGROUP", "CREATECONSUMER", "s", "nog", "alice") == (
        "error", "NOGROUP No such consumer group 'nog' for key name 's'")
    c.command("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    assert c.command("XGROUP", "DELCONSUMER", "s", "g", "alice") == 2
    assert c.command("XGROUP", "DELCONSUMER", "s", "g", "alice") == 0
    assert c.command("XPENDING", "s", "g") == [0, None, None, None]
    assert c.command("XGROUP", "DESTROY", "s", "g") == 1
    assert c.command("XGROUP", "DESTROY", "s", "g") == 0
    assert c.command("XGROUP", "DESTROY", "missing", "g") == (
        "error", "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
                 "the MKSTREAM option to create an empty stream automatically.")


def test_xreadgroup_delivers_new_entries_and_history(c):
    stream_of(c, "s", 4, "g")
    assert c.command("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">") == [
        [b"s", [entry("1-0", "f", 1)]]]
    assert c.command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") == [
        [b"s", [entry("%d-0" % i, "f", i) for i in (2, 3, 4)]]]
    assert c.command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">") is None
    # History: a consumer's own pending entries; a deleted one shows as [id, nil].
    c.command("XDEL", "s", "3-0")
    assert c.command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0") == [
        [b"s", [entry("2-0", "f", 2), [b"3-0", None], entry("4-0", "f", 4)]]]
    assert c.command("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", "2") == [
        [b"s", [[b"3-0", None]]]]
    assert c.command("XREADGROUP", "GROUP", "g", "nobody", "STREAMS", "s", "0") == [[b"s", []]]
    pending = c.command("XPENDING", "s", "g", "-", "+", "10")
    # Each history read counts a delivery of the entries still in the stream.
    assert [(p[0], p[1], p[3]) for p in pending] == [(b"1-0", b"alice", 1), (b"2-0", b"bob", 2),
                                                     (b"3-0", b"bob", 1), (b"4-0", b"bob", 2)]
    group = fields(c.command("XINFO", "GROUPS", "s")[0])
    assert group[b"consumers"] == 3 and group[b"pending"] == 4 and group[b"last-delivered-id"] == b"4-0"


def test_xreadgroup_noack_and_errors(c):
    stream_of(c, "s", 2, "g")
    assert c.command("XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">") == [
        [b"s", [entry("1-0", "f", 1), entry("2-0", "f", 2)]]]
    assert c.command("XPENDING", "s", "g") == [0, None, None, None]
    assert c.command("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">") == (
        "error", "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option")
    assert c.command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "missing", ">") == (
        "error", "NOGROUP No such key 'missing' or consumer group 'g' in XREADGROUP with GROUP option")
    assert c.command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$") == (
        "error", "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this "
                 "consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just "
                 "return an empty result set.")
    assert c.command("XREADGROUP", "COUNT", "1", "STREAMS", "s", ">", "x") == (
        "error", "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    assert c.command("XREADGROUP", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">") == (
        "error", "ERR Missing GROUP option for XREADGROUP")
    assert c.command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s") == arity("xreadgroup")


def test_xack(c):
    stream_of(c, "s", 3, "g")
    c.command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert c.command("XACK", "s", "g", "1-0", "9-0") == 1
    assert c.command("XACK", "s", "g", "1-0") == 0
    assert c.command("XACK", "s", "g", "2-0", "bad") == ("error", "ERR Invalid stream ID specified as stream command argument")
    assert c.command("XACK", "s", "nog", "2-0") == 0
    assert c.command("XACK", "missing", "g", "bad") == 0
    assert c.command("XACK", "s", "g", "2-0", "3") == 2
    assert c.command("XPENDING", "s", "g") == [0, None, None, None]


def test_xpending_forms(c):
    stream_of(c, "s", 4, "g")
    c.command("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    c.command("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
    assert c.command("XPENDING", "s", "g") == [4, b"1-0", b"4-0", [[b"alice", b"2"], [b"bob", b"2"]]]
    assert [p[0] for p in c.command("XPENDING", "s", "g", "(1-0", "(4-0", "10")] == [b"2-0", b"3-0"]
    assert [p[0] for p in c.command("XPENDING", "s", "g", "-", "+", "10", "bob")] == [b"3-0", b"4-0"]
    assert c.command("XPENDING", "s", "g", "-", "+", "10", "nobody") == []
    assert len(c.command("XPENDING", "s", "g", "-", "+", "3")) == 3
    assert c.command("XPENDING", "s", "g", "-", "+", "-1") == []
    time.sleep(0.05)
    assert len(c.command("XPENDING", "s", "g", "IDLE", "30", "-", "+", "10")) == 4
    assert c.command("XPENDING", "s", "g", "IDLE", "99999999", "-", "+", "10") == []
    item = c.command("XPENDING", "s", "g", "-", "+", "1")[0]
    assert item[:2] == [b"1-0", b"alice"] and item[2] >= 30 and item[3] == 1
    assert c.command("XPENDING", "s", "g", "IDLE", "5", "-", "+") == SYNTAX
    assert c.command("XPENDING", "s", "g", "-", "+") == SYNTAX
    assert c.command("XPENDING", "s", "g", "-", "+", "x") == ("error", "ERR value is not an integer or out of range")
    assert c.command("XPENDING", "s", "nog") == ("error", "NOGROUP No such key 's' or consumer group 'nog'")
    assert c.command("XPENDING", "missing", "g") == ("error", "NOGROUP No such key 'missing' or consumer group 'g'")


def test_xclaim_options(c):
    stream_of(c, "s", 3, "g")
    c.command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    time.sleep(0.05)
    assert c.command("XCLAIM", "s", "g", "bob", "9999999", "1-0") == []  # not idle long enough
    assert c.command("XCLAIM", "s", "g", "bob", "10", "1-0") == [entry("1-0", "f", 1)]
    assert c.command("XCLAIM", "s", "g", "carol", "0", "1-0", "JUSTID") == [b"1-0"]
    assert c.command("XCLAIM", "s", "g", "carol", "0", "2-0", "RETRYCOUNT", "7", "TIME", "1000", "JUSTID") == [b"2-0"]
    pending = {p[0]: p for p in c.command("XPENDING", "s", "g", "-", "+", "10")}
    assert pending[b"1-0"][1] == b"carol" and pending[b"1-0"][3] == 2  # JUSTID does not count a delivery
    assert pending[b"2-0"][1] == b"carol" and pending[b"2-0"][3] == 7 and pending[b"2-0"][2] > 10_000
    # FORCE makes a pending entry for an entry of the stream nobody had.
    c.command("XADD", "s", "4-0", "f", "4")
    assert c.command("XCLAIM", "s", "g", "dave", "0", "4-0") == []
    assert c.command("XCLAIM", "s", "g", "dave", "0", "4-0", "FORCE", "JUSTID") == [b"4-0"]
    assert c.command("XCLAIM", "s", "g", "dave", "0", "9-0", "FORCE") == []
    # LASTID moves the group's last delivered ID forward only.
    assert c.command("XCLAIM", "s", "g", "dave", "0", "4-0", "JUSTID", "LASTID", "5-0") == [b"4-0"]
    assert fields(c.command("XINFO", "GROUPS", "s")[0])[b"last-delivered-id"] == b"5-0"
    # A pending entry whose stream entry went is dropped.
    c.command("XDEL", "s", "3-0")
    assert c.command("XCLAIM", "s", "g", "bob", "0", "3-0") == []
    assert b"3-0" not in {p[0] for p in c.command("XPENDING", "s", "g", "-", "+", "10")}
    assert c.command("XCLAIM", "s", "g", "bob", "0", "1-0", "FOO") == ("error", "ERR Unrecognized XCLAIM option 'FOO'")
    assert c.command("XCLAIM", "s", "g", "bob", "x", "1-0") == ("error", "ERR Invalid min-idle-time argument for XCLAIM")
    assert c.command("XCLAIM", "s", "g", "bob", "0", "1-0", "IDLE", "x") == (
        "error", "ERR Invalid IDLE option argument for XCLAIM")
    assert c.command("XCLAIM", "s", "nog", "bob", "0", "1-0") == ("error", "NOGROUP No such key 's' or consumer group 'nog'")


def test_xautoclaim_iterates_and_reports_deleted_entries(c):
    stream_of(c, "x", 5, "g")
    c.command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "x", ">")
    c.command("XDEL", "x", "2-0", "4-0")
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "0", "0", "COUNT", "2") == [
        b"3-0", [entry("1-0", "f", 1)], [b"2-0"]]
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "0", "3-0", "COUNT", "2") == [
        b"5-0", [entry("3-0", "f", 3)], [b"4-0"]]
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "0", "5-0", "JUSTID") == [b"0-0", [b"5-0"], []]
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "0", "(5-0") == [b"0-0", [], []]
    pending = c.command("XPENDING", "x", "g", "-", "+", "10")
    assert [(p[0], p[1], p[3]) for p in pending] == [(b"1-0", b"bob", 2), (b"3-0", b"bob", 2), (b"5-0", b"bob", 1)]
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "0", "0", "COUNT", "0") == ("error", "ERR COUNT must be > 0")
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "x", "0") == (
        "error", "ERR Invalid min-idle-time argument for XAUTOCLAIM")
    assert c.command("XAUTOCLAIM", "x", "nog", "bob", "0", "0") == ("error", "NOGROUP No such key 'x' or consumer group 'nog'")
    assert c.command("XAUTOCLAIM", "x", "g", "bob", "0", "0", "FOO") == SYNTAX


def test_xinfo_groups_consumers_and_full(c):
    for i in range(100, 105):
        c.command("XADD", "x", str(i), chr(ord("a") + i - 100), "1")
    c.command("XGROUP", "CREATE", "x", "g1", "0")
    c.command("XGROUP", "CREATE", "x", "g2", "0")
    c.command("XREADGROUP", "GROUP", "g1", "Alice", "COUNT", "1", "STREAMS", "x", ">")
    c.command("XREADGROUP", "GROUP", "g1", "Bob", "COUNT", "1", "STREAMS", "x", ">")
    c.command("XREADGROUP", "GROUP", "g1", "Bob", "NOACK", "COUNT", "1", "STREAMS", "x", ">")
    c.command("XREADGROUP", "GROUP", "g2", "Charlie", "COUNT", "4", "STREAMS", "x", ">")
    c.command("XDEL", "x", "103")
    consumers = c.command("XINFO", "CONSUMERS", "x", "g1")
    assert [(fields(x)[b"name"], fields(x)[b"pending"]) for x in consumers] == [(b"Alice", 1), (b"Bob", 1)]
    assert list(fields(consumers[0])) == [b"name", b"pending", b"idle"]
    assert c.command("XINFO", "CONSUMERS", "x", "nog") == ("error", "NOGROUP No such consumer group 'nog' for key name 'x'")
    groups = [fields(g) for g in c.command("XINFO", "GROUPS", "x")]
    # A deleted entry after the last delivered one: the lag cannot be known.
    assert groups[0] == {b"name": b"g1", b"consumers": 2, b"pending": 2, b"last-delivered-id": b"102-0",
                         b"entries-read": 3, b"lag": None}
    assert groups[1][b"entries-read"] == 4 and groups[1][b"lag"] is None
    full = fields(c.command("XINFO", "STREAM", "x", "FULL"))
    assert full[b"length"] == 4 and [e[0] for e in full[b"entries"]] == [b"100-0", b"101-0", b"102-0", b"104-0"]
    g1 = fields(full[b"groups"][0])
    assert list(g1) == [b"name", b"last-delivered-id", b"entries-read", b"lag", b"pel-count", b"pending", b"consumers"]
    assert [(p[0], p[1], p[3]) for p in g1[b"pending"]] == [(b"100-0", b"Alice", 1), (b"101-0", b"Bob", 1)]
    alice = fields(g1[b"consumers"][0])
    assert list(alice) == [b"name", b"seen-time", b"pel-count", b"pending"] and alice[b"pel-count"] == 1
    assert [p[0] for p in alice[b"pending"]] == [b"100-0"]
    counted = fields(c.command("XINFO", "STREAM", "x", "FULL", "COUNT", "1"))
    assert len(counted[b"entries"]) == 1 and len(fields(counted[b"groups"][1])[b"pending"]) == 1


def test_read_counter_and_lag_with_deletes(c):
    stream_of(c, "x", 5)
    c.command("XDEL", "x", "3-0")
    c.command("XGROUP", "CREATE", "x", "g1", "0")
    lag = lambda: (fields(c.command("XINFO", "GROUPS", "x")[0])[b"entries-read"],  # noqa: E731
                   fields(c.command("XINFO", "GROUPS", "x")[0])[b"lag"])
    assert lag() == (None, None)
    for _ in range(3):
        c.command("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
        assert lag() == (None, None)
    c.command("XREADGROUP", "GROUP", "g1", "c", "COUNT", "1", "STREAMS", "x", ">")
    assert lag() == (5, 0)
    c.command("XADD", "x", "6-0", "f", "6")
    assert lag() == (5, 1)
    c.command("XGROUP", "CREATE", "e", "g", "0", "MKSTREAM")
    assert fields(c.command("XINFO", "GROUPS", "e")[0])[b"lag"] == 0
