"""Lua scripting as clients meet it: EVAL/EVALSHA/SCRIPT, the type
conversions both ways (RESP2 and RESP3), the sandbox, FUNCTION and FCALL,
busy scripts (-BUSY, SCRIPT KILL, FUNCTION KILL), real clients (redis-py's
Lock, a rate limiter), and a script's writes being one unit across kill -9.
Everything but the last two tests describes Redis and runs against it too."""
import threading
import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError, NoScriptError, ResponseError

from conftest import MODE


def test_eval_basics_and_conversions(r):
    assert r.eval("return 'hello'", 0) == b"hello"
    assert r.eval("return 100.5", 0) == 100
    assert r.eval("return true", 0) == 1
    assert r.eval("return false", 0) is None
    assert r.eval("return {ok='fine'}", 0) == b"fine"
    assert r.eval("return {1,2,3,'ciao',{1,2}}", 0) == [1, 2, 3, b"ciao", [1, 2]]
    assert r.eval("return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}", 2, "a", "b", "c", "d") == [b"a", b"b", b"c", b"d"]
    with pytest.raises(ResponseError, match="^this is an error$"):
        r.eval("return {err='this is an error'}", 0)
    r.set("x", "0")
    assert r.eval("return redis.pcall('incr', KEYS[1])", 1, "x") == 1
    assert r.eval("return redis.call('get', KEYS[1])", 1, "x") == b"1"
    assert r.eval("local t = redis.call('ping') return t['ok']", 0) == b"PONG"
    assert r.eval("return redis.call('get', 'nokey') == false", 0) == 1
    r.rpush("l", "a", "b")
    assert r.eval("return redis.call('lrange', KEYS[1], 0, -1)", 1, "l") == [b"a", b"b"]
    # A command's error raised from redis.call, caught by redis.pcall.
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        r.eval("return redis.call('incr', KEYS[1])", 1, "l")
    assert r.eval("local e = redis.pcall('incr', KEYS[1]) return e['err']", 1, "l").startswith(b"WRONGTYPE")
    with pytest.raises(ResponseError, match="Unknown Redis command called from script"):
        r.eval("redis.call('nosuchcommand')", 0)
    with pytest.raises(ResponseError, match="Wrong number of args calling Redis command from script"):
        r.eval("redis.call('get', 'a', 'b')", 0)
    with pytest.raises(ResponseError, match="This Redis command is not allowed from script"):
        r.eval("redis.call('multi')", 0)
    # Numbers reach commands as %.17g.
    assert r.eval("redis.call('set', KEYS[1], 0.1) return redis.call('get', KEYS[1])", 1, "f") == b"0.10000000000000001"


def test_evalsha_script_load_exists_flush(r):
    sha = r.script_load("return 'loaded'")
    assert sha == "4f0c2e1ee2b83fea3a3eb74a09a1c69c4d85ef6b" or len(sha) == 40
    assert r.evalsha(sha, 0) == b"loaded"
    assert r.evalsha(sha.upper(), 0) == b"loaded"
    assert r.script_exists(sha, "0" * 40) == [True, False]
    with pytest.raises(NoScriptError):
        r.evalsha("ffd632c7d33e571e9f24556ebed26c3479a87130", 0)
    with pytest.raises(NoScriptError):
        r.evalsha("notasha", 0)
    assert r.script_flush() is True
    assert r.script_exists(sha) == [False]
    with pytest.raises(ResponseError, match="Error compiling script"):
        r.eval("return (", 0)


def test_read_only_scripts_refuse_writes(r):
    r.set("k", "v")
    assert r.eval_ro("return redis.call('get', KEYS[1])", 1, "k") == b"v"
    with pytest.raises(ResponseError, match="Write commands are not allowed from read-only scripts"):
        r.eval_ro("return redis.call('set', KEYS[1], 'x')", 1, "k")
    with pytest.raises(ResponseError, match="Can not execute a script with write flag using \\*_ro command"):
        r.eval_ro("#!lua\nreturn 1", 0)
    assert r.eval_ro("#!lua flags=no-writes\nreturn 1", 0) == 1
    with pytest.raises(ResponseError, match="Write commands are not allowed from read-only scripts"):
        r.eval("#!lua flags=no-writes\nreturn redis.call('set', 'k', 'x')", 0)
    with pytest.raises(ResponseError, match="Unexpected flag in script shebang: bogus"):
        r.eval("#!lua flags=bogus\nreturn 1", 0)


