"""`database-name <index> <cache>`: a database index that stands for a named
cache, for clients and proxies that speak only numbers (nutcracker's
`redis_db`, `redis-cli -n`, `redis://host/5`). docs/cluster.md has the design."""
import os
import subprocess

import pytest

from conftest import BIN, free_port

pytestmark = pytest.mark.kvcache_only


def test_select_move_copy_swapdb_and_reset_go_through_the_map(fresh_server):
    s = fresh_server(args=["--database-name", "5", "sessions", "--database-name", "0", "main",
                           "--database-name", "70000", "far"])
    c = s.raw()
    assert c.command("SET", "k", "in main") == "OK"
    assert c.command("SELECT", "5") == "OK"
    assert c.command("SET", "s", "in sessions") == "OK"
    # An index past `databases` is valid when it is mapped, and only then.
    assert c.command("SELECT", "70000") == "OK"
    assert c.command("SELECT", "70001") == ("error", "ERR DB index is out of range")
    assert c.command("SELECT", "main") == "OK"
    assert c.command("MOVE", "k", "5") == 1
    assert c.command("SELECT", "sessions") == "OK"
    assert c.command("MGET", "k", "s") == [b"in main", b"in sessions"]
    assert c.command("COPY", "k", "k2", "DB", "70000") == 1
    assert c.command("SWAPDB", "5", "0") == "OK"
    assert c.command("RESET") == "RESET"  # back in database 0: now holding what sessions held
    assert c.command("MGET", "k", "s") == [b"in main", b"in sessions"]
    files = set(os.listdir(s.data_dir()))
    assert {"main.sqlite", "sessions.sqlite", "far.sqlite"} <= files
    assert not {"db0.sqlite", "db5.sqlite"} & files
    # Clients see the number they selected, as in Redis (CLIENT LIST, INFO keyspace).
    assert b" db=0 " in c.command("CLIENT", "INFO")
    r = s.client(db=5)
    r.set("x", "1")
    info = r.info("keyspace")
    assert info["db0"]["keys"] == 2 and info["db5"]["keys"] == 1 and "db70000" not in info
    r.close()
    r = s.client(db=70000)
    assert r.get("k2") == b"in main"
    r.close()


def test_config_get_rewrite_and_no_config_set(fresh_server):
    s = fresh_server(config_text="database-name 5 sessions\ndatabase-name 3 db3\n")
    c = s.raw()
    assert c.command("CONFIG", "GET", "database-name") == [b"database-name", b"5 sessions"]
    assert c.command("CONFIG", "SET", "database-name", "6 other") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'database-name') - can't set immutable config")
    assert c.command("CONFIG", "REWRITE") == "OK"
    text = open(os.path.join(s.dir, "kvcache.conf")).read()
    assert text.count("database-name 5 sessions\n") == 1


@pytest.mark.parametrize("args, reason", [
    (["5", "sessions", "--database-name", "5", "other"], "index 5 is already the cache 'sessions'"),
    (["5", "sessions", "--database-name", "6", "sessions"], "'sessions' is already database 5"),
    (["5", "db3"], "'db3' is database 3's own cache: it cannot stand for 5"),
    (["-1", "x"], "the index must be an integer from 0 to 2147483647: '-1'"),
    (["2147483648", "x"], "the index must be an integer from 0 to 2147483647"),
    (["5", "no/slash"], "invalid cache name 'no/slash'"),
    (["5"], "usage: database-name <index> <cache>"),
])
def test_bad_maps_are_refused_at_start(tmp_path, args, reason):
    out = subprocess.run([BIN, "--port", str(free_port()), "--dir", str(tmp_path), "--database-name", *args],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert reason in out.stderr + out.stdout


def test_an_old_numbered_file_is_left_and_reached_by_name(fresh_server):
    s = fresh_server()
    r = s.client(db=5)
    r.set("old", "db5's")
    r.close()
    s.stop()
    s.args = list(s.args) + ["--database-name", "5", "sessions"]
    s.start()
    r = s.client(db=5)
    assert r.get("old") is None
    r.execute_command("SELECT", "db5")
    assert r.get("old") == b"db5's"
    r.close()
    assert "Database 5 is the cache 'sessions' (database-name)" in s.log()
