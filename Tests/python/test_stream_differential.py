"""Streams, differentially: the same random sequence of stream commands
(XADD with every trim form, XDEL, XTRIM, XRANGE, XREAD, XGROUP, XREADGROUP,
XACK, XCLAIM, XAUTOCLAIM, XPENDING, XINFO, XSETID, MEMORY USAGE, DEL) runs
against this server and a redis-server 7.0.15 beside it, with small node
sizes so nodes split and empty; every reply must be Redis's, and so must
both streams after every command (times masked: idle and delivery times
are the clock's)."""
import random
import re

import pytest
import redis

pytestmark = [pytest.mark.kvcache_only, pytest.mark.loop_only]

KEYS, GROUPS, CONSUMERS = ["s1", "s2"], ["g1", "g2"], ["c1", "c2", "c3", ""]


class Commands:
    """Random stream commands, mostly valid, some not (old IDs, bad options)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.ms = 1

    def sid(self):
        return "%d-%d" % (self.rng.randrange(0, self.ms + 2), self.rng.randrange(0, 3))

    def bound(self):
        r = self.rng.random()
        return "-" if r < 0.1 else "+" if r < 0.2 else "(%d" % self.rng.randrange(0, self.ms + 2) if r < 0.3 else self.sid()

    def trim(self, xadd):
        rng = self.rng
        strategy = rng.choice(["MAXLEN", "MINID"])
        out = [strategy] + ([rng.choice(["~", "="])] if rng.random() < 0.8 else [])
        out.append(str(rng.randrange(0, 8)) if strategy == "MAXLEN" else self.sid())
        if "~" in out and rng.random() < 0.5:
            out += ["LIMIT", str(rng.randrange(0, 6))]
        return out if not xadd or rng.random() < 0.3 else []

    def next(self):
        rng, k = self.rng, self.rng.choice(KEYS)
        g, c, r = rng.choice(GROUPS), rng.choice(CONSUMERS), rng.random()
        if r < 0.25:
            self.ms += rng.randrange(0, 2)
            sid = rng.choice(["%d-%d" % (self.ms, rng.randrange(0, 3)), "%d-*" % self.ms, str(self.ms), self.sid()])
            fields = []
            for _ in range(rng.choice([1, 1, 2])):
                fields += [rng.choice(["a", "b", "1", "x" * 70]), str(rng.randrange(0, 300))]
            return ["XADD", k] + (["NOMKSTREAM"] if rng.random() < 0.05 else []) + self.trim(True) + [sid] + fields
        if r < 0.30:
            return ["XDEL", k] + [self.sid() for _ in range(rng.randrange(1, 3))]
        if r < 0.34:
            return ["XTRIM", k] + self.trim(False)
        if r < 0.40:
            count = ["COUNT", str(rng.randrange(-1, 5))] if rng.random() < 0.5 else []
            return [rng.choice(["XRANGE", "XREVRANGE"]), k, self.bound(), self.bound()] + count
        if r < 0.44:
            return ["XREAD"] + (["COUNT", str(rng.randrange(0, 4))] if rng.random() < 0.5 else []) + [
                "STREAMS", k, rng.choice(["$", "0", self.sid()])]
        if r < 0.50:
            sub = rng.choice(["CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"])
            if sub in ("CREATE", "SETID"):
                extra = (["MKSTREAM"] if sub == "CREATE" and rng.random() < 0.3 else []) + (
                    ["ENTRIESREAD", str(rng.randrange(-1, 5))] if rng.random() < 0.2 else [])
                return ["XGROUP", sub, k, g, rng.choice(["$", "0", "-", self.sid()])] + extra
            return ["XGROUP", sub, k, g] + ([] if sub == "DESTROY" else [c])
        if r < 0.64:
            return ["XREADGROUP", "GROUP", g, c] + (["COUNT", str(rng.randrange(0, 4))] if rng.random() < 0.6 else []) + (
                ["NOACK"] if rng.random() < 0.2 else []) + ["STREAMS", k, rng.choice([">", ">", ">", "0", self.sid()])]
        if r < 0.70:
            return ["XACK", k, g] + [self.sid() for _ in range(rng.randrange(1, 3))]
        if r < 0.78:
            out = ["XCLAIM", k, g, c, "0"] + [self.sid() for _ in range(rng.randrange(1, 3))]
            for option, p in [(["FORCE"], 0.3), (["JUSTID"], 0.5), (["RETRYCOUNT", str(rng.randrange(0, 9))], 0.3),
                              (["LASTID", self.sid()], 0.2)]:
                if rng.random() < p:
                    out += option
            return out
        if r < 0.84:
            return ["XAUTOCLAIM", k, g, c, "0", self.sid()] + (["COUNT", str(rng.randrange(1, 4))] if rng.random() < 0.5 else []) + (
                ["JUSTID"] if rng.random() < 0.5 else [])
        if r < 0.88:
            extended = ["-", "+", str(rng.randrange(0, 10))] + ([c] if rng.random() < 0.3 else [])
            return ["XPENDING", k, g] + (extended if rng.random() < 0.6 else [])
        if r < 0.93:
            return ["XINFO", rng.choice(["STREAM", "GROUPS"]), k] + (["FULL"] if rng.random() < 0.3 else [])
        if r < 0.95:
            return ["XINFO", "CONSUMERS", k, g]
        if r < 0.97:
            return ["XSETID", k, self.sid()] + (["ENTRIESADDED", str(rng.randrange(0, 30))] if rng.random() < 0.3 else []) + (
                ["MAXDELETEDID", self.sid()] if rng.random() < 0.3 else [])
        if r < 0.98:
            return ["MEMORY", "USAGE", k]
        return ["DEL", k] if r < 0.99 else ["XLEN", k]


def call(conn, command):
    try:
        return conn.execute_command(*command)
    except redis.ResponseError as error:
        return ("error", str(error))


def masked(command, reply):
    """The reply with the clock's values taken out."""
    text = repr(reply)
    if command[0] in ("XPENDING", "XINFO"):
        text = re.sub(r"b?'(idle|seen-time)'(: |, )\d+", r"\1 T", text)
        text = re.sub(r"\[b'(\d+-\d+)', b'([^']*)', \d+, (\d+)\]", r"[\1 \2 T \3]", text)
        text = re.sub(r"\[b'(\d+-\d+)', \d+, (\d+)\]", r"[\1 T \2]", text)
    return text


@pytest.mark.parametrize("seed,node_entries,protocol", [(1, 1, 2), (2, 2, 2), (3, 3, 3), (4, 100, 2)])
def test_random_stream_commands_answer_as_redis(server, r, real_redis, seed, node_entries, protocol):
    ours = redis.Redis(port=server.port, protocol=protocol)
    theirs = redis.Redis(port=real_redis.port, protocol=protocol)
    for conn in (ours, theirs):
        conn.response_callbacks.clear()  # the replies as they come
        conn.flushall()
        conn.config_set("stream-node-max-entries", node_entries)
    commands = Commands(seed)
    try:
        for n in range(1200):
            command = commands.next()
            mine, redis_reply = call(ours, command), call(theirs, command)
            assert masked(command, mine) == masked(command, redis_reply), "command %d: %s" % (n, " ".join(command))
            for key in KEYS:
                assert call(ours, ["XRANGE", key, "-", "+"]) == call(theirs, ["XRANGE", key, "-", "+"]), \
                    "after command %d: %s" % (n, " ".join(command))
    finally:
        ours.config_set("stream-node-max-entries", 100)
        ours.close()
        theirs.close()
