"""TLS on its own port, with certificates the tests make with openssl:
redis-cli --tls and redis-py over TLS, client certificates, and handshakes
that stall without blocking anyone."""
import socket
import ssl
import subprocess
import time

import pytest
import redis

from conftest import REDIS, free_port


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1/localhost, and a client certificate."""
    d = tmp_path_factory.mktemp("tls")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=kvcache test CA",
            "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=%s" % name,
                "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", "san.ext", "-out", name + ".crt", cwd=d)
    return d


def tls_server(fresh_server, certs, auth="yes", extra=()):
    port = free_port()
    s = fresh_server(args=["--tls-port", str(port), "--tls-cert-file", str(certs / "server.crt"),
                           "--tls-key-file", str(certs / "server.key"), "--tls-ca-cert-file", str(certs / "ca.crt"),
                           "--tls-auth-clients", auth, *extra])
    s.tls_port = port
    return s


def cli(s, certs, *args, client_cert=True):
    command = ["redis-cli", "--tls", "--cacert", str(certs / "ca.crt"), "-p", str(s.tls_port)]
    if client_cert:
        command += ["--cert", str(certs / "client.crt"), "--key", str(certs / "client.key")]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=10)


def test_redis_cli_over_tls(fresh_server, certs):
    s = tls_server(fresh_server, certs)
    assert cli(s, certs, "SET", "k", "over tls").stdout == "OK\n"
    assert cli(s, certs, "GET", "k").stdout == "over tls\n"
    # The same data through the plain port.
    assert s.raw().command("GET", "k") == b"over tls"
    if not REDIS:
        assert "(TLS)" in s.log()


def test_redis_py_over_tls(fresh_server, certs):
    s = tls_server(fresh_server, certs)
    r = redis.Redis(port=s.tls_port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"),
                    ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"), socket_timeout=10)
    assert r.set("py", "1") is True
    pipe = r.pipeline(transaction=False)
    for i in range(500):
        pipe.set("k%d" % i, "v" * 1000)
    assert all(pipe.execute())
    assert r.get("k499") == b"v" * 1000
    assert len(r.mget(["k%d" % i for i in range(500)])) == 500


def test_client_certificate_required_by_default(fresh_server, certs):
    s = tls_server(fresh_server, certs)
    refused = cli(s, certs, "PING", client_cert=False)
    # The handshake is refused: redis-cli gets no reply at all (both servers
    # close the connection), where a certificate gets a PONG from the same port.
    assert (refused.returncode, refused.stdout) == (1, ""), refused
    assert refused.stderr.strip() in ("Error: Server closed the connection", "Error: Connection reset by peer"), refused
    assert cli(s, certs, "PING").stdout == "PONG\n"
    assert s.raw().command("PING") == "PONG"


def test_tls_with_requirepass(fresh_server, certs):
    s = tls_server(fresh_server, certs, extra=["--requirepass", "tls pw"])
    assert cli(s, certs, "GET", "k").stdout.strip() == "NOAUTH Authentication required."
    wrong = cli(s, certs, "-a", "wrong", "--no-auth-warning", "GET", "k")
    assert wrong.stderr.startswith("AUTH failed: WRONGPASS"), wrong
    assert cli(s, certs, "-a", "tls pw", "--no-auth-warning", "SET", "k", "v").stdout == "OK\n"
    r = redis.Redis(port=s.tls_port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"), password="tls pw",
                    ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"), socket_timeout=10)
    assert r.get("k") == b"v"
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=s.tls_port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"), password="nope",
                    ssl_certfile=str(certs / "client.crt"), ssl_keyfile=str(certs / "client.key"),
                    socket_timeout=10).ping()
    # The plain port asks for the same password.
    assert s.raw().command("GET", "k") == ("error", "NOAUTH Authentication required.")


def test_tls_auth_clients_no_and_optional(fresh_server, certs):
    for mode in ("no", "optional"):
        s = tls_server(fresh_server, certs, auth=mode)
        assert cli(s, certs, "PING", client_cert=False).stdout == "PONG\n"
        assert cli(s, certs, "PING").stdout == "PONG\n"


def test_tls_only_with_port_zero(fresh_server, certs):
    port = free_port()
    s = fresh_server(args=["--tls-port", str(port), "--tls-cert-file", str(certs / "server.crt"),
                           "--tls-key-file", str(certs / "server.key"), "--tls-ca-cert-file", str(certs / "ca.crt"),
                           "--tls-auth-clients", "no"], start=False)
    s.port = port  # the conftest waits on this port; pass --port 0 to turn off plain TCP
    s.args += ["--port", "0"]
    s.start()
    s.tls_port = port
    assert cli(s, certs, "PING", client_cert=False).stdout == "PONG\n"


def test_stalled_handshakes_do_not_block_others(fresh_server, certs):
    s = tls_server(fresh_server, certs, auth="no")
    stalled = []
    for i in range(50):
        sock = socket.create_connection(("127.0.0.1", s.tls_port))
        if i % 2:
            sock.send(b"\x16\x03\x01\x02\x00\x01\x00\x01")  # the start of a ClientHello, never finished
        stalled.append(sock)
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    started = time.time()
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", s.tls_port)) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"PING\r\n")
                assert tls.recv(100) == b"+PONG\r\n"
    assert time.time() - started < 5
    assert s.raw().command("PING") == "PONG"
    for sock in stalled:
        sock.close()


@pytest.mark.kvcache_only
def test_handshake_deadline_closes_silent_clients(fresh_server, certs):
    s = tls_server(fresh_server, certs, auth="no")
    sock = socket.create_connection(("127.0.0.1", s.tls_port))
    sock.settimeout(15)
    assert sock.recv(100) == b""  # closed by the server after its handshake deadline (10 s)
    sock.close()


@pytest.mark.kvcache_only
def test_bad_certificate_configuration_is_a_startup_error(tmp_path, certs):
    from conftest import BIN
    out = subprocess.run([BIN, "--port", "0", "--tls-port", str(free_port()), "--dir", str(tmp_path / "d"),
                          "--tls-cert-file", str(certs / "server.crt"), "--tls-key-file", str(certs / "client.key")],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode != 0
    assert "key values mismatch" in out.stderr or "does not match the certificate" in out.stderr
    out = subprocess.run([BIN, "--port", "0", "--tls-port", str(free_port()), "--dir", str(tmp_path / "d"),
                          "--tls-cert-file", str(tmp_path / "missing.crt"), "--tls-key-file", str(certs / "server.key")],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode != 0
    assert "can't load the certificate" in out.stderr
