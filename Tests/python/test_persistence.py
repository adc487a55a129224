"""The write path as a user meets it: Redis's appendonly/appendfsync, the
append-only log replayed after a crash (torn or damaged), -LOADING, SAVE,
BGSAVE, BGREWRITEAOF, LASTSAVE, INFO persistence, a full memtable, and
cross-cache commands under kill -9."""
import glob
import os
import random
import socket
import struct
import subprocess
import time

import pytest

from conftest import BIN, MODE

pytestmark = pytest.mark.kvcache_only

DEBUG = ["--enable-debug-command", "yes"]


def wait_until(predicate, timeout=5.0, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def info(c, section="persistence"):
    text = c.command("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def segments(s):
    return sorted(glob.glob(os.path.join(s.data_dir(), "appendonlydir", "appendonly.aof.*.log")),
                  key=lambda p: int(p.rsplit(".", 2)[1]))


def record_offsets(path):
    """Offsets where each record of a segment starts, and the file's size."""
    data = open(path, "rb").read()
    offsets, at = [], 32
    while at + 8 <= len(data):
        length = struct.unpack_from("<I", data, at)[0]
        if at + 8 + length > len(data):
            break
        offsets.append(at)
        at += 8 + length
    return offsets, len(data)


def send_held_sets(c, count, value):
    """Holds the writer, then acknowledges `count` SETs of k<i> to `value`
    sent in one go (46 MB for 200,000 of 200 B: the connection's timeout
    must allow a debug build on a busy machine to read them)."""
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    c.send(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$%d\r\n%s\r\n" % (len(b"k%d" % i), i, len(value), value)
                    for i in range(count)))
    for _ in range(count):
        assert c.read_reply() == "OK"


def crash_and_respawn(s):
    """kill -9, then starts the server again without waiting for it to answer."""
    s.kill9()
    s.proc = None
    with open(s.log_path, "ab") as log:
        s.proc = subprocess.Popen(s.command_line(), stdout=log, stderr=subprocess.STDOUT)


def write_held(s, count, prefix="k"):
    """Holds the writer, then acknowledges `count` SETs: they live in memory
    and in the log only. Returns the client."""
    c = s.raw()
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    for i in range(count):
        assert c.command("SET", "%s%d" % (prefix, i), "v%d" % i) == "OK"
    assert info(c)["writer_paused"] == "1"
    return c


needs_log = pytest.mark.skipif(MODE == "no-aof", reason="the append-only log is off (appendonly no)")


@needs_log
def test_kill9_with_the_writer_held_loses_nothing_the_log_replays_it(fresh_server):
    s = fresh_server(args=DEBUG)
    c = write_held(s, 500)
    assert int(info(c)["memtable_bytes"]) > 0
    assert c.command("DEL", "k7") == 1
    assert c.command("EXPIRE", "k8", 1000) == 1
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("DBSIZE") == 499
    assert c.command("GET", "k499") == b"v499"
    assert c.command("EXISTS", "k7") == 0
    assert 990 <= c.command("TTL", "k8") <= 1000
    assert "DB loaded from append only file" in s.log()
    # Replayed writes reach SQLite, then the log is cut.
    assert wait_until(lambda: int(info(c)["memtable_bytes"]) == 0, timeout=10)
    assert wait_until(lambda: len(segments(s)) == 1 and record_offsets(segments(s)[0])[0] == [], timeout=10)


@needs_log
@pytest.mark.parametrize("where", ["inside", "boundary"])
def test_a_torn_log_keeps_everything_before_the_tear(fresh_server, where):
    s = fresh_server(args=DEBUG)
    write_held(s, 50)
    s.kill9()
    path = segments(s)[-1]
    offsets, size = record_offsets(path)
    assert sum(len(record_offsets(p)[0]) for p in segments(s)) == 50  # earlier segments wait for the writer
    assert len(offsets) >= 11
    last = offsets[-1]
    if where == "inside":
        cut = random.randrange(last + 1, size)  # a random byte inside the last record
        expected = 49
    else:
        k = random.randrange(10, len(offsets))  # a random record boundary
        cut = offsets[k]
        expected = k - (len(offsets) - 50)
    with open(path, "r+b") as f:
        f.truncate(cut)
    s.start()
    c = s.raw()
    assert c.command("DBSIZE") == expected
    assert c.command("GET", "k%d" % (expected - 1)) == b"v%d" % (expected - 1)
    assert c.command("EXISTS", "k%d" % expected) == 0
    torn = "short read while loading the AOF file" in s.log()
    assert torn == (where == "inside"), s.log()


@needs_log
def test_a_torn_tail_is_refused_when_aof_load_truncated_is_no(fresh_server):
    s = fresh_server(args=DEBUG + ["--aof-load-truncated", "no"])
    write_held(s, 5)
    s.kill9()
    path = segments(s)[-1]
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 3)
    with pytest.raises(RuntimeError):
        s.start()
    assert "aof-load-truncated is no" in s.log()