def test_sandbox(r):
    for code, text in [("os.exit()", "nonexistent global variable 'os'"),
                       ("io.open('/etc/passwd')", "nonexistent global variable 'io'"),
                       ("loadfile('x')", "nonexistent global variable 'loadfile'"),
                       ("dofile('x')", "nonexistent global variable 'dofile'"),
                       ("print('x')", "nonexistent global variable 'print'"),
                       ("a = 1", "Attempt to modify a readonly table"),
                       ("redis.call = nil", "Attempt to modify a readonly table"),
                       ("string.rep = nil", "Attempt to modify a readonly table"),
                       ("setmetatable(_G, {})", "Attempt to modify a readonly table"),
                       ("getmetatable('').__index = {}", "Attempt to modify a readonly table"),
                       ("return loadstring(string.dump(function() return 1 end))()", "attempt to call a nil value")]:
        with pytest.raises(ResponseError, match=text.replace("(", "\\(").replace(")", "\\)")):
            r.eval(code, 0)
    # The libraries Redis gives scripts.
    assert r.eval("return cjson.encode({1,2,3})", 0) == b"[1,2,3]"
    assert r.eval("return cjson.decode('{\"a\":5}').a", 0) == 5
    assert r.eval("return cmsgpack.unpack(cmsgpack.pack({1,2,'x'}))[3]", 0) == b"x"
    assert r.eval("return struct.unpack('>I2', struct.pack('>I2', 513))", 0) == 513
    assert r.eval("return bit.band(0xff, 0x0f)", 0) == 15
    assert r.eval("return redis.sha1hex('')", 0) == b"da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert r.eval("return redis.status_reply('FINE')", 0) == b"FINE"
    with pytest.raises(ResponseError, match="^MY error$"):
        r.eval("return redis.error_reply('MY error')", 0)


def test_resp3_conversions(server):
    c = redis.Redis(host="127.0.0.1", port=server.port, protocol=3)
    c.flushall()
    c.hset("h", "f", "v")
    assert c.eval("redis.setresp(3) return redis.call('hgetall', KEYS[1])", 1, "h") == {b"f": b"v"}
    assert c.eval("redis.setresp(2) return redis.call('hgetall', KEYS[1])", 1, "h") == [b"f", b"v"]
    assert c.eval("redis.setresp(3) return {double=3.5}", 0) == 3.5
    assert c.eval("redis.setresp(3) return true", 0) is True
    assert c.eval("return {map={a=1}}", 0) == {b"a": 1}
    c.close()


def test_select_inside_a_script_does_not_move_the_caller(r):
    r.set("k", "zero")
    assert r.eval("redis.call('select', 9) redis.call('set', 'k', 'nine') return redis.call('get', 'k')", 0) == b"nine"
    assert r.get("k") == b"zero"
    assert redis.Redis(host="127.0.0.1", port=r.connection_pool.connection_kwargs["port"], db=9).get("k") == b"nine"


def test_functions(r):
    r.function_flush()
    code = ("#!lua name=mylib\n"
            "redis.register_function('myset', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n"
            "redis.register_function{function_name='myget', callback=function(keys) return redis.call('get', keys[1]) end,"
            " flags={'no-writes'}, description='reads'}\n")
    assert r.function_load(code) == b"mylib"
    assert r.fcall("myset", 1, "k", "v") == b"OK"
    assert r.fcall_ro("myget", 1, "k") == b"v"
    with pytest.raises(ResponseError, match="Can not execute a script with write flag using \\*_ro command"):
        r.fcall_ro("myset", 1, "k", "v")
    with pytest.raises(ResponseError, match="Library 'mylib' already exists"):
        r.function_load(code)
    assert r.function_load(code, replace=True) == b"mylib"
    listing = r.function_list(withcode=True)
    assert listing[0][:2] == [b"library_name", b"mylib"] and listing[0][-1] == code.encode()
    dump = r.function_dump()
    r.function_flush()
    with pytest.raises(ResponseError, match="Function not found"):
        r.fcall("myget", 1, "k")
    assert r.function_restore(dump) in (True, b"OK", "OK")
    assert r.fcall("myget", 1, "k") == b"v"
    assert r.function_delete("mylib") in (True, b"OK", "OK")
    with pytest.raises(ResponseError, match="Missing library metadata"):
        r.function_load("return 1")
    with pytest.raises(ResponseError, match="No functions registered"):
        r.function_load("#!lua name=empty\nlocal a = 1")


