#!/usr/bin/env python3
"""Crash test: acknowledged writes survive `kill -9` (or SIGTERM) of kvcache-server.

Each cycle, several writers load random keys into a few caches (db0, db3 and
named caches, chosen with SELECT) over connections of four styles: raw RESP
pipelined, raw RESP one command at a time, redis-py one command at a time
and redis-py pipelines. Every write is recorded before it is sent and
stamped when its reply arrives (acknowledged). At a random moment the
server is killed with SIGKILL (or, with --sigterm, stopped with SIGTERM);
then, with the server down (it holds an exclusive SQLite lock while it
runs), every cache file passes `PRAGMA integrity_check` and its stats row
matches its rows (checked on a copy of the file and its WAL, so the server's
own recovery is what the restart exercises). The server is restarted on the
same directory and every key ever written is read back:

* its value and whether it has a TTL must be those of its last acknowledged
  write, or of a write sent later whose reply never came (in flight at the
  kill: it may or may not have been applied); an acknowledged DEL must stay
  deleted (a redis-py pipeline is acknowledged whole or not at all, so a
  pipeline cut short counts entirely as in flight);
* what a connection lost must be the tail of what it sent: no acknowledged
  write lost while a later command of the same connection was kept;
* DBSIZE of each cache must equal the number of keys expected present.

Beside those writers, workloads of their own (tools/crash_workloads.py,
`--workloads`, all by default) run eviction (a cache with a capacity),
expiry (deadlines under 1.5 s, so the sweep runs), MOVE, COPY ... DB,
SWAPDB, collections and streams, each with the checks that fit it, and FLUSHALL:
in about one cycle in four every writer pauses, FLUSHALL is sent and the
kill follows at once, within 5 ms or after 50-300 ms; after the restart
every cache must be emptied or none (all of them if it was acknowledged),
and each writer goes on from what it emptied. The summary's
`checks` line names each check and whether it held, and each violation is
printed under its check's name. A connection lost before the kill, or a
reply that is not RESP, is a failure (never "the server was killed").

`--mode` picks the server's persistence: `everysec` (appendonly yes,
appendfsync everysec: the default) and `always` lose nothing acknowledged
to a kill of the process; `no-aof` (appendonly no) acknowledges before
SQLite holds a write: an acknowledged write may then be missing, but only
if it was acknowledged within --loss-window seconds (default 1.5) of the
kill; the widest loss actually observed is reported. The old
`--durability commit|everysec` means `--mode everysec|no-aof`. `--sigterm` stops the server with SIGTERM during the
load instead: it must exit 0 with a clean-shutdown log line, lose nothing
(whatever the durability mode) and leave each WAL checkpointed (the -wal
file empty or absent).

Exit status: 0 when every property held, 1 when one was violated, 2 when
the test could not run (no binary, server would not start).

Standard library and redis-py only. Everything talks to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError:  # redis-py styles are then skipped
    redis = None

from toollib import HOST, default_binary, encode, free_port, log_warnings
import benchlib as bench  # noqa: E402  (toollib puts bench/ on the path)
import crash_workloads  # noqa: E402

RespError = bench.RespError


# ---------------------------------------------------------------------------
# The connection (benchlib's RESP client) and the server.

class Resp(bench.Client):
    """A connection that returns error replies (reply()) as RespError
    instances, and raises them from command()."""

    def __init__(self, port: int, timeout: float = 10.0):
        super().__init__(port, timeout=timeout, errors="return")

    def command(self, *args):
        r = super().command(*args)
        if isinstance(r, RespError):
            raise r
        return r


# The server options of each persistence mode.
MODE_ARGS = {"everysec": [], "always": ["--appendfsync", "always"], "no-aof": ["--appendonly", "no"]}


class ServerProcess:
    def __init__(self, binary: str, data_dir: str, log_path: str, port: int, durability: str,
                 extra: list[str] | None = None):
        self.binary, self.data_dir, self.log_path = binary, data_dir, log_path
        self.port, self.durability = port, durability
        self.extra = list(extra or [])
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0):
        argv = [self.binary, "--port", str(self.port), "--bind", HOST, "--dir", self.data_dir,
                *MODE_ARGS[self.durability], *self.extra]
        self.proc = bench.spawn(argv, self.log_path, env=bench.sanitizer_env(os.path.dirname(self.log_path)))
        try:
            # Listening, and done replaying its log (-LOADING until then).
            bench.wait_ready(self.port, self.proc, timeout)
        except RuntimeError as error:
            raise RuntimeError(f"{error} (log: {self.log_path})")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal_and_wait(self, sig: int, timeout: float = 30.0) -> int | None:
        """Sends `sig` and waits; None if it did not exit in time (it is then killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self.proc = None
        return code

    def ensure_stopped(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


# ---------------------------------------------------------------------------
# Writers and what they know.

class Op:
    """One write's effect on one key: the value (None = deleted), whether it has a TTL,
    and when its reply arrived (None: never, so it may or may not have been applied)."""
    __slots__ = ("value", "ttl", "acked_at", "kind", "n")

    def __init__(self, value, ttl, kind):
        self.value, self.ttl, self.kind = value, ttl, kind
        self.acked_at = None
        self.n = 0  # the writer's command number: its connection's order


class Writer:
    STYLES = ("raw-pipeline", "raw-single", "redispy-single", "redispy-pipeline")

    def __init__(self, wid: int, cache: str, style: str, nkeys: int, seed: int):
        self.wid, self.cache, self.style, self.nkeys = wid, cache, style, nkeys
        self.rng = random.Random(seed)
        self.seq = 0
        # Verified state per key (value or None, ttl flag); ops since then.
        self.base: dict[bytes, tuple] = {}
        self.hist: dict[bytes, list[Op]] = {}
        self.acked = 0
        self.acked_by_kind = {"SET": 0, "SETEX": 0, "DEL": 0, "MSET": 0}
        self.sent = 0
        # This cycle: the latest command proven applied, the earliest acknowledged one lost.
        self.latest_applied = 0
        self.earliest_lost = None
        self.errors: list[str] = []
        self.pause: crash_workloads.Pause | None = None

    def key(self, n: int) -> bytes:
        return b"crash:w%d:k%d" % (self.wid, n)

    def _value(self) -> bytes:
        self.seq += 1
        n = self.rng.choice((0, 1, 8, 40, 200, 1000, 4000)) if self.rng.random() < 0.3 else self.rng.randrange(1, 300)
        # Unique per write; random bytes, including CR LF and NUL, for binary safety.
        return b"w%d:%d:" % (self.wid, self.seq) + self.rng.randbytes(n)

    def next_command(self):
        """A random write: (args, [(key, Op)]), the ops recorded before sending."""
        r = self.rng.random()
        k = self.key(self.rng.randrange(self.nkeys))
        if r < 0.55:
            v = self._value()
            op = Op(v, False, "SET")
            return ("SET", k, v), [(k, op)]
        if r < 0.70:
            v = self._value()
            op = Op(v, True, "SETEX")
            return ("SET", k, v, "EX", str(3600 + self.rng.randrange(3600))), [(k, op)]
        if r < 0.88:
            op = Op(None, False, "DEL")
            return ("DEL", k), [(k, op)]
        k2 = self.key(self.rng.randrange(self.nkeys))
        while k2 == k:
            k2 = self.key(self.rng.randrange(self.nkeys))
        v1, v2 = self._value(), self._value()
        return ("MSET", k, v1, k2, v2), [(k, Op(v1, False, "MSET")), (k2, Op(v2, False, "MSET"))]

    def record(self, ops):
        self.sent += 1
        for k, op in ops:
            op.n = self.sent
            self.hist.setdefault(k, []).append(op)

    def ack(self, ops, now):
        for _, op in ops:
            op.acked_at = now
        self.acked += 1
        self.acked_by_kind[ops[0][1].kind] += 1

    def check_reply(self, args, reply) -> bool:
        """True when the reply is the expected acknowledgement."""
        if isinstance(reply, (RespError, Exception)):
            self.errors.append(f"{args[0]} got error {reply}")
            return False
        if args[0] == "DEL":
            return isinstance(reply, int) and reply in (0, 1)
        return reply in ("OK", True, b"OK")

    # --- the thread body ------------------------------------------------

    def run(self, port: int, stop: threading.Event, killed: threading.Event):
        try:
            if self.style.startswith("raw"):
                self._run_raw(port, stop)
            else:
                self._run_redispy(port, stop)
        except ValueError as error:  # bytes that are not a RESP reply: never the kill's doing
            self.errors.append(f"writer {self.wid}: malformed reply: {error}")
        except (OSError, ConnectionError) as error:
            # The server was killed: what was not acknowledged stays in flight.
            # Before the kill, a lost connection is a failure of its own.
            if not killed.is_set():
                self.errors.append(f"writer {self.wid}: connection lost before the kill: {error!r}")
        except Exception as error:  # redis-py's own exceptions
            if redis is None or not isinstance(error, redis.exceptions.RedisError):
                self.errors.append(f"writer {self.wid} crashed: {error!r}")
            elif not isinstance(error, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
                self.errors.append(f"writer {self.wid}: {error!r}")
            elif not killed.is_set():
                self.errors.append(f"writer {self.wid}: connection lost before the kill: {error!r}")

    def _run_raw(self, port, stop):
        conn = Resp(port)
        try:
            sel = conn.command("SELECT", self.cache)
            if sel != "OK":
                raise ConnectionError(f"SELECT {self.cache}: {sel}")
            while not stop.is_set():
                if self.pause:
                    self.pause.point(stop)
                depth = self.rng.choice((1, 2, 5, 16, 64, 200)) if self.style == "raw-pipeline" else 1
                batch = [self.next_command() for _ in range(depth)]
                for args, ops in batch:
                    self.record(ops)
                conn.send(b"".join(encode(*args) for args, _ in batch))
                for args, ops in batch:
                    reply = conn.reply()
                    if self.check_reply(args, reply):
                        self.ack(ops, time.monotonic())
        finally:
            conn.close()

    def _run_redispy(self, port, stop):
        client = redis.Redis(host=HOST, port=port, db=self.cache, socket_timeout=10, socket_connect_timeout=5,
                             retry=Retry(NoBackoff(), 0), single_connection_client=True)
        try:
            client.ping()
            while not stop.is_set():
                if self.pause:
                    self.pause.point(stop)
                if self.style == "redispy-single":
                    args, ops = self.next_command()
                    self.record(ops)
                    reply = client.execute_command(*args)
                    if self.check_reply(args, reply):
                        self.ack(ops, time.monotonic())
                else:
                    batch = [self.next_command() for _ in range(self.rng.choice((1, 3, 10, 50)))]
                    pipe = client.pipeline(transaction=False)
                    for args, ops in batch:
                        self.record(ops)
                        pipe.execute_command(*args)
                    replies = pipe.execute(raise_on_error=False)
                    now = time.monotonic()
                    for (args, ops), reply in zip(batch, replies):
                        if self.check_reply(args, reply):
                            self.ack(ops, now)
        finally:
            client.close()


# ---------------------------------------------------------------------------
# Checks.

def check_files(data_dir: str, scratch: str, capacities: dict[str, int] | None = None) -> tuple[int, list[str]]:
    """integrity_check and stats consistency of every cache file, on a copy
    (file + WAL) so the server's own recovery is left to the restart."""
    problems = []
    checked = 0
    for name in sorted(os.listdir(data_dir)):
        if not name.endswith(".sqlite"):
            continue
        src = os.path.join(data_dir, name)
        dst = os.path.join(scratch, name)
        for suffix in ("", "-wal"):
            if os.path.exists(dst + suffix):
                os.remove(dst + suffix)
            if os.path.exists(src + suffix):
                shutil.copyfile(src + suffix, dst + suffix)
        try:
            db = sqlite3.connect(dst)
            try:
                rows = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
                if rows != ["ok"]:
                    problems.append(f"{name}: integrity_check: {'; '.join(map(str, rows[:5]))}")
                tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                # No table at all: killed between creating the file and committing
                # its schema; nothing can have been acknowledged in it, and the
                # restart makes it anew. Tables without the stats row are damage.
                if tables:
                    stats = db.execute("SELECT entries, bytes FROM stats WHERE id = 1").fetchone()
                    actual = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM entries").fetchone()
                    if stats is None or tuple(stats) != tuple(actual):
                        problems.append(f"{name}: stats row {stats} but rows say (entries, bytes) = {actual}")
                    capacity = (capacities or {}).get(name[:-len(".sqlite")])
                    if capacity is not None and actual[1] > capacity:
                        problems.append(f"[evict] {name}: {actual[1]} content bytes in the file, over the "
                                        f"capacity of {capacity}")
            finally:
                db.close()
        except sqlite3.DatabaseError as error:
            problems.append(f"{name}: cannot check: {error}")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(dst + suffix):
                os.remove(dst + suffix)
        checked += 1
    return checked, problems


class Verdict:
    def __init__(self):
        self.keys_checked = 0
        self.lost = 0            # acknowledged writes missing
        self.lost_allowed = 0    # ... within the everysec loss window
        self.max_loss_age = 0.0  # oldest acknowledgement lost (s before the kill)
        self.cycle_max_age = 0.0  # the same, for the current cycle
        self.inflight = 0        # writes in flight at the stop
        self.inflight_applied = 0
        self.violations: list[str] = []
        self.by_check: dict[str, int] = {}  # check name -> violations
        self.stop_time = 0.0        # this cycle's kill (monotonic), for the workloads
        self.allowed_window = None  # everysec's loss window, for the workloads

    def fail(self, check: str, message: str):
        """Records a violation of the named check (a workload's name, "writes"
        for the plain writers)."""
        self.violations.append(f"[{check}] {message}")
        self.by_check[check] = self.by_check.get(check, 0) + 1


def verify(port: int, writers: list[Writer], stop_time: float, allowed_window: float | None, v: Verdict,
           cycle: int):
    """Reads back every key; resolves in-flight writes to what the server kept."""
    by_cache: dict[str, list[Writer]] = {}
    for w in writers:
        by_cache.setdefault(w.cache, []).append(w)
    conn = Resp(port, timeout=30)
    try:
        for cache, ws in by_cache.items():
            conn.command("SELECT", cache)
            expected_present = 0
            for w in ws:
                keys = sorted(set(w.base) | set(w.hist))
                for start in range(0, len(keys), 500):
                    chunk = keys[start:start + 500]
                    conn.send(b"".join(encode("GET", k) + encode("PTTL", k) for k in chunk))
                    for k in chunk:
                        value, pttl = conn.reply(), conn.reply()
                        if isinstance(value, RespError) or isinstance(pttl, RespError):
                            v.fail("writes", f"cycle {cycle}: {cache} {k!r}: error {value} / {pttl}")
                            continue
                        observed = (value, pttl > 0)
                        if value is None and pttl != -2 or value is not None and pttl == -2 \
                                or value is not None and not (pttl == -1 or pttl > 0):
                            v.fail("writes", f"cycle {cycle}: {cache} {k!r}: GET/PTTL disagree ({pttl})")
                        v.keys_checked += 1
                        resolve(w, k, observed, stop_time, allowed_window, v, cycle, cache)
                        if w.base[k][0] is not None:
                            expected_present += 1
            # One connection's commands are applied in order, and a commit
            # never keeps a later write without the earlier ones: what is
            # lost must be the tail of what the connection sent.
            for w in ws:
                if w.earliest_lost is not None and w.latest_applied > w.earliest_lost:
                    v.fail("writes", 
                        f"cycle {cycle}: writer {w.wid} ({cache}): its command #{w.earliest_lost} (acknowledged) "
                        f"is lost but its later command #{w.latest_applied} was kept: a hole, not a lost tail")
                w.latest_applied, w.earliest_lost = 0, None
            size = conn.command("DBSIZE")
            if size != expected_present:
                v.fail("writes", f"cycle {cycle}: {cache}: DBSIZE {size} but {expected_present} keys expected")
    finally:
        conn.close()


def start_flushall(port: int, caches: list[str]):
    """With every writer paused: the keys each cache holds, then FLUSHALL
    sent; its reply (and when it came) lands in the returned box."""
    conn = bench.Client(port, timeout=30, errors="return")
    sizes = crash_workloads.dbsizes(conn, caches)
    box: dict = {}

    def read_reply():
        try:
            box["reply"] = conn.read_reply()
            box["at"] = time.monotonic()
        except (OSError, ConnectionError, ValueError) as error:
            box["error"] = error
        finally:
            conn.close()

    conn.send(encode("FLUSHALL"))
    box["thread"] = threading.Thread(target=read_reply, daemon=True)
    box["thread"].start()
    return sizes, box


def verify_workloads(port: int, workloads, v: Verdict, cycle: int):
    """Each workload reads back its own keys and checks them (tools/crash_workloads.py)."""
    if not workloads:
        return
    conn = bench.Client(port, timeout=30, errors="return")
    try:
        for w in workloads:
            w.verify(conn, v, cycle)
            v.keys_checked += len(w.base)
    finally:
        conn.close()


def resolve(w: Writer, k: bytes, observed: tuple, stop_time: float, allowed_window: float | None,
            v: Verdict, cycle: int, cache: str):
    base = w.base.get(k, (None, False))
    ops = w.hist.pop(k, [])
    states = [base] + [(op.value, op.ttl) for op in ops]
    match = None
    for i in range(len(states) - 1, -1, -1):
        if states[i] == observed:
            match = i
            break
    v.inflight += sum(1 for op in ops if op.acked_at is None)
    if match is None:
        last_acked = next((op for op in reversed(ops) if op.acked_at is not None), None)
        want = (last_acked.value, last_acked.ttl) if last_acked else base
        v.fail("writes", 
            f"cycle {cycle}: {cache} {k!r}: found {describe(observed)}, which no write produced "
            f"(last acknowledged: {describe(want)})")
        w.base[k] = observed
        return
    last_acked = max((i + 1 for i, op in enumerate(ops) if op.acked_at is not None), default=0)
    if match > last_acked and states[match] != states[last_acked]:
        v.inflight_applied += 1  # certainly a write whose reply never came
    if match > 0 and observed[0] is not None:  # values are unique: this very write was applied
        w.latest_applied = max(w.latest_applied, ops[match - 1].n)
    for op in ops[match:]:  # ops after the matched state (ops[match] is state match+1)
        if op.acked_at is None:
            continue
        age = stop_time - op.acked_at
        v.lost += 1
        w.earliest_lost = op.n if w.earliest_lost is None else min(w.earliest_lost, op.n)
        v.max_loss_age = max(v.max_loss_age, age)
        v.cycle_max_age = max(v.cycle_max_age, age)
        if allowed_window is not None and age <= allowed_window:
            v.lost_allowed += 1
        else:
            v.fail("writes", 
                f"cycle {cycle}: {cache} {k!r}: acknowledged {op.kind} ({describe((op.value, op.ttl))}), "
                f"acknowledged {age:.3f}s before the stop, is lost: found {describe(observed)}")
    w.base[k] = observed


def describe(state) -> str:
    value, ttl = state
    if value is None:
        return "no key"
    head = value.split(b":", 2)
    tag = b":".join(head[:2]).decode(errors="replace")
    return f"value {tag}… ({len(value)} bytes{', with TTL' if ttl else ''})"


def wal_problems(data_dir: str) -> list[str]:
    out = []
    for name in sorted(os.listdir(data_dir)):
        if name.endswith(".sqlite-wal"):
            size = os.path.getsize(os.path.join(data_dir, name))
            if size > 0:
                out.append(f"{name} is {size} bytes after a clean shutdown (not checkpointed)")
    return out


# ---------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Kill kvcache-server (kill -9, or SIGTERM with --sigterm) at random moments under "
                    "write load and check that every acknowledged write survives and every cache "
                    "file passes PRAGMA integrity_check.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--binary", default=default_binary(), help="kvcache-server binary")
    p.add_argument("--cycles", type=int, default=20, help="kill/restart cycles")
    p.add_argument("--mode", choices=tuple(MODE_ARGS), default=None,
                   help="the server's persistence mode (default everysec)")
    p.add_argument("--durability", choices=("commit", "everysec"), default=None,
                   help="the old name: commit = --mode everysec, everysec = --mode no-aof")
    p.add_argument("--sigterm", action="store_true",
                   help="stop with SIGTERM instead of SIGKILL: exit 0, nothing lost, WAL checkpointed")
    p.add_argument("--loss-window", type=float, default=1.5,
                   help="everysec: how long before a kill an acknowledged write may be lost (s)")
    p.add_argument("--writers", type=int, default=8, help="writer connections (styles rotate)")
    p.add_argument("--keys", type=int, default=1500, help="keys per writer")
    p.add_argument("--min-run", type=float, default=0.05, help="shortest load before a kill (s)")
    p.add_argument("--max-run", type=float, default=3.0, help="longest load before a kill (s)")
    p.add_argument("--early-kills", type=float, default=0.1,
                   help="share of cycles whose kill lands within 50 ms of the restart")
    p.add_argument("--workloads", default="all",
                   help="comma-separated: writes (SET, SET EX, DEL, MSET over several caches and connection "
                        f"styles), {', '.join(crash_workloads.WORKLOADS)}; or all (tools/crash_workloads.py)")
    p.add_argument("--workload-keys", type=int, default=200, help="keys per workload beyond writes")
    p.add_argument("--seed", type=int, default=None, help="random seed (printed; reuse to replay)")
    p.add_argument("--dir", default=None, help="work directory (default: a temporary one, removed on success)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    args.mode = args.mode or {"commit": "everysec", "everysec": "no-aof", None: "everysec"}[args.durability]
    if not os.path.isfile(args.binary) or not os.access(args.binary, os.X_OK):
        print(f"crash_test: no executable binary at {args.binary}", file=sys.stderr)
        return 2
    if args.writers < 1 or args.cycles < 1 or args.keys < 2:
        print("crash_test: --writers, --cycles must be >= 1 and --keys >= 2", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    rng = random.Random(seed)
    work = args.dir or tempfile.mkdtemp(prefix="kvcache-crash-")
    os.makedirs(work, exist_ok=True)
    data_dir = os.path.join(work, "data")
    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch, exist_ok=True)
    log_path = os.path.join(work, "server.log")
    stop_signal = signal.SIGTERM if args.sigterm else signal.SIGKILL
    # A kill -9 with appendonly no may lose the last second; a clean stop never may.
    allowed_window = args.loss_window if (args.mode == "no-aof" and not args.sigterm) else None

    names = ["writes", *crash_workloads.WORKLOADS, "flushall"] if args.workloads == "all" else \
        [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in ("writes", "flushall") and n not in crash_workloads.WORKLOADS]
    if unknown or not names:
        print(f"crash_test: unknown workload {', '.join(unknown) or '(none given)'}", file=sys.stderr)
        return 2
    caches = ["0", "3", "crash-a", "crash-b"]
    styles = [s for s in Writer.STYLES if redis is not None or s.startswith("raw")]
    writers = [Writer(i, caches[i % len(caches)], styles[i % len(styles)], args.keys, rng.randrange(1 << 31))
               for i in range(args.writers)] if "writes" in names else []
    workloads = [crash_workloads.WORKLOADS[n](100 + i, args.workload_keys, rng.randrange(1 << 31))
                 for i, n in enumerate(names) if n in crash_workloads.WORKLOADS]
    # FLUSHALL in about one cycle in four: every writer paused, FLUSHALL sent,
    # the kill a moment later (in flight or just after its reply).
    flushing = "flushall" in names and not args.sigterm
    pause = crash_workloads.Pause()
    for w in [*writers, *workloads]:
        w.pause = pause
    flush_caches = sorted(set(caches * bool(writers)) | {c for w in workloads for c in w.caches})
    flush_cycles = flush_applied = 0
    capacities = {crash_workloads.EvictWorkload.caches[0]: crash_workloads.EvictWorkload.capacity} \
        if "evict" in names else {}
    server = ServerProcess(args.binary, data_dir, log_path, free_port(), args.mode,
                           crash_workloads.server_args(names))
    verdict = Verdict()
    files_checked = 0
    file_problems: list[str] = []
    other_problems: list[str] = []
    survived = 0
    load_seconds = 0.0
    acked_before = 0
    started = time.monotonic()

    print(f"crash_test: binary {args.binary}, mode {args.mode}, "
          f"stop {'SIGTERM' if args.sigterm else 'SIGKILL'}, {args.cycles} cycles, {len(writers)} writers "
          f"({', '.join(sorted(set(w.style for w in writers)))}) over caches {', '.join(caches)}; workloads "
          f"{', '.join(w.name for w in workloads) or 'none'}; seed {seed}, work dir {work}", flush=True)
    try:
        try:
            server.start()
        except RuntimeError as error:
            print(f"crash_test: {error}", file=sys.stderr)
            return 2
        for cycle in range(1, args.cycles + 1):
            stop, killed = threading.Event(), threading.Event()
            threads = [threading.Thread(target=w.run, args=(server.port, stop, killed), daemon=True)
                       for w in [*writers, *workloads]]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            early = rng.random() < args.early_kills
            run_for = rng.uniform(0.0, 0.05) if early else rng.uniform(args.min_run, args.max_run)
            time.sleep(run_for)
            flush = None  # (sizes before, reply box) in a FLUSHALL cycle
            if flushing and not early and rng.random() < 0.25:
                if pause.request(sum(t.is_alive() for t in threads), timeout=10):
                    flush = start_flushall(server.port, flush_caches)
                    # The kill: at once, within 5 ms (in the middle of it), or after it should be done.
                    time.sleep(rng.choice((0.0, rng.uniform(0.0, 0.005), rng.uniform(0.05, 0.3))))
                else:
                    pause.release()  # a writer did not reach its pause point: no FLUSHALL this cycle
            pid = server.pid
            stop_time = time.monotonic()
            killed.set()
            code = server.signal_and_wait(stop_signal)
            pause.release()
            load_seconds += stop_time - t0
            stop.set()
            for t in threads:
                t.join(timeout=30)
            if any(t.is_alive() for t in threads):
                other_problems.append(f"cycle {cycle}: a writer did not stop")
                break
            acked_now = sum(w.acked for w in [*writers, *workloads])
            note = ""
            if args.sigterm:
                log_text = open(log_path, "rb").read().decode(errors="replace")
                clean = log_text.count("ready to exit")
                if code != 0:
                    other_problems.append(f"cycle {cycle}: SIGTERM: exit code {code} (pid {pid}), expected 0")
                if clean < cycle:
                    other_problems.append(f"cycle {cycle}: SIGTERM: no clean-shutdown line in the log")
                other_problems.extend(f"cycle {cycle}: {p}" for p in wal_problems(data_dir))
            elif code != -signal.SIGKILL:
                other_problems.append(f"cycle {cycle}: server exited with {code} before the kill")
            n, problems = check_files(data_dir, scratch, capacities)
            files_checked += n
            file_problems.extend(f"cycle {cycle}: {p}" for p in problems)
            try:
                server.start()
            except RuntimeError as error:
                other_problems.append(f"cycle {cycle}: restart failed: {error}")
                break
            before = (verdict.lost, len(verdict.violations), verdict.inflight, verdict.inflight_applied)
            verdict.cycle_max_age = 0.0
            flush_note = ""
            if flush is not None:
                sizes, box = flush
                box["thread"].join(timeout=10)
                acked = box.get("reply") == "OK" and box.get("at", stop_time + 1) <= stop_time
                conn = bench.Client(server.port, timeout=30, errors="return")
                try:
                    emptied = set(crash_workloads.check_flush(sizes, crash_workloads.dbsizes(conn, flush_caches),
                                                              acked, verdict, cycle))
                finally:
                    conn.close()
                held = {c for c in sizes if sizes[c] > 0 and c not in crash_workloads.FLUSH_SKIPPED_CACHES}
                applied = bool(emptied) and emptied >= held
                flush_cycles += 1
                flush_applied += applied
                flush_note = f", FLUSHALL {'acknowledged' if acked else 'in flight'} and " \
                             f"{'applied' if applied else 'half-applied' if emptied else 'not applied'}"
                # What the FLUSHALL emptied is the writers' new starting point
                # (a half-applied one is reported above, not again as lost keys).
                for w in writers:
                    if applied or w.cache in emptied:
                        w.base = {k: (None, False) for k in set(w.base) | set(w.hist)}
                        w.hist = {}
                for w in workloads:
                    if applied or set(w.caches) <= emptied:
                        w.forget_all()
                    elif set(w.caches) & emptied:
                        w.resync(server.port)
            verify(server.port, writers, stop_time, allowed_window, verdict, cycle)
            verdict.stop_time, verdict.allowed_window = stop_time, allowed_window
            verify_workloads(server.port, workloads, verdict, cycle)
            survived += 1
            if verdict.lost > before[0]:
                note = (f", {verdict.lost - before[0]} acknowledged lost (acknowledged up to "
                        f"{verdict.cycle_max_age:.3f}s before the kill)")
            print(f"  cycle {cycle:3d}: ran {stop_time - t0:5.2f}s, {acked_now - acked_before:6d} writes "
                  f"acknowledged, {verdict.inflight - before[2]} in flight ({verdict.inflight_applied - before[3]} "
                  f"applied), {n} files {'ok' if not problems else 'NOT ok'}"
                  f"{note}{flush_note}{', VIOLATIONS' if len(verdict.violations) > before[1] else ''}", flush=True)
            acked_before = acked_now
            if len(verdict.violations) > 50:
                break
        # A last clean stop, then a last look at the files.
        code = server.signal_and_wait(signal.SIGTERM)
        if code != 0:
            other_problems.append(f"final SIGTERM: exit code {code}, expected 0")
        other_problems.extend(f"final stop: {p}" for p in wal_problems(data_dir))
        n, problems = check_files(data_dir, scratch, capacities)
        files_checked += n
        file_problems.extend(f"final: {p}" for p in problems)
        other_problems.extend(f"sanitizer report {r[:2000]}" for r in bench.sanitizer_reports(work))
    finally:
        server.ensure_stopped()

    writer_errors = [e for w in [*writers, *workloads] for e in w.errors]
    acked = sum(w.acked for w in writers)
    kinds = {k: sum(w.acked_by_kind[k] for w in writers) for k in ("SET", "SETEX", "DEL", "MSET")}
    failed = bool(verdict.violations or file_problems or other_problems or writer_errors or survived < args.cycles)

    print()
    print("Problems:" if failed else "No problem found.")
    # A few of each check's violations, so every failed check shows.
    shown = [line for check in verdict.by_check
             for line in [x for x in verdict.violations if x.startswith(f"[{check}] ")][:30 // len(verdict.by_check)]]
    for line in (shown + file_problems[:20] + other_problems[:20] + writer_errors[:20]):
        print("  - " + line)
    print()
    print("Summary")
    print(f"  result                 : {'FAIL' if failed else 'PASS'}")
    print(f"  mode                   : {args.mode} ({' '.join(MODE_ARGS[args.mode]) or 'defaults'}), stop by "
          f"{'SIGTERM' if args.sigterm else 'SIGKILL (kill -9)'}, seed {seed}")
    print(f"  cycles survived        : {survived}/{args.cycles}")
    print(f"  acknowledged writes    : {acked} (SET {kinds['SET']}, SET EX {kinds['SETEX']}, DEL {kinds['DEL']}, "
          f"MSET {kinds['MSET']}), {acked / load_seconds if load_seconds else 0:.0f}/s under load")
    for w in workloads:
        print(f"  {w.name + ' commands':<23}: {w.acked} acknowledged")
    checks = ["writes"] * bool(writers) + [w.name for w in workloads] + ["flushall"] * flushing
    if flushing:
        print(f"  FLUSHALL cycles        : {flush_cycles} ({flush_applied} applied before the kill)")
    print("  checks                 : " + ", ".join(
        f"{c} {'FAILED (%d)' % verdict.by_check[c] if verdict.by_check.get(c) else 'ok'}" for c in checks))
    print(f"  keys checked           : {verdict.keys_checked} reads over all cycles")
    print(f"  in flight at the stops : {verdict.inflight} writes without a reply; {verdict.inflight_applied} "
          f"keys held one of them (applied but unacknowledged: allowed)")
    if allowed_window is not None:
        print(f"  losses                 : {verdict.lost} acknowledged key writes lost, all acknowledged within "
              f"{verdict.max_loss_age:.3f}s of a kill (allowed {allowed_window}s; an MSET counts once per key)"
              if verdict.lost == verdict.lost_allowed else
              f"  losses                 : {verdict.lost} acknowledged writes lost, "
              f"{verdict.lost - verdict.lost_allowed} outside the {allowed_window}s window")
        print(f"  loss window observed   : {verdict.max_loss_age:.3f}s")
    else:
        print(f"  losses                 : {verdict.lost} acknowledged writes lost (allowed: 0)")
    print(f"  files checked          : {files_checked} integrity checks, {len(file_problems)} problems")
    print(f"  other problems         : {len(other_problems) + len(writer_errors)}")
    warnings = log_warnings(log_path)
    example = f", e.g. {warnings[0][:150]}" if warnings else ""
    print(f"  server warnings        : {len(warnings)} warning lines{example}")
    print(f"  elapsed                : {time.monotonic() - started:.1f}s")
    if not failed and not args.keep and not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  work directory kept    : {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
