"""Prometheus's redis_exporter (Debian's prometheus-redis-exporter, unmodified)
scraping a running server: the figures dashboards read must be the server's
own, as with Redis (KVCACHE_TARGET=redis runs the same checks against
redis-server). Also the exporter's -script for named caches
(docker/monitoring/kvcache-caches.lua), under Lua 5.1 as Redis runs it.

Also Debian's Prometheus with the shipped configuration, recording rules
and Grafana dashboard (docker/monitoring/check-dashboard.py asks it every
panel's query).

Needs prometheus-redis-exporter, prometheus (with promtool) and lua5.1
(scripts/test and .ci/run install them); without them the tests are
skipped, or fail under KVCACHE_REQUIRE_TOOLS=1 (CI), so the end-to-end
test cannot silently not run."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from conftest import MODE, REDIS, ROOT, Server, free_port, require_tool

SCRIPT = os.path.join(ROOT, "docker", "monitoring", "kvcache-caches.lua")

EXPORTER = shutil.which("prometheus-redis-exporter")


@pytest.fixture(scope="module", autouse=True)
def exporter_installed():
    """A skip without the exporter, a failure under KVCACHE_REQUIRE_TOOLS=1."""
    global EXPORTER
    EXPORTER = require_tool("prometheus-redis-exporter")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Exporter:
    """One exporter process for a server, on a free loopback port, its log in a file."""

    def __init__(self, server, *args):
        self.port = free_port()
        self.log_path = os.path.join(server.dir, "exporter-%d.log" % self.port)
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [EXPORTER, "-redis.addr", "redis://127.0.0.1:%d" % server.port,
             "-web.listen-address", "127.0.0.1:%d" % self.port, *args],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("the exporter did not start: " + self.log())
                time.sleep(0.05)

    def scrape(self):
        """Every sample: {(name, ((label, value), ...)): float}."""
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=30) as reply:
            text = reply.read().decode()
        samples = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            match = SAMPLE.match(line)
            assert match, line
            name, labels, value = match.groups()
            samples[(name, tuple(sorted(LABEL.findall(labels or ""))))] = float(value)
        return samples

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def errors(self):
        """The exporter's error lines (logrus: level=error, level=fatal)."""
        return [line for line in self.log().splitlines() if "level=error" in line or "level=fatal" in line]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


@pytest.fixture(scope="module")
def watched():
    """A server with DEBUG allowed and the latency monitor on, and an exporter on it."""
    s = Server(args=["--enable-debug-command", "yes", "--latency-monitor-threshold", "100"]).start()
    exporter = Exporter(s)
    yield s, exporter
    exporter.stop()
    s.cleanup()


@pytest.fixture
def c(watched):
    s, _ = watched
    conn = s.raw()
    assert conn.command("FLUSHALL") == "OK"
    yield conn
    conn.close()


def test_exporter_sees_a_redis(watched, c):
    _, exporter = watched
    samples = exporter.scrape()
    assert value(samples, "redis_up") == 1
    info = [k for k in samples if k[0] == "redis_instance_info"]
    assert len(info) == 1 and dict(info[0][1])["redis_version"] == "7.0.15", info
    assert value(samples, "redis_exporter_last_scrape_error", err="") == 0
    assert exporter.errors() == []