def test_redis_py_lock(r, server):
    other = server.client()
    lock = r.lock("resource", timeout=5)
    assert lock.acquire(blocking=False)
    contender = other.lock("resource", timeout=5)
    assert not contender.acquire(blocking=False)
    assert lock.locked() and lock.owned() and not contender.owned()
    assert lock.extend(5)
    with pytest.raises(LockError):
        contender.release()  # never acquired: refused by the client
    lock.release()
    assert contender.acquire(blocking=False)
    contender.release()
    # Expiry: a lock whose holder vanished frees itself.
    short = r.lock("resource", timeout=0.3)
    assert short.acquire(blocking=False)
    assert other.lock("resource", timeout=5, blocking_timeout=3).acquire()
    with pytest.raises(LockNotOwnedError):
        short.release()  # the release script finds another owner's token
    other.close()


RATE_LIMITER = """
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if current > tonumber(ARGV[1]) then return 0 end
return 1
"""


def test_lua_rate_limiter(r):
    limiter = r.register_script(RATE_LIMITER)
    allowed = [limiter(keys=["rate:user1"], args=[5, 400]) for _ in range(8)]
    assert allowed == [1, 1, 1, 1, 1, 0, 0, 0]
    assert 0 < r.pttl("rate:user1") <= 400
    assert limiter(keys=["rate:user2"], args=[5, 400]) == 1
    time.sleep(0.5)
    assert limiter(keys=["rate:user1"], args=[5, 400]) == 1


def test_what_redis_patched_in_its_lua(r):
    # Redis's fixes to its Lua: a huge unpack range and bit.tohex(x, -2^31)
    # answer (Debian's Lua 5.1 and lua-bitop crashed the server on both).
    with pytest.raises(ResponseError, match="too many results to unpack"):
        r.eval("return {unpack({1,2,3}, 0, 2147483647)}", 0)
    assert r.eval("return {unpack({1,2,3}, -1, -2)}", 0) == []
    assert r.eval("return bit.tohex(65535, -2147483648)", 0) == b"0000FFFF"
    assert r.ping()


@pytest.fixture
def debug_r(fresh_server):
    """A client of a server that allows DEBUG (as Redis's tests run it)."""
    return fresh_server(args=["--enable-debug-command", "yes"]).client()


def test_the_clock_stands_still_while_a_script_runs(debug_r):
    r = debug_r
    with pytest.raises(ResponseError, match="This Redis command is not allowed from script"):
        r.eval("redis.call('DEBUG', 'SLEEP', 0)", 0)
    r.execute_command("DEBUG", "SET-DISABLE-DENY-SCRIPTS", 1)  # DEBUG SLEEP inside the script, as Redis's test
    assert r.eval("""redis.call('SET', 'k', 'v', 'PX', 1)
                     redis.call('DEBUG', 'SLEEP', 0.02)
                     return redis.call('EXISTS', 'k')""", 0) == 1
    time.sleep(0.01)
    assert r.exists("k") == 0


def test_an_expired_key_is_seen_by_debug_object_until_a_script_deletes_it(debug_r):
    r = debug_r
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
    try:
        r.set("gone", "v", px=1)
        time.sleep(0.01)
        assert b"encoding:embstr" in r.execute_command("DEBUG", "OBJECT", "gone")
        assert r.eval("return redis.call('EXISTS', 'gone')", 0) == 0
        with pytest.raises(ResponseError, match="no such key"):
            r.execute_command("DEBUG", "OBJECT", "gone")
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1)


def test_min_replicas_to_write_refuses_writes_with_no_replicas(r):
    r.set("x", "before")
    r.config_set("min-replicas-to-write", 1)
    try:
        with pytest.raises(ResponseError, match="NOREPLICAS Not enough good replicas to write."):
            r.set("x", "after")
        assert r.get("x") == b"before"
        assert r.eval("return redis.call('get', 'x')", 1, "x") == b"before"
        assert r.eval("#!lua flags=no-writes\nreturn redis.call('get', 'x')", 1, "x") == b"before"
        with pytest.raises(ResponseError, match="NOREPLICAS"):
            r.eval("#!lua\nreturn redis.call('get', 'x')", 1, "x")
        with pytest.raises(ResponseError, match="NOREPLICAS"):
            r.eval("return redis.call('set', 'x', 1)", 1, "x")
    finally:
        r.config_set("min-replicas-to-write", 0)
    assert r.set("x", "after")


