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
        [bytes.fromhex(p)[:-10] for p in REDIS_PAYLOADS.values()]
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