@needs_log
def test_damage_before_the_tail_stops_the_start_and_check_aof_fixes_it(fresh_server):
    s = fresh_server(args=DEBUG)
    write_held(s, 20)
    s.kill9()
    path = segments(s)[-1]
    offsets, _ = record_offsets(path)
    damaged = offsets[len(offsets) // 2]
    with open(path, "r+b") as f:
        f.seek(damaged + 20)
        byte = f.read(1)
        f.seek(damaged + 20)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(RuntimeError):
        s.start()
    assert "Bad record in the append-only log %s at offset %d" % (path, damaged) in s.log()
    log_dir = os.path.dirname(path)
    check = subprocess.run([BIN, "--check-aof", log_dir], capture_output=True, text=True)
    assert check.returncode == 1 and "BAD RECORD at offset %d" % damaged in check.stdout
    fix = subprocess.run([BIN, "--check-aof", "--fix", log_dir], capture_output=True, text=True)
    assert fix.returncode == 0 and "Successfully truncated AOF" in fix.stdout
    s.start()
    c = s.raw()
    kept = c.command("DBSIZE")
    assert 0 < kept < 20
    assert all(c.command("GET", "k%d" % i) == b"v%d" % i for i in range(kept))


@needs_log
@pytest.mark.slow  # 200,000 writes and their replay: one pass (a TSan-built server needs minutes)
def test_clients_get_loading_while_the_log_replays(fresh_server):
    s = fresh_server(args=DEBUG)
    c = s.raw()
    # 46 MB of requests in one send: a debug build on a busy machine takes
    # longer than the connection's default 10 s to read them all.
    c.sock.settimeout(120)
    send_held_sets(c, 200_000, b"x" * 200)
    crash_and_respawn(s)
    seen_loading = False
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", s.port), timeout=2) as sock:
                sock.sendall(b"GET k1\r\nINFO persistence\r\n")
                # Both replies: on a busy machine INFO's may come in a later segment.
                reply = b""
                while True:
                    chunk = sock.recv(65536)
                    reply += chunk
                    if not chunk or not reply.startswith(b"-LOADING") or b"loading:" in reply:
                        break
        except OSError:
            time.sleep(0.01)
            continue
        if reply.startswith(b"-LOADING Redis is loading the dataset in memory"):
            seen_loading = True
            assert b"loading:1" in reply
            continue
        assert reply.startswith(b"$200\r\n"), reply[:100]
        break
    assert seen_loading, "a replay of 200,000 records is seen loading"
    # DBSIZE waits (parked) until the 200,000 blind writes of the replay
    # are counted exactly; a debug build on a busy machine can take longer
    # than the connection's default 10 s to apply or look them up.
    c = s.raw()
    c.sock.settimeout(120)
    assert c.command("DBSIZE") == 200_000


@needs_log
@pytest.mark.slow  # 200,000 writes and their replay, as the test above
def test_a_count_waits_for_a_replays_totals_without_stalling_other_clients(fresh_server):
    """After a replay into a file that holds keys, the writer corrects the
    totals of the keys replayed blind. DBSIZE and INFO wait for it parked:
    other clients are served meanwhile (the loop used to wait)."""
    s = fresh_server(args=DEBUG)
    c = s.raw()
    c.sock.settimeout(120)
    for start in range(0, 2000, 500):
        c.send(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$3\r\nold\r\n" % (len(b"k%d" % i), i)
                        for i in range(start, start + 500)))
        for _ in range(500):
            assert c.read_reply() == "OK"
    assert c.command("SAVE") == "OK"  # k0..k1999 are in the file
    value = b"x" * 200
    send_held_sets(c, 200_000, value)
    crash_and_respawn(s)
    # Hold the writer while the log is still replaying, so the replayed
    # batch stays with it.
    held = False
    deadline = time.time() + 30
    while time.time() < deadline and not held:
        try:
            with socket.create_connection(("127.0.0.1", s.port), timeout=5) as sock:
                sock.sendall(b"DEBUG WRITER PAUSE\r\nINFO persistence\r\n")
                reply = b""
                while b"loading:" not in reply:
                    chunk = sock.recv(65536)
                    assert chunk, reply
                    reply += chunk
                assert reply.startswith(b"+OK\r\n"), reply[:100]
                assert b"loading:1" in reply, "the writer was held only after the replay ended"
                held = True
        except (ConnectionRefusedError, ConnectionResetError):
            time.sleep(0.005)
    assert held
    other = s.raw()
    other.sock.settimeout(60)
    assert wait_until(lambda: other.command("GET", "k1", raise_errors=False) == value, timeout=60)
    time.sleep(1.5)  # past the seal interval: the replayed writes are with the held writer
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as counting:
        counting.sendall(b"DBSIZE\r\n")
        assert other.command("PING") == "PONG"
        assert other.command("GET", "k3") == value
        counting.setblocking(False)
        with pytest.raises(BlockingIOError):
            counting.recv(100)
        counting.setblocking(True)
        assert other.command("DEBUG", "WRITER", "RESUME") == "OK"
        assert counting.recv(100) == b":200000\r\n"
    assert int(info(other, "keyspace")["db0"].split(",")[0].split("=")[1]) == 200_000


