"""Bad files, full disks, bad data directories and the limits that bound a
client's memory: each answered with a clear error while everything else
keeps serving and nothing acknowledged is lost."""
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import BIN, Server

pytestmark = pytest.mark.kvcache_only

FULL = ("error", "ERR SQLite write failed: database or disk is full (code 13)")


def wait_until(predicate, timeout=5.0, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def fill_db(server, cache, n, size=100):
    c = server.raw()
    if cache != "db0":
        assert c.command("SELECT", cache) == "OK"
    pipeline = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
        len(k), k, size, b"v" * size) for k in (b"key:%d" % i for i in range(n)))
    c.send(pipeline)
    for _ in range(n):
        assert c.read_reply() == "OK"
    return c


# --- corrupted cache files -------------------------------------------------------

def corrupt(path, how):
    if how == "garbage":
        with open(path, "r+b") as f:
            f.seek(0)
            f.write(os.urandom(4096))
    elif how == "truncated":
        with open(path, "r+b") as f:
            f.truncate(1000)
    elif how == "not_sqlite":
        with open(path, "wb") as f:
            f.write(b"this is not a database, just some text\n" * 200)
    elif how == "stale_wal":
        with open(path + "-wal", "wb") as f:
            f.write(os.urandom(64 * 1024))


@pytest.mark.parametrize("how", ["garbage", "truncated", "not_sqlite", "stale_wal"])
def test_corrupt_file_found_at_open_is_moved_aside(fresh_server, how):
    s = fresh_server()
    fill_db(s, "sessions", 50)
    fill_db(s, "db0", 5)
    assert s.stop() == 0
    path = os.path.join(s.data_dir(), "sessions.sqlite")
    corrupt(path, how)
    s.start()
    c = s.raw()
    # db0 was never touched and keeps its data.
    assert c.command("GET", "key:1") == b"v" * 100
    assert c.command("SELECT", "sessions") == "OK"
    got = c.command("GET", "key:1")
    if how == "stale_wal":
        # SQLite ignores a WAL whose header does not match: the data is intact.
        assert got == b"v" * 100
        return
    assert got is None
    assert c.command("SET", "fresh", "1") == "OK"
    assert c.command("GET", "fresh") == b"1"
    assert glob.glob(path + ".corrupt-*"), os.listdir(s.data_dir())
    assert "is corrupt" in s.log() and "moved aside" in s.log()


def test_corruption_found_while_serving_recreates_the_cache(fresh_server):
    # A small page cache and no memory tier, so reads go to the file.
    args = ["--sqlite-cache-size", "1mb", "--memory-tier-size", "0"]
    s = fresh_server(args=args)
    fill_db(s, "big", 3000, size=1000)
    other = fill_db(s, "db0", 3)
    assert s.stop() == 0
    s.start()
    path = os.path.join(s.data_dir(), "big.sqlite")
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # scribble over the middle of the file, behind the server's back
        for offset in range(size // 4, size * 3 // 4, 4096 * 7):
            f.seek(offset)
            f.write(os.urandom(4096))
    c = s.raw()
    assert c.command("SELECT", "big") == "OK"
    errors = []
    for i in range(3000):
        reply = c.command("GET", "key:%d" % i)
        if isinstance(reply, tuple):
            errors.append(reply)
            break
    assert errors, "reading every key of a scribbled file must hit the damage"
    text = errors[0][1]
    assert text.startswith("ERR SQLite read failed: ") and ("(code 11)" in text or "(code 26)" in text), errors[0]
    # The next commands run on a fresh file; the other cache never noticed.
    assert c.command("SET", "after", "ok") == "OK"
    assert c.command("GET", "after") == b"ok"
    assert glob.glob(path + ".corrupt-*")
    other = s.raw()
    assert other.command("GET", "key:2") == b"v" * 100


# --- a full disk -------------------------------------------------------------------

def fill_until_refused(c, value_size=2000, limit=3000, seconds=20):
    """SETs distinct keys until one is refused (the writer found the file
    full and its changes wait in memory); returns the acknowledged indexes
    and the refusal."""
    written = []
    deadline = time.time() + seconds
    for i in range(limit):
        reply = c.command("SET", "k%d" % i, "x" * value_size)
        if reply != "OK":
            return written, reply
        written.append(i)
        if time.time() > deadline:
            break
        time.sleep(0.002)  # the writer applies a batch a second: let it meet the full file
    pytest.fail("no write was refused: %d acknowledged" % len(written))


@pytest.mark.parametrize("mode", [[], ["--appendonly", "no"]], ids=["appendonly-yes", "appendonly-no"])
def test_full_file_refuses_growing_writes_keeps_every_acknowledged_one_and_recovers(fresh_server, mode):
    # SQLite's max_page_count stands for a full disk: the same code and text.
    # Writes are acknowledged once logged (or, with appendonly no, at once);
    # when the writer then cannot apply them, they stay in memory and are
    # tried again, and writes that would take more room are refused with
    # SQLite's text until a batch goes through (as Redis's MISCONF after a
    # failed save). Removals are still taken, so room can be made.
    s = fresh_server(args=["--sqlite-max-page-count", "60", "--memory-tier-size", "0"] + mode)
    c = s.raw()
    written, refused = fill_until_refused(c)
    assert refused == FULL
    assert written, "some writes fit before the limit"
    assert "Writing cache 'db0' to SQLite failed" in s.log()
    info = c.command("INFO", "persistence").decode()
    assert "failed_commits:" in info and "failed_commits:0" not in info
    assert "writer_failed_jobs:0" not in info
    for i in written:  # every acknowledged write is still there
        assert c.command("GET", "k%d" % i) == b"x" * 2000
    assert c.command("SET", "small", "y") == FULL  # still refused: nothing freed room
    # Room returns: delete what was written (allowed), the retried batch fits.
    for i in written:
        assert c.command("DEL", "k%d" % i) == 1
    assert wait_until(lambda: c.command("SET", "again", "z" * 2000) == "OK", timeout=5)
    assert "Writes to cache 'db0' reach SQLite again" in s.log()
    assert c.command("GET", "again") == b"z" * 2000
    assert s.raw().command("PING") == "PONG"
    # What was acknowledged last survives a restart; what was deleted stays deleted.
    assert s.stop() == 0
    s.start()
    c = s.raw()
    assert c.command("GET", "again") == b"z" * 2000
    assert c.command("EXISTS", "k0") == 0


def can_mount():
    if os.geteuid() != 0:
        return False
    target = tempfile.mkdtemp(prefix="kvcache-mount-probe-")
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", target],
                        capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", target])
    os.rmdir(target)
    return ok


@pytest.fixture
def small_fs():
    if not can_mount():
        pytest.skip("no permission to mount a tmpfs here (the page-limit test covers a full disk)")
    target = tempfile.mkdtemp(prefix="kvcache-smallfs-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", target], check=True)
    yield target
    subprocess.run(["umount", "-l", target])
    shutil.rmtree(target, ignore_errors=True)


