"""The sample configuration file, CONFIG GET/SET/REWRITE, and logs."""
import os
import re
import subprocess

import pytest

from conftest import BIN, REDIS, ROOT, require_tool

SAMPLE = os.path.join(ROOT, "kvcache.conf")


def config_get_all(c):
    reply = c.command("CONFIG", "GET", "*")
    return {reply[i].decode(): reply[i + 1].decode() for i in range(0, len(reply), 2)}


def set_failed(name, why):
    """CONFIG SET's error reply for a setting it refused, as Redis words it."""
    return ("error", "ERR CONFIG SET failed (possibly related to argument '%s') - %s" % (name, why))


@pytest.mark.kvcache_only
def test_sample_config_documents_every_directive_at_its_default(fresh_server, tmp_path):
    # The sample file, with only port and dir overridden on the command line.
    s = fresh_server(config_text=open(SAMPLE).read())
    c = s.raw()
    loaded = config_get_all(c)
    bare = subprocess.run([BIN, "--help"], capture_output=True, text=True)
    assert bare.returncode == 0
    # A server with no file at all reports the same values.
    plain = fresh_server()
    defaults = config_get_all(plain.raw())
    for name, value in defaults.items():
        if name in ("port", "dir", "config_file"):
            continue
        assert loaded[name] == value, name
    text = open(SAMPLE).read()
    for name in defaults:
        assert re.search(r"^#?\s*%s\b" % re.escape(name), text, re.M), "%s is not documented in kvcache.conf" % name


@pytest.mark.kvcache_only
def test_config_rewrite_updates_the_file_in_place(fresh_server, tmp_path):
    conf = "# my settings\ntimeout 5\n\n# the default policy\neviction-policy fifo\n"
    s = fresh_server(config_text=conf)
    c = s.raw()
    assert c.command("CONFIG", "SET", "timeout", "30") == "OK"
    assert c.command("CONFIG", "SET", "cache", "sessions 1mb lru") == "OK"
    assert c.command("CONFIG", "SET", "requirepass", "p w") == "OK"
    assert c.command("AUTH", "p w") == "OK"
    assert c.command("CONFIG", "REWRITE") == "OK"
    path = os.path.join(s.dir, "kvcache.conf")
    text = open(path).read()
    assert text.startswith("# my settings\ntimeout 30\n\n# the default policy\neviction-policy fifo\n")
    assert "cache sessions 1048576 lru\n" in text
    assert 'requirepass "p w"\n' in text
    assert not [f for f in os.listdir(s.dir) if ".tmp-" in f]
    s.config_text = text  # the fixture writes config_text at each start
    s.restart()
    d = s.raw()
    assert d.command("AUTH", "p w") == "OK"
    assert d.command("CONFIG", "GET", "timeout") == [b"timeout", b"30"]
    assert d.command("CONFIG", "GET", "cache") == [b"cache", b"sessions 1048576 lru"]


def test_config_rewrite_without_a_file(fresh_server):
    c = fresh_server().raw()
    assert c.command("CONFIG", "REWRITE") == ("error", "ERR The server is running without a config file")


def test_config_set_errors_and_get_patterns(fresh_server):
    c = fresh_server().raw()
    assert c.command("CONFIG", "SET", "databases", "1") == set_failed("databases", "can't set immutable config")
    assert c.command("CONFIG", "SET", "nope", "1") == (
        "error", "ERR Unknown option or number of arguments for CONFIG SET - 'nope'")
    assert c.command("CONFIG", "SET", "timeout") == ("error", "ERR wrong number of arguments for 'config|set' command")
    # Redis 7.0's tls-* settings, every one (those this server does not act
    # on are accepted, as all of Redis's directives).
    reply = c.command("CONFIG", "GET", "tls-*")
    assert sorted(reply[0::2]) == sorted(b"tls-" + n for n in (
        b"auth-clients", b"ca-cert-dir", b"ca-cert-file", b"cert-file", b"ciphers", b"ciphersuites", b"client-cert-file",
        b"client-key-file", b"client-key-file-pass", b"cluster", b"dh-params-file", b"key-file", b"key-file-pass",
        b"port", b"prefer-server-ciphers", b"protocols", b"replication", b"session-cache-size",
        b"session-cache-timeout", b"session-caching"))


