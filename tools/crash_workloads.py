"""The crash test's workloads beyond plain writes (tools/crash_test.py).

Each workload is one raw RESP connection of its own, pipelining commands of
one kind into caches no other workload touches, so what it expects of them
depends on its own commands only:

- evict:       SET and DEL into a cache with a small capacity (fifo eviction).
               An evicted key may be missing, but a present key never holds
               an older value than its last acknowledged one, and the cache
               never holds more than its capacity.
- expiry:      SET with absolute deadlines 30 ms to 1.5 s ahead (PXAT), so
               the expiry sweep runs, beside hour-long TTLs and DELs. An
               expired key is never returned; a key whose deadline has not
               passed is kept like any write.
- move:        SET a key in db5, then MOVE it to db6 and back. A key is in
               exactly one of the two caches: never in both, never in
               neither once its SET was acknowledged.
- copy:        SET in db7 and COPY ... DB 10 REPLACE: the copy is the
               acknowledged value or a later one, the source is untouched.
- swapdb:      db11 and db12 hold marker keys (side A, side B); SWAPDB 11 12
               swaps them. Each cache holds one whole side, the two differ,
               and the order is the last acknowledged swap's or a later one.
- collections: lists, hashes, sets and sorted sets (RPUSH LPOP HSET HDEL
               SADD SREM ZADD ZREM DEL); every reply is checked against a
               model, and after a restart each collection is exactly the
               model's state after its last acknowledged write or a later one.
- streams:     streams with a consumer group (XADD XDEL XTRIM XREADGROUP
               XACK XCLAIM, DEL and XGROUP CREATE); after a restart each
               stream's entries, last delivered ID, pending entries (with
               owner and delivery count) and consumers are exactly a state
               from its last acknowledged command on.

Every command is recorded before it is sent and stamped when its reply
arrives. After a kill, a key's state must be one its commands produced
from the last acknowledged one on (in flight: applied or not).

Each failure names its check (the workload's name), so the summary says
which property broke.
"""
from __future__ import annotations

import random
import threading
import time

from toollib import encode
import benchlib as bench  # noqa: E402  (toollib puts bench/ on the path)

ABSENT = None


class Pause:
    """Lets the main thread hold every writer between two of its batches, so
    a FLUSHALL meets a quiet server whose state each writer knows exactly."""

    def __init__(self):
        self.cond = threading.Condition()
        self.requested = False
        self.idle = 0

    def point(self, stop: threading.Event):
        """Called by a writer between batches: waits while a pause is asked."""
        with self.cond:
            if not self.requested:
                return
            self.idle += 1
            self.cond.notify_all()
            while self.requested and not stop.is_set():
                self.cond.wait(0.05)
            self.idle -= 1

    def request(self, writers: int, timeout: float) -> bool:
        """Asks for a pause; True once `writers` threads are idle."""
        with self.cond:
            self.requested = True
            return self.cond.wait_for(lambda: self.idle >= writers, timeout)

    def release(self):
        with self.cond:
            self.requested = False
            self.cond.notify_all()


class KOp:
    """One command's effect on one key: the key's state after it."""
    __slots__ = ("state", "kind", "acked_at", "n")

    def __init__(self, state, kind):
        self.state, self.kind = state, kind
        self.acked_at = None
        self.n = 0


class Cmd:
    """A command to send: its arguments, the reply it must get (a value, or
    a predicate), and the key ops it makes."""
    __slots__ = ("args", "expect", "ops")

    def __init__(self, args, expect, ops=()):
        self.args, self.expect, self.ops = args, expect, list(ops)

    def reply_ok(self, reply) -> bool:
        if callable(self.expect):
            return self.expect(reply)
        return reply == self.expect


class Batch(list):
    """Commands about to be sent: each is recorded in the workload's history
    as it is added, so the next command of the same batch sees its effect."""

    def __init__(self, workload):
        super().__init__()
        self.workload = workload

    def append(self, cmd):
        self.workload.record(cmd)
        super().append(cmd)

    def __iadd__(self, cmds):
        for cmd in cmds:
            self.append(cmd)
        return self


