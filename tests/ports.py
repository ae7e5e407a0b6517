"""Free loopback ports for servers the tests start, taken below the kernel's ephemeral range.

A port from `bind(("127.0.0.1", 0))` comes from the ephemeral range, the same range the
kernel hands to every outgoing connection: in the time between choosing it and the server
binding it, a test's client socket may take it ("Address already in use", a Redis Cluster
node that never starts). Ports below that range are only ever taken by listeners.
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

__all__ = ["free_port"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20_000
_given: set[int] = set()  # never the same port twice in one process, even once it is free again
_lock = threading.Lock()


def _ephemeral_low() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A loopback port nothing listens on now and no outgoing connection will be given."""
    low = _ephemeral_low()
    with _lock:
        if low - _LOWEST >= 1_000:
            for _ in range(500):
                port = random.randrange(_LOWEST, low)
                if port not in _given and _bindable(port):
                    _given.add(port)
                    return port
        with socket.socket() as sock:  # no room below the range: the kernel's choice
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        _given.add(port)
        return port
