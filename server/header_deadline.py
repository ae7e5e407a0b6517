"""A deadline on reading a request's line and headers, which uvicorn does not have.

uvicorn times out an idle keep-alive connection, and the app bounds a body's read
(`RendererTuning.body_read_timeout_s`), but nothing bounds the headers: a client sending them
a byte at a time (slowloris) held a connection, and its worker's file descriptor, as long as
it liked (400 such connections were held 40 s and more). So `welcomemat serve` runs uvicorn's
own HTTP protocols with one addition: a connection gets `WELCOMEMAT_HEADER_TIMEOUT_S` to
complete a request's headers, counted from the moment it was accepted and again from the end
of each response; past it the connection is closed. The deadline is disarmed the moment a new
request's headers are complete (uvicorn then starts a request cycle: `self.cycle` changes), so
a slow app, a slow response or a pipelined request is never cut; bodies have their own limit.

`HttpToolsHeaderDeadline` (`--http fast`) and `H11HeaderDeadline` (`--http h11`) are passed to
uvicorn by import string (`PROTOCOLS`): each worker process imports them and reads the timeout
from its own settings (the environment it inherited), since uvicorn's spawned workers take
nothing else from the parent.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from welcomemat.settings import Settings

__all__ = ["PROTOCOLS", "H11HeaderDeadline", "HeaderDeadline", "HttpToolsHeaderDeadline"]

log = logging.getLogger(__name__)

# `--http` choice (uvicorn's parser name) -> the protocol class `uvicorn.Config(http=...)` imports.
PROTOCOLS = {
    "httptools": "server.header_deadline:HttpToolsHeaderDeadline",
    "h11": "server.header_deadline:H11HeaderDeadline",
}


@functools.cache
def _settings_timeout_s() -> float:
    """This process's `WELCOMEMAT_HEADER_TIMEOUT_S` (read once: `welcomemat serve` has already
    refused a bad value before any worker started)."""
    return Settings.from_env().header_timeout_s


class HeaderDeadline:
    """One connection's deadline: armed while it waits for a request's headers, for the request
    cycle current when armed (None: none yet); `disarm_if_started` drops it once that changed."""

    __slots__ = ("_cycle", "_handle")

    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None
        self._cycle: object = None

    def arm(self, loop: asyncio.AbstractEventLoop, timeout_s: float, cycle: object, transport: Any) -> None:
        self.cancel()
        self._cycle = cycle
        self._handle = loop.call_later(timeout_s, _close, transport, timeout_s)

    def disarm_if_started(self, cycle: object) -> None:
        """A request's headers are complete when the protocol's cycle is no longer the armed one."""
        if self._handle is not None and cycle is not self._cycle:
            self.cancel()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._cycle = None


def _close(transport: Any, timeout_s: float) -> None:
    if not transport.is_closing():
        log.debug(
            "closing %s: no complete request headers within %g s",
            transport.get_extra_info("peername"),
            timeout_s,
        )
        transport.close()


class _WithHeaderDeadline:
    """The deadline added to one of uvicorn's protocols (mixed in before it, so `super()` is it).

    The attributes it reads (`loop`, `cycle`, `transport`) are the protocol's own; uvicorn's two
    protocols name them alike, which is what lets one mixin serve both.
    """

    #: None: the process's settings; a test or an embedding may set its own.
    header_timeout_s: ClassVar[float | None] = None
    loop: asyncio.AbstractEventLoop
    cycle: Any
    transport: asyncio.Transport

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = HeaderDeadline()
        self._timeout_s = (
            self.header_timeout_s if self.header_timeout_s is not None else _settings_timeout_s()
        )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._deadline.arm(self.loop, self._timeout_s, self.cycle, transport)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        self._deadline.disarm_if_started(self.cycle)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        # Armed only when no request is under way: a pipelined one already started its cycle.
        if not self.transport.is_closing() and self.cycle is not None and self.cycle.response_complete:
            self._deadline.arm(self.loop, self._timeout_s, self.cycle, self.transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._deadline.cancel()
        super().connection_lost(exc)  # type: ignore[misc]


class HttpToolsHeaderDeadline(_WithHeaderDeadline, HttpToolsProtocol):
    """uvicorn's httptools protocol with the header deadline (see the module docstring)."""


class H11HeaderDeadline(_WithHeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol with the header deadline (see the module docstring)."""