def test_save_bgsave_lastsave_and_bgrewriteaof(fresh_server):
    s = fresh_server(args=DEBUG)
    c = s.raw()
    before = c.command("LASTSAVE")
    assert abs(before - time.time()) < 5
    for i in range(100):
        c.command("SET", "k%d" % i, "v")
    assert int(info(c)["rdb_changes_since_last_save"]) > 0
    assert c.command("SAVE") == "OK"
    assert info(c)["memtable_bytes"] == "0"
    assert c.command("LASTSAVE") >= before
    c.command("SET", "more", "v")
    assert c.command("BGSAVE") in ("Background saving started", "Background saving scheduled")
    assert wait_until(lambda: info(c)["memtable_bytes"] == "0")
    assert int(info(c)["rdb_saves"]) >= 2
    if MODE != "no-aof":
        assert c.command("BGREWRITEAOF") in ("Background append only file rewriting started",
                                            "Background append only file rewriting scheduled")
        assert wait_until(lambda: info(c)["aof_rewrites"] == "1")
        assert wait_until(lambda: int(info(c)["aof_current_size"]) <= 32 * 2)
    assert c.command("BGSAVE", "NOW") == ("error", "ERR syntax error")


def test_info_persistence_has_redis_fields(fresh_server):
    s = fresh_server()
    fields = info(s.raw())
    for name in ["loading", "async_loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
                 "rdb_last_save_time", "rdb_last_bgsave_status", "aof_enabled", "aof_rewrite_in_progress",
                 "aof_rewrite_scheduled", "aof_last_bgrewrite_status", "aof_last_write_status",
                 "memtable_bytes", "memtable_max_bytes"]:
        assert name in fields, name
    assert fields["aof_enabled"] == ("0" if MODE == "no-aof" else "1")
    assert fields["loading"] == "0" and fields["aof_last_write_status"] == "ok"
    if MODE != "no-aof":
        assert "aof_current_size" in fields and "aof_buffer_length" in fields