def test_db_keys_are_dbsize_and_the_volatile_count(watched, c):
    _, exporter = watched
    layout = {0: (5, 2), 3: (3, 3), 10: (1, 0), 15: (4, 1)}      # db: (keys, of which with a TTL)
    for db, (keys, volatile) in layout.items():
        assert c.command("SELECT", str(db)) == "OK"
        for i in range(keys):
            args = ("EX", "1000") if i < volatile else ()
            assert c.command("SET", "k%d" % i, "v", *args) == "OK"
    if not REDIS:
        # A named cache is never a db: its keys are not counted as one.
        assert c.command("SELECT", "sessions") == "OK"
        assert c.command("SET", "s", "1", "EX", "100") == "OK"
    samples = exporter.scrape()
    for db in range(16):
        assert c.command("SELECT", str(db)) == "OK"
        size = c.command("DBSIZE")
        volatile = sum(1 for key in c.command("KEYS", "*") if c.command("TTL", key) >= 0)
        assert value(samples, "redis_db_keys", db="db%d" % db) == size, db
        assert value(samples, "redis_db_keys_expiring", db="db%d" % db) == volatile, db
        assert (size, volatile) == layout.get(db, (0, 0))
    # Redis estimates avg_ttl by sampling (0 until its expiry cycle has); here it is exact.
    assert (0 if REDIS else 900) <= value(samples, "redis_db_avg_ttl_seconds", db="db3") <= 1000
    dbs = {dict(labels)["db"] for name, labels in samples if name == "redis_db_keys"}
    assert dbs == {"db%d" % i for i in range(16)}
    # Nothing else the exporter derives from a field starting with "db".
    assert {name for name, _ in samples if name.startswith("redis_db")} == {
        "redis_db_keys", "redis_db_keys_expiring", "redis_db_avg_ttl_seconds"}
    assert exporter.errors() == []


def test_hits_and_misses_move(watched, c):
    _, exporter = watched
    assert c.command("SET", "here", "1") == "OK"
    before = exporter.scrape()
    for _ in range(7):
        assert c.command("GET", "here") == b"1"
    for _ in range(4):
        assert c.command("GET", "gone") is None
    after = exporter.scrape()
    assert value(after, "redis_keyspace_hits_total") - value(before, "redis_keyspace_hits_total") == 7
    assert value(after, "redis_keyspace_misses_total") - value(before, "redis_keyspace_misses_total") == 4


def test_expired_keys_move(watched, c):
    _, exporter = watched
    before = exporter.scrape()
    for i in range(20):
        assert c.command("SET", "t%d" % i, "v", "PX", "50") == "OK"
    deadline = time.time() + 10
    while c.command("DBSIZE") and time.time() < deadline:          # active expiry removes them
        time.sleep(0.05)
    assert c.command("DBSIZE") == 0
    after = exporter.scrape()
    assert value(after, "redis_expired_keys_total") - value(before, "redis_expired_keys_total") == 20


@pytest.mark.kvcache_only
def test_evicted_keys_move(watched, c):
    _, exporter = watched
    before = exporter.scrape()
    assert c.command("CONFIG", "SET", "cache", "db2 2kb") == "OK"
    try:
        assert c.command("SELECT", "2") == "OK"
        for i in range(30):
            assert c.command("SET", "e%02d" % i, "v" * 100) == "OK"      # 104 bytes each: 19 fit
        kept = c.command("DBSIZE")
        assert kept == 19
        after = exporter.scrape()
        assert value(after, "redis_evicted_keys_total") - value(before, "redis_evicted_keys_total") == 30 - kept
        assert value(after, "redis_db_keys", db="db2") == kept
    finally:
        c.command("CONFIG", "SET", "cache", "db2 0")


def test_command_latency_percentiles_appear(watched, c):
    _, exporter = watched
    assert c.command("CONFIG", "RESETSTAT") == "OK"
    for i in range(50):
        assert c.command("SET", "p%d" % i, "v") == "OK"
        assert c.command("GET", "p%d" % i) == b"v"
    samples = exporter.scrape()
    for cmd in ("set", "get", "config|resetstat"):
        assert value(samples, "redis_latency_percentiles_usec_count", cmd=cmd) == (1 if "|" in cmd else 50), cmd
        for quantile in ("50", "99", "99.9"):
            assert value(samples, "redis_latency_percentiles_usec", cmd=cmd, quantile=quantile) > 0, (cmd, quantile)
        assert value(samples, "redis_commands_total", cmd=cmd) == (1 if "|" in cmd else 50)
    assert exporter.errors() == []


def test_latency_spikes_appear(watched, c):
    _, exporter = watched
    assert c.command("DEBUG", "SLEEP", "0.2") == "OK"
    samples = exporter.scrape()
    assert 0.2 <= value(samples, "redis_latency_spike_duration_seconds", event_name="command") < 0.5
    assert abs(value(samples, "redis_latency_spike_last", event_name="command") - time.time()) < 10
    assert exporter.errors() == []


