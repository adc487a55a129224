"""LATENCY (the latency monitor and the per-command histograms), INFO
latencystats and INFO commandstats per subcommand, and their directives, as
Redis 7.0 has them. These run against redis-server too (KVCACHE_TARGET=redis);
the events only this server has are marked kvcache_only."""
import re
import time

import pytest

from conftest import REDIS

# Every bucket LATENCY HISTOGRAM may name: HdrHistogram's highest value
# equivalent to 1024 ns * 2^k, in microseconds.
BUCKETS = {(1024 * 2 ** k + 1024 * 2 ** k // 128 - 1) // 1000 for k in range(20)} | {1073741}

HELP = [
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
]

DISABLED = ("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use "
            "\"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep "
            "space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n")

DEBUG = ["--enable-debug-command", "yes"]


def info(c, section):
    text = c.command("INFO", section).decode()
    fields = {}
    for line in text.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            fields[k] = v
    return fields


def histogram(c, *names):
    """LATENCY HISTOGRAM as {name: (calls, [(usec, cumulative), ...])} from its RESP2 (flat) form."""
    reply = c.command("LATENCY", "HISTOGRAM", *names)
    out = {}
    for name, value in zip(reply[0::2], reply[1::2]):
        assert value[0] == b"calls" and value[2] == b"histogram_usec", value
        pairs = value[3]
        out[name.decode()] = (value[1], list(zip(pairs[0::2], pairs[1::2])))
    return out


@pytest.fixture
def monitor(fresh_server):
    """A server of the test's own with DEBUG allowed and the monitor at 100 ms."""
    s = fresh_server(args=DEBUG)
    c = s.raw()
    assert c.command("CONFIG", "SET", "latency-monitor-threshold", "100") == "OK"
    assert c.command("LATENCY", "RESET") >= 0
    return c


# --- the directives -------------------------------------------------------------------

def test_latency_directives_defaults(c):
    reply = c.command("CONFIG", "GET", "latency-*")
    assert dict(zip(reply[0::2], reply[1::2])) == {
        b"latency-monitor-threshold": b"0", b"latency-tracking": b"yes",
        b"latency-tracking-info-percentiles": b"50 99 99.9"}


def test_latency_tracking_info_percentiles_set_and_errors(c):
    try:
        assert c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "0.0 50.0 100.0") == "OK"
        assert c.command("CONFIG", "GET", "latency-tracking-info-percentiles") == [
            b"latency-tracking-info-percentiles", b"0 50 100"]
        assert c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "10.0 50.0 a") == (
            "error", "ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - "
                     "Invalid latency-tracking-info-percentiles parameters")
        assert c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "10.0 50.0 101.0") == (
            "error", "ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - "
                     "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        assert c.command("CONFIG", "GET", "latency-tracking-info-percentiles") == [
            b"latency-tracking-info-percentiles", b"0 50 100"]
        assert c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "") == "OK"
        assert c.command("CONFIG", "GET", "latency-tracking-info-percentiles") == [
            b"latency-tracking-info-percentiles", b""]
        assert c.command("SET", "k", "v") == "OK"
        assert info(c, "latencystats")["latency_percentiles_usec_set"] == ""
    finally:
        c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9")


def test_latency_monitor_threshold_takes_milliseconds(c):
    try:
        assert c.command("CONFIG", "SET", "latency-monitor-threshold", "-1") == (
            "error", "ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - "
                     "argument must be between 0 and 9223372036854775807 inclusive")
        assert c.command("CONFIG", "SET", "latency-monitor-threshold", "25") == "OK"
        assert c.command("CONFIG", "GET", "latency-monitor-threshold") == [b"latency-monitor-threshold", b"25"]
    finally:
        c.command("CONFIG", "SET", "latency-monitor-threshold", "0")


# --- INFO latencystats and commandstats ----------------------------------------------------

PERCENTILES = re.compile(r"^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$")