class Workload:
    """A connection of its own, writing keys of its own; see the module doc."""
    name = "?"
    caches: tuple[str, ...] = ()

    def __init__(self, wid: int, nkeys: int, seed: int):
        self.wid, self.nkeys = wid, nkeys
        self.rng = random.Random(seed)
        self.seq = 0
        self.sent = 0
        self.acked = 0
        self.base: dict = {}   # key -> verified state
        self.hist: dict = {}   # key -> [KOp] since
        self.errors: list[str] = []
        self.ready = False     # setup acknowledged
        self.pause: Pause | None = None

    # --- the model -----------------------------------------------------------

    def current(self, key):
        """The key's state after every command sent so far (the model)."""
        ops = self.hist.get(key)
        return ops[-1].state if ops else self.base.get(key, self.initial(key))

    def initial(self, key):
        return ABSENT

    def value(self) -> bytes:
        self.seq += 1
        return b"%s%d:%d:" % (self.name[:2].encode(), self.wid, self.seq) + self.rng.randbytes(self.rng.randrange(1, 120))

    def key(self, n: int) -> bytes:
        return b"%s:w%d:k%d" % (self.name.encode(), self.wid, n)

    def record(self, cmd: Cmd):
        self.sent += 1
        for key, op in cmd.ops:
            op.n = self.sent
            self.hist.setdefault(key, []).append(op)

    def setup(self) -> list[Cmd]:
        return [Cmd(("SELECT", self.caches[0]), "OK")]

    def next_batch(self) -> list[Cmd]:
        raise NotImplementedError

    # --- the thread body -------------------------------------------------------

    def run(self, port: int, stop: threading.Event, killed: threading.Event):
        conn = None
        try:
            conn = bench.Client(port, timeout=10, errors="return")
            setup = Batch(self)
            setup += self.setup()
            self._send(conn, setup)
            self.ready = True
            while not stop.is_set():
                if self.pause:
                    self.pause.point(stop)
                self._send(conn, self.next_batch())
        except ValueError as error:
            self.errors.append(f"{self.name}: malformed reply: {error}")
        except (OSError, ConnectionError) as error:
            if not killed.is_set():
                self.errors.append(f"{self.name}: connection lost before the kill: {error!r}")
        except Exception as error:  # a bug of the workload itself: the run must not pass
            self.errors.append(f"{self.name} crashed: {error!r}")
        finally:
            if conn is not None:
                conn.close()

    def _send(self, conn, batch: list[Cmd]):
        conn.send(b"".join(encode(*cmd.args) for cmd in batch))
        for cmd in batch:
            reply = conn.read_reply()
            now = time.monotonic()
            if cmd.reply_ok(reply):
                for _, op in cmd.ops:
                    op.acked_at = now
                self.acked += 1
            else:
                # The model no longer follows the server: say so, and stop.
                self.errors.append(f"{self.name}: {b' '.join(a if isinstance(a, bytes) else str(a).encode() for a in cmd.args)[:100]!r} "
                                   f"answered {reply!r}")
                raise ConnectionError("unexpected reply")

    def forget_all(self):
        """After an applied FLUSHALL: every key is absent (caches emptied)."""
        self.base, self.hist = {}, {}

    def resync(self, port: int):
        """Takes what the server holds as the new starting point, unchecked
        (after a half-applied FLUSHALL, already reported)."""
        class Quiet:
            inflight = lost = lost_allowed = 0
            max_loss_age = stop_time = 0.0
            allowed_window = None

            def fail(self, check, message):
                pass
        conn = bench.Client(port, timeout=30, errors="return")
        try:
            for key, ops in self.hist.items():  # nothing of this cycle is in flight any more
                for op in ops:
                    op.acked_at = op.acked_at or 0.0
            self.verify(conn, Quiet(), 0)
        finally:
            conn.close()

    # --- after a restart ------------------------------------------------------

    def keys(self):
        return sorted(set(self.base) | set(self.hist))

    # With a loss window (appendonly no), whether each cache of a tuple
    # state may independently be at one of its recent states.
    sides_lose_independently = False

    def matches(self, state, observed, t0: float, t1: float):
        """Whether `observed` (read between wall-clock t0 and t1) is what
        `state` looks like: True, False, or a string naming a violation."""
        return state == observed

    def describe(self, state) -> str:
        if state is None:
            return "absent"
        if isinstance(state, tuple):
            return "(" + ", ".join("absent" if x is None else f"{x[:12]!r}…" for x in state) + ")"
        return repr(state)[:90]

    def settle(self, state, observed):
        """The next cycle's base, once `observed` matched `state`."""
        return observed

    def resolve(self, key, observed, t0: float, t1: float, verdict, cycle: int):
        """Checks one key's observed state against its history; the observed
        state becomes the base of the next cycle."""
        base = self.base.get(key, self.initial(key))
        ops = self.hist.pop(key, [])
        states = [base] + [op.state for op in ops]
        last_acked = max((i + 1 for i, op in enumerate(ops) if op.acked_at is not None), default=0)
        verdict.inflight += sum(1 for op in ops if op.acked_at is None)
        special = None
        for j in range(last_acked, len(states)):
            m = self.matches(states[j], observed, t0, t1)
            if m is True:
                self.base[key] = self.settle(states[j], observed)
                return
            if isinstance(m, str):
                special = m
        older = [j for j in range(last_acked) if self.matches(states[j], observed, t0, t1) is True]
        window = verdict.allowed_window
        if older and window is not None:
            # durability everysec: a kill may lose what was acknowledged in its last second.
            j = older[-1]
            lost = [op for op in ops[j:] if op.acked_at is not None]
            age = max(verdict.stop_time - op.acked_at for op in lost)
            verdict.lost += len(lost)
            verdict.max_loss_age = max(verdict.max_loss_age, age)
            if age <= window:
                verdict.lost_allowed += len(lost)
                self.base[key] = self.settle(states[j], observed)
                return
            special = f"an acknowledged write lost (acknowledged {age:.3f}s before the kill; allowed: {window}s)"
        if window is not None and self.sides_lose_independently and isinstance(observed, tuple):
            # appendonly no: each cache loses its own last second on its own
            # (only commands that change several caches at once are logged),
            # so each side may be any of its recent states.
            picks = []
            for i, side in enumerate(observed):
                found = [j for j, state in enumerate(states) if isinstance(state, tuple) and state[i] == side]
                if not found:
                    picks = None
                    break
                picks.append(found[-1])
            if picks is not None:
                j = min(picks)
                lost = [op for op in ops[j:] if op.acked_at is not None]
                age = max((verdict.stop_time - op.acked_at for op in lost), default=0.0)
                if age <= window:
                    verdict.lost += len(lost)
                    verdict.lost_allowed += len(lost)
                    verdict.max_loss_age = max(verdict.max_loss_age, age)
                    self.base[key] = observed
                    return
        why = special or ("an older state than the last acknowledged write's" if older
                          else "a state no command produced")
        verdict.fail(self.name, f"cycle {cycle}: {key!r}: found {self.describe(observed)}: {why} "
                                f"(last acknowledged: {self.describe(states[last_acked])})")
        self.base[key] = observed

    def verify(self, conn, verdict, cycle: int):
        raise NotImplementedError