@pytest.mark.kvcache_only
def test_every_numbered_cache_is_counted_after_a_restart(fresh_server):
    s = fresh_server()
    c = s.raw()
    for db in (4, 9):
        assert c.command("SELECT", str(db)) == "OK"
        for i in range(db):
            assert c.command("SET", "k%d" % i, "v") == "OK"
    c.close()
    s.restart()
    exporter = Exporter(s)
    try:
        samples = exporter.scrape()      # nothing has selected db4 or db9 since the restart
        assert value(samples, "redis_db_keys", db="db4") == 4
        assert value(samples, "redis_db_keys", db="db9") == 9
        assert exporter.errors() == []
    finally:
        exporter.stop()


# --- named caches: the exporter's -script ----------------------------------------------------

def run_script_under_lua(info):
    """Runs kvcache-caches.lua under Lua 5.1 (Redis's Lua) with redis.call
    answering INFO with `info`; returns its result as a dict."""
    harness = ('local text = io.read("*a")\n'
               'redis = { call = function(c, s) assert(c == "INFO" and s == nil); return text end }\n'
               'local r = assert(loadfile(arg[1]))()\n'
               'for i = 1, #r, 2 do print(r[i] .. " " .. r[i + 1]) end\n')
    done = subprocess.run([require_tool("lua5.1"), "-e", harness.replace("arg[1]", repr(SCRIPT)).replace("\n", " ")],
                          input=info, capture_output=True, timeout=10)
    assert done.returncode == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())


@pytest.mark.kvcache_only
def test_caches_script_exports_every_cache(watched, c):
    for cache, keys in (("sessions", 3), ("my.cache-1_x", 1), ("5", 2)):
        assert c.command("SELECT", cache) == "OK"
        for i in range(keys):
            assert c.command("SET", "k%d" % i, "v") == "OK"
    assert c.command("GET", "k0") == b"v"
    assert c.command("GET", "nope") is None
    got = run_script_under_lua(c.command("INFO"))
    assert got["sessions:keys"] == "3" and got["my.cache-1_x:keys"] == "1" and got["db5:keys"] == "2"
    assert (got["db5:hits"], got["db5:misses"]) == ("1", "1")
    assert got["sessions:policy_fifo"] == "1" and got["sessions:available"] == "1"
    assert {k.split(":")[1] for k in got if k.startswith("sessions:")} == {
        "keys", "expires", "avg_ttl", "bytes", "capacity", "policy_fifo", "hits", "misses", "evicted", "expired",
        "tier_entries", "tier_bytes", "file_bytes", "wal_bytes", "unapplied_bytes", "available"}
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", v) for v in got.values()), got
    # The server-wide figures the exporter does not know, each once.
    server = {k[len("server/"):]: v for k, v in got.items() if k.startswith("server/")}
    assert {"memory_tier_used", "memtable_bytes", "writer_failed_jobs", "open_caches", "aof_segments"} <= set(server)
    assert server["writer_failed_jobs"] == "0" and int(server["open_caches"]) >= 4


@pytest.mark.kvcache_only
def test_caches_script_through_the_exporter(watched, c):
    s, _ = watched
    # Runs once the server has EVAL (the scripting branch); skipped only while
    # the server answers exactly as Redis does to a command it lacks.
    answer = c.command("EVAL", "return 1", "0")
    if isinstance(answer, tuple) and answer[1].lower().startswith("err unknown command 'eval'"):
        pytest.skip("the server has no EVAL yet: the exporter's -script needs it (docs/monitoring.md)")
    assert answer == 1
    assert c.command("SELECT", "sessions") == "OK"
    assert c.command("SET", "k", "v") == "OK"
    exporter = Exporter(s, "-script", SCRIPT)
    try:
        samples = exporter.scrape()
        assert value(samples, "redis_script_values", key="sessions:keys") == 1
        assert exporter.errors() == []
    finally:
        exporter.stop()