def test_fcall_finds_a_function_whatever_its_case(r):
    r.function_load("#!lua name=Lib\nredis.register_function('Foo', function() return 'hi' end)")
    assert r.fcall("FOO", 0) == b"hi"
    assert r.fcall("foo", 0) == b"hi"
    with pytest.raises(ResponseError, match="Function FOO already exists"):
        r.function_load("#!lua name=lib2\nredis.register_function('FOO', function() return 1 end)")
    # Library names keep their case.
    with pytest.raises(ResponseError, match="Library not found"):
        r.function_delete("LIB")
    assert r.function_delete("Lib")
    info = r.info("memory")
    assert info["number_of_functions"] == 0 and info["number_of_libraries"] == 0


def busy_script(port, code, holder):
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=20)
    try:
        holder["reply"] = c.eval(code, 0)
    except Exception as e:  # noqa: BLE001 - the script's outcome is the test's subject
        holder["reply"] = e
    c.close()


def wait_busy(c, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            c.ping()
        except ResponseError as e:
            if str(e).startswith("BUSY"):
                return True
        time.sleep(0.05)
    return False


def test_busy_script_answers_busy_and_script_kill_stops_it(fresh_server):
    s = fresh_server(args=["--busy-reply-threshold", "100"])
    c = s.client()
    holder = {}
    t = threading.Thread(target=busy_script, args=(s.port, "local i = 0 while true do i = i + 1 end", holder))
    t.start()
    assert wait_busy(c)
    with pytest.raises(ResponseError, match="BUSY Redis is busy running a script. You can only call SCRIPT KILL"):
        c.get("x")
    with pytest.raises(ResponseError, match="BUSY"):
        c.execute_command("FUNCTION", "KILL")
    assert c.script_kill() is True
    t.join(10)
    assert isinstance(holder["reply"], ResponseError) and "Script killed by user with SCRIPT KILL" in str(holder["reply"])
    assert c.ping() is True
    with pytest.raises(ResponseError, match="NOTBUSY"):
        c.script_kill()


def test_a_busy_script_that_wrote_cannot_be_killed(fresh_server):
    s = fresh_server(args=["--busy-reply-threshold", "100"])
    c = s.client()
    holder = {}
    # Five seconds: long enough that SCRIPT KILL arrives while it runs
    # even on a sanitizer build (two seconds lost that race under ASan).
    code = "redis.call('set', 'w', '1') local t = redis.call('time') " \
           "while true do local n = redis.call('time') if n[1] - t[1] >= 5 then break end end return 'done'"
    t = threading.Thread(target=busy_script, args=(s.port, code, holder))
    t.start()
    assert wait_busy(c)
    with pytest.raises(ResponseError, match="UNKILLABLE"):
        c.script_kill()
    t.join(15)
    assert holder["reply"] == b"done"
    assert c.get("w") == b"1"


@pytest.mark.kvcache_only
@pytest.mark.skipif(MODE == "no-aof", reason="the append-only log is off (appendonly no)")
def test_a_scripts_writes_survive_kill9_as_a_unit(fresh_server):
    s = fresh_server(args=["--enable-debug-command", "yes", "--busy-reply-threshold", "100"])
    c = s.raw()
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    script = "for i = 1, 200 do redis.call('set', 'k' .. i, i) end redis.call('rpush', 'l', 'a', 'b') return 1"
    assert c.command("EVAL", script, "0") == 1
    assert c.command("SET", "after", "yes") == "OK"
    # A script killed -9 in the middle (busy, after its writes): none of them.
    holder = {}
    t = threading.Thread(target=busy_script, args=(s.port, "redis.call('set', 'half', 'a') redis.call('set', 'half2', 'b') "
                                                        "while true do end", holder))
    t.start()
    assert wait_busy(s.client())
    s.kill9()
    t.join(10)
    s.start()
    c = s.raw()
    assert c.command("MGET", "k1", "k100", "k200", "after") == [b"1", b"100", b"200", b"yes"]
    assert c.command("LRANGE", "l", "0", "-1") == [b"a", b"b"]
    assert c.command("EXISTS", "half", "half2") == 0


@pytest.mark.kvcache_only
def test_functions_survive_a_restart(fresh_server):
    s = fresh_server()
    c = s.client()
    c.function_load("#!lua name=keep\nredis.register_function('hello', function() return 'world' end)")
    s.kill9()
    s.start()
    c = s.client()
    assert c.fcall("hello", 0) == b"world"
    c.function_delete("keep")
    s.restart()
    with pytest.raises(ResponseError, match="Function not found"):
        s.client().fcall("hello", 0)


def test_sort_by_a_constant_is_sorted_inside_a_script(r):
    # A set has no order: a script's SORT ... BY <constant> (no sorting asked)
    # gets the members sorted as bytes, as Redis does, so that the script's
    # result is the same wherever it runs; outside a script the order is the set's.
    members = ["b", "aa", "z", "a", "azz", "c", "aaa"]
    r.sadd("myset", *members)
    assert r.eval("return redis.call('sort', KEYS[1], 'by', 'nosort')", 1, "myset") == \
        [m.encode() for m in sorted(members)]
    assert sorted(r.sort("myset", by="nosort")) == sorted(m.encode() for m in members)
    # A list keeps its own order.
    r.rpush("mylist", "b", "a", "c")
    assert r.eval("return redis.call('sort', KEYS[1], 'by', 'nosort')", 1, "mylist") == [b"b", b"a", b"c"]


def test_a_script_failing_on_a_refused_call_counts_as_a_failed_eval(r):
    # unit/scripting's "Consistent eval error reporting": the refused SET is
    # a rejected call, the EVAL that returned its error a failed one, and the
    # error is counted once.
    r.set("filler", "x" * 100)
    r.config_resetstat()
    r.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError, match="command not allowed when used memory"):
            r.eval("return redis.call('set','x','y')", 1, "x")
        commands = r.info("commandstats")
        assert commands["cmdstat_eval"]["calls"] == 1
        assert commands["cmdstat_eval"]["failed_calls"] == 1
        assert commands["cmdstat_eval"]["rejected_calls"] == 0
        assert commands["cmdstat_set"]["rejected_calls"] == 1
        assert commands["cmdstat_set"]["calls"] == 0
        assert r.info("errorstats")["errorstat_OOM"] == {"count": 1}
        assert r.info("stats")["total_error_replies"] == 1
    finally:
        r.config_set("maxmemory", 0)


