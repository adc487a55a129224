"""DUMP and RESTORE in Redis's payload format: strings byte for byte as
Redis 7.0 DUMPs them, collections in the plain RDB encodings, Redis's
compact encodings restored, bad payloads refused, and payloads exchanged
with a real redis-server."""
import time

import pytest

from conftest import NOT_INT, SYNTAX


# ---------------------------------------------------------------------------
# DUMP and RESTORE
# ---------------------------------------------------------------------------

# Payloads DUMPed by redis-server 7.0.15 (in its compact encodings).
REDIS_PAYLOADS = {
    "list": "120102c3172f0f2f00000004008161020101ded4029e78e01400011fff0a009cd8e4b9c1ba2326",
    "intset": "0b0e02000000030000000100020003000a00a5025ce26d6e4d1b",
    "set": "0202016201610a0075d99d835ef85f65",
    "hash": "1012120000000400816602817602816e020c01ff0a0001369481d35b8974",
    "zset": "1114140000000400816102010181620283322e3504ff0a00d44c6ea4f644d9d7",
    "string": "000568656c6c6f0a006372df766534200a",
    "int": "00c1c7cf0a0067eda236b4db26d0",
    "lzf": "00c30a2802616261e01a010161620a00f727ec340732c3b6",
}


def test_dump_strings_as_redis_does(c):
    c.command("SET", "s", "hello")
    c.command("SET", "i", "-12345")
    c.command("SET", "lz", "ab" * 20)
    assert c.command("DUMP", "s").hex() == REDIS_PAYLOADS["string"]
    assert c.command("DUMP", "i").hex() == REDIS_PAYLOADS["int"]
    assert c.command("DUMP", "lz").hex() == REDIS_PAYLOADS["lzf"]
    assert c.command("DUMP", "missing") is None


def test_restore_payloads_from_redis(c):
    for name, payload in REDIS_PAYLOADS.items():
        assert c.command("RESTORE", name, "0", bytes.fromhex(payload)) == "OK", name
    assert c.command("LRANGE", "list", "0", "-1") == [b"a", b"1", b"-300", b"x" * 30]
    assert c.command("SMEMBERS", "intset") == [b"1", b"2", b"3"]
    assert c.command("OBJECT", "ENCODING", "intset") == b"intset"
    assert sorted(c.command("SMEMBERS", "set")) == [b"a", b"b"]
    assert c.command("HGETALL", "hash") == [b"f", b"v", b"n", b"12"]
    assert c.command("ZRANGE", "zset", "0", "-1", "WITHSCORES") == [b"a", b"1", b"b", b"2.5"]
    assert c.command("GET", "string") == b"hello"
    assert c.command("GET", "int") == b"-12345"
    assert c.command("GET", "lzf") == b"ab" * 20
    assert c.command("TTL", "list") == -1


def test_dump_restore_round_trip_of_each_kind(c):
    c.command("RPUSH", "l", "a", "12", "x" * 100, "")
    c.command("SADD", "s", "5", "-1")
    c.command("SADD", "w", "a", "b", "c")
    c.command("HSET", "h", "f", "v", "big", "y" * 200)
    c.command("ZADD", "z", "1.5", "a", "-inf", "b", "3", "c" * 80)
    c.command("SET", "str", "q" * 1000)
    for key in ["l", "s", "w", "h", "z", "str"]:
        payload = c.command("DUMP", key)
        assert c.command("RESTORE", key + "2", "0", payload) == "OK"
        assert c.command("TYPE", key + "2") == c.command("TYPE", key)
        assert c.command("OBJECT", "ENCODING", key + "2") == c.command("OBJECT", "ENCODING", key), key
    assert c.command("LRANGE", "l2", "0", "-1") == [b"a", b"12", b"x" * 100, b""]
    assert c.command("SMEMBERS", "s2") == [b"-1", b"5"]
    assert sorted(c.command("SMEMBERS", "w2")) == [b"a", b"b", b"c"]
    assert sorted(c.command("HGETALL", "h2")) == sorted([b"f", b"v", b"big", b"y" * 200])
    assert c.command("ZRANGE", "z2", "0", "-1", "WITHSCORES") == [b"b", b"-inf", b"a", b"1.5", b"c" * 80, b"3"]
    assert c.command("GET", "str2") == b"q" * 1000


