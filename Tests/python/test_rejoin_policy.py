"""`rejoin-policy keep|flush`: what a restarted server does with what it held
(docs/cluster.md). The cluster tests run it behind nutcracker; these check one
server: `flush` starts empty, whatever the files and the log held."""
import pytest

from conftest import MODE

pytestmark = pytest.mark.kvcache_only


def crash(s):
    """kill -9, where the mode keeps every acknowledged write through one;
    under appendonly no (which loses the last second by design) a clean stop."""
    if MODE == "no-aof":
        s.stop()
    else:
        s.kill9()


def test_flush_starts_empty_and_keep_serves_what_was_held(fresh_server):
    s = fresh_server()
    r = s.client()
    r.set("k", "v")
    r.execute_command("SELECT", "sessions")
    r.set("s", "v")
    r.close()
    crash(s)  # what the log holds must go too, not only the files
    s.start()
    r = s.client()
    assert r.get("k") == b"v"  # keep, the default
    assert r.config_get("rejoin-policy") == {"rejoin-policy": "keep"}
    r.close()
    s.stop()
    s.args = list(s.args) + ["--rejoin-policy", "flush"]
    s.start()
    r = s.client()
    assert r.get("k") is None
    r.execute_command("SELECT", "sessions")
    assert r.get("s") is None
    assert r.config_get("rejoin-policy") == {"rejoin-policy": "flush"}
    assert "rejoin-policy flush: started empty (removed 2 cache files" in s.log()
    r.set("after", "1")
    r.close()
    crash(s)
    s.start()  # flush again: each start of a flush node is empty
    r = s.client()
    r.execute_command("SELECT", "sessions")
    assert r.get("after") is None
    r.close()


def test_rejoin_policy_is_not_live_and_checks_its_value(fresh_server):
    c = fresh_server().raw()
    assert c.command("CONFIG", "SET", "rejoin-policy", "flush") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'rejoin-policy') - can't set immutable config")


def test_expire_caps_what_was_held_and_spares_what_is_written_after(fresh_server):
    s = fresh_server()
    r = s.client()
    r.set("plain", "v")
    r.set("soon", "v", px=3000)           # already sooner than any cap: kept
    r.set("late", "v", ex=100000)         # capped
    r.rpush("list", "a")
    r.execute_command("SELECT", "sessions")
    r.set("named", "v")
    r.close()
    crash(s)                              # the caps must cover what the log replays too
    s.args = list(s.args) + ["--rejoin-policy", "expire", "--rejoin-window", "60"]
    s.start()
    r = s.client()
    info = r.info("persistence")
    assert info["rejoin_policy"] == "expire" and info["rejoin_window"] == 60
    for key in ("plain", "late", "list"):
        assert 0 < r.pttl(key) <= 60000, key
    assert 0 < r.pttl("soon") <= 3000
    r.set("plain", "new")                 # written after the restart: its own expiry (none)
    assert r.ttl("plain") == -1
    r.execute_command("SELECT", "sessions")
    assert 0 < r.pttl("named") <= 60000
    r.close()
    info = s.client().info("persistence")
    assert info["rejoin_in_progress"] == 0 and info["rejoin_capped_keys"] == 4
    assert "rejoin-policy expire: capped 4 keys" in s.log()


def test_a_second_restart_does_not_extend_the_first_deadline(fresh_server):
    s = fresh_server(args=["--rejoin-policy", "expire", "--rejoin-window", "60"])
    r = s.client()
    r.set("k", "v")
    r.close()
    s.restart()
    first = s.client().pexpiretime("k")
    s.restart()
    r = s.client()
    assert r.pexpiretime("k") == first
    r.close()


def test_deadlines_spread_over_the_window(fresh_server):
    s = fresh_server()
    r = s.client()
    r.mset({f"key:{i}": "v" for i in range(200)})
    r.close()
    s.stop()
    s.args = list(s.args) + ["--rejoin-policy", "expire", "--rejoin-window", "100"]
    s.start()
    r = s.client()
    ttls = sorted(r.pttl(f"key:{i}") for i in range(200))
    assert 0 < ttls[0] and ttls[-1] <= 100000
    # A hash of the key spreads them: refills trickle rather than fall at once.
    assert ttls[-1] - ttls[0] > 80000
    assert len(set(t // 1000 for t in ttls)) > 50
    r.close()