def test_info_latencystats_per_command_and_subcommand(c):
    assert c.command("CONFIG", "RESETSTAT") == "OK"
    assert c.command("SET", "a", "b") == "OK"
    assert c.command("GET", "a") == b"b"
    assert isinstance(c.command("CLIENT", "ID"), int)
    fields = info(c, "latencystats")
    for name in ("set", "get", "client|id", "config|resetstat"):
        assert PERCENTILES.match(fields["latency_percentiles_usec_" + name]), (name, fields)
    assert "latency_percentiles_usec_client" not in fields
    # Not a default section, as in Redis 7.0; in INFO all.
    assert "# Latencystats" not in c.command("INFO").decode()
    assert "\r\n# Latencystats\r\nlatency_percentiles_usec_" in c.command("INFO", "all").decode()


def test_info_commandstats_per_subcommand(c):
    assert c.command("CONFIG", "RESETSTAT") == "OK"
    assert isinstance(c.command("CLIENT", "ID"), int)
    assert c.command("CONFIG", "GET", "port")
    fields = info(c, "commandstats")
    assert fields["cmdstat_client|id"].startswith("calls=1,usec=")
    assert fields["cmdstat_config|get"].startswith("calls=1,usec=")
    assert fields["cmdstat_config|resetstat"].startswith("calls=1,usec=")
    assert "cmdstat_client" not in fields and "cmdstat_config" not in fields


def test_latency_tracking_off_and_on(c):
    try:
        assert c.command("CONFIG", "RESETSTAT") == "OK"
        assert c.command("CONFIG", "SET", "latency-tracking", "no") == "OK"
        assert c.command("SET", "a", "b") == "OK"
        assert c.command("INFO", "latencystats") == b"# Latencystats\r\n"
        assert "set" not in histogram(c)
        assert c.command("CONFIG", "SET", "latency-tracking", "yes") == "OK"
        assert c.command("SET", "a", "b") == "OK"
        assert PERCENTILES.match(info(c, "latencystats")["latency_percentiles_usec_set"])
        assert histogram(c, "set")["set"][0] == 1
        assert c.command("CONFIG", "RESETSTAT") == "OK"
        assert "latency_percentiles_usec_set" not in info(c, "latencystats")
    finally:
        c.command("CONFIG", "SET", "latency-tracking", "yes")


def test_latencystats_percentiles_configured(c):
    try:
        assert c.command("CONFIG", "RESETSTAT") == "OK"
        assert c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "0.0 50.0 100.0") == "OK"
        assert c.command("SET", "a", "b") == "OK"
        assert re.match(r"^p0=\d+\.\d{3},p50=\d+\.\d{3},p100=\d+\.\d{3}$",
                        info(c, "latencystats")["latency_percentiles_usec_set"])
    finally:
        c.command("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9")


# --- LATENCY HISTOGRAM -----------------------------------------------------------------

def test_latency_histogram_after_resetstat(c):
    assert c.command("CONFIG", "RESETSTAT") == "OK"
    got = histogram(c)
    assert list(got) == ["config|resetstat"]
    calls, buckets = got["config|resetstat"]
    assert calls == 1 and len(buckets) == 1 and buckets[0][1] == 1 and buckets[0][0] in BUCKETS


def test_latency_histogram_of_commands_and_subcommands(c):
    assert c.command("CONFIG", "RESETSTAT") == "OK"
    for _ in range(3):
        assert c.command("SET", "a", "b") == "OK"
    assert c.command("GET", "a") == b"b"
    assert isinstance(c.command("CLIENT", "ID"), int)
    assert isinstance(c.command("CLIENT", "LIST"), bytes)
    got = histogram(c, "set", "blabla", "client", "get", "zadd")
    assert sorted(got) == ["client|id", "client|list", "get", "set"]
    assert got["set"][0] == 3 and got["get"][0] == 1
    assert list(histogram(c, "CLIENT|ID")) == ["client|id"]
    assert histogram(c, "blabla") == {}
    for calls, buckets in got.values():
        # Cumulative: the counts grow, the last is every call, each bucket is HdrHistogram's.
        assert [n for _, n in buckets] == sorted(n for _, n in buckets) and buckets[-1][1] == calls
        assert all(usec in BUCKETS for usec, _ in buckets), buckets


