"""The `openai` client's HTTP transport for many concurrent calls: one keep-alive connection per thread.

Why: a precompute run sends hundreds of model calls at once from its thread pool, and the
client's CPU per call is what bounds its rate (bench/README.md, `bench_llm.py`). httpx's
own transport shares one connection pool between all threads: each call takes the pool's
lock several times and rescans its connections and waiting requests, and under
contention that, with httpcore's pure-Python HTTP/1.1 state machine, cost more CPU than
everything else in the call. Here each thread keeps its own connection, no lock is
shared on the call path, a request leaves in one `send` (head and body together: no
Nagle / delayed-ACK stall), and the standard library's `http.client.HTTPResponse` reads
the answer (status line, headers, Content-Length or chunked body).

Everything above the transport stays the `openai` client's and httpx's: base URL, auth
and headers, request building, JSON, redirects, decoding of compressed bodies, the
per-call timeout, and proxies (httpx mounts its own transport for any proxy the
environment names, which takes precedence over this one). Faults are raised as httpx's
exceptions, so the client maps them to the same `APITimeoutError` / `APIConnectionError`
it raises with its default transport; a connection that saw any fault is dropped, and an
idle connection the server has closed (readable before a request is sent) is replaced
before it is used.
"""

from __future__ import annotations

import http.client
import re
import select
import socket
import ssl
import threading
from dataclasses import dataclass

import httpx2

__all__ = ["ThreadConnectionTransport", "request_head"]

_DEFAULT_TIMEOUT_S = 60.0  # only when a request carries no timeout; the openai client always sets one
_UNSAFE = re.compile(rb"[\r\n\x00]")  # would end a header line early: header injection


@dataclass
class _Connection:
    origin: tuple[str, str, int]
    sock: socket.socket
    timeout: float | None  # the socket's current timeout: set again only when a call needs another

    def set_timeout(self, seconds: float | None) -> None:
        if seconds != self.timeout:
            self.sock.settimeout(seconds)
            self.timeout = seconds


def _timeouts(request: httpx2.Request) -> tuple[float | None, float | None, float | None]:
    """(connect, write, read) seconds from the request's timeout extension (None: no limit)."""
    timeout = request.extensions.get("timeout")
    if not isinstance(timeout, dict):
        return _DEFAULT_TIMEOUT_S, _DEFAULT_TIMEOUT_S, _DEFAULT_TIMEOUT_S
    return timeout.get("connect"), timeout.get("write"), timeout.get("read")


def _stale(sock: socket.socket) -> bool:
    """An idle connection with something to read has been closed (or spoken on) by the server."""
    try:
        if hasattr(select, "poll"):  # poll, not select: no limit on the descriptor's number
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def request_head(request: httpx2.Request) -> bytes:
    """The request line and headers, as HTTP/1.1 sends them (httpx has set Host and Content-Length).

    Raises httpx's LocalProtocolError, sending nothing, when a header name or value or the
    target holds a CR, LF or NUL: one header must never be able to write another.
    """
    target = request.url.raw_path
    lines = [request.method.encode("ascii") + b" " + target + b" HTTP/1.1"]
    for name, value in request.headers.raw:
        if _UNSAFE.search(name) or _UNSAFE.search(value):
            raise httpx2.LocalProtocolError(f"illegal character in header {name!r}", request=request)
        lines.append(name + b": " + value)
    if _UNSAFE.search(target):
        raise httpx2.LocalProtocolError("illegal character in the request target", request=request)
    return b"\r\n".join(lines) + b"\r\n\r\n"


class ThreadConnectionTransport(httpx2.BaseTransport):
    """An httpx transport keeping one HTTP/1.1 connection per calling thread (pass it to `httpx2.Client`)."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context
        self._local = threading.local()
        self._lock = threading.Lock()  # guards `_open`: taken when a connection opens or closes, not per call
        self._open: dict[threading.Thread, _Connection] = {}

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        connect_s, write_s, read_s = _timeouts(request)
        message = request_head(request) + request.read()
        current = self._connection(request, connect_s)
        try:
            current.set_timeout(write_s)
            current.sock.sendall(message)
        except TimeoutError as exc:
            self._drop(current)
            raise httpx2.WriteTimeout(str(exc) or "write timed out", request=request) from exc
        except OSError as exc:
            self._drop(current)
            raise httpx2.WriteError(str(exc) or type(exc).__name__, request=request) from exc
        response = http.client.HTTPResponse(current.sock, method=request.method)
        try:
            current.set_timeout(read_s)
            response.begin()
            content = response.read()
        except TimeoutError as exc:
            self._drop(current)
            raise httpx2.ReadTimeout(str(exc) or "read timed out", request=request) from exc
        except http.client.HTTPException as exc:  # RemoteDisconnected, BadStatusLine, IncompleteRead, ...
            self._drop(current)
            raise httpx2.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
        except OSError as exc:
            self._drop(current)
            raise httpx2.ReadError(str(exc) or type(exc).__name__, request=request) from exc
        finally:
            response.close()  # its buffered reader only; the socket stays with this thread
        if response.will_close:
            self._drop(current)
        return httpx2.Response(
            response.status,
            headers=response.getheaders(),
            stream=httpx2.ByteStream(content),
            extensions={
                "http_version": b"HTTP/1.1" if response.version == 11 else b"HTTP/1.0",
                "reason_phrase": response.reason.encode("ascii", "replace"),
            },
        )

    def close(self) -> None:
        with self._lock:
            open_, self._open = list(self._open.values()), {}
        for connection in open_:
            connection.sock.close()

    # -- connections ---------------------------------------------------------------------------

    def _connection(self, request: httpx2.Request, connect_s: float | None) -> _Connection:
        """This thread's connection to the request's origin: kept, or opened now."""
        url = request.url
        scheme, host = url.scheme, url.host
        port = url.port or (443 if scheme == "https" else 80)
        origin = (scheme, host, port)
        current: _Connection | None = getattr(self._local, "connection", None)
        if current is not None:
            if current.origin == origin and not _stale(current.sock):
                return current
            self._drop(current)
        if scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}", request=request)
        try:
            sock = socket.create_connection((host, port), timeout=connect_s)
            if scheme == "https":
                try:
                    sock = self._tls_context().wrap_socket(sock, server_hostname=host)
                except BaseException:
                    sock.close()
                    raise
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
        except OSError as exc:  # refused, unreachable, TLS handshake or certificate failure
            raise httpx2.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        current = _Connection(origin, sock, connect_s)
        self._local.connection = current
        thread = threading.current_thread()
        with self._lock:
            # Threads come and go (a worker's pool is replaced between runs): close what dead ones left.
            closing = [self._open.pop(t) for t in [t for t in self._open if not t.is_alive()]]
            self._open[thread] = current
        for connection in closing:
            connection.sock.close()
        return current

    def _drop(self, connection: _Connection) -> None:
        connection.sock.close()
        if getattr(self._local, "connection", None) is connection:
            self._local.connection = None
        with self._lock:
            thread = threading.current_thread()
            if self._open.get(thread) is connection:
                del self._open[thread]

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            # httpx's own default: the same CA bundle and SSL_CERT_FILE / SSL_CERT_DIR handling.
            self._ssl_context = httpx2.create_ssl_context()
        return self._ssl_context
