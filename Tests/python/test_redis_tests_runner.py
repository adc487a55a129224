"""tools/redis-tests/run.py reads the Redis test helper's output right: each
test's outcome, the exception or timeout that stopped a file, the test it
stopped in, and the tests never reached. Pure parsing on made-up helper
output: no server, no Redis sources.
"""
import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import DURABILITY, ROOT

pytestmark = pytest.mark.skipif(DURABILITY != "commit", reason="no server involved: once is enough")

RUNNER = os.path.join(ROOT, "tools", "redis-tests", "run.py")
spec = importlib.util.spec_from_file_location("redis_tests_run", RUNNER)
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

ESC = "\x1b[0;32;49m"
REDIS_OUT = f"""Cleanup: may take some time... OK
Starting test server at port 21079
[ready]: 100
Testing unit/demo
[{ESC}ok\x1b[0m]: first (0 ms)
[ok]: second with: colon (12 ms)
[ok]: LPOS basic usage - listpack (1 ms)
[ok]: LPOS basic usage - quicklist (1 ms)
[ok]: repeated (0 ms)
[ok]: repeated (0 ms)
[ok]: last (3 ms)
[ignore]: needs a replica: Tag: needs:repl denied
[ignore]: Not supported on external server
[skip]: skipped one
[1/1 done]: unit/demo (1 seconds)

                   The End
"""

KV_OUT = """Testing unit/demo
[ok]: first (0 ms)
[err]: second with: colon in tests/unit/demo.tcl
Expected 'a' to be equal to 'b' (context: type eval line 3 cmd {assert_equal a b} proc ::test)
[ok]: LPOS basic usage - listpack (1 ms)
[exception]: Executing test client: ERR unknown command 'LPOS', with args beginning with: 'k' 'x'.
ERR unknown command 'LPOS', with args beginning with: 'k' 'x'
    while executing
"[srv $level "client"] {*}$args"
    (procedure "r" line 7)
    invoked from within
"r lpos k x"
    ("uplevel" body line 3)
    invoked from within
"uplevel 1 $code"
    (procedure "test" line 51)
    invoked from within
"test "LPOS basic usage - $enc" {
        r rpush k x
        assert_equal 0 [r lpos k x]..."
    ("uplevel" body line 20)
"""

SETUP_EXC = """Testing unit/type/list
[exception]: Executing test client: ERR Unknown option or number of arguments for CONFIG SET - 'list-compress-depth'.
ERR Unknown option or number of arguments for CONFIG SET - 'list-compress-depth'
    while executing
"[srv $level "client"] {*}$args"
    (procedure "r" line 7)
    invoked from within
"r config set list-compress-depth 2"
    ("uplevel" body line 2)
    invoked from within
"uplevel 2 $code"
    (procedure "run_external_server_test" line 41)
"""

TIMEOUT_OUT = """Testing unit/demo
[ok]: first (0 ms)
[TIMEOUT]: clients state report follows.
sock55d0 => (IN PROGRESS) second with: colon
Killing still running Redis server 1234
"""


def test_parse_redis_run():
    res = run.parse_output(REDIS_OUT)
    assert res["completed"] and res["exception"] is None and res["timeout"] is None
    by = run.keyed(res["tests"])
    assert list(by)[:2] == ["first", "second with: colon"]
    assert by["repeated"]["status"] == run.OK and by["repeated (#2)"]["status"] == run.OK
    assert by["needs a replica"]["status"] == run.IGNORE
    assert by["skipped one"]["status"] == run.SKIP
    assert res["ignored_blocks"] == 1


def test_parse_exception_in_a_test_named_with_a_variable():
    res = run.parse_output(KV_OUT)
    assert not res["completed"]
    exc = res["exception"]
    assert exc["message"] == "ERR unknown command 'LPOS', with args beginning with: 'k' 'x'"
    assert exc["command"] == "r lpos k x"
    assert exc["test"] == "LPOS basic usage - $enc"
    err = run.keyed(res["tests"])["second with: colon"]
    assert err["status"] == run.ERR and err["error"].startswith("Expected 'a'")


def test_parse_exception_outside_any_test():
    exc = run.parse_output(SETUP_EXC)["exception"]
    assert exc["test"] is None and exc["command"] == "r config set list-compress-depth 2"
    assert "list-compress-depth" in exc["message"]


def test_parse_helper_timeout():
    res = run.parse_output(TIMEOUT_OUT)
    assert res["timeout"] == {"test": "second with: colon"}


def fake_args(**kw):
    class A:
        file_timeout, helper_timeout = 600, 180
    for k, v in kw.items():
        setattr(A, k, v)
    return A


def settled(text, killed=False, dead=None, alive=True):
    res = run.parse_output(text)
    res["stop"] = run.describe_stop(res, killed, dead, alive, server=None, args=fake_args())
    return res


def test_compare_marks_the_stopped_test_and_the_rest_not_run():
    redis, kv = settled(REDIS_OUT), settled(KV_OUT)
    f = run.compare("unit/demo", redis, kv)
    by = {t["name"]: t for t in f["tests"]}
    assert f["passed_on_redis"] == 7 and f["passed_on_kvcache"] == 2
    assert by["second with: colon"]["kvcache"] == run.ERR
    # The exception's test name has a variable: the next unreported test matching it.
    assert by["LPOS basic usage - quicklist"]["kvcache"] == run.EXCEPTION
    assert by["repeated (#2)"]["kvcache"] == run.NOT_RUN and by["last"]["kvcache"] == run.NOT_RUN
    assert f["first_blocker"].startswith("ERR unknown command 'LPOS'")
    assert "in test 'LPOS basic usage - quicklist'" in f["first_blocker"]
    assert f["percent"] == pytest.approx(28.6)


def test_compare_setup_blocker_and_timeout():
    f = run.compare("unit/demo", settled(REDIS_OUT), settled(SETUP_EXC))
    assert f["passed_on_kvcache"] == 0 and "outside any test" in f["first_blocker"]
    f = run.compare("unit/demo", settled(REDIS_OUT), settled(TIMEOUT_OUT))
    by = {t["name"]: t for t in f["tests"]}
    assert by["second with: colon"]["kvcache"] == run.TIMEOUT
    assert f["first_blocker"].startswith("no progress for 180s")


def test_a_dead_or_silent_server_is_a_crash_or_a_hang():
    res = run.parse_output(KV_OUT)
    stop = run.describe_stop(res, False, "killed by signal SIGSEGV", False, server=FakeServer(), args=fake_args())
    assert stop["kind"] == "crash" and stop["server_log_tail"] == "tail"
    stop = run.describe_stop(run.parse_output(TIMEOUT_OUT), True, None, False, server=None, args=fake_args())
    assert stop["kind"] == "hang" and stop["test"] == "second with: colon"


class FakeServer:
    def log_tail(self, lines=15):
        return "tail"


def test_render_doc_lists_what_fails_with_its_error():
    f = run.compare("unit/demo", settled(REDIS_OUT), settled(KV_OUT))
    data = {"files": [f], "total": run.totals([f]), "debian_source_version": "7.0.15-1",
            "tags": "-needs:repl", "durable": False, "redis_server_version": "7.0.15",
            "kvcache_commit": "abc", "generated": "now", "runtime_seconds": 61, "skips": {}}
    doc = run.render_doc(data)
    assert "| unit/demo | 7 | 2 | 28.6% |" in doc
    assert "second with: colon — err: `Expected 'a' to be equal to 'b'" in doc
    assert "## How to run" in doc and "1 min 01 s" in doc


def test_help_runs():
    out = subprocess.run([sys.executable, RUNNER, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "--min-percent" in out.stdout