# --- Prometheus: the shipped configuration, recording rules and dashboard -------------------

MONITORING = os.path.join(ROOT, "docker", "monitoring")


@pytest.mark.kvcache_only
def test_prometheus_configuration_and_recording_rules():
    promtool = require_tool("promtool")
    for args in (["check", "config", "prometheus.yml"], ["test", "rules", "kvcache-rules.test.yml"]):
        done = subprocess.run([promtool, *args], cwd=MONITORING, capture_output=True, timeout=60)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert b"SUCCESS" in done.stdout, done.stdout


@pytest.mark.kvcache_only
def test_every_dashboard_query_answers_from_prometheus():
    """Debian's Prometheus scrapes the exporter on a running server (every
    second, with the shipped recording rules); check-dashboard.py then asks
    it every query of grafana-dashboard.json, as Grafana would."""
    prometheus = require_tool("prometheus")
    s = Server(args=["--enable-debug-command", "yes", "--latency-monitor-threshold", "1"]).start()
    exporter = Exporter(s)
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    config = os.path.join(s.dir, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n"
                "scrape_configs:\n  - job_name: kvcache\n    static_configs:\n"
                "      - targets: ['127.0.0.1:%d']\n" % (os.path.join(MONITORING, "kvcache-rules.yml"), exporter.port))
    log = open(os.path.join(s.dir, "prometheus.log"), "wb")
    proc = subprocess.Popen([prometheus, "--config.file", config, "--storage.tsdb.path", os.path.join(s.dir, "tsdb"),
                             "--web.listen-address", "127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT)
    log.close()

    def query(promql):
        with urllib.request.urlopen(url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}),
                                    timeout=10) as reply:
            return json.load(reply)["data"]["result"]

    try:
        c = s.raw()
        for i in range(20):
            assert c.command("SET", "k%d" % i, "v", *(("EX", "100") if i % 2 else ())) == "OK"
            assert c.command("GET", "k%d" % i) == b"v"
            assert c.command("GET", "missing%d" % i) is None
        assert c.command("SELECT", "3") == "OK"
        assert c.command("SET", "a", "1") == "OK"
        assert c.command("DEBUG", "SLEEP", "0.01") == "OK"      # a spike of the command event
        deadline = time.time() + 60
        while True:
            try:
                scraped = query('count_over_time(redis_up{job="kvcache"}[1m])')
                if scraped and float(scraped[0]["value"][1]) >= 3:
                    break
            except OSError:
                pass
            assert time.time() < deadline and proc.poll() is None, open(os.path.join(s.dir, "prometheus.log")).read()
            time.sleep(0.5)
        assert query('redis_db_keys{db="db0"}')[0]["value"][1] == "20"
        assert query('redis_db_keys_expiring{db="db0"}')[0]["value"][1] == "10"
        assert query('redis_db_keys{db="db3"}')[0]["value"][1] == "1"
        done = subprocess.run([sys.executable, os.path.join(MONITORING, "check-dashboard.py"), url],
                              capture_output=True, timeout=120)
        out = done.stdout.decode()
        assert done.returncode == 0 and "every query answered" in out, out + done.stderr.decode()
        assert "FAIL" not in out, out
        # Without the kvcache-caches job (it needs EVAL) the Caches row is all that may be empty,
        # and the log's size under appendonly no (as Redis, INFO has no aof_current_size then).
        for line in out.splitlines():
            if line.startswith("empty"):
                assert ("needs the kvcache-caches job" in line or "nothing to show yet" in line
                        or (MODE == "no-aof" and line == "empty Append-only log size (appendonly no)")), line
        if MODE != "no-aof":
            assert "ok    Append-only log size" in out, out
        assert "ok    Total Items per DB" in out and "ok    Command latency p99" in out, out
        assert "ok    Latency spikes (LATENCY LATEST)" in out, out
        c.close()
        assert exporter.errors() == []
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        exporter.stop()
        s.cleanup()