def test_restore_options_and_errors(c):
    c.command("SET", "s", "hello")
    payload = c.command("DUMP", "s")
    assert c.command("RESTORE", "s", "0", payload) == ("error", "BUSYKEY Target key name already exists.")
    assert c.command("RESTORE", "s", "0", payload, "REPLACE") == "OK"
    assert c.command("RESTORE", "t", "-1", payload) == ("error", "ERR Invalid TTL value, must be >= 0")
    assert c.command("RESTORE", "t", "x", payload) == NOT_INT
    assert c.command("RESTORE", "t", "0", payload[:-1] + b"\x00") == (
        "error", "ERR DUMP payload version or checksum are wrong")
    assert c.command("RESTORE", "t", "0", b"short") == ("error", "ERR DUMP payload version or checksum are wrong")
    newer = bytearray(payload)
    newer[-10] = 11
    assert c.command("RESTORE", "t", "0", bytes(newer)) == ("error", "ERR DUMP payload version or checksum are wrong")
    assert c.command("RESTORE", "t", "0", payload, "BOGUS") == SYNTAX
    assert c.command("RESTORE", "t", "0", payload, "IDLETIME", "-1") == ("error", "ERR Invalid IDLETIME value, must be >= 0")
    assert c.command("RESTORE", "t", "0", payload, "FREQ", "256") == (
        "error", "ERR Invalid FREQ value, must be >= 0 and <= 255")
    assert c.command("RESTORE", "t", "0", payload, "IDLETIME", "1", "FREQ", "1") == SYNTAX
    assert c.command("RESTORE", "t", "0", payload, "IDLETIME", "10") == "OK"
    assert c.command("RESTORE", "u", "5000", payload) == "OK"
    assert 4000 < c.command("PTTL", "u") <= 5000
    future = int(time.time() * 1000) + 100000
    assert c.command("RESTORE", "v", str(future), payload, "ABSTTL") == "OK"
    assert 99 <= c.command("TTL", "v") <= 100
    assert c.command("RESTORE", "w", "1000", payload, "ABSTTL") == "OK"   # already expired: not created
    assert c.command("EXISTS", "w") == 0
    c.command("RPUSH", "x", "a")
    assert c.command("RESTORE", "x", "1000", payload, "ABSTTL", "REPLACE") == "OK"   # replaced by nothing
    assert c.command("EXISTS", "x") == 0


def test_restore_refuses_bad_data(c):
    # A valid footer around an unknown type, and around an empty list.
    for body in [b"\x63\x00", b"\x01\x00", b"\x00\xc3\x05\x10abc"]:
        assert c.command("RESTORE", "k", "0", with_footer(body)) == ("error", "ERR Bad data format"), body
    assert c.command("EXISTS", "k") == 0


