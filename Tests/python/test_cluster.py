"""Several kvcache-server nodes behind twemproxy (Debian's `nutcracker` 0.5.0),
all on loopback: the ring, MGET/MSET across nodes, hash tags, a node killed
(ejected, its keys miss) and restarted (rejoins with its data), resharding,
numbered caches through `redis_db`, `redis_auth`, the commands the proxy
refuses, and how redis-py must connect. docs/cluster.md describes the setup
these tests check.

The servers are named in the pool (`127.0.0.1:<port>:1 node1`), so the ring
hashes the names and not the ports: kvcache nodes and redis-server nodes on
other ports spread keys identically. `Ring` below is nutcracker's ketama and
fnv1a_64, written again, so a test can say where each key must live.

Skipped when nutcracker is not installed (`apt-get install nutcracker`).
"""
import bisect
import hashlib
import inspect
import json
import math
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import DURABILITY, REQUIRE_TOOLS, RawConnection, Server, free_port

NUTCRACKER = shutil.which("nutcracker")
if NUTCRACKER is None:
    if REQUIRE_TOOLS:  # CI installs it: a skip there would hide that these tests never ran
        raise RuntimeError("nutcracker (twemproxy) is not installed (KVCACHE_REQUIRE_TOOLS=1)")
    pytest.skip("nutcracker (twemproxy) is not installed: apt-get install nutcracker", allow_module_level=True)

# The nodes are kvcache-servers: a restarted node must come back with its
# data, which Redis without persistence does not do.
pytestmark = [pytest.mark.kvcache_only, pytest.mark.loop_only]

# The proxy's failure handling, short for the tests (docs/cluster.md gives
# the values scripts/cluster writes): a node that fails FAILURE_LIMIT
# requests in a row leaves the ring for RETRY_MS.
FAILURE_LIMIT = 2
RETRY_MS = 2000
POOL_DEFAULTS = {
    # fnv1a_32, not twemproxy's usual fnv1a_64: nutcracker's fnv1a_64 keeps 32
    # bits of the 64-bit constants and bunches short similar keys (docs/cluster.md).
    "hash": "fnv1a_32",
    "hash_tag": '"{}"',
    "distribution": "ketama",
    "redis": "true",
    "auto_eject_hosts": "true",
    "server_failure_limit": FAILURE_LIMIT,
    "server_retry_timeout": RETRY_MS,
    "timeout": 3000,
    "preconnect": "true",
}


# --------------------------------------------------------------------------
# nutcracker's ring, for predictions.

def fnv1a_32(data):
    """nutcracker's `fnv1a_32`: FNV-1a over the key's bytes read as signed
    `char`s (a byte of 0x80 or more is sign-extended)."""
    h = 0x811C9DC5
    for b in data:
        h ^= b if b < 128 else (b - 256) & 0xFFFFFFFF
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


