"""What the robustness tools (crash_test, soak, slow_clients) share: where
the server binary is, a free loopback port, RESP encoding of a request and
the warning lines of a server log."""
from __future__ import annotations

import os
import re
import socket

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"


def default_binary() -> str:
    release = os.path.join(ROOT, ".build", "release", "kvcache-server")
    debug = os.path.join(ROOT, ".build", "debug", "kvcache-server")
    return release if os.path.exists(release) else debug


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def encode(*args) -> bytes:
    """A request as a RESP array of bulk strings (str, bytes or int arguments)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


WARNING_LINE = re.compile(r"^\d+:M \d+ \w+ \d+ [\d:.]+ # ")


def log_warnings(path: str) -> list[str]:
    """The server log's warning lines (Redis's '#' level)."""
    try:
        with open(path, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if WARNING_LINE.match(line)]