MISCONF_FULL = ("error", "MISCONF Errors writing to the AOF file: No space left on device")


@pytest.mark.commit_durability
def test_full_filesystem_refuses_writes_and_recovers(small_fs):
    s = Server(args=[], directory=None)
    s.port = None
    # The data directory (cache files and the append-only log) lives on the
    # 3 MB tmpfs; the server's own log stays elsewhere.
    s.command_line = lambda: [BIN, "--port", str(s.port), "--bind", "127.0.0.1", "--dir", small_fs,
                              "--memory-tier-size", "0"]
    s.start()
    try:
        c = s.raw()
        assert c.command("SET", "first", "1") == "OK"
        filler = os.path.join(small_fs, "filler")
        with open(filler, "wb") as f:  # leave little room
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        refused = None
        for i in range(2000):
            reply = c.command("SET", "k%d" % i, "x" * 8000)
            if reply != "OK":
                refused = reply
                break
            time.sleep(0.002)
        # Whichever fails first, the log's append (Redis's text) or the writer's
        # apply to SQLite (SQLite's), writes are refused with that error.
        assert refused in (MISCONF_FULL, FULL), refused
        assert c.command("GET", "first") == b"1"  # reads keep working
        os.remove(filler)
        assert wait_until(lambda: c.command("SET", "after", "ok") == "OK", timeout=5)
        assert c.command("GET", "after") == b"ok"
    finally:
        s.cleanup()


# --- the data directory -------------------------------------------------------------

def run_server(args, timeout=10):
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout)


def test_missing_data_directory_is_created(fresh_server):
    s = fresh_server()  # conftest points --dir at <tmp>/data, which does not exist beforehand
    assert os.path.isdir(s.data_dir())
    assert oct(os.stat(s.data_dir()).st_mode & 0o777) == oct(0o700)


def test_data_directory_that_is_a_file_is_a_startup_error(tmp_path):
    path = tmp_path / "afile"
    path.write_text("x")
    result = run_server(["--port", "0", "--dir", str(path)])
    assert result.returncode != 0
    assert "is not a directory" in result.stderr


def test_data_directory_under_a_file_is_a_startup_error(tmp_path):
    (tmp_path / "afile").write_text("x")
    result = run_server(["--port", "0", "--dir", str(tmp_path / "afile" / "data")])
    assert result.returncode != 0
    assert "can't create the data directory" in result.stderr


def test_unwritable_data_directory_is_a_startup_error(tmp_path):
    if os.geteuid() == 0:
        if not can_mount():
            pytest.skip("root ignores permissions and cannot mount a read-only filesystem here")
        target = tempfile.mkdtemp(prefix="kvcache-ro-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", target], check=True)
        try:
            result = run_server(["--port", "0", "--dir", target])
        finally:
            subprocess.run(["umount", target])
            os.rmdir(target)
    else:
        target = tmp_path / "ro"
        target.mkdir(mode=0o500)
        result = run_server(["--port", "0", "--dir", str(target)])
    assert result.returncode != 0
    assert "is not writable" in result.stderr


def test_data_directory_locked_by_another_server(fresh_server):
    first = fresh_server()
    result = run_server(["--port", "0", "--dir", first.data_dir()])
    assert result.returncode != 0
    assert "is in use by another kvcache-server (pid %d)" % first.proc.pid in result.stderr
    assert first.raw().command("PING") == "PONG"


