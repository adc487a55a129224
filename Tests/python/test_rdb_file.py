"""A Redis dump file (dir/dbfilename, dump.rdb) in the data directory is
loaded at start-up, as redis-server loads it: this server imports it into
its caches once (again when the file changes), skips expired keys and
empty ones as Redis does, and refuses to start on a damaged file, with
Redis's log lines. The files here are built as Redis 7.0 writes them (its
test suite's own .rdb files are read by tools/redis-tests)."""
import os
import time

import pytest

from test_dump_restore import crc64, rdb_len, rdb_string, ziplist

pytestmark = pytest.mark.kvcache_only  # Redis under appendonly yes loads its AOF, not dump.rdb


def rdb_file(dbs, checksum=True, version=10):
    """An RDB file: the header, an AUX field, then per database SELECTDB,
    RESIZEDB and its keys as (key, type, encoded value, expiry ms or None)."""
    out = b"REDIS%04d" % version + b"\xfa" + rdb_string(b"redis-ver") + rdb_string(b"7.0.15")
    for db, keys in dbs.items():
        out += b"\xfe" + rdb_len(db) + b"\xfb" + rdb_len(len(keys)) + rdb_len(0)
        for key, type_byte, value, expires in keys:
            if expires is not None:
                out += b"\xfc" + expires.to_bytes(8, "little")
            out += bytes([type_byte]) + rdb_string(key) + value
    out += b"\xff"
    return out + (crc64(out) if checksum else 0).to_bytes(8, "little")


def later():
    return int(time.time() * 1000) + 3_600_000


def sample():
    return {
        0: [(b"s", 0, rdb_string(b"hello"), None),
            (b"ttl", 0, rdb_string(b"v"), later()),
            (b"gone", 0, rdb_string(b"v"), 1_000),
            (b"h", 13, rdb_string(ziplist([b"f1", b"v1", b"f2", 7])), None),
            (b"l", 1, rdb_len(2) + rdb_string(b"a") + rdb_string(b"b"), None),
            (b"empty", 2, rdb_len(0), None)],
        3: [(b"set", 2, rdb_len(2) + rdb_string(b"x") + rdb_string(b"y"), None)],
    }


def with_dump(fresh_server, content, args=()):
    s = fresh_server(args=list(args), start=False)
    os.makedirs(s.data_dir(), exist_ok=True)
    with open(os.path.join(s.data_dir(), "dump.rdb"), "wb") as f:
        f.write(content)
    return s


def test_dump_rdb_is_loaded_at_start(fresh_server):
    s = with_dump(fresh_server, rdb_file(sample())).start()
    c = s.raw()
    assert c.command("GET", "s") == b"hello"
    assert 3500 < c.command("TTL", "ttl") <= 3600
    assert c.command("EXISTS", "gone") == 0
    assert c.command("HGETALL", "h") == [b"f1", b"v1", b"f2", b"7"]
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"b"]
    assert c.command("EXISTS", "empty") == 0
    assert c.command("DBSIZE") == 4
    assert c.command("SELECT", "3") == "OK"
    assert sorted(c.command("SMEMBERS", "set")) == [b"x", b"y"]
    log = s.log()
    assert "rdbLoadObject skipping empty key: empty" in log
    assert "Done loading RDB, keys loaded: 5, keys expired: 1, empty keys skipped: 1." in log
    assert log.index("DB loaded from disk") < log.rindex("Ready to accept connections")
    # Its keys are in SQLite before the start ends: a kill -9 at once loses
    # none, in every mode (appendonly no too), and the file is not loaded again.
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("GET", "s") == b"hello" and c.command("HLEN", "h") == 2 and c.command("DBSIZE") == 4
    assert "Done loading RDB" not in s.log()[len(log):]
    # Its keys are this server's now: a later write is not undone by the file.
    c.command("SET", "s", "mine")
    s.restart()
    assert s.raw().command("GET", "s") == b"mine"


def test_a_new_dump_rdb_replaces_the_numbered_caches(fresh_server):
    s = with_dump(fresh_server, rdb_file(sample())).start()
    c = s.raw()
    c.command("SET", "extra", "1")
    c.command("SELECT", "sessions")
    c.command("SET", "named", "1")
    s.stop()
    with open(os.path.join(s.data_dir(), "dump.rdb"), "wb") as f:
        f.write(rdb_file({0: [(b"only", 0, rdb_string(b"1"), None)]}))
    s.start()
    c = s.raw()
    assert c.command("KEYS", "*") == [b"only"]
    assert c.command("SELECT", "3") == "OK" and c.command("DBSIZE") == 0
    assert c.command("SELECT", "sessions") == "OK" and c.command("GET", "named") == b"1"


def test_a_file_without_a_checksum_loads(fresh_server):
    s = with_dump(fresh_server, rdb_file(sample(), checksum=False)).start()
    assert s.raw().command("GET", "s") == b"hello"


@pytest.mark.parametrize("damage, line", [
    ("checksum", "Wrong RDB checksum expected"),
    ("value", "Internal error in RDB reading offset"),
    ("cut", "Short read or OOM loading DB. Unrecoverable error, aborting now."),
    ("signature", "Wrong signature trying to load DB from file"),
    ("version", "Can't handle RDB format version 11"),
])
def test_a_damaged_dump_rdb_stops_the_start(fresh_server, damage, line):
    good = rdb_file(sample())
    content = {
        "checksum": good[:-1] + bytes([good[-1] ^ 1]),
        "value": rdb_file({0: [(b"h", 13, rdb_string(ziplist([b"f", b"1", b"f", b"2"])), None)]}),
        "cut": good[:len(good) // 2],
        "signature": b"RODIS" + good[5:],
        "version": rdb_file(sample(), version=11),
    }[damage]
    s = with_dump(fresh_server, content)
    s.allowed_exit_codes = {1}
    with pytest.raises(RuntimeError):
        s.start()
    log = s.log()
    assert line in log, log[-2000:]
    assert "Terminating server after rdb file reading failure." in log
    if damage == "value":
        assert "Hash ziplist integrity check failed." in log
    # Nothing was loaded, and the file is left as it was: mended, it loads.
    with open(os.path.join(s.data_dir(), "dump.rdb"), "wb") as f:
        f.write(good)
    s.start()
    assert s.raw().command("GET", "s") == b"hello"