def _read_chunked(conn, keys, request, chunk=200):
    """Sends request(key) for each key (a list of commands per key) in
    pipelined chunks; yields (key, replies, t0, t1) with wall-clock times
    around each chunk's round trip."""
    for start in range(0, len(keys), chunk):
        part = keys[start:start + chunk]
        per_key = [request(k) for k in part]
        t0 = time.time()
        conn.send(b"".join(encode(*args) for cmds in per_key for args in cmds))
        replies = [[conn.read_reply() for _ in cmds] for cmds in per_key]
        t1 = time.time()
        for k, r in zip(part, replies):
            yield k, r, t0, t1


def _select(conn, cache):
    reply = conn.command("SELECT", cache)
    if reply != "OK":
        raise RuntimeError(f"SELECT {cache}: {reply}")


def _no_error(replies, name, key, verdict, cycle):
    bad = [r for r in replies if isinstance(r, bench.RespError)]
    if bad:
        verdict.fail(name, f"cycle {cycle}: {key!r}: error reading it back: {bad[0]}")
    return not bad


# ---------------------------------------------------------------------------

class EvictWorkload(Workload):
    name = "evict"
    caches = ("crash-evict",)
    capacity = 96 * 1024

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 8, 32, 100))):
            k = self.key(self.rng.randrange(self.nkeys))
            if self.rng.random() < 0.9:
                v = self.value() + b"e" * self.rng.randrange(0, 600)
                batch.append(Cmd(("SET", k, v), "OK", [(k, KOp(v, "SET"))]))
            else:
                batch.append(Cmd(("DEL", k), lambda r: r in (0, 1), [(k, KOp(ABSENT, "DEL"))]))
        return batch

    def matches(self, state, observed, t0, t1):
        return observed is None or observed == state  # evicted, or this state

    def verify(self, conn, verdict, cycle):
        _select(conn, self.caches[0])
        for k, (value,), t0, t1 in _read_chunked(conn, self.keys(), lambda k: [("GET", k)]):
            if _no_error([value], self.name, k, verdict, cycle):
                self.resolve(k, value, t0, t1, verdict, cycle)
        used = keyspace_field(conn, self.caches[0], "bytes")
        if used is None or used > self.capacity:
            verdict.fail(self.name, f"cycle {cycle}: {self.caches[0]} holds {used} bytes, over its capacity "
                                    f"of {self.capacity}")