def test_a_full_memtable_makes_writes_wait_then_refuses_them(fresh_server):
    s = fresh_server(args=DEBUG + ["--memtable-max-size", "200kb", "--memtable-full-timeout", "500"])
    c = write_held(s, 0)
    value = "x" * 1000
    refused = None
    for i in range(1000):
        started = time.time()
        reply = c.command("SET", "big%d" % i, value)
        if reply != "OK":
            refused = reply
            assert time.time() - started >= 0.4, "the write waited for room first"
            break
    assert refused == ("error", "ERR write refused: changes not yet in SQLite fill memtable-max-size (204800 bytes) "
                                "and the writer did not free room in time; try again")
    assert c.command("GET", "big0") == value.encode()  # reads go on
    # Held while the writer catches up, then taken.
    other = s.raw()
    other.send(b"SET waiting yes\r\n")
    time.sleep(0.1)
    assert c.command("DEBUG", "WRITER", "RESUME") == "OK"
    assert other.read_reply() == "OK"
    assert c.command("GET", "waiting") == b"yes"


@needs_log
def test_appendonly_and_appendfsync_change_at_run_time(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("CONFIG", "SET", "appendfsync", "always") == "OK"
    assert c.command("SET", "a", "1") == "OK"
    assert c.command("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    assert c.command("CONFIG", "SET", "appendonly", "no") == "OK"
    assert info(c)["aof_enabled"] == "0"
    assert c.command("SET", "b", "2") == "OK"
    assert c.command("CONFIG", "SET", "appendonly", "yes") == "OK"
    assert info(c)["aof_enabled"] == "1"
    assert c.command("SET", "c", "3") == "OK"
    s.kill9()
    s.start()
    c = s.raw()
    assert [c.command("GET", k) for k in ("a", "c")] == [b"1", b"3"]


@needs_log
def test_move_and_swapdb_are_whole_across_kill9(fresh_server):
    s = fresh_server(args=DEBUG)
    c = write_held(s, 200)
    for i in range(0, 200, 2):
        assert c.command("MOVE", "k%d" % i, "1") == 1
    assert c.command("SELECT", "2") == "OK"
    assert c.command("SET", "in2", "x") == "OK"
    assert c.command("SWAPDB", "1", "2") == "OK"
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("DBSIZE") == 100
    assert c.command("SELECT", "2") == "OK"
    assert c.command("DBSIZE") == 100  # the moved keys, swapped into db2
    assert c.command("GET", "k0") == b"v0"
    assert c.command("SELECT", "1") == "OK"
    assert c.command("GET", "in2") == b"x"
    # The files follow the names once the writer has caught up.
    assert c.command("SAVE") == "OK"
    s.stop()
    s.start()
    c = s.raw()
    assert c.command("SELECT", "1") == "OK"
    assert c.command("GET", "in2") == b"x" and c.command("DBSIZE") == 1


def test_appendonly_no_logs_only_what_spans_caches_and_keeps_it_whole(fresh_server):
    """Without appendonly, a write of one cache goes to SQLite alone (nothing
    is encoded for the log), while MOVE, SWAPDB and a transaction across
    caches are logged, so a kill -9 never half-applies them."""
    s = fresh_server(args=DEBUG + ["--appendonly", "no"])
    c = s.raw()
    for i in range(10):
        assert c.command("SET", "k%d" % i, "v%d" % i) == "OK"
    assert c.command("SAVE") == "OK"  # in the file
    logged = sum(os.path.getsize(p) for p in segments(s))
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    for i in range(200):
        assert c.command("SET", "lost%d" % i, "x" * 100) == "OK"
    assert sum(os.path.getsize(p) for p in segments(s)) == logged  # nothing encoded for them
    assert c.command("MOVE", "k0", "1") == 1
    assert c.command("MULTI") == "OK"
    assert c.command("SET", "t0", "a") == "QUEUED"
    assert c.command("SELECT", "3") == "QUEUED"
    assert c.command("SET", "t3", "b") == "QUEUED"
    assert c.command("EXEC") == ["OK", "OK", "OK"]
    assert c.command("SELECT", "0") == "OK"
    assert c.command("SWAPDB", "1", "2") == "OK"
    assert sum(os.path.getsize(p) for p in segments(s)) > logged
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("EXISTS", "k0") == 0 and c.command("GET", "k1") == b"v1"
    assert c.command("GET", "t0") == b"a"
    assert c.command("EXISTS", "lost0") == 0  # acknowledged, never applied: the promise of appendonly no
    assert c.command("SELECT", "2") == "OK" and c.command("GET", "k0") == b"v0"
    assert c.command("SELECT", "3") == "OK" and c.command("GET", "t3") == b"b"


def test_deprecated_durability_is_read_with_a_warning(fresh_server):
    s = fresh_server(args=["--durability", "everysec"])
    c = s.raw()
    assert info(c)["aof_enabled"] == "0"
    assert "'durability everysec' is deprecated" in s.log()


@needs_log
def test_a_list_changed_in_place_is_logged_as_its_commands_and_replayed(fresh_server):
    s = fresh_server(args=DEBUG)
    c = write_held(s, 0)
    model = []
    for i in range(5000):
        assert c.command("RPUSH", "l", "e%d" % i) == len(model) + 1
        model.append(b"e%d" % i)
    log_before = sum(os.path.getsize(p) for p in segments(s))
    for i in range(1000):  # each logged as the command, not as the 5,000-element list
        c.command("LPUSH", "l", "h%d" % i)
        model.insert(0, b"h%d" % i)
    grown = sum(os.path.getsize(p) for p in segments(s)) - log_before
    assert grown < 1000 * 100, "1,000 LPUSHes took %d bytes of log" % grown
    assert c.command("LPOP", "l", "3") == model[:3]
    del model[:3]
    assert c.command("RPOP", "l") == model.pop()
    assert c.command("LSET", "l", "10", "ten") == "OK"
    model[10] = b"ten"
    assert c.command("LINSERT", "l", "BEFORE", "ten", "nine") == len(model) + 1
    model.insert(10, b"nine")
    assert c.command("LREM", "l", "0", "e7") == 1
    model.remove(b"e7")
    assert c.command("LTRIM", "l", "2", "-3") == "OK"
    model = model[2:-2]
    assert c.command("EXPIRE", "l", "1000") == 1
    assert c.command("RPUSH", "other", "x") == 1
    assert c.command("MOVE", "other", "1") == 1  # a moved list is logged as its value
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("LRANGE", "l", "0", "-1") == model
    assert 990 <= c.command("TTL", "l") <= 1000
    assert c.command("EXISTS", "other") == 0
    assert c.command("SELECT", "1") == "OK" and c.command("LRANGE", "other", "0", "-1") == [b"x"]
    # Applied to SQLite and read back from the file after a clean restart.
    assert c.command("SELECT", "0") == "OK" and c.command("SAVE") == "OK"
    s.stop()
    s.start()
    assert s.raw().command("LRANGE", "l", "0", "-1") == model


def snapshot(c, keys):
    """Every collection's content, comparable across a restart (sets sorted)."""
    out = {}
    for key in keys:
        kind = c.command("TYPE", key)
        if kind == "list":
            out[key] = c.command("LRANGE", key, "0", "-1")
        elif kind == "set":
            out[key] = sorted(c.command("SMEMBERS", key))
        elif kind == "hash":
            out[key] = sorted(c.command("HGETALL", key))
        elif kind == "zset":
            out[key] = c.command("ZRANGE", key, "0", "-1", "WITHSCORES")
        else:
            out[key] = (kind, c.command("GET", key) if kind == "string" else None)
    return out


@needs_log
def test_sets_hashes_and_sorted_sets_changed_in_place_replay_after_kill9(fresh_server):
    s = fresh_server(args=DEBUG)
    c = write_held(s, 0)
    rng = random.Random(15)
    for i in range(3000):
        c.command("SADD", "s", "m%d" % rng.randrange(2000))
        c.command("HSET", "h", "f%d" % rng.randrange(1000), "v%d" % i)
        c.command("ZADD", "z", str(rng.randrange(100)), "m%d" % rng.randrange(1500))
        if i % 7 == 0:
            c.command("SREM", "s", "m%d" % rng.randrange(2000))
            c.command("HDEL", "h", "f%d" % rng.randrange(1000))
            c.command("ZREM", "z", "m%d" % rng.randrange(1500))
    log_before = sum(os.path.getsize(p) for p in segments(s))
    for i in range(500):  # each logged as the command, not as the whole collection
        c.command("ZADD", "z", "1000", "late%d" % i)
    assert sum(os.path.getsize(p) for p in segments(s)) - log_before < 500 * 100
    c.command("ZREMRANGEBYRANK", "z", "0", "9")
    c.command("ZPOPMAX", "z", "3")
    c.command("SPOP", "s", "5")            # random: logged as the SREM it did
    c.command("SRANDMEMBER", "s")
    c.command("HINCRBY", "h", "counter", "7")
    c.command("SINTERSTORE", "inter", "s", "s")
    c.command("ZUNIONSTORE", "zu", "2", "z", "s", "WEIGHTS", "2", "1")
    c.command("RPUSH", "l", "c", "a", "b")
    c.command("SORT", "l", "ALPHA", "STORE", "sorted")
    c.command("LMOVE", "l", "l2", "LEFT", "RIGHT")
    c.command("RENAME", "h", "h2")
    c.command("COPY", "z", "zcopy")
    c.command("BITFIELD", "bits", "SET", "u8", "0", "200", "INCRBY", "u4", "4", "3")
    c.command("BITOP", "NOT", "bits2", "bits")
    keys = ["s", "h2", "z", "inter", "zu", "l", "l2", "sorted", "zcopy", "bits", "bits2"]
    before = snapshot(c, keys)
    s.kill9()
    s.start()
    c = s.raw()
    assert snapshot(c, keys) == before
    assert c.command("SAVE") == "OK"
    s.stop()
    s.start()
    assert snapshot(s.raw(), keys) == before


@needs_log
def test_blocking_commands_replay_as_their_non_blocking_forms(fresh_server):
    s = fresh_server(args=DEBUG)
    c = write_held(s, 0)
    waiter = s.raw()
    waiter.send(b"*6\r\n$6\r\nBLMOVE\r\n$3\r\nsrc\r\n$3\r\ndst\r\n$4\r\nLEFT\r\n$5\r\nRIGHT\r\n")  # no timeout yet
    waiter.send(b"$1\r\n0\r\n")
    assert wait_until(lambda: info(c, "clients")["blocked_clients"] == "1")
    assert c.command("RPUSH", "src", "a", "b") == 2
    assert waiter.read_reply() == b"a"
    c.command("ZADD", "z", "1", "x", "2", "y")
    assert c.command("BZPOPMAX", "z", "0") == [b"z", b"y", b"2"]
    assert c.command("BLPOP", "src", "0") == [b"src", b"b"]
    c.command("RPUSH", "m", "1", "2", "3")
    assert c.command("BLMPOP", "0", "1", "m", "RIGHT", "COUNT", "2") == [b"m", [b"3", b"2"]]
    waiter.close()
    s.kill9()
    s.start()
    c = s.raw()
    assert c.command("LRANGE", "dst", "0", "-1") == [b"a"]
    assert c.command("EXISTS", "src") == 0
    assert c.command("ZRANGE", "z", "0", "-1") == [b"x"]
    assert c.command("LRANGE", "m", "0", "-1") == [b"1"]


def test_sigterm_with_the_writer_held_still_stops_cleanly_and_keeps_the_writes(fresh_server):
    s = fresh_server(args=DEBUG)
    write_held(s, 100)
    started = time.time()
    assert s.stop() == 0
    assert time.time() - started < 10
    s.start()
    c = s.raw()
    assert c.command("DBSIZE") == 100 and c.command("GET", "k99") == b"v99"
