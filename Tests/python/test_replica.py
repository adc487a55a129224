"""Being a replica (REPLICAOF host port, `replicaof` at start): the
handshake, the master's RDB loaded in place of the data, the stream
applied from then on, -READONLY for clients' writes, WAIT on the master,
ROLE and INFO replication on both sides, REPLICAOF NO ONE, and the link
coming back after the master restarts. Master and replica are the server
under test (KVCACHE_TARGET=redis runs them all on redis-server); the
kvcache_only tests pair this server with a real redis-server either way."""
import os
import signal
import threading
import time

import pytest
import redis

from conftest import REDIS, Server, fail_on, require_tool


def wait_until(check, timeout=15, what="the condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if check():
                return
        except redis.ConnectionError:
            pass
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s" % what)


def link_up(replica):
    return replica.info("replication")["master_link_status"] == "up"


def in_sync(master, replica):
    """The replica applied the whole stream (Redis's wait_for_ofs_sync)."""
    return master.info("replication")["master_repl_offset"] == replica.info("replication")["master_repl_offset"]


@pytest.fixture
def pair(fresh_server):
    """A master and a replica following it, linked and in sync. Redis's
    diskless transfer waits repl-diskless-sync-delay: 0 here."""
    args = ["--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"]
    master, replica = fresh_server(args=args), fresh_server(args=args)
    m, r = master.client(), replica.client()
    m.set("before", "1")
    m.rpush("list", "a", "b", "c")
    master.client(db=3).hset("hash", mapping={"f": "v", "g": "w"})
    m.set("ttl", "x", px=100000)
    assert r.replicaof("127.0.0.1", master.port)
    wait_until(lambda: link_up(r), what="the link")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    return master, replica


def test_the_replica_loads_the_masters_data_then_follows_its_writes(pair):
    master, replica = pair
    m, r = master.client(), replica.client()
    assert r.get("before") == b"1"
    assert r.lrange("list", 0, -1) == [b"a", b"b", b"c"]
    assert replica.client(db=3).hgetall("hash") == {b"f": b"v", b"g": b"w"}
    assert 90000 < r.pttl("ttl") <= 100000
    m.set("after", "2")
    m.incr("before")
    m.delete("list")
    master.client(db=5).sadd("set", "x", "y")
    m.expire("after", 500)
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert r.mget("before", "after") == [b"2", b"2"]
    assert r.exists("list") == 0
    assert replica.client(db=5).smembers("set") == {b"x", b"y"}
    assert 400 < r.ttl("after") <= 500
    assert r.dbsize() == m.dbsize()


def test_function_libraries_follow_the_master(pair):
    """FUNCTION LOAD, DELETE and FLUSH change no key but propagate (they
    raise Redis's dirty counter): the replica can FCALL what was loaded,
    unless the function is not declared no-writes (-READONLY then)."""
    master, replica = pair
    m, r = master.client(), replica.client()
    code = ("#!lua name=lib1\n"
            "redis.register_function{function_name='reader', callback=function() return 7 end, flags={'no-writes'}}\n"
            "redis.register_function('writer', function() return 8 end)")
    assert m.function_load(code) == b"lib1"
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert r.fcall("reader", 0) == 7
    assert r.fcall_ro("reader", 0) == 7
    with pytest.raises(redis.ResponseError, match="^You can't write against a read only replica"):
        r.execute_command("FCALL", "writer", 0)
    with pytest.raises(redis.ResponseError, match="^You can't write against a read only replica"):
        r.eval("#!lua\nreturn 1", 0)
    assert r.eval("return 1", 0) == 1
    with pytest.raises(redis.ResponseError, match="^You can't write against a read only replica"):
        r.eval("return redis.call('set', 'x', '1')", 0)
    m.function_load("#!lua name=lib2\nredis.register_function('f2', function() return 8 end)")
    m.function_delete("lib1")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert [dict(zip(lib[::2], lib[1::2]))[b"library_name"] for lib in r.function_list()] == [b"lib2"]
    m.function_flush()
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert r.function_list() == []


def test_the_snapshot_carries_the_function_libraries(fresh_server):
    """A library loaded before the replica attached arrives in the RDB
    (its FUNCTION2 record) and replaces the replica's own."""
    master = fresh_server(args=["--repl-diskless-sync-delay", "0"])
    replica = fresh_server()
    m, r = master.client(), replica.client()
    m.function_load("#!lua name=mlib\n"
                    "redis.register_function{function_name='mf', callback=function() return 1 end, flags={'no-writes'}}")
    r.function_load("#!lua name=own\nredis.register_function('own', function() return 2 end)")
    r.replicaof("127.0.0.1", master.port)
    wait_until(lambda: link_up(r), what="the link")
    assert r.fcall("mf", 0) == 1
    assert [dict(zip(lib[::2], lib[1::2]))[b"library_name"] for lib in r.function_list()] == [b"mlib"]


def test_write_subcommands_are_refused_on_a_read_only_replica(pair):
    master, replica = pair
    r = replica.client()
    for command in (["FUNCTION", "FLUSH"], ["FUNCTION", "DELETE", "x"], ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]):
        with pytest.raises(redis.ResponseError, match="^You can't write against a read only replica"):
            r.execute_command(*command)
    assert r.execute_command("FUNCTION", "LIST") == []