def keyspace_field(conn, cache, field):
    """A field of the cache's INFO keyspace line (None when it has no line)."""
    text = conn.command("INFO", "keyspace").decode()
    for line in text.splitlines():
        if line.startswith(cache + ":"):
            for part in line.split(":", 1)[1].split(","):
                name, _, value = part.partition("=")
                if name == field:
                    return int(value) if value.lstrip("-").isdigit() else value
    return 0 if field in ("keys", "bytes") else None


class ExpiryWorkload(Workload):
    """States are (value, deadline in ms since 1970 or None) or ABSENT."""
    name = "expiry"
    caches = ("crash-ttl",)

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 8, 32, 100))):
            k = self.key(self.rng.randrange(self.nkeys))
            r = self.rng.random()
            v = self.value()
            if r < 0.6:
                deadline = int(time.time() * 1000) + self.rng.randrange(30, 1500)
                batch.append(Cmd(("SET", k, v, "PXAT", deadline), "OK", [(k, KOp((v, deadline), "SET PXAT"))]))
            elif r < 0.85:
                deadline = int(time.time() * 1000) + 3_600_000
                batch.append(Cmd(("SET", k, v, "PXAT", deadline), "OK", [(k, KOp((v, deadline), "SET PXAT"))]))
            else:
                batch.append(Cmd(("DEL", k), lambda r: r in (0, 1), [(k, KOp(ABSENT, "DEL"))]))
        return batch

    def matches(self, state, observed, t0, t1):
        now0, now1 = t0 * 1000, t1 * 1000
        if observed is None:
            return state is None or state[1] <= now1  # deleted, or its deadline passed
        if state is None or state[0] != observed:
            return False
        if state[1] < now0 - 1:  # the server's clock is this machine's: 1 ms for rounding
            return f"an expired key was returned (deadline {now0 - state[1]:.0f} ms before the read)"
        return True

    def describe(self, state):
        if state is None:
            return "absent"
        if isinstance(state, bytes):
            return f"value {state[:12]!r}…"
        return f"value {state[0][:12]!r}… (deadline {state[1]})"

    def settle(self, state, observed):
        return None if observed is None else state  # keeps the deadline of the write that put the value

    def verify(self, conn, verdict, cycle):
        _select(conn, self.caches[0])
        for k, (value,), t0, t1 in _read_chunked(conn, self.keys(), lambda k: [("GET", k)]):
            if _no_error([value], self.name, k, verdict, cycle):
                self.resolve(k, value, t0, t1, verdict, cycle)


class MoveWorkload(Workload):
    """States are (value in db5, value in db6)."""
    name = "move"
    caches = ("5", "6")

    def initial(self, key):
        return (None, None)

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 8, 32, 100))):
            k = self.key(self.rng.randrange(self.nkeys))
            a, b = self.current(k)
            if a is None and b is None:
                v = self.value()
                batch.append(Cmd(("SET", k, v), "OK", [(k, KOp((v, None), "SET"))]))
            elif a is not None:
                batch.append(Cmd(("MOVE", k, "6"), 1, [(k, KOp((None, a), "MOVE"))]))
            else:
                batch += [Cmd(("SELECT", "6"), "OK"), Cmd(("MOVE", k, "5"), 1, [(k, KOp((b, None), "MOVE"))]),
                          Cmd(("SELECT", "5"), "OK")]
        return batch

    def matches(self, state, observed, t0, t1):
        if observed == state:
            return True
        if observed[0] is not None and observed[1] is not None:
            return "the key is in both caches (db5 and db6)"
        if observed == (None, None) and state != (None, None):
            return "the key is in neither cache (db5 nor db6): lost"
        return False

    def verify(self, conn, verdict, cycle):
        keys = self.keys()
        seen = {}
        for cache in self.caches:
            _select(conn, cache)
            for k, (value,), _, _ in _read_chunked(conn, keys, lambda k: [("GET", k)]):
                if _no_error([value], self.name, k, verdict, cycle):
                    seen.setdefault(k, []).append(value)
        for k in keys:
            if len(seen.get(k, [])) == 2:
                self.resolve(k, tuple(seen[k]), 0, 0, verdict, cycle)


