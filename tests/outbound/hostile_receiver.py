"""A webhook receiver that misbehaves on purpose, on a real loopback socket.

The stdlib's HTTP server cannot trickle headers, reset a connection or stream a body without
end, so this one speaks HTTP/1.1 by hand: it reads each request whole (head and
`Content-Length` body), counts it, and hands the raw socket to a `Behaviour` that answers as
the hostile receiver would. Every behaviour is bounded on the server side too (`stop`, a byte
limit), so that even a sender without limits cannot make a test run away with the machine.
"""

from __future__ import annotations

import functools
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = [
    "HostileReceiver",
    "answer",
    "endless_chunked_body",
    "gzip_bomb",
    "gzip_bomb_body",
    "huge_headers",
    "reset_connection",
    "serve_hostile",
    "trickle_body",
    "trickle_headers",
]

Behaviour = Callable[[socket.socket, "HostileReceiver"], None]

MIB = 1024 * 1024


@dataclass
class HostileReceiver:
    """What the receiver saw and sent; `stop` ends every behaviour still answering."""

    behaviour: Behaviour
    requests: list[str] = field(default_factory=list)  # request lines, in order
    sent_bytes: int = 0
    hung_up: int = 0  # answers cut short because the sender closed the connection
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, conn: socket.socket, data: bytes) -> bool:
        """Send `data`; False once the sender has closed the connection."""
        try:
            conn.sendall(data)
        except OSError:
            with self.lock:
                self.hung_up += 1
            return False
        with self.lock:
            self.sent_bytes += len(data)
        return True


@contextmanager
def serve_hostile(behaviour: Behaviour) -> Iterator[tuple[str, HostileReceiver]]:
    """Serve on 127.0.0.1 until the block ends; yields (`http://127.0.0.1:<port>`, the receiver)."""
    receiver = HostileReceiver(behaviour)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)

    def serve_one(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                head = _read_head(conn)
            except OSError:
                return
            if head is None:
                return
            with receiver.lock:
                receiver.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
            receiver.behaviour(conn, receiver)

    def accept() -> None:
        while not receiver.stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", receiver
    finally:
        receiver.stop.set()
        thread.join(5)
        listener.close()


def _read_head(conn: socket.socket) -> bytes | None:
    """The request's head; its body (by Content-Length) is read and dropped."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


# -- behaviours ------------------------------------------------------------------------------------


def answer(status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> Behaviour:
    """A plain answer (a 503 with Retry-After, a redirect, a 200)."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        lines = [f"HTTP/1.1 {status} Whatever", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        receiver.send(conn, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return behave


@functools.cache
def gzip_bomb_body(expands_to_mib: int) -> bytes:
    """A gzip stream of zeros: about a thousandth of what it expands to (400 MiB -> ~400 KiB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    return b"".join(packer.compress(zeros) for _ in range(expands_to_mib)) + packer.flush()


def gzip_bomb(status: int, expands_to_mib: int) -> Behaviour:
    """`Content-Encoding: gzip`, a small body that decompresses to `expands_to_mib` MiB."""
    return answer(status, {"Content-Encoding": "gzip"}, gzip_bomb_body(expands_to_mib))


def trickle_body(every_s: float, length: int = 120) -> Behaviour:
    """A 200 whose body comes a byte every `every_s` seconds: each read on time, the answer never done."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        if not receiver.send(conn, f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n".encode()):
            return
        for _ in range(length):
            if receiver.stop.wait(every_s) or not receiver.send(conn, b"x"):
                return

    return behave


def trickle_headers(every_s: float, length: int = 120) -> Behaviour:
    """The status line, then a header one byte every `every_s` seconds."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        if not receiver.send(conn, b"HTTP/1.1 200 OK\r\nX-Slow: "):
            return
        for _ in range(length):
            if receiver.stop.wait(every_s) or not receiver.send(conn, b"x"):
                return

    return behave


def huge_headers(limit_mib: int = 64) -> Behaviour:
    """A 200 whose header lines never end (up to `limit_mib` MiB of them)."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        if not receiver.send(conn, b"HTTP/1.1 200 OK\r\n"):
            return
        line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
        for _ in range(limit_mib * MIB // len(line)):
            if receiver.stop.is_set() or not receiver.send(conn, line):
                return

    return behave


def endless_chunked_body(limit_mib: int = 256) -> Behaviour:
    """A 200 with `Transfer-Encoding: chunked` whose chunks keep coming (up to `limit_mib` MiB)."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        if not receiver.send(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"):
            return
        chunk = b"%x\r\n" % (64 * 1024) + b"z" * (64 * 1024) + b"\r\n"
        for _ in range(limit_mib * 16):
            if receiver.stop.is_set() or not receiver.send(conn, chunk):
                return
        receiver.send(conn, b"0\r\n\r\n")

    return behave


def reset_connection() -> Behaviour:
    """Read the request, then reset the connection (RST, no answer)."""

    def behave(conn: socket.socket, receiver: HostileReceiver) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        time.sleep(0.01)

    return behave