def test_a_stale_replica_serves_only_stale_commands_when_told_not_to(fresh_server):
    """replica-serve-stale-data no with the link down: -MASTERDOWN for what
    Redis does not flag `stale` (a script's allow-stale flag counts)."""
    nowhere = fresh_server()
    port = nowhere.port
    nowhere.stop()
    replica = fresh_server()
    r = replica.client()
    r.function_load("#!lua name=lib\n"
                    "redis.register_function{function_name='fresh', callback=function() return 1 end, flags={'no-writes'}}\n"
                    "redis.register_function{function_name='stale', callback=function() return 2 end, "
                    "flags={'allow-stale', 'no-writes'}}\n"
                    "redis.register_function{function_name='get', callback=function() return redis.call('get', 'x') end, "
                    "flags={'allow-stale', 'no-writes'}}")
    r.config_set("replica-serve-stale-data", "no")
    r.replicaof("127.0.0.1", port)
    try:
        with pytest.raises(redis.ResponseError, match=r"^Link with MASTER is down and replica-serve-stale-data is set to .no.\.$"):
            r.get("x")
        with pytest.raises(redis.exceptions.MasterDownError):
            r.fcall("fresh", 0)
        assert r.fcall("stale", 0) == 2
        with pytest.raises(redis.ResponseError, match="Can not execute the command on a stale replica"):
            r.fcall("get", 0)
        assert r.info("replication")["master_link_status"] == "down"
        r.config_set("replica-serve-stale-data", "yes")
        assert r.get("x") is None
    finally:
        r.replicaof("NO", "ONE")


def test_role_and_info_on_both_sides(pair):
    master, replica = pair
    m, r = master.client(), replica.client()
    m.set("k", "v")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    role = r.execute_command("ROLE")
    offset = r.info("replication")["master_repl_offset"]
    assert role[:4] == [b"slave", b"127.0.0.1", master.port, b"connected"] and role[4] == offset
    info = r.info("replication")
    assert (info["role"], info["master_host"], info["master_port"]) == ("slave", "127.0.0.1", master.port)
    assert info["master_sync_in_progress"] == 0 and info["slave_read_only"] == 1
    assert info["slave_repl_offset"] == offset and info["connected_slaves"] == 0
    assert info["master_replid"] == m.info("replication")["master_replid"]
    # The master sees the replica online at its listening port, with its ACKs.
    wait_until(lambda: m.info("replication")["slave0"]["offset"] == offset, what="the replica's ACK")
    slave = m.info("replication")["slave0"]
    assert (slave["ip"], slave["port"], slave["state"]) == ("127.0.0.1", replica.port, "online")
    assert m.execute_command("ROLE")[2] == [[b"127.0.0.1", str(replica.port).encode(), str(offset).encode()]]