def crc64(data):
    """Redis's crc64 (Jones polynomial, reflected)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x95AC9329AC4BC9B5 if crc & 1 else crc >> 1
    return crc


def with_footer(body):
    body = body + b"\x0a\x00"
    return body + crc64(body).to_bytes(8, "little")


@pytest.mark.kvcache_only
def test_restore_survives_mutated_payloads(c):
    """Damaged payloads with a valid footer are refused or stored whole:
    every value RESTORE accepts reads, changes and DUMPs again."""
    import random
    c.command("RPUSH", "l", "a", "12", "x" * 100)
    c.command("SADD", "s", "1", "2")
    c.command("HSET", "h", "f", "v")
    c.command("ZADD", "z", "1", "a", "2", "b")
    bodies = [c.command("DUMP", k)[:-10] for k in ["l", "s", "h", "z"]] + \
        [bytes.fromhex(p)[:-10] for p in REDIS_PAYLOADS.values()] + list(OLD_ENCODINGS.values())
    rnd = random.Random(7)
    touch = {"list": ("RPOP", "k"), "set": ("SADD", "k", "q"), "hash": ("HSET", "k", "f", "z"),
             "zset": ("ZADD", "k", "5", "q"), "string": ("GET", "k")}
    for _ in range(1500):
        body = bytearray(rnd.choice(bodies))
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(body))
            if rnd.random() < 0.6:
                body[at] = rnd.randrange(256)
            else:
                del body[at]
        reply = c.command("RESTORE", "k", "0", with_footer(bytes(body)), "REPLACE")
        assert reply in ("OK", ("error", "ERR Bad data format"))
        if reply == "OK":
            assert not isinstance(c.command(*touch[c.command("TYPE", "k")]), tuple)
            payload = c.command("DUMP", "k")
            if payload is not None:
                assert c.command("RESTORE", "k", "0", payload, "REPLACE") == "OK"
    assert c.command("PING") == "PONG"


def test_crc64_matches_redis_check_value():
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA


# Encodings of Redis before 7.0, which Redis 7.0's RESTORE still takes:
# ziplists (types 10, 12, 13), quicklists of ziplists (14), zipmaps (9).

def rdb_len(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x80" + n.to_bytes(4, "big")


def rdb_string(blob):
    return rdb_len(len(blob)) + blob


def zl_entry(value, prevlen):
    head = bytes([prevlen]) if prevlen < 254 else b"\xfe" + prevlen.to_bytes(4, "little")
    if isinstance(value, int):
        if 0 <= value <= 12:
            return head + bytes([0xF1 + value])
        for marker, width in [(0xFE, 1), (0xC0, 2), (0xF0, 3), (0xD0, 4), (0xE0, 8)]:
            if -(1 << (8 * width - 1)) <= value < 1 << (8 * width - 1):
                return head + bytes([marker]) + value.to_bytes(width, "little", signed=True)
    n = len(value)
    if n < 64:
        return head + bytes([n]) + value
    if n < 16384:
        return head + bytes([0x40 | n >> 8, n & 0xFF]) + value
    return head + b"\x80" + n.to_bytes(4, "big") + value


def ziplist(values, count=None):
    """A ziplist as Redis 6.2 writes one (zlbytes, zltail, zllen, entries, 0xff)."""
    entries, prev, tail = b"", 0, 10
    for value in values:
        entry = zl_entry(value, prev)
        tail = 10 + len(entries)
        entries += entry
        prev = len(entry)
    total = 10 + len(entries) + 1
    count = len(values) if count is None else count
    return total.to_bytes(4, "little") + tail.to_bytes(4, "little") + count.to_bytes(2, "little") + entries + b"\xff"


def zm_len(n, wide=False):
    return bytes([n]) if n < 254 and not wide else b"\xfe" + n.to_bytes(4, "little")


def zipmap(pairs, free=0, count=None, wide=False):
    """A zipmap as Redis 2.4 writes one: count, then field, value and free bytes."""
    out = bytes([len(pairs) if count is None else count])
    for field, value in pairs:
        out += zm_len(len(field), wide) + field + zm_len(len(value)) + bytes([free]) + value + b"\0" * free
    return out + b"\xff"


OLD_ENCODINGS = {
    "list_ziplist": bytes([10]) + rdb_string(ziplist([b"a", 5, -100, 1000, 100000, 1 << 40, -(1 << 20), b"x" * 70, 12, 13])),
    "quicklist": bytes([14, 2]) + rdb_string(ziplist([b"a", b"b"])) + rdb_string(ziplist([7, b"y" * 300])),
    "hash_ziplist": bytes([13]) + rdb_string(ziplist([b"f1", b"v1", b"n", 42])),
    "zset_ziplist": bytes([12]) + rdb_string(ziplist([b"a", b"1.5", b"b", 3])),
    "zipmap": bytes([9]) + rdb_string(zipmap([(b"k1", b"v1"), (b"name", b"z" * 300)], free=2)),
}


def test_restore_takes_the_encodings_of_older_redis(c):
    for name, body in OLD_ENCODINGS.items():
        assert c.command("RESTORE", name, "0", with_footer(body)) == "OK", name
    assert c.command("LRANGE", "list_ziplist", "0", "-1") == [
        b"a", b"5", b"-100", b"1000", b"100000", b"1099511627776", b"-1048576", b"x" * 70, b"12", b"13"]
    assert c.command("LRANGE", "quicklist", "0", "-1") == [b"a", b"b", b"7", b"y" * 300]
    assert c.command("HGETALL", "hash_ziplist") == [b"f1", b"v1", b"n", b"42"]
    assert c.command("ZRANGE", "zset_ziplist", "0", "-1", "WITHSCORES") == [b"a", b"1.5", b"b", b"3"]
    assert sorted(c.command("HGETALL", "zipmap")) == sorted([b"k1", b"v1", b"name", b"z" * 300])
    # Each is an ordinary value from then on: changed, DUMPed and restored again.
    assert c.command("RPUSH", "list_ziplist", "end") == 11
    assert c.command("HSET", "hash_ziplist", "n", "43") == 0
    for name in OLD_ENCODINGS:
        assert c.command("RESTORE", name + "2", "0", c.command("DUMP", name)) == "OK", name
    assert c.command("HGET", "hash_ziplist2", "n") == b"43"


DAMAGED_OLD_ENCODINGS = {
    "zlbytes one short": bytes([13]) + rdb_string(b"\x10" + ziplist([b"f", b"v"])[1:]),
    "a prevlen that is wrong": bytes([10]) + rdb_string(ziplist([b"a", b"b"]).replace(b"\x03\x01b", b"\x02\x01b")),
    "zllen over the entries": bytes([10]) + rdb_string(ziplist([b"a", b"b"], count=3)),
    "zltail not at the last entry": bytes([10]) + rdb_string(ziplist([b"a", b"b"])[:4] + b"\x0a\x00\x00\x00" + ziplist([b"a", b"b"])[8:]),
    "an unknown entry encoding": bytes([10]) + rdb_string(ziplist([b"a", 5]).replace(b"\x03\xf6", b"\x03\xc1")),
    "a hash ziplist with a field twice": bytes([13]) + rdb_string(ziplist([b"f", b"1", b"f", b"2"])),
    "a hash ziplist of an odd count": bytes([13]) + rdb_string(ziplist([b"f", b"1", b"g"])),
    "an empty list ziplist": bytes([10]) + rdb_string(ziplist([])),
    "a quicklist of one empty ziplist": bytes([14, 1]) + rdb_string(ziplist([])),
    "an empty zipmap": bytes([9]) + rdb_string(zipmap([])),
    "a zipmap field's small length in 5 bytes": bytes([9]) + rdb_string(zipmap([(b"k", b"v")], wide=True)),
    "a zipmap with a field twice": bytes([9]) + rdb_string(zipmap([(b"k", b"v"), (b"k", b"w")])),
    "a zipmap whose count is wrong": bytes([9]) + rdb_string(zipmap([(b"k", b"v")], count=2)),
    "a zipmap value past the end": bytes([9]) + rdb_string(zipmap([(b"k", b"v")], free=1)[:-2] + b"\xff"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED_OLD_ENCODINGS))
def test_restore_refuses_damaged_old_encodings(c, damage):
    reply = c.command("RESTORE", "k", "0", with_footer(DAMAGED_OLD_ENCODINGS[damage]))
    assert reply == ("error", "ERR Bad data format"), damage
    assert c.command("EXISTS", "k") == 0


@pytest.mark.kvcache_only
def test_a_refused_payload_logs_redis_reason(server, c):
    """Redis logs why a payload failed (its rdbReportCorruptRDB line), and
    Redis's corrupt-dump tests look for it."""
    for body, reason in [
        (DAMAGED_OLD_ENCODINGS["a hash ziplist with a field twice"], "Hash ziplist integrity check failed."),
        (DAMAGED_OLD_ENCODINGS["an empty zipmap"], "Zipmap integrity check failed."),
        (bytes([12]) + rdb_string(ziplist([b"a"])), "Zset ziplist integrity check failed."),
        (bytes([4, 2, 1]) + b"a" + bytes([1]) + b"b" + bytes([1]) + b"a" + bytes([1]) + b"d", "Duplicate hash fields detected"),
    ]:
        assert c.command("RESTORE", "k", "0", with_footer(body)) == ("error", "ERR Bad data format")
        deadline = time.time() + 5
        while "-> " + reason not in server.log() and time.time() < deadline:
            time.sleep(0.05)
        assert "Internal error in RDB reading offset 0, function at rdb.c:0 -> " + reason in server.log()


