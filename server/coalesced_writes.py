"""A response's writes joined: its head and body leave in one system call and one TCP segment.

uvicorn writes a response's head when the app sends `http.response.start` and its body when
the app sends `http.response.body`: two `write` calls, two system calls, two TCP segments,
and on the client two reads, for every page. Over loopback the sender's kernel also does the
receiver's share of each segment, so the second write cost the renderer's worker ~15 µs of
system CPU per request (bench/README.md, "One write a response"). `WithCoalescedWrites` gives
uvicorn's protocol the connection's transport wrapped in `CoalescedWrites`: what is written
within one step of the event loop is kept, in order, and written once at the end of the step
(`loop.call_soon`), or at once before the transport is closed. Nothing waits longer than the
step that wrote it, so a streamed response's chunks still leave as they are sent, and
flow control (the transport's buffer limits, `pause_writing`) sees every byte as before.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

__all__ = ["CoalescedWrites", "WithCoalescedWrites"]


class CoalescedWrites:
    """`transport`, its writes within one step of `loop` joined into one."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        pending = self._pending
        if pending is None:
            self._pending = [data]
            self._loop.call_soon(self.flush)
        else:
            pending.append(data)

    def flush(self) -> None:
        """Write what is pending now (a closing transport takes nothing more)."""
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending = None
        self._transport.abort()

    # What uvicorn calls on every request, passed on directly (not through `__getattr__`).
    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def __getattr__(self, name: str) -> Any:  # anything else is the transport's own
        return getattr(self._transport, name)


class WithCoalescedWrites:
    """Mixed into one of uvicorn's HTTP protocols (before it): the protocol gets the
    connection's transport as `CoalescedWrites`."""

    loop: asyncio.AbstractEventLoop

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not `asyncio.Transport` subclasses, but have its methods.
        coalesced = CoalescedWrites(cast(asyncio.Transport, transport), self.loop)
        super().connection_made(coalesced)  # type: ignore[misc]