def test_a_read_only_replica_refuses_clients_writes(pair):
    master, replica = pair
    r = replica.client()
    readonly = "You can't write against a read only replica."
    with pytest.raises(redis.ReadOnlyError, match=readonly):
        r.set("k", "v")
    with pytest.raises(redis.ReadOnlyError, match=readonly):
        r.delete("before")
    # In a transaction the write is refused when queued, and EXEC aborts.
    c = replica.raw()
    assert c.command("MULTI") == "OK"
    assert c.command("GET", "before") == "QUEUED"
    assert c.command("SET", "k", "v") == ("error", "READONLY " + readonly)
    assert c.command("EXEC") == ("error", "EXECABORT Transaction discarded because of previous errors.")
    assert r.get("before") == b"1" and r.exists("k") == 0
    # Reads still work, and so do writes once the replica is writable.
    assert r.config_set("replica-read-only", "no")
    assert r.set("local", "1") and r.get("local") == b"1"


def test_wait_counts_the_replicas_that_acknowledged(pair):
    master, replica = pair
    m = master.client()
    m.set("k", "v")
    assert m.wait(1, 5000) == 1
    started = time.monotonic()
    assert m.wait(2, 300) == 1  # only one replica: the timeout ends it
    assert time.monotonic() - started >= 0.25
    assert m.wait(0, 0) == 1
    with pytest.raises(redis.ResponseError, match="^WAIT cannot be used with replica instances"):
        replica.client().wait(1, 100)


def test_replicaof_no_one_keeps_the_data_and_takes_writes(pair):
    master, replica = pair
    m, r = master.client(), replica.client()
    old_id = m.info("replication")["master_replid"]
    assert r.replicaof("NO", "ONE")
    info = r.info("replication")
    assert info["role"] == "master" and info["master_replid"] != old_id and info["master_replid2"] == old_id
    assert r.get("before") == b"1"
    assert r.set("k", "v") and r.get("k") == b"v"
    m.set("later", "x")
    time.sleep(0.3)
    assert r.exists("later") == 0  # the link is gone


def test_replicaof_the_same_master_again_is_a_no_op(pair):
    master, replica = pair
    reply = replica.client().execute_command("REPLICAOF", "127.0.0.1", str(master.port))
    assert reply == b"OK Already connected to specified master"
    assert link_up(replica.client())


def test_the_link_comes_back_after_the_master_restarts(pair):
    master, replica = pair
    r = replica.client()
    master.restart()
    m = master.client()
    wait_until(lambda: link_up(r), what="the link after the restart")
    # The replica resynchronized: it holds what the master holds now.
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert sorted(r.keys("*")) == sorted(m.keys("*"))
    m.set("after-restart", "1")
    wait_until(lambda: r.get("after-restart") == b"1", what="the write after the restart")


def test_a_replica_started_with_replicaof_follows_at_once(fresh_server):
    master = fresh_server(args=["--repl-diskless-sync-delay", "0"])
    master.client().set("k", "v")
    replica = fresh_server(args=["--replicaof", "127.0.0.1", str(master.port)])
    r = replica.client()
    wait_until(lambda: link_up(r), what="the link")
    wait_until(lambda: r.get("k") == b"v", what="the key")
    assert r.config_get("replicaof") == {"replicaof": "127.0.0.1 %d" % master.port}


def test_a_replica_syncs_with_a_master_that_needs_a_password(fresh_server):
    master = fresh_server(args=["--requirepass", "secret", "--repl-diskless-sync-delay", "0"])
    master.client(password="secret").set("k", "v")
    replica = fresh_server(args=["--masterauth", "secret"])
    r = replica.client()
    r.replicaof("127.0.0.1", master.port)
    wait_until(lambda: link_up(r), what="the link")
    wait_until(lambda: r.get("k") == b"v", what="the key")