class CopyWorkload(Workload):
    """States are (value in db7, value in db10)."""
    name = "copy"
    caches = ("7", "10")
    # The SETs in db7 are single-cache writes: with appendonly no, db7 may
    # lose one while db10 keeps the (logged) COPY made from it.
    sides_lose_independently = True

    def initial(self, key):
        return (None, None)

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 8, 32, 100))):
            k = self.key(self.rng.randrange(self.nkeys))
            a, b = self.current(k)
            if a is None or self.rng.random() < 0.4:
                v = self.value()
                batch.append(Cmd(("SET", k, v), "OK", [(k, KOp((v, b), "SET"))]))
            else:
                batch.append(Cmd(("COPY", k, k, "DB", "10", "REPLACE"), 1, [(k, KOp((a, a), "COPY"))]))
        return batch

    def matches(self, state, observed, t0, t1):
        if observed == state:
            return True
        if state[0] == observed[0] and observed[1] is None and state[1] is not None:
            return "the acknowledged copy in db10 is missing"
        return False

    def verify(self, conn, verdict, cycle):
        MoveWorkload.verify(self, conn, verdict, cycle)


class SwapWorkload(Workload):
    """One key stands for the pair: its state is "AB" (side A in db11) or "BA"."""
    name = "swapdb"
    caches = ("11", "12")
    SIDE_KEYS = 10
    PAIR = b"(pair)"

    def initial(self, key):
        return "AB"

    def setup(self):
        # Fill both sides, unless an earlier cycle did (then the base holds the order).
        if self.PAIR in self.base:
            return [Cmd(("SELECT", "11"), "OK")]
        cmds = []
        for cache, side in (("11", b"A"), ("12", b"B")):
            cmds.append(Cmd(("SELECT", cache), "OK"))
            pairs = [b"side"] + [side] + [x for i in range(self.SIDE_KEYS) for x in (b"s:%d" % i, side + b":%d" % i)]
            cmds.append(Cmd(("MSET", *pairs), "OK"))
        cmds.append(Cmd(("SELECT", "11"), "OK"))
        return cmds

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 2, 5))):
            now = self.current(self.PAIR)
            batch.append(Cmd(("SWAPDB", "11", "12"), "OK", [(self.PAIR, KOp(now[::-1], "SWAPDB"))]))
        time.sleep(0.002)  # a few hundred swaps a second is plenty
        return batch

    def keys(self):
        return [self.PAIR] if self.PAIR in self.base or self.PAIR in self.hist or self.ready else []

    def forget_all(self):
        super().forget_all()
        self.ready = False  # both sides are gone: the next cycle fills them again

    def verify(self, conn, verdict, cycle):
        if not self.keys():
            return
        sides = []
        for cache in self.caches:
            _select(conn, cache)
            names = [b"side"] + [b"s:%d" % i for i in range(self.SIDE_KEYS)]
            values = conn.command("MGET", *names)
            side = values[0]
            want = [side] + [(side or b"?") + b":%d" % i for i in range(self.SIDE_KEYS)]
            if side not in (b"A", b"B") or values != want:
                verdict.fail(self.name, f"cycle {cycle}: db{cache} does not hold one whole side: {values!r}"[:300])
                self.hist.pop(self.PAIR, None)
                return
            sides.append(side.decode())
        if sides[0] == sides[1]:
            verdict.fail(self.name, f"cycle {cycle}: db11 and db12 both hold side {sides[0]}")
            self.hist.pop(self.PAIR, None)
            return
        self.resolve(self.PAIR, "".join(sides), 0, 0, verdict, cycle)