@pytest.mark.kvcache_only
def test_dumps_restore_in_redis(c, real_redis):
    """Payloads DUMPed here RESTORE in redis-server 7.0, and back."""
    real = real_redis.raw()
    c.command("RPUSH", "l", "a", "7", "x" * 300)
    c.command("SADD", "s", "3", "1")
    c.command("SADD", "w", "a", "b")
    c.command("HSET", "h", "f", "v", "n", "1")
    c.command("ZADD", "z", "1.5", "a", "2", "b", "inf", "c")
    c.command("SET", "str", "hello " * 50)
    for key, read in [("l", ("LRANGE", "0", "-1")), ("s", ("SMEMBERS",)), ("h", ("HGETALL",)),
                      ("z", ("ZRANGE", "0", "-1", "WITHSCORES")), ("str", ("GET",))]:
        assert real.command("RESTORE", key, "0", c.command("DUMP", key)) == "OK", key
        assert real.command(read[0], key, *read[1:]) == c.command(read[0], key, *read[1:]), key
        assert real.command("OBJECT", "ENCODING", key) == c.command("OBJECT", "ENCODING", key), key
        assert c.command("RESTORE", key + "-back", "0", real.command("DUMP", key)) == "OK"
        assert c.command(read[0], key + "-back", *read[1:]) == c.command(read[0], key, *read[1:]), key
    assert real.command("RESTORE", "w", "0", c.command("DUMP", "w")) == "OK"
    assert sorted(real.command("SMEMBERS", "w")) == [b"a", b"b"]
    real.close()