def test_config_set_port_rebinds_and_a_taken_port_changes_nothing(fresh_server):
    import socket
    from conftest import free_port
    s = fresh_server()
    c = s.raw()
    # A port in use: an error naming it, and no setting of the command changed.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    used = taken.getsockname()[1]
    before = c.command("CONFIG", "GET", "maxmemory")[1]
    reply = c.command("CONFIG", "SET", "maxmemory", "10000001", "port", str(used))
    assert reply[0] == "error" and reply[1].startswith(
        "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port")
    assert c.command("CONFIG", "GET", "maxmemory")[1] == before
    assert c.command("CONFIG", "GET", "port")[1] == str(s.port).encode()
    taken.close()
    # A free port: new clients connect there, the old port is closed, and
    # the client that asked stays connected.
    new = free_port()
    assert c.command("CONFIG", "SET", "port", str(new)) == "OK"
    assert c.command("PING") == "PONG"
    fresh = socket.create_connection(("127.0.0.1", new), timeout=5)
    fresh.sendall(b"PING\r\n")
    assert fresh.recv(10) == b"+PONG\r\n"
    fresh.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", s.port), timeout=5).close()
    assert c.command("CONFIG", "GET", "port") == [b"port", str(new).encode()]
    s.port = new  # the fixture stops it on its new port


def test_config_get_hidden_settings_aliases_and_exact_names(c):
    # Redis's HIDDEN_CONFIG: answered by exact name only, never for a pattern.
    assert c.command("CONFIG", "GET", "key-load-delay") == [b"key-load-delay", b"0"]
    everything = c.command("CONFIG", "GET", "*")[0::2]
    assert b"key-load-delay" not in everything and b"maxmemory-clients" in everything
    # A pattern matches a setting's older name too; an exact name is
    # answered as given; no setting twice.
    reply = c.command("CONFIG", "GET", "maxmemory", "maxmemory*", "bind", "*of")
    names = reply[0::2]
    assert len(names) == len(set(names))
    assert {b"slaveof", b"replicaof", b"maxmemory", b"maxmemory-samples", b"maxmemory-clients", b"bind"} <= set(names)
    assert c.command("CONFIG", "GET", "MAXMEMORY")[0] == b"MAXMEMORY"
    assert c.command("CONFIG", "GET", "replicaof") == [b"replicaof", b""]
    assert c.command("CONFIG", "SET", "replicaof", "127.0.0.1 1") == set_failed(
        "replicaof", "can't set immutable config")


def test_config_set_save_and_maxmemory_clients_as_redis(c):
    saved = c.command("CONFIG", "GET", "save")[1]
    try:
        assert c.command("CONFIG", "SET", "save", "3000 5") == "OK"
        assert c.command("CONFIG", "GET", "save") == [b"save", b"3000 5"]
        assert c.command("CONFIG", "SET", "save", "3000 5 100") == set_failed("save", "Invalid save parameters")
    finally:
        assert c.command("CONFIG", "SET", "save", saved) == "OK"
    assert c.command("CONFIG", "SET", "maxmemory-clients", "200%") == set_failed(
        "maxmemory-clients", "percentage argument must be less or equal to 100")
    assert c.command("CONFIG", "SET", "maxmemory-clients", "abc") == set_failed(
        "maxmemory-clients", "argument must be a memory or percent value")
    assert c.command("CONFIG", "SET", "maxmemory-clients", "50%") == "OK"
    assert c.command("CONFIG", "GET", "maxmemory-clients") == [b"maxmemory-clients", b"50%"]
    assert c.command("CONFIG", "SET", "maxmemory-clients", "1mb") == "OK"
    assert c.command("CONFIG", "GET", "maxmemory-clients") == [b"maxmemory-clients", b"1048576"]
    assert c.command("CONFIG", "SET", "maxmemory-clients", "0") == "OK"


