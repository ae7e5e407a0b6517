"""A deadline on reading a request's line and headers, which uvicorn does not have.

uvicorn times out an idle keep-alive connection, and the app bounds a body's read
(`RendererTuning.body_read_timeout_s`), but nothing bounds the headers: a client sending them
a byte at a time (slowloris) held a connection, and its worker's file descriptor, as long as
it liked (400 such connections were held 40 s and more). So `welcomemat serve` runs uvicorn's
own HTTP protocols with one addition: a connection gets `WELCOMEMAT_HEADER_TIMEOUT_S` to
complete a request's headers, counted from the moment it was accepted and again from the end
of each response; past it the connection is closed. The wait ends the moment a new request's
headers are complete (uvicorn then starts a request cycle: `self.cycle` changes), so a slow
app, a slow response or a pipelined request is never cut; bodies have their own limit.

A connection only notes when it began to wait (the loop's clock, one attribute); one sweep
per worker (`HeaderSweep`, every quarter of the timeout while connections are open) closes
those that waited too long, so a connection is closed between the timeout and 1.25 times it.
A timer per request instead (armed after each response, cancelled when the next headers
arrive) cost every request ~2% of a worker's CPU (bench/README.md).

`WithHeaderDeadline` is mixed into uvicorn's protocols (`server.http_protocols`); each worker
process reads the timeout from its own settings (the environment it inherited), since
uvicorn's spawned workers take nothing else from the parent.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from typing import Any, ClassVar

from uvicorn.server import ServerState

from welcomemat.settings import Settings

__all__ = ["HeaderSweep", "WithHeaderDeadline"]

log = logging.getLogger(__name__)

# Sweeps per timeout: a connection is closed at most a quarter of the timeout past it.
_SWEEPS_PER_TIMEOUT = 4


@functools.cache
def _settings_timeout_s() -> float:
    """This process's `WELCOMEMAT_HEADER_TIMEOUT_S` (read once: `welcomemat serve` has already
    refused a bad value before any worker started)."""
    return Settings.from_env().header_timeout_s


class HeaderSweep:
    """One server's sweep: every `interval_s` while it has connections, closes each of ours
    that has waited longer than its timeout for a request's headers. Scheduled on the loop;
    stops when the server has no connections left, and starts again with the next one."""

    def __init__(self, loop: asyncio.AbstractEventLoop, server_state: ServerState, interval_s: float) -> None:
        self._loop = loop
        self._connections = server_state.connections  # uvicorn's own set of open connections
        self.interval_s = interval_s
        self._handle: asyncio.TimerHandle | None = None

    def watch(self, timeout_s: float) -> None:
        """A connection with `timeout_s` was opened: sweep at least as often as it needs."""
        self.interval_s = min(self.interval_s, timeout_s / _SWEEPS_PER_TIMEOUT)
        if self._handle is None:
            self._handle = self._loop.call_later(self.interval_s, self._sweep)

    def _sweep(self) -> None:
        self._handle = None
        now = self._loop.time()
        for connection in list(self._connections):
            if isinstance(connection, WithHeaderDeadline):
                connection.close_if_late(now)
        if self._connections:
            self._handle = self._loop.call_later(self.interval_s, self._sweep)


# A worker's servers (one, in practice) -> their sweep; gone with the server's state.
_SWEEPS: weakref.WeakKeyDictionary[ServerState, HeaderSweep] = weakref.WeakKeyDictionary()


def _sweep_of(loop: asyncio.AbstractEventLoop, server_state: ServerState, timeout_s: float) -> HeaderSweep:
    sweep = _SWEEPS.get(server_state)
    if sweep is None:
        sweep = _SWEEPS[server_state] = HeaderSweep(loop, server_state, timeout_s / _SWEEPS_PER_TIMEOUT)
    return sweep


class WithHeaderDeadline:
    """The deadline added to one of uvicorn's HTTP protocols (mixed in before it).

    The attributes it reads (`loop`, `cycle`, `transport`, `server_state`) are the protocol's
    own; uvicorn's two protocols name them alike, which is what lets one mixin serve both.
    """

    #: None: the process's settings; a test or an embedding may set its own.
    header_timeout_s: ClassVar[float | None] = None
    loop: asyncio.AbstractEventLoop
    cycle: Any
    transport: asyncio.Transport
    server_state: ServerState

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timeout_s = (
            self.header_timeout_s if self.header_timeout_s is not None else _settings_timeout_s()
        )
        # The loop's time this connection began waiting for a request's headers (None: not
        # waiting), and the request cycle current then (a new one means the headers came).
        self._waiting_since: float | None = None
        self._waiting_cycle: object = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._wait()
        _sweep_of(self.loop, self.server_state, self._timeout_s).watch(self._timeout_s)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if self._waiting_since is not None and self.cycle is not self._waiting_cycle:
            self._waiting_since = None  # a request's headers are complete

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        # Waiting only when no request is under way: a pipelined one already started its cycle.
        if not self.transport.is_closing() and self.cycle is not None and self.cycle.response_complete:
            self._wait()

    def _wait(self) -> None:
        self._waiting_cycle = self.cycle
        self._waiting_since = self.loop.time()

    def close_if_late(self, now: float) -> None:
        """Close the connection if it has waited for a request's headers longer than its
        timeout at the loop's time `now` (the sweep's call)."""
        if self._waiting_since is None or now - self._waiting_since < self._timeout_s:
            return
        self._waiting_since = None
        transport = self.transport
        if not transport.is_closing():
            log.debug(
                "closing %s: no complete request headers within %g s",
                transport.get_extra_info("peername"),
                self._timeout_s,
            )
            transport.close()