# ---------------------------------------------------------------------------
# MIGRATE: DUMP, RESTORE and DEL across two servers
# ---------------------------------------------------------------------------

def test_migrate_moves_a_key_with_its_ttl(server, c, fresh_server):
    target = fresh_server()
    there = target.raw()
    assert c.command("SET", "k", "v", "PX", "100000") == "OK"
    assert c.command("MIGRATE", "127.0.0.1", str(target.port), "k", "3", "5000") == "OK"
    assert c.command("EXISTS", "k") == 0
    assert there.command("SELECT", "3") == "OK"
    assert there.command("GET", "k") == b"v"
    assert 0 < there.command("PTTL", "k") <= 100000
    # Nothing left to move: NOKEY.
    assert c.command("MIGRATE", "127.0.0.1", str(target.port), "k", "3", "5000") == "NOKEY"


def test_migrate_copy_replace_and_keys(server, c, fresh_server):
    target = fresh_server()
    there = target.raw()
    port = str(target.port)
    assert c.command("RPUSH", "list", "a", "b") == 2
    assert c.command("SET", "s", "1") == "OK"
    assert c.command("MIGRATE", "127.0.0.1", port, "", "0", "5000", "COPY", "KEYS", "list", "s", "missing") == "OK"
    assert c.command("LRANGE", "list", "0", "-1") == [b"a", b"b"]       # COPY: kept here
    assert there.command("LRANGE", "list", "0", "-1") == [b"a", b"b"]
    assert there.command("PTTL", "s") == -1
    # The target holds them now: without REPLACE, its BUSYKEY comes back.
    assert c.command("MIGRATE", "127.0.0.1", port, "s", "0", "5000") == (
        "error", "ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    assert c.command("GET", "s") == b"1"                                 # not deleted
    assert c.command("SET", "s", "2") == "OK"
    assert c.command("MIGRATE", "127.0.0.1", port, "s", "0", "5000", "REPLACE") == "OK"
    assert there.command("GET", "s") == b"2" and c.command("EXISTS", "s") == 0


def test_migrate_refuses_bad_arguments_and_unreachable_targets(c):
    c.command("SET", "k", "v")
    assert c.command("MIGRATE", "127.0.0.1", "1", "k", "0", "5000", "KEYS", "k") == (
        "error", "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
    assert c.command("MIGRATE", "127.0.0.1", "1", "k", "0", "5000", "AUTH") == SYNTAX
    assert c.command("MIGRATE", "127.0.0.1", "1", "k", "0", "5000", "NOSUCH") == SYNTAX
    assert c.command("MIGRATE", "127.0.0.1", "1", "k", "x", "5000") == NOT_INT
    # A refused connection shows at the first write, as in Redis.
    assert c.command("MIGRATE", "127.0.0.1", "1", "k", "0", "5000") == (
        "error", "IOERR error or timeout writing to target instance")
    assert c.command("GET", "k") == b"v"


def test_migrate_authenticates_to_the_target(server, c, fresh_server):
    target = fresh_server(args=["--requirepass", "secret"])
    port = str(target.port)
    c.command("SET", "k", "v")
    reply = c.command("MIGRATE", "127.0.0.1", port, "k", "0", "5000", "AUTH", "wrong")
    assert reply[0] == "error" and reply[1].startswith("ERR Target instance replied with error: WRONGPASS")
    assert c.command("MIGRATE", "127.0.0.1", port, "k", "0", "5000", "AUTH2", "default", "secret") == "OK"
    there = target.raw()
    assert there.command("AUTH", "secret") == "OK" and there.command("GET", "k") == b"v"


def test_debug_set_skip_checksum_validation(fresh_server):
    # Redis's corrupt-dump tests: with the checksum check off, RESTORE
    # takes a payload whose CRC is wrong (its contents still checked).
    c = fresh_server(args=["--enable-debug-command", "yes"]).raw()
    assert c.command("RPUSH", "l", "a", "b") == 2
    payload = c.command("DUMP", "l")
    bad = payload[:-8] + b"\0" * 8
    assert c.command("RESTORE", "l2", "0", bad) == ("error", "ERR DUMP payload version or checksum are wrong")
    assert c.command("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1") == "OK"
    assert c.command("RESTORE", "l2", "0", bad) == "OK"
    assert c.command("LRANGE", "l2", "0", "-1") == [b"a", b"b"]
    assert c.command("RESTORE", "l3", "0", b"\x0e" + bad[1:])[0] == "error"  # contents still checked
    assert c.command("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0") == "OK"
    assert c.command("RESTORE", "l4", "0", bad) == ("error", "ERR DUMP payload version or checksum are wrong")