# --- limits that bound memory -------------------------------------------------------

def test_query_buffer_limit_closes_the_client(fresh_server):
    s = fresh_server(args=["--client-query-buffer-limit", "1mb"])
    c = s.raw()
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5000000\r\n")
    try:
        for _ in range(40):
            c.send(b"x" * 65536)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert c.is_closed()
    assert "max query buffer length" in s.log()
    assert s.raw().command("PING") == "PONG"


def test_many_empty_arguments_count_against_the_query_limit(fresh_server):
    s = fresh_server(args=["--client-query-buffer-limit", "1mb"])
    c = s.raw()
    c.send(b"*1000000\r\n")
    try:
        for _ in range(100):
            c.send(b"$0\r\n\r\n" * 10000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert c.is_closed()
    assert s.raw().command("PING") == "PONG"


def test_proto_max_bulk_len(fresh_server):
    s = fresh_server(args=["--proto-max-bulk-len", "1mb"])
    c = s.raw()
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n")
    assert c.read_reply() == ("error", "ERR Protocol error: invalid bulk length")
    assert c.is_closed()
    ok = s.raw()
    assert ok.command("SET", "k", "v" * 1048576) == "OK"


def test_client_that_never_reads_is_disconnected(fresh_server):
    s = fresh_server(args=["--client-output-buffer-limit", "normal", "2mb", "0", "0"])
    setup = s.raw()
    assert setup.command("SET", "big", "x" * 100000) == "OK"
    greedy = socket.create_connection(("127.0.0.1", s.port))
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 100
    closed = False
    try:
        for _ in range(200):  # up to 2 GB of replies asked for, none read
            greedy.sendall(request)
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    assert closed or wait_until(lambda: "output buffer limits" in s.log(), timeout=5)
    assert "output buffer limits" in s.log()
    assert setup.command("PING") == "PONG"
    rss_kb = int([l for l in open("/proc/%d/status" % s.proc.pid) if l.startswith("VmRSS")][0].split()[1])
    assert rss_kb < 200 * 1024, "the server did not keep the unread replies"
    greedy.close()


def test_idle_timeout_closes_idle_clients_only(fresh_server):
    s = fresh_server(args=["--timeout", "1"])
    idle = s.raw()
    assert idle.command("PING") == "PONG"
    busy = s.raw()
    for _ in range(12):
        assert busy.command("PING") == "PONG"
        time.sleep(0.2)
    assert idle.is_closed(timeout=3)
    assert busy.command("PING") == "PONG"


def test_config_get_reports_the_limits(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("CONFIG", "GET", "client-query-buffer-limit") == [b"client-query-buffer-limit", b"1073741824"]
    assert c.command("CONFIG", "GET", "proto-max-bulk-len") == [b"proto-max-bulk-len", b"536870912"]
    reply = c.command("CONFIG", "GET", "client-output-buffer-limit")
    assert reply[1].startswith(b"normal 268435456 67108864 60")


def test_low_descriptor_limit_lowers_maxclients_and_never_spins(fresh_server):
    s = fresh_server(start=False)
    original = s.command_line
    s.command_line = lambda: ["prlimit", "--nofile=300:300"] + original() + ["--max-caches", "16"]
    s.start()
    assert "maxclients has been reduced to 164" in s.log()  # 300 - (32 + 6 * 16 + 8)
    assert s.raw().command("CONFIG", "GET", "maxclients") == [b"maxclients", b"164"]
    socks = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(300)]
    try:
        pid = s.proc.pid
        def cpu_seconds():
            fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        before = cpu_seconds()
        time.sleep(2)
        assert cpu_seconds() - before < 0.5, "the server spins while clients wait past its limit"
        assert s.log().count("Accepting client connection") < 10
        refused = 0
        for sock in socks:
            try:
                if sock.recv(100, socket.MSG_DONTWAIT).startswith(b"-ERR max number of clients reached"):
                    refused += 1
            except BlockingIOError:
                pass
        assert refused >= 300 - 164 - 2
    finally:
        for sock in socks:
            sock.close()
    # The loop may see a new client before the 300 closes: once it has seen
    # them (within a few seconds), a new client is served.
    deadline = time.time() + 5
    reply = s.raw().command("PING")
    while reply != "PONG" and time.time() < deadline:
        time.sleep(0.05)
        reply = s.raw().command("PING")
    assert reply == "PONG"


def test_swapdb_leaves_no_temporary_files(fresh_server):
    s = fresh_server()
    c = s.raw()
    assert c.command("SET", "in0", "a") == "OK"
    assert c.command("SELECT", "1") == "OK"
    assert c.command("SET", "in1", "b") == "OK"
    assert c.command("SWAPDB", "0", "1") == "OK"
    assert c.command("GET", "in0") == b"a"
    assert sorted(f for f in os.listdir(s.data_dir()) if "sqlite" in f and not f.endswith(("-lock", "-wal", "-shm"))) \
        == ["db0.sqlite", "db1.sqlite"]