class CollectionsWorkload(Workload):
    """States are frozen models: a tuple (list), frozensets (set, hash items,
    zset (member, score) pairs); an empty collection is ABSENT."""
    name = "collections"
    caches = ("crash-coll",)
    KINDS = ("list", "hash", "set", "zset")

    def ckey(self, n):
        return b"%s:w%d:%s:%d" % (self.name.encode(), self.wid, self.KINDS[n % 4].encode(), n)

    @staticmethod
    def kind_of(key: bytes) -> str:
        return key.split(b":")[2].decode()

    def member(self):
        self.seq += 1
        return b"m%d" % self.rng.randrange(12) if self.rng.random() < 0.7 else b"u%d" % self.seq

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 8, 32, 100))):
            k = self.ckey(self.rng.randrange(self.nkeys))
            kind = self.kind_of(k)
            now = self.current(k)
            r = self.rng.random()
            if r < 0.05:
                batch.append(Cmd(("DEL", k), 0 if now is None else 1, [(k, KOp(ABSENT, "DEL"))]))
                continue
            grow = r < 0.65
            if kind == "list":
                items = list(now or ())
                if grow:
                    v = self.value()
                    items.append(v)
                    batch.append(Cmd(("RPUSH", k, v), len(items), [(k, KOp(tuple(items), "RPUSH"))]))
                else:
                    head = items.pop(0) if items else None
                    batch.append(Cmd(("LPOP", k), head, [(k, KOp(tuple(items) or ABSENT, "LPOP"))]))
            elif kind == "set":
                members = set(now or ())
                m = self.member()
                if grow:
                    added = m not in members
                    members.add(m)
                    batch.append(Cmd(("SADD", k, m), int(added), [(k, KOp(frozenset(members), "SADD"))]))
                else:
                    removed = m in members
                    members.discard(m)
                    batch.append(Cmd(("SREM", k, m), int(removed), [(k, KOp(frozenset(members) or ABSENT, "SREM"))]))
            elif kind == "hash":
                fields = dict(now or ())
                f = self.member()
                if grow:
                    v = self.value()
                    added = f not in fields
                    fields[f] = v
                    batch.append(Cmd(("HSET", k, f, v), int(added), [(k, KOp(frozenset(fields.items()), "HSET"))]))
                else:
                    removed = f in fields
                    fields.pop(f, None)
                    batch.append(Cmd(("HDEL", k, f), int(removed),
                                     [(k, KOp(frozenset(fields.items()) or ABSENT, "HDEL"))]))
            else:
                scores = dict(now or ())
                m = self.member()
                if grow:
                    score = self.rng.randrange(-1000, 1000)
                    added = m not in scores
                    scores[m] = score
                    batch.append(Cmd(("ZADD", k, score, m), int(added), [(k, KOp(frozenset(scores.items()), "ZADD"))]))
                else:
                    removed = m in scores
                    scores.pop(m, None)
                    batch.append(Cmd(("ZREM", k, m), int(removed),
                                     [(k, KOp(frozenset(scores.items()) or ABSENT, "ZREM"))]))
        return batch

    def read(self, key):
        kind = self.kind_of(key)
        return [{"list": ("LRANGE", key, 0, -1), "hash": ("HGETALL", key), "set": ("SMEMBERS", key),
                 "zset": ("ZRANGE", key, 0, -1, "WITHSCORES")}[kind]]

    def frozen(self, key, reply):
        if not reply:
            return ABSENT
        kind = self.kind_of(key)
        if kind == "list":
            return tuple(reply)
        if kind == "set":
            return frozenset(reply)
        pairs = [(reply[i], reply[i + 1]) for i in range(0, len(reply), 2)]
        if kind == "zset":
            pairs = [(m, int(float(s))) for m, s in pairs]
        return frozenset(pairs)

    def describe(self, state):
        if state is None:
            return "absent"
        return f"{type(state).__name__} of {len(state)}"

    def verify(self, conn, verdict, cycle):
        _select(conn, self.caches[0])
        for k, (reply,), t0, t1 in _read_chunked(conn, self.keys(), self.read):
            if _no_error([reply], self.name, k, verdict, cycle):
                self.resolve(k, self.frozen(k, reply), t0, t1, verdict, cycle)


