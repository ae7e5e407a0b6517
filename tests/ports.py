"""Free loopback ports for servers the tests start, taken below the kernel's ephemeral range.

A port from `bind(("127.0.0.1", 0))` comes from the ephemeral range, the same range the
kernel hands to every outgoing connection: in the time between choosing it and the server
binding it, a test's client socket may take it ("Address already in use", a Redis Cluster
node that never starts). Ports below that range are only ever taken by listeners.

Under pytest-xdist every worker draws from its own slice of that range: two workers choosing
at the same moment would otherwise both find a port free and the slower server would fail to
bind it. The processes a worker starts inherit its slice (the variables below).
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

__all__ = ["free_port", "worker_slice"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20_000
_ENOUGH = 100  # ports a slice must hold to be worth drawing from at random
_given: set[int] = set()  # never the same port twice in one process, even once it is free again
_lock = threading.Lock()


def _ephemeral_low() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def worker_slice(low: int, high: int) -> range:
    """This process's part of `[low, high)`: all of it, or worker N of M's Nth of M slices."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... (set by pytest-xdist)
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 0):
        return range(low, high)
    width = (high - low) // int(count)
    start = low + (int(worker[2:]) % int(count)) * width
    return range(start, start + width)


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A loopback port nothing listens on now and no outgoing connection will be given."""
    ports = worker_slice(_LOWEST, _ephemeral_low())
    with _lock:
        if len(ports) >= _ENOUGH:
            for _ in range(500):
                port = random.choice(ports)
                if port not in _given and _bindable(port):
                    _given.add(port)
                    return port
        with socket.socket() as sock:  # no room below the range: the kernel's choice
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        _given.add(port)
        return port