def test_latency_histogram_in_resp3(server, r):
    r3 = server.client(protocol=3)
    r3.config_resetstat()
    r3.set("a", "b")
    got = r3.execute_command("LATENCY", "HISTOGRAM", "set")
    assert list(got) == [b"set"]
    assert got[b"set"][b"calls"] == 1
    buckets = got[b"set"][b"histogram_usec"]
    assert isinstance(buckets, dict) and list(buckets.values()) == [1] and list(buckets)[0] in BUCKETS
    r3.close()


# --- LATENCY's other subcommands ----------------------------------------------------------

def test_latency_help_and_errors(c):
    assert c.command("LATENCY", "HELP") == HELP
    assert c.command("LATENCY", "help", "xxx") == ("error", "ERR wrong number of arguments for 'latency|help' command")
    assert c.command("LATENCY") == ("error", "ERR wrong number of arguments for 'latency' command")
    assert c.command("LATENCY", "nope") == ("error", "ERR unknown subcommand 'nope'. Try LATENCY HELP.")
    assert c.command("LATENCY", "LATEST", "x") == ("error", "ERR wrong number of arguments for 'latency|latest' command")
    assert c.command("LATENCY", "HISTORY") == ("error", "ERR wrong number of arguments for 'latency|history' command")
    assert c.command("LATENCY", "GRAPH", "blabla") == ("error", "ERR No samples available for event 'blabla'")


def test_latency_without_events(fresh_server):
    c = fresh_server().raw()
    assert c.command("LATENCY", "LATEST") == []
    assert c.command("LATENCY", "HISTORY", "command") == []
    assert c.command("LATENCY", "RESET") == 0
    assert c.command("LATENCY", "RESET", "blabla") == 0
    assert c.command("LATENCY", "DOCTOR") == DISABLED.encode()
    assert c.command("CONFIG", "SET", "latency-monitor-threshold", "100") == "OK"
    assert c.command("LATENCY", "DOCTOR") == (
        b"Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. "
        b"I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")


def test_slow_commands_are_command_events(monitor):
    c = monitor
    before = int(time.time())
    assert c.command("DEBUG", "SLEEP", "0.15") == "OK"
    time.sleep(1.05)
    assert c.command("DEBUG", "SLEEP", "0.25") == "OK"
    after = int(time.time())
    assert c.command("DEBUG", "SLEEP", "0.05") == "OK"         # under the threshold: not kept
    latest = c.command("LATENCY", "LATEST")
    assert len(latest) == 1
    name, when, last, worst = latest[0]
    assert name == b"command" and before <= when <= after
    assert 250 <= last <= 400 and worst == last
    history = c.command("LATENCY", "HISTORY", "command")
    assert len(history) == 2 and history[1] == [when, last]
    assert 150 <= history[0][1] < 250 and history[0][0] < when
    assert c.command("LATENCY", "HISTORY", "COMMAND") == []      # the event's name, case and all
    graph = c.command("LATENCY", "GRAPH", "command").decode()
    lines = graph.split("\n")
    assert lines[0] == "command - high %d ms, low %d ms (all time high %d ms)" % (last, history[0][1], last)
    assert lines[1] == "-" * 80
    assert lines[2:6] == [" #", " |", " |", "_|"] and lines[6] == "  "
    doctor = c.command("LATENCY", "DOCTOR").decode()
    assert doctor.startswith("Dave, I have observed latency spikes in this Redis instance. You don't mind talking "
                             "about it, do you Dave?\n\n1. command: 2 latency spikes (average ")
    assert "- Check your Slow Log to understand what are the commands you are running which are too slow" in doctor
    assert c.command("LATENCY", "RESET", "COMMAND") == 1          # any case
    assert c.command("LATENCY", "LATEST") == []