class Ring:
    """nutcracker 0.5.0's ketama continuum over named servers (equal weights):
    160 points a server, four per MD5 of "<name>-<i>"; a key (or the part of
    it inside `{}`) goes to the first point at or after its hash."""

    def __init__(self, names):
        points = []
        per_server = int(math.floor(1 / len(names) * 160 / 4 * len(names) + 1e-10)) * 4
        for index, name in enumerate(names):
            for i in range(per_server // 4):
                digest = hashlib.md5(f"{name}-{i}".encode()).digest()
                points += [(struct.unpack_from("<I", digest, 4 * x)[0], index) for x in range(4)]
        points.sort()
        self.values = [v for v, _ in points]
        self.owners = [names[i] for _, i in points]

    def node(self, key):
        key = key.encode() if isinstance(key, str) else key
        start = key.find(b"{")
        if start >= 0:
            end = key.find(b"}", start + 1)
            if end - start > 1:
                key = key[start + 1:end]
        i = bisect.bisect_left(self.values, fnv1a_32(key))
        return self.owners[i if i < len(self.values) else 0]


# --------------------------------------------------------------------------
# Clients, nodes and the proxy.

def proxy_client_kwargs():
    """What redis-py needs to talk through nutcracker: RESP2 (no `HELLO 3`)
    and no `CLIENT SETINFO` (redis-py 5 and later send it on connect), both
    of which nutcracker answers by closing the connection."""
    params = inspect.signature(redis.Redis.__init__).parameters
    kw = {}
    if "protocol" in params:
        kw["protocol"] = 2
    if "driver_info" in params:      # redis-py 7.4 and later
        kw["driver_info"] = None
    elif "lib_name" in params:       # redis-py 5.0 to 7.3
        kw.update(lib_name=None, lib_version=None)
    return kw


# redis-py 6 and later retry a closed connection three times, with backoff.
NO_RETRY = Retry(NoBackoff(), 0)


def redis_py_major():
    return int(redis.__version__.split(".")[0])


class Proxy:
    """One nutcracker process with one pool over named servers [(name, port)]."""

    def __init__(self, servers, directory, **pool):
        self.servers = list(servers)
        self.dir = directory
        self.pool = dict(POOL_DEFAULTS, **pool)
        self.port = None
        self.stats_port = None
        self.proc = None
        self.config_path = os.path.join(directory, f"nutcracker-{id(self)}.yml")
        self.log_path = self.config_path[:-4] + ".log"

    def yml(self):
        lines = ["kvcache:", f"  listen: 127.0.0.1:{self.port}"]
        lines += [f"  {k}: {v}" for k, v in self.pool.items()]
        lines += ["  servers:"] + [f"   - 127.0.0.1:{port}:1 {name}" for name, port in self.servers]
        return "\n".join(lines) + "\n"

    def start(self):
        self.port, self.stats_port = free_port(), free_port()
        with open(self.config_path, "w") as f:
            f.write(self.yml())
        self.proc = subprocess.Popen([NUTCRACKER, "-c", self.config_path, "-s", str(self.stats_port),
                                      "-a", "127.0.0.1", "-i", "100", "-o", self.log_path],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                conn = RawConnection(self.port, timeout=1)
                try:
                    if conn.command("PING") in ("PONG", ("error", "NOAUTH Authentication required")):
                        return self
                finally:
                    conn.close()
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nutcracker did not start: {self.log()[-2000:]}")

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def stats(self):
        """The pool's stats (nutcracker refreshes them every 100 ms here)."""
        with socket.create_connection(("127.0.0.1", self.stats_port), timeout=5) as s:
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return json.loads(data)["kvcache"]

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10, **{**proxy_client_kwargs(), **kw})

    def raw(self):
        return RawConnection(self.port)


class Cluster:
    """Named kvcache nodes (conftest's Server) and the proxies in front of them."""

    def __init__(self, count, node_args=()):
        self.dir = tempfile.mkdtemp(prefix="kvcache-cluster-")
        self.node_args = list(node_args)
        self.nodes = {}
        self.proxies = []
        try:
            for i in range(1, count + 1):
                self.add_node(f"node{i}")
        except BaseException:
            self.cleanup()
            raise

    def add_node(self, name, args=None):
        node = Server(args=self.node_args if args is None else args, directory=os.path.join(self.dir, name))
        os.makedirs(node.dir)
        self.nodes[name] = node
        return node.start()

    def proxy(self, names=None, **pool):
        names = names or list(self.nodes)
        proxy = Proxy([(n, self.nodes[n].port) for n in names], self.dir, **pool)
        self.proxies.append(proxy)
        return proxy.start()

    def keys_by_node(self, db=0, **kw):
        """{node name: set of keys} read from each node directly."""
        out = {}
        for name, node in self.nodes.items():
            c = node.client(db=db, **kw)
            out[name] = set(c.keys("*"))
            c.close()
        return out

    def cleanup(self):
        for proxy in self.proxies:
            proxy.stop()
        for node in self.nodes.values():
            node.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cluster():
    """A function of the test's own: cluster(count) starts `count` nodes."""
    made = []

    def make(count=3, node_args=()):
        c = Cluster(count, node_args)
        made.append(c)
        return c

    yield make
    for c in made:
        c.cleanup()


def fill(client, keys, value=lambda k: b"v:" + k, batch=1000):
    """SETs every key through the proxy, `batch` commands a round trip."""
    for lo in range(0, len(keys), batch):
        pipe = client.pipeline(transaction=False)
        for k in keys[lo:lo + batch]:
            pipe.set(k, value(k))
        assert all(pipe.execute())


def mget_all(client, keys, batch=1000):
    out = []
    for lo in range(0, len(keys), batch):
        out += client.mget(keys[lo:lo + batch])
    return out


KEYS_30K = [b"key:%05d" % i for i in range(30000)]
RING3 = Ring(["node1", "node2", "node3"])


# --------------------------------------------------------------------------
# The ring.

def test_keys_spread_exactly_as_over_redis_servers_behind_the_same_pool(cluster):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed: apt-get install redis-server")
    kv = cluster(3)
    kv_proxy = kv.proxy()
    redis_nodes = []
    try:
        for name in ("node1", "node2", "node3"):
            d = tempfile.mkdtemp(prefix="redis-node-", dir=kv.dir)
            port = free_port()
            proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                                     "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
            redis_nodes.append((name, port, proc))
        for _, port, proc in redis_nodes:
            deadline = time.time() + 10
            while True:
                try:
                    redis.Redis(port=port).ping()
                    break
                except redis.ConnectionError:
                    assert time.time() < deadline and proc.poll() is None, "redis-server did not start"
                    time.sleep(0.05)
        # The same pool, other ports: only the names are the same.
        redis_proxy = Proxy([(n, p) for n, p, _ in redis_nodes], kv.dir)
        kv.proxies.append(redis_proxy)
        redis_proxy.start()
        fill(kv_proxy.client(), KEYS_30K)
        fill(redis_proxy.client(), KEYS_30K)

        on_kvcache = kv.keys_by_node()
        on_redis = {n: set(redis.Redis(port=p).keys("*")) for n, p, _ in redis_nodes}
        assert sum(map(len, on_kvcache.values())) == 30000
        for name in on_kvcache:
            assert on_kvcache[name] == on_redis[name], name
            assert {RING3.node(k) for k in on_kvcache[name]} == {name}
            # ketama with 160 points a node: an uneven but bounded share.
            assert 0.2 < len(on_kvcache[name]) / 30000 < 0.5, {n: len(s) for n, s in on_kvcache.items()}
        assert mget_all(kv_proxy.client(), KEYS_30K) == [b"v:" + k for k in KEYS_30K]
    finally:
        for _, _, proc in redis_nodes:
            proc.terminate()
            proc.wait(timeout=10)


def test_short_similar_keys_spread_evenly(cluster):
    c = cluster(3)
    c.proxy().client().mset({f"user:{i}": i for i in range(1000)})
    shares = [len(keys) / 1000 for keys in c.keys_by_node().values()]
    assert all(0.25 < share < 0.42 for share in shares), shares


def test_mset_and_mget_are_split_across_nodes_and_joined_in_order(cluster):
    c = cluster(3)
    r = c.proxy().client()
    keys = [b"m:%d" % i for i in range(300)]
    assert r.mset({k: b"x" + k for k in keys}) is True
    held = c.keys_by_node()
    for name in held:  # each node got its share of the one MSET
        assert held[name] & set(keys) == {k for k in keys if RING3.node(k) == name} != set()
    assert r.mget(keys) == [b"x" + k for k in keys]
    assert r.mget([keys[0], b"missing", keys[-1]]) == [b"x" + keys[0], None, b"x" + keys[-1]]
    assert r.delete(*keys[:100]) == 100       # DEL is split and its counts added up
    # EXISTS is not split: it goes to the first key's node and counts there.
    first_home = {k for k in keys[100:] if RING3.node(k) == RING3.node(keys[100])}
    assert r.exists(*keys[100:]) == len(first_home) < 200


def test_hash_tags_put_related_keys_on_one_node(cluster):
    c = cluster(3)
    r = c.proxy().client()
    for user in range(20):
        r.mset({f"{{user:{user}}}:name": "n", f"{{user:{user}}}:email": "e", f"{{user:{user}}}:cart": "c"})
    held = c.keys_by_node()
    for user in range(20):
        homes = {n for n, keys in held.items() for k in keys if k.startswith(b"{user:%d}" % user)}
        assert homes == {RING3.node(f"user:{user}")}
    # The tagged keys of different users still spread over every node.
    assert all(keys for keys in held.values())


# --------------------------------------------------------------------------
# A node lost and back.

def lost_and_kept(c, keys):
    held = c.keys_by_node()
    lost = sorted(set(keys) & held["node2"])
    kept = sorted(set(keys) - set(lost))
    return lost, kept


def wait_until_ejected(proxy, key, timeout=15):
    """GETs `key` (on the dead node) until the proxy answers a miss instead
    of an error; returns the errors seen before that."""
    conn = proxy.raw()
    errors = []
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            reply = conn.command("GET", key)
            if reply is None:
                return errors
            assert isinstance(reply, tuple), reply
            errors.append(reply[1])
            time.sleep(0.01)
    finally:
        conn.close()
    raise AssertionError(f"still not ejected after {timeout} s: {errors[-3:]}")


def settle_writes():
    """Under `durability everysec` a kill -9 may lose the last second of writes."""
    if DURABILITY != "commit":
        time.sleep(2.5)


def test_killed_node_is_ejected_its_keys_miss_and_the_others_keep_serving(cluster):
    c = cluster(3)
    proxy = c.proxy()
    r = proxy.client()
    keys = KEYS_30K[:3000]
    fill(r, keys)
    lost, kept = lost_and_kept(c, keys)
    settle_writes()
    c.nodes["node2"].kill9()

    errors = wait_until_ejected(proxy, lost[0])
    # Before the ejection, the requests that reached the dead node failed
    # (refused or closed): at most server_failure_limit of them, and one
    # more in flight when the node died.
    assert len(errors) <= FAILURE_LIMIT + 1, errors
    assert all("Connection refused" in e or "closed" in e.lower() or "reset" in e.lower() for e in errors), errors
    # Ejected (for server_retry_timeout): its keys are plain misses, in one
    # MGET spread over the two nodes left, and the others' keys still hit.
    assert mget_all(r, lost) == [None] * len(lost)
    assert mget_all(r, kept) == [b"v:" + k for k in kept]
    assert r.set(lost[0], b"written while node2 is out") is True
    deadline = time.time() + 5
    while proxy.stats()["server_ejects"] < 1:
        assert time.time() < deadline, proxy.stats()
        time.sleep(0.1)


def test_restarted_node_rejoins_after_the_retry_timeout_with_its_keys(cluster):
    c = cluster(3)
    proxy = c.proxy()
    r = proxy.client()
    keys = KEYS_30K[:3000]
    fill(r, keys)
    lost, _ = lost_and_kept(c, keys)
    settle_writes()
    node2 = c.nodes["node2"]
    node2.kill9()
    wait_until_ejected(proxy, lost[0])
    ejected_at = time.time()

    node2.start()  # same port, same data directory
    conn = proxy.raw()
    deadline = time.time() + RETRY_MS / 1000 + 15
    while True:
        reply = conn.command("GET", lost[0])  # a miss (ejected), an error (retried too early), or its value
        if reply == b"v:" + lost[0]:
            break
        assert time.time() < deadline, reply
        time.sleep(0.05)
    conn.close()
    # The proxy did not send node2 anything until its retry time came.
    back_after = time.time() - ejected_at
    print(f"\nnode2 back in the ring {back_after:.1f} s after its ejection (server_retry_timeout {RETRY_MS} ms)")
    assert back_after >= RETRY_MS / 1000 * 0.9
    # Back in the ring with the data SQLite kept: no miss.
    assert mget_all(r, lost) == [b"v:" + k for k in lost]


def test_rejoin_without_a_policy_serves_what_the_outage_changed(cluster):
    """Why the rejoin policy exists (docs/cluster.md): while node2 was
    ejected, its keys were written and deleted on the other nodes; back in
    the ring, it answers with what it held before."""
    c = cluster(3)
    proxy = c.proxy()
    r = proxy.client()
    keys = KEYS_30K[:3000]
    fill(r, keys)
    lost, _ = lost_and_kept(c, keys)
    changed, deleted = lost[0], lost[1]
    settle_writes()
    node2 = c.nodes["node2"]
    node2.kill9()
    wait_until_ejected(proxy, changed)
    assert r.set(changed, b"new value") is True   # lands on node1 or node3
    assert r.delete(deleted) == 0                   # nothing there to delete
    node2.start()
    deadline = time.time() + RETRY_MS / 1000 + 15
    while True:
        try:
            if r.get(deleted) is not None:
                break
        except redis.ResponseError:
            pass
        assert time.time() < deadline
        time.sleep(0.05)
    assert r.get(changed) == b"v:" + changed        # stale: the new value is on another node
    assert r.get(deleted) == b"v:" + deleted        # resurrected


def test_adding_a_fourth_node_moves_about_a_quarter_of_the_keys(cluster):
    c = cluster(3)
    r3 = c.proxy().client()
    fill(r3, KEYS_30K)
    c.add_node("node4")
    r4 = c.proxy(["node1", "node2", "node3", "node4"]).client()
    values = mget_all(r4, KEYS_30K)
    missed = {k for k, v in zip(KEYS_30K, values) if v is None}
    ring4 = Ring(["node1", "node2", "node3", "node4"])
    rate = len(missed) / len(KEYS_30K)
    print(f"\nmiss rate right after adding a fourth node: {rate:.1%} ({len(missed)} of {len(KEYS_30K)})")
    # Exactly the keys ketama now gives node4 miss; nothing else moved.
    assert missed == {k for k in KEYS_30K if ring4.node(k) == "node4"}
    assert 0.15 < rate < 0.40
    # Cache-aside refills them once; then everything hits.
    fill(r4, sorted(missed))
    assert mget_all(r4, KEYS_30K) == [b"v:" + k for k in KEYS_30K]


# --------------------------------------------------------------------------
# Caches, passwords and clients through the proxy.

def test_numbered_caches_are_reached_through_one_pool_each_with_redis_db(cluster):
    c = cluster(3)
    default = c.proxy().client()
    db3 = c.proxy(redis_db=3).client()
    default.set("k", "in db0")
    db3.set("k", "in db3")
    assert default.get("k") == b"in db0"
    assert db3.get("k") == b"in db3"
    owner = c.nodes[RING3.node("k")]
    assert os.path.exists(os.path.join(owner.data_dir(), "db3.sqlite"))
    assert owner.client(db=3).get("k") == b"in db3"


def test_named_caches_through_redis_db_numbers_mapped_to_names(cluster):
    """`database-name <n> <cache>` makes SELECT n (which nutcracker sends for
    `redis_db: n`) select a named cache."""
    c = cluster(3, node_args=["--database-name", "5", "sessions"])
    r = c.proxy(redis_db=5).client()
    r.set("s:1", "alice")
    assert r.get("s:1") == b"alice"
    owner = c.nodes[RING3.node("s:1")]
    assert os.path.exists(os.path.join(owner.data_dir(), "sessions.sqlite"))
    assert not os.path.exists(os.path.join(owner.data_dir(), "db5.sqlite"))
    direct = owner.client()
    direct.execute_command("SELECT", "sessions")
    assert direct.get("s:1") == b"alice"


def test_redis_auth_authenticates_the_proxy_to_every_node(cluster):
    c = cluster(3, node_args=["--requirepass", "s3cret"])
    proxy = c.proxy(redis_auth="s3cret")
    conn = proxy.raw()
    assert conn.command("GET", "k") == ("error", "NOAUTH Authentication required")
    assert conn.command("AUTH", "wrong") == ("error", "ERR invalid password")
    assert conn.command("AUTH", "s3cret") == "OK"
    conn.close()
    r = proxy.client(password="s3cret")
    keys = [b"a:%d" % i for i in range(100)]
    r.mset({k: k for k in keys})       # reaches all three nodes, each authenticated by the proxy
    assert r.mget(keys) == keys
    assert all(c.keys_by_node(password="s3cret").values())


def test_redis_py_defaults_are_refused_and_protocol_2_without_setinfo_works(cluster):
    c = cluster(3)
    proxy = c.proxy()
    if redis_py_major() >= 5:
        # redis-py 5-7 send CLIENT SETINFO on connect, 8 also HELLO 3 first:
        # nutcracker does not know either and closes the connection.
        plain = redis.Redis(host="127.0.0.1", port=proxy.port, socket_timeout=5, retry=NO_RETRY)
        with pytest.raises(redis.ConnectionError):
            plain.set("k", "v")
    r = proxy.client()
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    pipe = r.pipeline(transaction=False)
    for i in range(50):
        pipe.set(f"p:{i}", i)
    pipe.mget([f"p:{i}" for i in range(50)])
    assert pipe.execute()[-1] == [str(i).encode() for i in range(50)]
    # SELECT is refused too: a numbered cache is a pool with redis_db.
    with pytest.raises(redis.ConnectionError):
        proxy.client(db=3, retry=NO_RETRY).get("k")


# Commands nutcracker 0.5.0 does not forward: it closes the client's
# connection (docs/cluster.md lists them all).
REFUSED = [
    ("SELECT", "1"), ("INFO",), ("CONFIG", "GET", "port"), ("KEYS", "*"), ("SCAN", "0"), ("DBSIZE",),
    ("FLUSHALL",), ("FLUSHDB",), ("MULTI",), ("WATCH", "k"), ("SUBSCRIBE", "c"), ("PUBLISH", "c", "m"),
    ("BLPOP", "k", "1"), ("HELLO", "3"), ("CLIENT", "SETINFO", "LIB-NAME", "x"), ("CLIENT", "SETNAME", "x"),
    ("ECHO", "x"), ("RENAME", "a", "b"), ("MSETNX", "a", "1"), ("TIME",), ("RANDOMKEY",), ("MOVE", "k", "1"),
    ("OBJECT", "ENCODING", "k"), ("SLOWLOG", "GET"), ("MONITOR",), ("SHUTDOWN",), ("COMMAND", "DOCS"),
]


@pytest.mark.parametrize("command", REFUSED, ids=lambda c: " ".join(c))
def test_the_proxy_closes_the_connection_on_commands_it_does_not_forward(cluster, command):
    c = cluster(1)
    conn = c.proxy().raw()
    conn.send(b"".join([b"*%d\r\n" % len(command)] + [b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in command]))
    assert conn.is_closed(timeout=5)
    assert c.nodes["node1"].client().ping()  # the node never saw it


def test_ping_is_answered_by_the_proxy_and_admin_commands_go_to_each_node(cluster):
    c = cluster(3)
    proxy = c.proxy()
    assert proxy.raw().command("PING") == "PONG"
    proxy.client().mset({f"k{i}": i for i in range(30)})
    # Admin work is per node, on its own port: INFO, DBSIZE, CONFIG, KEYS...
    sizes = [node.client().dbsize() for node in c.nodes.values()]
    assert sum(sizes) == 30
    for node in c.nodes.values():
        assert node.client().info("server")["tcp_port"] == node.port


# --------------------------------------------------------------------------
# The rejoin policy (still to build; docs/cluster.md, "Still to build").

def wait_until_rejoined(proxy, node, key, timeout=RETRY_MS / 1000 + 15):
    """GETs `key` (node's) through the proxy until the proxy has a connection
    to `node` again, seen from the node (CLIENT LIST: this probe and the proxy)."""
    r = proxy.client()
    direct = node.client()
    deadline = time.time() + timeout
    try:
        while len(direct.client_list()) < 2:
            assert time.time() < deadline, "the proxy did not reconnect to the node"
            try:
                r.get(key)
            except redis.ResponseError:
                pass                        # retried before the node listened again
            time.sleep(0.05)
    finally:
        direct.close()
        r.close()


def rejoin_after_outage(c, proxy):
    """Kills node2, changes one of its keys and deletes another through the
    proxy while it is ejected, and restarts it. Returns (changed, deleted,
    untouched: a key of node2 left alone, restarted_at) once the proxy
    talks to node2 again."""
    r = proxy.client()
    keys = KEYS_30K[:3000]
    fill(r, keys)
    lost, _ = lost_and_kept(c, keys)
    changed, deleted, untouched = lost[0], lost[1], lost[2]
    settle_writes()
    node2 = c.nodes["node2"]
    node2.kill9()
    wait_until_ejected(proxy, changed)
    r.set(changed, b"new value")
    r.delete(deleted)
    restarted_at = time.time()
    node2.start()
    wait_until_rejoined(proxy, node2, untouched)
    return changed, deleted, untouched, restarted_at


def test_rejoin_policy_flush_comes_back_empty(cluster):
    c = cluster(3, node_args=["--rejoin-policy", "flush"])
    proxy = c.proxy()
    changed, deleted, untouched, _ = rejoin_after_outage(c, proxy)
    r = proxy.client()
    assert r.get(changed) is None
    assert r.get(deleted) is None
    assert r.get(untouched) is None


def test_rejoin_policy_expire_bounds_how_long_old_values_are_served(cluster):
    window = 10
    c = cluster(3, node_args=["--rejoin-policy", "expire", "--rejoin-window", str(window)])
    proxy = c.proxy()
    changed, deleted, untouched, restarted_at = rejoin_after_outage(c, proxy)
    r = proxy.client()
    direct = c.nodes["node2"].client()
    # Every entry from before the restart expires within the window; what
    # is written after the restart keeps its own expiry (none here).
    # (-2 when its share of the window, a hash of the key, has already run out)
    assert direct.ttl(untouched) in range(-2, window + 1) and direct.ttl(untouched) != -1
    r.set(changed, b"fresh")
    assert direct.ttl(changed) == -1
    time.sleep(max(0.0, restarted_at + window + 1 - time.time()))
    assert r.get(deleted) is None
    assert r.get(untouched) is None
    assert r.get(changed) == b"fresh"
    deadline = time.time() + 10          # the sweep after the window removes the rest
    while direct.dbsize() != 1:
        assert time.time() < deadline, direct.dbsize()
        time.sleep(0.2)