@pytest.mark.kvcache_only
@pytest.mark.parametrize("kvcache_is", ["replica", "master"])
def test_kvcache_and_redis_server_replicate_either_way(fresh_server, real_redis, kvcache_is):
    """A kvcache replica of a redis-server master (its diskless transfer,
    `$EOF:` marked, after its newlines), and a redis-server replica of a
    kvcache master: every type crosses, and so does the stream."""
    kvcache = fresh_server()
    master, replica = (real_redis, kvcache) if kvcache_is == "replica" else (kvcache, real_redis)
    m, r = master.client(), replica.client()
    m.config_set("repl-diskless-sync-delay", 0) if master is real_redis else None
    m.set("s", "v", ex=1000)
    m.rpush("l", *range(200))
    m.sadd("set", "a", "b", 7)
    m.hset("h", mapping={"f%d" % i: i for i in range(300)})
    m.zadd("z", {"a": 1.5, "b": -2})
    m.xadd("st", {"f": "v"}, id="1-1")
    r.replicaof("127.0.0.1", master.port)
    wait_until(lambda: link_up(r), timeout=20, what="the link")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert r.get("s") == b"v" and 990 < r.ttl("s") <= 1000
    assert r.lrange("l", 0, -1) == [str(i).encode() for i in range(200)]
    assert r.smembers("set") == {b"a", b"b", b"7"}
    assert r.hgetall("h") == {("f%d" % i).encode(): str(i).encode() for i in range(300)}
    assert r.zrange("z", 0, -1, withscores=True) == [(b"b", -2.0), (b"a", 1.5)]
    assert r.xrange("st") == [(b"1-1", {b"f": b"v"})]
    m.lpush("l", "new")
    m.hdel("h", "f0")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert r.lindex("l", 0) == b"new" and r.hexists("h", "f0") == 0
    assert m.wait(1, 5000) == 1
    # A dropped link continues from the master's backlog either way.
    m.execute_command("CLIENT", "KILL", "TYPE", "replica")
    m.set("during-drop", "x")
    wait_until(lambda: link_up(r) and r.get("during-drop") == b"x", timeout=20, what="the link to come back")
    assert m.info("stats")["sync_partial_ok"] == 1


def paused_replica_behind(pair):
    """The pair with the replica stopped (SIGSTOP) and the master one write
    ahead of what it acknowledged."""
    master, replica = pair
    master.client().config_set("shutdown-timeout", "30")
    os.kill(replica.proc.pid, signal.SIGSTOP)
    master.client().incr("counter")
    return master, replica


def test_shutdown_waits_for_a_lagging_replica_until_it_catches_up(pair):
    master, replica = paused_replica_behind(pair)
    m = master.client()
    master.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: m.info("server").get("shutdown_in_milliseconds", 0) > 0, what="the shutdown to wait")
    assert master.proc.poll() is None
    os.kill(replica.proc.pid, signal.SIGCONT)
    assert master.proc.wait(timeout=20) == 0
    master.proc = None
    assert replica.client().get("counter") == b"1"
    log = master.log()
    assert "Waiting for replicas before shutting down." in log
    assert "1 of 1 replicas are in sync when shutting down." in log
    assert "Lagging replica" not in log


def test_shutdown_gives_up_on_a_replica_after_shutdown_timeout(pair):
    master, replica = paused_replica_behind(pair)
    master.client().config_set("shutdown-timeout", "1")
    started = time.monotonic()
    try:
        assert master.stop() == 0
        assert time.monotonic() - started >= 0.9
        log = master.log()
        assert "Lagging replica" in log and "0 of 1 replicas are in sync when shutting down." in log
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)