def test_same_second_keeps_the_worst(monitor):
    c = monitor
    # Two slow commands within one second are one sample: the worse.
    for _ in range(10):
        start = time.time()
        if start % 1 < 0.3:
            break
        time.sleep(0.1)
    assert c.command("DEBUG", "SLEEP", "0.12") == "OK"
    assert c.command("DEBUG", "SLEEP", "0.2") == "OK"
    history = c.command("LATENCY", "HISTORY", "command")
    if len(history) == 1:
        assert 200 <= history[0][1] < 300
    else:                                                          # a second boundary fell between them
        assert len(history) == 2
    assert c.command("LATENCY", "LATEST")[0][3] >= 200


def test_monitor_off_keeps_nothing(fresh_server):
    c = fresh_server(args=DEBUG).raw()
    assert c.command("DEBUG", "SLEEP", "0.05") == "OK"
    assert c.command("LATENCY", "LATEST") == []


# --- this server's own events ----------------------------------------------------------------

@pytest.mark.kvcache_only
def test_a_write_waiting_for_room_is_a_memtable_wait(fresh_server):
    s = fresh_server(args=DEBUG + ["--memtable-max-size", "1", "--latency-monitor-threshold", "50"])
    c = s.raw()
    assert c.command("DEBUG", "WRITER", "PAUSE") == "OK"
    assert c.command("SET", "first", "v" * 100) == "OK"         # fills the memtable
    time.sleep(1.2)                                               # sealed, held by the paused writer
    waiting = s.raw()
    waiting.send("*3\r\n$3\r\nSET\r\n$6\r\nsecond\r\n$1\r\nv\r\n")
    time.sleep(0.3)
    assert c.command("DEBUG", "WRITER", "RESUME") == "OK"
    assert waiting.read_reply() == "OK"
    latest = {e[0]: e for e in c.command("LATENCY", "LATEST")}
    assert b"memtable-wait" in latest, latest
    assert latest[b"memtable-wait"][2] >= 250


@pytest.mark.kvcache_only
def test_writer_batches_are_sqlite_commit_events(fresh_server):
    s = fresh_server(args=["--latency-monitor-threshold", "1"])
    c = s.raw()
    c.send(b"".join(b"*3\r\n$3\r\nSET\r\n$8\r\nkey%05d\r\n$100\r\n%s\r\n" % (i, b"v" * 100) for i in range(20000)))
    for _ in range(20000):
        assert c.read_reply() == "OK"
    assert c.command("SAVE") == "OK"
    names = [e[0] for e in c.command("LATENCY", "LATEST")]
    assert b"sqlite-commit" in names, names


@pytest.mark.kvcache_only
def test_a_mass_expiry_is_expire_cycle_events(fresh_server):
    s = fresh_server(args=["--latency-monitor-threshold", "1"])
    c = s.raw()
    c.send(b"".join(b"*5\r\n$3\r\nSET\r\n$8\r\nkey%05d\r\n$1\r\nv\r\n$2\r\nPX\r\n$3\r\n300\r\n" % i for i in range(30000)))
    for _ in range(30000):
        assert c.read_reply() == "OK"
    deadline = time.time() + 10
    while c.command("DBSIZE") and time.time() < deadline:
        time.sleep(0.1)
    assert c.command("DBSIZE") == 0
    latest = {e[0]: e for e in c.command("LATENCY", "LATEST")}
    assert b"expire-cycle" in latest, latest


@pytest.mark.kvcache_only
def test_opening_a_fragmented_file_is_a_cache_open_event(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("SELECT", "big") == "OK"
    c.send(b"".join(b"*3\r\n$3\r\nSET\r\n$8\r\nkey%05d\r\n$1000\r\n%s\r\n" % (i, b"v" * 1000) for i in range(8000)))
    for _ in range(8000):
        assert c.read_reply() == "OK"
    assert c.command("SAVE") == "OK"
    assert c.command("FLUSHDB") == "OK"                        # every page free: VACUUM at the next open
    assert c.command("SAVE") == "OK"
    c.close()
    s.stop()
    s.args += ["--latency-monitor-threshold", "1"]
    s.start()
    c = s.raw()
    latest = {e[0]: e for e in c.command("LATENCY", "LATEST")}
    assert b"cache-open" in latest, (latest, s.log()[-2000:])
    assert "Vacuum" in s.log()
