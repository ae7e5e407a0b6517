"""uvicorn with one listening socket per worker process (`welcomemat serve --workers N --reuse-port`).

uvicorn's supervisor binds one socket and hands it to every worker, so they share one accept
queue, and the worker that wakes first takes what is waiting: a burst of new connections (a
proxy's keep-alive pool opening, a load test starting) can all land on one worker and stay
there while the other idles. With SO_REUSEPORT each worker listens on a socket of its own bound
to the same address, and Linux spreads new connections across them by a hash of each
connection's addresses. Other systems accept the option without spreading, so there the shared
socket stays. Measured on two cores with the load generator beside the workers (bench/README.md,
"Two workers: a socket each, or one shared"): the bare page's rounds no longer fall to one busy
worker, but the renderer's first clicks and scans served 5-10% fewer a second, each request
costing more CPU while both workers stay busy. So it is a choice, not the default.

The supervisor holds the address bound, not listening: an address in use is refused before a
worker starts, and the port stays held while workers come and go (a bound socket that does not
listen is given no connections; another socket may bind there only with SO_REUSEPORT as the
same user). When a worker stops, the connections still waiting in its socket's queue are
reset, unless the kernel may hand them to another worker's (`sysctl net.ipv4.tcp_migrate_req=1`,
Linux 5.14 and later); the shared socket, the default, loses none.

Each worker gets its socket through uvicorn's own path: the supervisor pickles the sockets it
passes to a spawned worker, and this one pickles as "bind the same address with SO_REUSEPORT",
so a worker uvicorn restarts binds its own again.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

__all__ = ["CannotListen", "WorkerListener", "run_uvicorn", "spreads_connections", "worker_listener"]


class CannotListen(Exception):
    """The address the workers would share cannot be bound (the message says why)."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {error.strerror or error}")


def spreads_connections() -> bool:
    """Whether the kernel spreads connections across sockets bound with SO_REUSEPORT (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _reuse_port_socket(family: int, host: str, port: int, cls: type[socket.socket] = socket.socket) -> Any:
    sock = cls(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


class WorkerListener(socket.socket):
    """The supervisor's socket: the address, bound with SO_REUSEPORT and not listening.
    Unpickled in a worker, it is that worker's own socket bound to the same address (uvicorn's
    server listens on it)."""

    def __reduce__(self) -> tuple[Any, ...]:
        host, port = self.getsockname()[:2]
        return (_reuse_port_socket, (int(self.family), host, port))


def worker_listener(host: str, port: int) -> WorkerListener:
    """`host:port` held for workers that each bind it themselves; OSError when it cannot be
    bound (in use without SO_REUSEPORT, not an address of this machine, a privileged port)."""
    if port <= 0:
        raise ValueError("one socket per worker needs a fixed port: with port 0 each would get another")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener: WorkerListener = _reuse_port_socket(family, host, port, WorkerListener)
    # SO_REUSEADDR let it bind past connections of an earlier server still in TIME_WAIT. Left
    # on, it would also let any socket with SO_REUSEADDR bind and listen here while no worker
    # listens (Linux checks the flag of the socket already bound); off, only the workers'
    # sockets (SO_REUSEPORT, same user) may.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
    return listener


def run_uvicorn(app: str, *, host: str, port: int, workers: int, reuse_port: bool, **options: Any) -> None:
    """`uvicorn.run(app, host=host, port=port, workers=workers, **options)`, but with 2+ workers
    and `reuse_port` (where `spreads_connections()`) each worker listens on a socket of its own.
    Raises CannotListen when that address cannot be bound (before any worker starts)."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if workers < 2 or not (reuse_port and spreads_connections()):
        uvicorn.run(app, host=host, port=port, workers=workers, **options)
        return
    app_dir = options.pop("app_dir", None)
    if app_dir is not None:  # as uvicorn.run does (a spawned worker imports `app` again from here)
        sys.path.insert(0, app_dir)
    try:
        listener = worker_listener(host, port)
    except OSError as error:
        raise CannotListen(host, port, error) from error
    try:
        config = uvicorn.Config(app, host=host, port=port, workers=workers, **options)
        Multiprocess(config, sockets=[listener]).run()
    except KeyboardInterrupt:  # as uvicorn.run: the supervisor has stopped its workers
        pass
    finally:
        listener.close()