@pytest.mark.parametrize("enabled", ["no", "yes"])
def test_lua_enable_deprecated_api_keeps_setfenv_getfenv_and_newproxy(fresh_server, enabled):
    # Redis 7.0's lua-enable-deprecated-api (immutable): scripts and
    # functions see setfenv, getfenv and newproxy only when it is yes.
    c = fresh_server(args=["--lua-enable-deprecated-api", enabled]).raw()
    for name, use in [("setfenv", "setfenv(function() return 1 end, {})"), ("getfenv", "getfenv(1)"),
                      ("newproxy", "newproxy()")]:
        reply = c.command("EVAL", "%s return 0" % use, "0")
        if enabled == "yes":
            assert reply == 0, (name, reply)
        else:
            assert reply[0] == "error" and "Script attempted to access nonexistent global variable '%s'" % name in reply[1]


def test_read_only_scripts_may_not_call_may_replicate_commands(c):
    # Redis's command table marks PUBLISH, SPUBLISH and PFCOUNT
    # may_replicate (COMMAND INFO does not show it): EVAL_RO and no-writes
    # scripts may not call them; a plain EVAL may.
    for call in ("redis.call('publish','ch','msg')", "redis.call('spublish','ch','msg')", "redis.call('pfcount','hll')"):
        for command, body in (("EVAL_RO", "return " + call), ("EVAL", "#!lua flags=no-writes\nreturn " + call)):
            reply = c.command(command, body, "0")
            assert reply[0] == "error" and reply[1].startswith("ERR Write commands are not allowed from read-only scripts."), reply
    assert c.command("EVAL", "return redis.call('publish','ch','msg')", "0") == 0