class StreamsWorkload(Workload):
    """Streams with one consumer group `g` each: XADD (explicit IDs, so
    every reply is known), XDEL, XTRIM MAXLEN =, XREADGROUP (which makes
    pending entries and consumers), XACK, XCLAIM (JUSTID or not: delivery
    counts), and DEL followed by XGROUP CREATE … MKSTREAM. A state is the
    entries, the group's last delivered ID, its pending entries (ID,
    consumer, delivery count) and its consumers; after a restart each
    stream is exactly one of its states from the last acknowledged on."""
    name = "streams"
    caches = ("crash-streams",)
    CONSUMERS = (b"c0", b"c1", b"c2", b"c3")

    def __init__(self, wid, nkeys, seed):
        super().__init__(wid, min(nkeys, 40), seed)
        self.next_ms = 1

    def skey(self, n):
        return b"%s:w%d:s%d" % (self.name.encode(), self.wid, n)

    @staticmethod
    def empty():
        return ((), b"0-0", frozenset(), frozenset())

    def setup(self):
        cmds = [Cmd(("SELECT", self.caches[0]), "OK")]
        for n in range(self.nkeys):
            k = self.skey(n)
            cmds.append(Cmd(("DEL", k), lambda r: r in (0, 1), [(k, KOp(ABSENT, "DEL"))]))
            cmds.append(Cmd(("XGROUP", "CREATE", k, "g", "$", "MKSTREAM"), "OK", [(k, KOp(self.empty(), "XGROUP"))]))
        return cmds

    def next_batch(self):
        batch = Batch(self)
        for _ in range(self.rng.choice((1, 8, 32))):
            k = self.skey(self.rng.randrange(self.nkeys))
            if self.current(k) is ABSENT:  # after a FLUSHALL: the group first
                batch.append(Cmd(("XGROUP", "CREATE", k, "g", "$", "MKSTREAM"), "OK", [(k, KOp(self.empty(), "XGROUP"))]))
                continue
            entries, last, pending, consumers = self.current(k)
            pend = {i: (c, n) for i, c, n in pending}
            ids = [e[0] for e in entries]
            r = self.rng.random()
            if r < 0.02:
                batch.append(Cmd(("DEL", k), 1, [(k, KOp(ABSENT, "DEL"))]))
                batch.append(Cmd(("XGROUP", "CREATE", k, "g", "$", "MKSTREAM"), "OK", [(k, KOp(self.empty(), "XGROUP"))]))
            elif r < 0.40:
                sid = b"%d-0" % self.next_ms
                self.next_ms += 1
                v = self.value()
                state = (entries + ((sid, (b"f", v)),), last, pending, consumers)
                batch.append(Cmd(("XADD", k, sid, "f", v), sid, [(k, KOp(state, "XADD"))]))
            elif r < 0.48:
                victim = self.rng.choice(ids) if ids and self.rng.random() < 0.8 else b"999999999-0"
                kept = tuple(e for e in entries if e[0] != victim)
                batch.append(Cmd(("XDEL", k, victim), len(entries) - len(kept),
                                 [(k, KOp((kept, last, pending, consumers), "XDEL"))]))
            elif r < 0.52:
                keep = self.rng.randrange(0, 30)
                kept = entries[-keep:] if keep else ()
                batch.append(Cmd(("XTRIM", k, "MAXLEN", "=", keep), len(entries) - len(kept),
                                 [(k, KOp((kept, last, pending, consumers), "XTRIM"))]))
            elif r < 0.75:
                c = self.rng.choice(self.CONSUMERS)
                count = self.rng.randrange(1, 6)
                lastn = _sid(last)
                new = [e for e in entries if _sid(e[0]) > lastn][:count]
                if new:
                    last2 = new[-1][0]
                    for e in new:
                        pend[e[0]] = (c, 1)
                    reply = [[k, [[e[0], list(e[1])] for e in new]]]
                    state = (entries, last2, _frozen(pend), consumers | {c})
                else:
                    reply, state = None, (entries, last, pending, consumers)
                batch.append(Cmd(("XREADGROUP", "GROUP", "g", c, "COUNT", count, "STREAMS", k, ">"), reply,
                                 [(k, KOp(state, "XREADGROUP"))]))
            elif r < 0.87:
                some = self.rng.sample(sorted(pend), min(len(pend), self.rng.randrange(1, 4))) if pend else [b"1-0"]
                acked = sum(1 for i in some if i in pend)
                for i in some:
                    pend.pop(i, None)
                batch.append(Cmd(("XACK", k, "g", *some), acked, [(k, KOp((entries, last, _frozen(pend), consumers), "XACK"))]))
            else:
                if not pend:
                    continue
                c = self.rng.choice(self.CONSUMERS)
                justid = self.rng.random() < 0.5
                some = sorted(self.rng.sample(sorted(pend), min(len(pend), self.rng.randrange(1, 4))), key=_sid)
                present = dict(entries)
                claimed = []
                for i in some:
                    if i not in present:
                        pend.pop(i)  # gone from the stream: its pending entry goes too
                        continue
                    owner, n = pend[i]
                    pend[i] = (c, n if justid else n + 1)
                    claimed.append(i)
                reply = claimed if justid else [[i, list(present[i])] for i in claimed]
                args = ("XCLAIM", k, "g", c, 0, *some) + (("JUSTID",) if justid else ())
                batch.append(Cmd(args, reply, [(k, KOp((entries, last, _frozen(pend),
                                                        consumers | ({c} if claimed else set())), "XCLAIM"))]))
        return batch

    def read(self, key):
        return [("XRANGE", key, "-", "+"), ("XINFO", "GROUPS", key), ("XPENDING", key, "g", "-", "+", 1000000),
                ("XINFO", "CONSUMERS", key, "g")]

    def frozen(self, key, replies):
        rng, groups, pel, consumers = replies
        if isinstance(groups, bench.RespError):
            return ABSENT
        entries = tuple((e[0], tuple(e[1])) for e in rng)
        last = dict(zip(groups[0][::2], groups[0][1::2]))[b"last-delivered-id"]
        pending = frozenset((p[0], p[1], p[3]) for p in pel)
        names = frozenset(dict(zip(c[::2], c[1::2]))[b"name"] for c in consumers)
        return (entries, last, pending, names)

    def describe(self, state):
        if state is None:
            return "absent"
        entries, last, pending, consumers = state
        return f"stream of {len(entries)}, last delivered {last!r}, {len(pending)} pending, {len(consumers)} consumers"

    def verify(self, conn, verdict, cycle):
        _select(conn, self.caches[0])
        for k, replies, t0, t1 in _read_chunked(conn, self.keys(), self.read):
            if isinstance(replies[1], bench.RespError) and "no such key" in str(replies[1]):
                self.resolve(k, ABSENT, t0, t1, verdict, cycle)
            elif _no_error(replies, self.name, k, verdict, cycle):
                self.resolve(k, self.frozen(k, replies), t0, t1, verdict, cycle)


