"""Ten thousand clients at once, and what happens past maxclients."""
import resource
import socket
import time

import pytest

# 10,000 clients: one pass of the suite is enough (KVCACHE_SLOW=0 skips it).
pytestmark = [pytest.mark.kvcache_only, pytest.mark.slow]


def raise_fd_limit(wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_ten_thousand_concurrent_connections(fresh_server):
    if raise_fd_limit(10_300) < 10_300:
        pytest.skip("the test process cannot open 10,000 sockets here")
    s = fresh_server()
    socks = []
    try:
        for _ in range(9_999):  # with the INFO client below: 10,000, the default maxclients
            sock = socket.socket()
            sock.setblocking(True)
            sock.connect(("127.0.0.1", s.port))
            socks.append(sock)
        # Every 100th client asks something; all must be answered.
        for sock in socks[::100]:
            sock.sendall(b"PING\r\n")
        for sock in socks[::100]:
            sock.settimeout(10)
            assert sock.recv(100) == b"+PONG\r\n"
        c = s.raw()
        deadline = time.time() + 10
        while True:
            info = c.command("INFO", "clients").decode()
            connected = int(info.split("connected_clients:")[1].split("\r\n")[0])
            if connected >= 10_000 or time.time() > deadline:
                break
            time.sleep(0.1)
        assert connected == 10_000
        # The 10,001st client is one too many for the default maxclients.
        extra = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        assert extra.recv(100) == b"-ERR max number of clients reached\r\n"
        extra.close()
    finally:
        for sock in socks:
            sock.close()
