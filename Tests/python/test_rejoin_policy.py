"""`rejoin-policy keep|flush`: what a restarted server does with what it held
(docs/cluster.md). The cluster tests run it behind nutcracker; these check one
server: `flush` starts empty, whatever the files and the log held."""
import os

import pytest

pytestmark = pytest.mark.kvcache_only


def test_flush_starts_empty_and_keep_serves_what_was_held(fresh_server):
    s = fresh_server()
    r = s.client()
    r.set("k", "v")
    r.execute_command("SELECT", "sessions")
    r.set("s", "v")
    r.close()
    s.kill9()  # what the log holds must go too, not only the files
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
    s.kill9()
    s.start()  # flush again: each start of a flush node is empty
    r = s.client()
    r.execute_command("SELECT", "sessions")
    assert r.get("after") is None
    r.close()


def test_rejoin_policy_is_not_live_and_checks_its_value(fresh_server):
    c = fresh_server().raw()
    assert c.command("CONFIG", "SET", "rejoin-policy", "flush") == (
        "error", "ERR CONFIG SET failed (possibly related to argument 'rejoin-policy') - can't set immutable config")