def test_shutdown_blocks_its_client_until_abort(pair):
    """A SHUTDOWN waiting for a replica blocks its client, pauses writes and
    counts in blocked_clients; SHUTDOWN ABORT calls it off with Redis's error
    to the blocked client, and writes go on."""
    master, replica = paused_replica_behind(pair)
    m = master.client()
    try:
        waiting = master.client()
        sender = threading.Thread(target=lambda: outcome.append(catch(lambda: waiting.shutdown())))
        outcome = []
        sender.start()
        wait_until(lambda: m.info("clients")["blocked_clients"] == 1, what="SHUTDOWN to block")
        assert m.info("clients")["connected_clients"] == 2  # the feed is not a client, as in Redis
        assert m.info("server").get("shutdown_in_milliseconds", 0) > 0
        assert m.execute_command("SHUTDOWN", "ABORT") is True
        sender.join(10)
        assert "Errors trying to SHUTDOWN. Check logs." in str(outcome[0])
        assert "shutdown_in_milliseconds" not in m.info("server")  # only while one waits
        assert m.set("after", "1") and m.get("after") == b"1"
        with pytest.raises(redis.ResponseError, match="^No shutdown in progress."):
            m.execute_command("SHUTDOWN", "ABORT")
        with pytest.raises(redis.ResponseError, match="^syntax error"):
            m.execute_command("SHUTDOWN", "ABORT", "NOW")
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)


def catch(call):
    try:
        return call()
    except Exception as error:  # the outcome is the test's to judge
        return error


def test_min_replicas_to_write_counts_the_replicas_that_acknowledge(pair):
    master, replica = pair
    m = master.client()
    m.config_set("min-replicas-to-write", "1")
    # Redis counts a replica of a diskless sync once its first ACK came.
    wait_until(lambda: m.info("replication")["min_slaves_good_slaves"] == 1, what="a good replica")
    assert m.set("k", "1")
    m.config_set("min-replicas-to-write", "2")
    with pytest.raises(redis.ResponseError, match="^NOREPLICAS Not enough good replicas to write."):
        m.set("k", "2")
    m.config_set("min-replicas-to-write", "1")
    m.config_set("min-replicas-max-lag", "1")
    os.kill(replica.proc.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: m.info("replication")["min_slaves_good_slaves"] == 0, what="the replica to go bad")
        with pytest.raises(redis.ResponseError, match="^NOREPLICAS"):
            m.set("k", "3")
        assert m.get("k") == b"1"
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)
    wait_until(lambda: m.info("replication")["min_slaves_good_slaves"] == 1, what="the replica to come back")
    assert m.set("k", "4")


def test_a_replica_leaves_expiry_to_its_master(pair):
    """A key that expired reads as absent on the replica but stays until
    the master's DEL (DBSIZE counts it); the master's commands find it as
    the master has it, so an INCR that arrives late keeps its TTL (Redis's
    'Replication of an expired key does not delete the expired key')."""
    master, replica = pair
    m, r = master.client(db=9), replica.client(db=9)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    # The INCR must reach the master before the key expires there (else it
    # makes a new key without a TTL): a second of room for a loaded machine.
    m.set("k", "1", px=1500)
    wait_until(lambda: in_sync(m, r), what="the offsets")
    os.kill(replica.proc.pid, signal.SIGSTOP)
    try:
        assert m.incr("k") == 2 and m.pttl("k") > 0
        time.sleep(1.6)
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert r.exists("k") == 0 and r.get("k") is None
    assert r.dbsize() == m.dbsize() == 1
    r.execute_command("DEBUG", "OBJECT", "k")  # still there: raises if gone
    assert m.get("k") is None  # the master expires it, and sends DEL
    wait_until(lambda: r.dbsize() == 0, what="the master's DEL")