def test_config_set_bind_listens_again_and_a_bad_address_changes_nothing(fresh_server):
    """Redis's changeBindAddr: an address that cannot be listened on fails
    with Redis's text and the server still listens where it did; a good
    one moves the listener (127.0.0.2 is loopback on Linux)."""
    import socket
    s = fresh_server()
    c = s.raw()
    reply = c.command("CONFIG", "SET", "bind", "999.999.999.999")
    assert reply == ("error", "ERR CONFIG SET failed (possibly related to argument 'bind') - "
                              "Failed to bind to specified addresses.")
    assert c.command("CONFIG", "GET", "bind") == [b"bind", b"127.0.0.1"]
    socket.create_connection(("127.0.0.1", s.port), timeout=5).close()
    assert c.command("CONFIG", "SET", "bind", "127.0.0.2") == "OK"
    assert c.command("PING") == "PONG"  # the client that asked stays
    socket.create_connection(("127.0.0.2", s.port), timeout=5).close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", s.port), timeout=5)
    assert c.command("CONFIG", "SET", "bind", "127.0.0.1") == "OK"
    socket.create_connection(("127.0.0.1", s.port), timeout=5).close()


def test_config_set_of_a_setting_to_its_current_value(c):
    # Redis's "CONFIG sanity" test sets every setting to its own value: port
    # and bind take their current value;
    # a setting Redis itself declares immutable refuses any value.
    port = c.command("CONFIG", "GET", "port")[1]
    bind = c.command("CONFIG", "GET", "bind")[1]
    assert c.command("CONFIG", "SET", "port", port, "bind", bind) == "OK"
    assert c.command("CONFIG", "GET", "port")[1] == port
    databases = c.command("CONFIG", "GET", "databases")[1]
    assert c.command("CONFIG", "SET", "databases", databases) == set_failed("databases", "can't set immutable config")


LOG_LINE = re.compile(r"^\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} [.\-*#] \S")


@pytest.mark.kvcache_only
def test_logs_use_redis_format_on_stdout(fresh_server):
    s = fresh_server()
    s.stop()
    lines = [l for l in s.log().splitlines() if l.strip()]
    assert lines and all(LOG_LINE.match(l) for l in lines), lines
    assert "kvcache-server" in lines[0] and "listening on 127.0.0.1:%d" % s.port in lines[0]
    assert "ready to exit" in lines[-1]


@pytest.mark.kvcache_only
def test_logfile_directive(fresh_server, tmp_path):
    logfile = tmp_path / "server.log"
    s = fresh_server(args=["--logfile", str(logfile), "--loglevel", "verbose"])
    assert s.raw().command("SELECT", "somecache") == "OK"
    s.stop()
    text = logfile.read_text()
    assert "listening on" in text and "Opened cache 'somecache'" in text
    assert oct(os.stat(logfile).st_mode & 0o777) == oct(0o600)


@pytest.mark.kvcache_only
def test_startup_logs_progress_while_vacuuming_a_churned_cache(fresh_server):
    s = fresh_server()
    c = s.raw()
    c.send(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$1000\r\n%s\r\n" % (len(b"k%d" % i), i, b"x" * 1000)
                    for i in range(3000)))
    for _ in range(3000):
        assert c.read_reply() == "OK"
    # SAVE: the writes reach the file before the deletes, which then churn it.
    assert c.command("SAVE") == "OK"
    for i in range(2900):
        assert c.command("DEL", "k%d" % i) == 1
    s.stop()
    s.start()
    assert s.raw().command("GET", "k2999") == b"x" * 1000  # served after the open (and its vacuum) finished
    log = s.log()
    assert re.search(r"\* Vacuuming .*db0\.sqlite: \d+ of \d+ pages are free\.\.\.", log), log
    assert re.search(r"\* Vacuumed .*db0\.sqlite in [\d.]+s: \d+ pages to \d+", log)
    assert s.raw().command("GET", "k2999") == b"x" * 1000


# --- CONFIG REWRITE: aliases, several cache lines, renamed commands, a failed write ----

def config_get(c, name, config="CONFIG"):
    reply = c.command(config, "GET", name)
    return reply[1].decode() if reply else None