def _sid(sid: bytes):
    ms, seq = sid.split(b"-")
    return (int(ms), int(seq))


def _frozen(pend: dict):
    return frozenset((i, c, n) for i, (c, n) in pend.items())


WORKLOADS = {w.name: w for w in (EvictWorkload, ExpiryWorkload, MoveWorkload, CopyWorkload, SwapWorkload,
                                 CollectionsWorkload, StreamsWorkload)}


def server_args(names) -> list[str]:
    """The server options the chosen workloads need (the evict cache's capacity)."""
    return ["--cache", EvictWorkload.caches[0], str(EvictWorkload.capacity), "fifo"] if "evict" in names else []


# ---------------------------------------------------------------------------
# FLUSHALL: every writer paused, FLUSHALL sent, the kill in flight or just after.

FLUSH_SKIPPED_CACHES = ("crash-ttl",)  # keys there expire on their own: no evidence either way


def dbsizes(conn, caches) -> dict:
    sizes = {}
    for cache in caches:
        if conn.command("SELECT", cache) != "OK":
            raise RuntimeError(f"SELECT {cache} failed")
        sizes[cache] = conn.command("DBSIZE")
    return sizes


def check_flush(before: dict, after: dict, acked: bool, verdict, cycle: int) -> list[str]:
    """The caches the FLUSHALL emptied (all of them, or none, unless it was
    half-applied); records a violation when it emptied some caches and not
    others, or was acknowledged and not applied."""
    held = [c for c in before if before[c] > 0 and c not in FLUSH_SKIPPED_CACHES]
    flushed = [c for c in held if after.get(c) == 0]
    kept = [c for c in held if after.get(c, 0) > 0]
    if flushed and kept:
        verdict.fail("flushall", f"cycle {cycle}: FLUSHALL half-applied: emptied {', '.join(flushed)} but "
                                 f"not {', '.join(kept)} (keys before: {before}, after: {after})")
    elif kept and acked:
        verdict.fail("flushall", f"cycle {cycle}: FLUSHALL acknowledged but not applied: {', '.join(kept)} "
                                 f"still hold keys")
    elif flushed and any(after.get(c, 0) for c in FLUSH_SKIPPED_CACHES):
        verdict.fail("flushall", f"cycle {cycle}: FLUSHALL applied but {after} keys remain")
    return flushed