def test_keys_written_on_a_writable_replica_expire_there(pair):
    master, replica = pair
    r = replica.client(db=9)
    r.config_set("replica-read-only", "no")
    r.set("mine", "1", px=300)
    r.set("forever", "1")
    assert r.dbsize() == 2
    wait_until(lambda: r.dbsize() == 1, what="the replica's own key to expire")
    assert r.get("forever") == b"1" and r.exists("mine") == 0


def test_an_error_on_the_masters_stream_is_logged_and_counted(pair):
    """The replica drops its replies to the master, so a command of the
    stream that fails is logged (Redis's '== CRITICAL ==' line) and
    counted (unexpected_error_replies), and the stream goes on."""
    master, replica = pair
    m, r = master.client(), replica.client()
    r.config_set("replica-read-only", "no")
    r.set("n", "foo")
    m.execute_command("DEBUG", "REPLICATE", "fake-command-1")
    m.incrby("n", 1)
    m.set("after", "1")
    wait_until(lambda: r.get("after") == b"1", what="the stream after the errors")
    assert r.get("n") == b"foo" and m.get("n") == b"1"
    assert r.info("stats")["unexpected_error_replies"] == 2
    log = replica.log()
    assert log.count("== CRITICAL == This replica is sending an error to its master") == 2
    assert "fake-command-1" in log and "'incrby'" in log


def test_a_replica_of_a_replica_gets_the_masters_stream(pair, fresh_server):
    """A chained replica gets its master's stream as it came (Redis's
    proxying): the master's offsets, and the database that stream had
    selected when it attached (the snapshot's repl-stream-db)."""
    master, replica = pair
    m9 = master.client(db=9)
    m9.set("early", "1")
    wait_until(lambda: in_sync(master.client(), replica.client()), what="the offsets")
    chained = fresh_server(args=["--repl-diskless-sync-delay", "0"])
    c = chained.client()
    c.replicaof("127.0.0.1", replica.port)
    wait_until(lambda: link_up(c), what="the chained link")
    m9.set("late", "2")
    wait_until(lambda: chained.client(db=9).get("late") == b"2", what="the write in db 9 on the chained replica")
    assert chained.client(db=9).get("early") == b"1"
    assert c.get("late") is None
    wait_until(lambda: in_sync(master.client(), c), what="the chained replica to reach the master's offset")
    assert c.info("replication")["master_replid"] == master.client().info("replication")["master_replid"]


def test_becoming_a_replica_unblocks_blocked_clients(fresh_server):
    master = fresh_server(args=["--repl-diskless-sync-delay", "0"])
    server = fresh_server()
    blocked = server.client()
    outcome = []
    waiter = threading.Thread(target=lambda: outcome.append(catch(lambda: blocked.blpop("foo", 0))))
    waiter.start()
    wait_until(lambda: server.client().info("clients")["blocked_clients"] == 1, what="BLPOP to block")
    server.client().replicaof("127.0.0.1", master.port)
    waiter.join(10)
    assert "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)" \
        in str(outcome[0])
    server.client().replicaof("NO", "ONE")