def test_config_rewrite_keeps_each_setting_once_under_the_name_in_the_file(fresh_server):
    # Redis's behaviour: a line is rewritten in place; an old alias
    # (*-ziplist-*) becomes the current name; what the file lacks is added once.
    conf = "# mine\nmaxmemory-policy allkeys-lru\nhash-max-ziplist-entries 64\n\nzset-max-listpack-value 32\n"
    s = fresh_server(config_text=conf)
    c = s.raw()
    for name, value in [("maxmemory-policy", "noeviction"), ("hash-max-listpack-entries", "100"),
                        ("zset-max-ziplist-value", "40"), ("set-max-intset-entries", "600")]:
        assert c.command("CONFIG", "SET", name, value) == "OK"
    assert c.command("CONFIG", "REWRITE") == "OK"
    text = open(os.path.join(s.dir, "kvcache.conf")).read()
    assert text.startswith("# mine\nmaxmemory-policy noeviction\nhash-max-listpack-entries 100\n\n"
                           "zset-max-listpack-value 40\n"), text
    lines = [line.split()[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(set(lines)), text                   # no setting twice
    assert "set-max-intset-entries" in lines
    assert "eviction-policy" not in lines, text                  # maxmemory-policy is that setting: once
    assert not [name for name in lines if "ziplist" in name], text
    s.config_text = text
    s.restart()
    d = s.raw()
    assert [config_get(d, n) for n in ("maxmemory-policy", "hash-max-listpack-entries", "zset-max-listpack-value",
                                       "set-max-intset-entries")] == ["noeviction", "100", "40", "600"]


@pytest.mark.kvcache_only
def test_config_rewrite_with_several_cache_lines(fresh_server):
    conf = "cache alpha 1mb lru\n# between\ncache beta 2mb\ntimeout 5\n"
    s = fresh_server(config_text=conf)
    c = s.raw()
    assert c.command("CONFIG", "SET", "cache", "gamma 3mb volatile-ttl") == "OK"
    assert c.command("CONFIG", "SET", "cache", "alpha 4mb") == "OK"
    assert c.command("CONFIG", "REWRITE") == "OK"
    text = open(os.path.join(s.dir, "kvcache.conf")).read()
    cache_lines = [line for line in text.splitlines() if line.startswith("cache ")]
    assert cache_lines == ["cache alpha 4194304", "cache beta 2097152", "cache gamma 3145728 volatile-ttl"], text
    assert "# between\n" in text and "timeout 5\n" in text
    s.config_text = text
    s.restart()
    assert config_get(s.raw(), "cache") == "alpha 4194304 beta 2097152 gamma 3145728 volatile-ttl"


def test_config_rewrite_keeps_renamed_commands(fresh_server):
    s = fresh_server(config_text='rename-command FLUSHALL ""\nrename-command CONFIG admin-config\ntimeout 5\n')
    c = s.raw()
    assert c.command("ADMIN-CONFIG", "SET", "timeout", "7") == "OK"
    assert c.command("ADMIN-CONFIG", "REWRITE") == "OK"
    text = open(os.path.join(s.dir, "kvcache.conf")).read()
    renames = sorted(line.lower() for line in text.splitlines() if line.lower().startswith("rename-command"))
    assert renames == ["rename-command config admin-config", 'rename-command flushall ""'], text
    s.config_text = text
    s.restart()
    d = s.raw()
    assert d.command("FLUSHALL")[1].startswith("ERR unknown command 'FLUSHALL'")
    assert d.command("CONFIG", "GET", "timeout")[1].startswith("ERR unknown command 'CONFIG'")
    assert config_get(d, "timeout", config="ADMIN-CONFIG") == "7"


def test_config_rewrite_that_cannot_write_answers_the_error(fresh_server):
    s = fresh_server(config_text="timeout 5\n")
    c = s.raw()
    assert c.command("CONFIG", "SET", "timeout", "9") == "OK"
    path = os.path.join(s.dir, "kvcache.conf")
    os.remove(path)
    os.mkdir(path)  # the file is now a directory: reading and replacing it fail
    assert c.command("CONFIG", "REWRITE") == ("error", "ERR Rewriting config file: Is a directory")
    assert os.path.isdir(path) and os.listdir(path) == []
    assert config_get(c, "timeout") == "9"  # the setting itself stays
    os.rmdir(path)
    assert c.command("CONFIG", "REWRITE") == "OK"  # a file that went away is written anew
    assert "timeout 9\n" in open(path).read()
    assert not [f for f in os.listdir(s.dir) if ".tmp-" in f or f.startswith("temp-")]


def test_replication_and_rdb_settings_are_accepted_and_checked_as_redis(fresh_server):
    # Redis's test files set these (attach_to_replication_stream sets
    # repl-ping-replica-period); nothing here uses them, but CONFIG SET and
    # GET answer as Redis's.
    c = fresh_server().raw()
    assert c.command("CONFIG", "GET", "repl-ping-replica-period") == [b"repl-ping-replica-period", b"10"]
    assert c.command("CONFIG", "SET", "repl-ping-replica-period", "3600") == "OK"
    assert c.command("CONFIG", "GET", "repl-ping-slave-period") == [b"repl-ping-slave-period", b"3600"]
    assert c.command("CONFIG", "SET", "repl-ping-slave-period", "0") == set_failed(
        "repl-ping-slave-period", "argument must be between 1 and 2147483647 inclusive")
    assert c.command("CONFIG", "SET", "replica-read-only", "maybe") == set_failed(
        "replica-read-only", "argument must be 'yes' or 'no'")
    assert c.command("CONFIG", "SET", "repl-backlog-size", "2mb") == "OK"
    assert c.command("CONFIG", "GET", "repl-backlog-size") == [b"repl-backlog-size", b"2097152"]
    assert c.command("CONFIG", "SET", "min-slaves-to-write", "1") == "OK"
    assert c.command("CONFIG", "GET", "min-replicas-to-write") == [b"min-replicas-to-write", b"1"]


def test_debians_redis_conf_starts_the_server(fresh_server):
    # Debian's /etc/redis/redis.conf (redis-server 7.0), every directive as
    # Redis's package ships it, only made to run in the foreground and log
    # to stdout: a user's redis.conf starts this server as it starts
    # redis-server (the command line overrides port, bind and dir).
    require_tool("redis-server")
    with open("/etc/redis/redis.conf") as f:
        text = f.read()
    assert re.search(r"^tcp-backlog 511$", text, re.M) and re.search(r"^oom-score-adj-values ", text, re.M)
    text = re.sub(r"^daemonize yes$", "daemonize no", text, flags=re.M)
    text = re.sub(r"^(pidfile|logfile) .*$", lambda m: m.group(1) + ' ""', text, flags=re.M)
    s = fresh_server(config_text=text)
    c = s.raw()
    assert c.command("SET", "k", "v") == "OK" and c.command("GET", "k") == b"v"
    config = config_get_all(c)
    for name, value in [("tcp-backlog", "511"), ("tcp-keepalive", "300"), ("oom-score-adj-values", "0 200 800"),
                        ("repl-diskless-load", "disabled"), ("proc-title-template", "{title} {listen-addr} {server-mode}"),
                        ("rdbcompression", "yes"), ("dbfilename", "dump.rdb"), ("disable-thp", "yes"), ("hz", "10")]:
        assert config[name] == value, (name, config.get(name))
    # Redis's types, bounds and errors; its immutable settings stay so.
    assert c.command("CONFIG", "SET", "hz", "20", "activedefrag", "no", "shutdown-on-sigterm", "nosave now") == "OK"
    assert c.command("CONFIG", "GET", "hz") == [b"hz", b"20"]
    assert c.command("CONFIG", "GET", "shutdown-on-sigterm") == [b"shutdown-on-sigterm", b"nosave now"]
    assert c.command("CONFIG", "SET", "hz", "x") == set_failed("hz", "argument couldn't be parsed into an integer")
    assert c.command("CONFIG", "SET", "active-defrag-cycle-max", "100") == set_failed(
        "active-defrag-cycle-max", "argument must be between 1 and 99 inclusive")
    assert c.command("CONFIG", "SET", "repl-diskless-load", "sometimes") == set_failed(
        "repl-diskless-load", "argument(s) must be one of the following: disabled, on-empty-db, swapdb")
    assert c.command("CONFIG", "SET", "tcp-backlog", "100") == set_failed("tcp-backlog", "can't set immutable config")
    assert c.command("CONFIG", "SET", "cluster-link-sendbuf-limit", "1mb") == "OK"
    assert c.command("CONFIG", "GET", "cluster-link-sendbuf-limit") == [b"cluster-link-sendbuf-limit", b"1048576"]


def test_redis_test_suite_config_starts_the_server_and_logs_redis_lines(fresh_server):
    # Redis's own test suite starts `src/redis-server <file>` with the
    # directives of its tests/assets/default.conf, then waits for " PID: <pid>"
    # and "Ready to accept connections" in the log before it connects.
    text = "\n".join([
        "always-show-logo yes", "notify-keyspace-events KEA", "daemonize no", "timeout 0", "loglevel verbose",
        "logfile ''", "databases 16", "latency-monitor-threshold 1", "repl-diskless-sync-delay 0", "save 900 1",
        "rdbcompression yes", "dbfilename dump.rdb", "slave-serve-stale-data yes", "appendonly no",
        "appendfsync everysec", "no-appendfsync-on-rewrite no", "activerehashing yes", "enable-protected-configs yes",
        "enable-debug-command yes", "enable-module-command yes", "propagation-error-behavior panic", ""])
    s = fresh_server(config_text=text)
    c = s.raw()
    assert c.command("PING") == "PONG"
    assert c.command("CONFIG", "GET", "propagation-error-behavior") == [b"propagation-error-behavior", b"panic"]
    log = s.log()
    assert " PID: %d" % s.proc.pid in log, log
    assert "Ready to accept connections" in log, log


def test_save_points_default_and_add_up_as_in_redis(fresh_server):
    # Redis 7.0: a default list; the first save line replaces it, later
    # ones (the command line's too) add to it; save "" empties it.
    s = fresh_server(config_text="save 900 1\n", args=["--save", "100 100"])
    # Against redis-server the fixture's own --save '' comes between the two.
    assert s.raw().command("CONFIG", "GET", "save") == [b"save", b"100 100" if REDIS else b"900 1 100 100"]
    if not REDIS:
        plain = fresh_server()
        assert plain.raw().command("CONFIG", "GET", "save") == [b"save", b"3600 1 300 100 60 10000"]


@pytest.mark.kvcache_only
def test_debug_config_rewrite_force_all_writes_a_file_that_starts_the_server(fresh_server):
    # Every directive written, defaults too; the server started on that file
    # reads every setting back as it was (Redis's "CONFIG REWRITE sanity").
    s = fresh_server(config_text="timeout 5\n", args=["--enable-debug-command", "yes"])
    c = s.raw()
    before = config_get_all(c)
    assert c.command("DEBUG", "CONFIG-REWRITE-FORCE-ALL") == "OK"
    text = open(os.path.join(s.dir, "kvcache.conf")).read()
    assert "\ntcp-backlog 511\n" in text and "\nmaxmemory 0\n" in text
    s.config_text = text
    s.restart()
    after = config_get_all(s.raw())
    assert {k: v for k, v in after.items() if k != "port"} == {k: v for k, v in before.items() if k != "port"}


@pytest.mark.parametrize("args, expected", [
    (["--port"], "'port'*wrong number of arguments"),
    (["--port", "6380", "--loglevel"], "'loglevel'*wrong number of arguments"),
    (["--port", "6379", "6380"], "'port \"6379\" \"6380\"'*wrong number of arguments"),
    (["--port", "--loglevel", "verbose"], "'port \"--loglevel\" \"verbose\"'*wrong number of arguments"),
    (["--port", "--bla", "--loglevel", "verbose"], "'port \"--bla\"'*argument couldn't be parsed into an integer"),
    (["--logfile", "--my--log--file", "--loglevel", "--bla"], "'loglevel \"--bla\"'*argument(s) must be one of the following"),
    (["--shutdown-on-sigint"], "'shutdown-on-sigint'*argument(s) must be one of the following"),
    (["--shutdown-on-sigint", "now force", "--shutdown-on-sigterm"],
     "'shutdown-on-sigterm'*argument(s) must be one of the following"),
    (["--replicaof", "127.0.0.1", "abc"], "'replicaof \"127.0.0.1\" \"abc\"'*Invalid master port"),
    (["--replicaof", "--127.0.0.1", "--abc"], "'replicaof \"--127.0.0.1\"'*wrong number of arguments"),
])
def test_command_line_errors_name_the_option_as_redis_does(args, expected):
    # Redis's "redis-server command line arguments - error cases": the words
    # after --name are its values, a --word is a value while the option has
    # none yet, and the error shows the option as a config line.
    binary = "redis-server" if REDIS else BIN
    run = subprocess.run([binary] + args, capture_output=True, text=True, timeout=30)
    assert run.returncode != 0
    import fnmatch
    assert fnmatch.fnmatchcase(run.stdout + run.stderr, "*" + expected.replace("[", "[[]") + "*"), run.stdout + run.stderr
