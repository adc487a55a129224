"""What the robustness tools (crash_test, soak, slow_clients) share: where
the server binary is, a free loopback port and RESP encoding of a request
(both from bench/benchlib.py), and the warning lines of a server log."""
from __future__ import annotations

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"

# A free port and RESP encoding are the benchmarks' too: one copy, in bench/benchlib.py.
sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import encode, free_port  # noqa: E402,F401


def default_binary() -> str:
    release = os.path.join(ROOT, ".build", "release", "kvcache-server")
    debug = os.path.join(ROOT, ".build", "debug", "kvcache-server")
    return release if os.path.exists(release) else debug


WARNING_LINE = re.compile(r"^\d+:M \d+ \w+ \d+ [\d:.]+ # ")


def log_warnings(path: str) -> list[str]:
    """The server log's warning lines (Redis's '#' level)."""
    try:
        with open(path, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if WARNING_LINE.match(line)]