def test_role_shows_the_handshake_while_the_master_keeps_psync_waiting(fresh_server):
    """A master that answers the handshake but not PSYNC (as a diskless one
    waiting for its delay): the replica's ROLE reads 'handshake'."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    replica = fresh_server()
    r = replica.client()
    r.replicaof("127.0.0.1", listener.getsockname()[1])
    listener.settimeout(10)
    conn, _ = listener.accept()
    try:
        conn.settimeout(10)
        # PING, REPLCONF listening-port, REPLCONF capa: each waits for its
        # answer, so one read takes one command.
        for answer in (b"+PONG\r\n", b"+OK\r\n", b"+OK\r\n"):
            assert conn.recv(4096).startswith(b"*")
            conn.sendall(answer)
        wait_until(lambda: r.execute_command("ROLE")[3] == b"handshake", what="the handshake state")
    finally:
        r.replicaof("NO", "ONE")
        conn.close()
        listener.close()


def test_bind_source_addr_is_the_address_the_link_comes_from(fresh_server):
    # Protected mode takes 127.0.0.1 and ::1 alone for loopback, as Redis's.
    master = fresh_server(args=["--repl-diskless-sync-delay", "0", "--protected-mode", "no"])
    replica = fresh_server()
    r = replica.client()
    r.config_set("bind-source-addr", "127.0.0.2")
    r.replicaof("127.0.0.1", master.port)
    wait_until(lambda: link_up(r), what="the link")
    assert master.client().info("replication")["slave0"]["ip"] == "127.0.0.2"


def test_the_snapshot_keeps_keys_that_expired_for_the_masters_del(fresh_server):
    """An expired key the master has not deleted yet is in its RDB, and the
    replica keeps it (Redis's loader drops expired keys only on a master)
    until the master's DEL."""
    args = ["--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"]
    master, replica = fresh_server(args=args), fresh_server(args=args)
    m, r = master.client(), replica.client()
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    m.set("gone", "1", px=50)
    m.set("kept", "1")
    time.sleep(0.1)
    r.replicaof("127.0.0.1", master.port)
    wait_until(lambda: link_up(r), what="the link")
    assert r.dbsize() == 2 and r.exists("gone") == 0
    assert m.get("gone") is None
    wait_until(lambda: r.dbsize() == 1, what="the master's DEL")


def test_a_transaction_of_the_master_reaches_a_chained_replica_whole(pair, fresh_server):
    master, replica = pair
    chained = fresh_server()
    c = chained.client()
    c.replicaof("127.0.0.1", replica.port)
    wait_until(lambda: link_up(c), what="the chained link")
    with master.client().pipeline(transaction=True) as p:
        p.set("a", "1").incr("a").rpush("l", "x")
        p.execute()
    wait_until(lambda: in_sync(master.client(), c), what="the chained replica's offset")
    assert c.get("a") == b"2" and c.lrange("l", 0, -1) == [b"x"]
    assert replica.client().info("replication")["master_repl_offset"] == c.info("replication")["master_repl_offset"]


def test_a_lost_link_continues_from_the_backlog(pair):
    """The link drops; the replica asks PSYNC <replid> <offset+1> and the
    master continues from its backlog: +CONTINUE, no new RDB, the writes
    made meanwhile arrive, and INFO counts a partial sync."""
    master, replica = pair
    m, r = master.client(), replica.client()
    m.set("before-drop", "1")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert m.info("stats")["sync_full"] == 1
    info = m.info("replication")
    assert info["repl_backlog_active"] == 1 and info["repl_backlog_histlen"] > 0
    m.execute_command("CLIENT", "KILL", "TYPE", "replica")
    m.set("during-drop", "2")
    master.client(db=4).set("elsewhere", "3")
    wait_until(lambda: link_up(r) and r.get("during-drop") == b"2", what="the link to come back")
    wait_until(lambda: in_sync(m, r), what="the offsets")
    assert replica.client(db=4).get("elsewhere") == b"3"
    assert r.get("before-drop") == b"1"
    stats = m.info("stats")
    assert stats["sync_partial_ok"] == 1 and stats["sync_full"] == 1
    m.config_resetstat()
    assert m.info("stats")["sync_partial_ok"] == 0 == m.info("stats")["sync_full"]
    m.set("after", "4")
    wait_until(lambda: r.get("after") == b"4", what="the stream after the continuation")


def test_the_backlog_is_freed_after_repl_backlog_ttl_without_replicas(pair):
    master, replica = pair
    m = master.client()
    m.config_set("repl-backlog-ttl", "1")
    before = m.info("replication")["master_replid"]
    assert replica.client().replicaof("NO", "ONE")
    wait_until(lambda: m.info("replication")["repl_backlog_active"] == 0, what="the backlog to be freed")
    assert m.info("replication")["master_replid"] != before
