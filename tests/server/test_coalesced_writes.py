"""A response's writes joined (`server.coalesced_writes`): what one step of the event loop
writes leaves in one write to the connection, in order; nothing waits past its step, and
closing sends what is pending first. End to end, through uvicorn's protocol as `welcomemat
serve` runs it, on a real socket: responses whole, keep-alive, a closed connection's last
response, and a streamed response's chunks arriving as they are sent."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.coalesced_writes import CoalescedWrites
from server.http_protocols import PROTOCOLS
from tests.server.uvicorn_thread import serve_in_thread


class _Connection(asyncio.Protocol):
    """The server side of a real loopback connection, its transport kept."""

    def __init__(self, made: asyncio.Future[asyncio.Transport]) -> None:
        self._made = made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._made.set_result(transport)  # type: ignore[arg-type]


class _CountingTransport:
    """A real transport whose `write` calls are counted (what `CoalescedWrites` hands on)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def _connected() -> tuple[_CountingTransport, socket.socket, asyncio.AbstractServer]:
    loop = asyncio.get_running_loop()
    made: asyncio.Future[asyncio.Transport] = loop.create_future()
    server = await loop.create_server(lambda: _Connection(made), "127.0.0.1", 0)
    client = socket.create_connection(server.sockets[0].getsockname()[:2])
    client.setblocking(False)
    return _CountingTransport(await made), client, server


async def _received(client: socket.socket, size: int) -> bytes:
    loop = asyncio.get_running_loop()
    data = b""
    while len(data) < size:
        chunk = await asyncio.wait_for(loop.sock_recv(client, 65536), 5)
        if not chunk:
            break
        data += chunk
    return data


async def _steps(steps: list[list[bytes]]) -> tuple[list[bytes], bytes]:
    counting, client, server = await _connected()
    writes = CoalescedWrites(counting, asyncio.get_running_loop())  # type: ignore[arg-type]
    try:
        for step in steps:
            for data in step:
                writes.write(data)
            await asyncio.sleep(0)  # the step ends: what it wrote leaves
        total = sum(len(data) for step in steps for data in step)
        return counting.writes, await _received(client, total)
    finally:
        client.close()
        server.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.binary(min_size=1, max_size=300), max_size=4), max_size=6))
def test_each_step_writes_once_and_every_byte_arrives_in_order(steps: list[list[bytes]]) -> None:
    writes, received = asyncio.run(_steps(steps))
    assert writes == [b"".join(step) for step in steps if step]
    assert received == b"".join(b"".join(step) for step in steps)


def test_closing_sends_what_is_pending_first_and_abort_drops_it() -> None:
    async def scenario() -> tuple[bytes, list[bytes], bytes]:
        counting, client, server = await _connected()
        writes = CoalescedWrites(counting, asyncio.get_running_loop())  # type: ignore[arg-type]
        writes.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        writes.write(b"ok")
        writes.close()  # in the same step: nothing has left yet
        closed = await _received(client, 1 << 20)
        client.close()
        counting2, client2, server2 = await _connected()
        aborted = CoalescedWrites(counting2, asyncio.get_running_loop())  # type: ignore[arg-type]
        aborted.write(b"never sent")
        aborted.abort()
        await asyncio.sleep(0.05)
        dropped = await _received(client2, 1)
        client2.close()
        server.close()
        server2.close()
        return closed, counting2.writes, dropped

    closed, aborted_writes, dropped = asyncio.run(scenario())
    assert closed == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
    assert aborted_writes == [] and dropped == b""


def test_a_write_after_the_connection_closed_is_dropped_quietly() -> None:
    async def scenario() -> list[bytes]:
        counting, client, server = await _connected()
        writes = CoalescedWrites(counting, asyncio.get_running_loop())  # type: ignore[arg-type]
        writes.close()
        writes.write(b"late")
        await asyncio.sleep(0.01)
        client.close()
        server.close()
        return counting.writes

    assert asyncio.run(scenario()) == []


# -- end to end: uvicorn's protocol as `welcomemat serve` runs it --------------------------


class _StreamApp:
    """`/page`: a whole response in two messages; `/stream`: a first chunk, then the second
    only once the test says it received the first (so a first chunk held back would hang)."""

    def __init__(self) -> None:
        self.first_seen = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"first;", "more_body": True})
            for _ in range(500):
                if self.first_seen.is_set():
                    break
                await asyncio.sleep(0.01)
            await send({"type": "http.response.body", "body": b"second", "more_body": False})
            return
        body = b"x" * int(scope["query_string"] or b"1000")
        headers = [(b"content-length", b"%d" % len(body)), (b"content-type", b"text/plain")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.mark.parametrize("stack", sorted(PROTOCOLS))
def test_responses_through_uvicorn_arrive_whole_kept_alive_closed_and_streamed(stack: str) -> None:
    app = _StreamApp()
    loop = "uvloop" if stack == "httptools" else "asyncio"
    with serve_in_thread(app, http=PROTOCOLS[stack], loop=loop) as base:  # type: ignore[arg-type]
        with httpx.Client(base_url=base, timeout=5) as client:
            sizes = [0, 1, 1000, 70_000, 1_000_000, 3]
            for size in sizes * 3:  # one kept-alive connection
                response = client.get(f"/page?{size}")
                assert response.status_code == 200 and response.content == b"x" * size
            closing = client.get("/page?5000", headers={"connection": "close"})
            assert closing.content == b"x" * 5000
            assert client.head("/page?10").headers["content-length"] == "10"
            started = time.monotonic()
            with client.stream("GET", "/stream") as streamed:
                chunks = streamed.iter_raw()
                first = next(chunks)
                app.first_seen.set()
                rest = b"".join(chunks)
            assert first.startswith(b"first;")  # it arrived while the app still held the second
            assert (first + rest) == b"first;second"
            assert time.monotonic() - started < 4
