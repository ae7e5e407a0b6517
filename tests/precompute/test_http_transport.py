"""The `openai` client over `ThreadConnectionTransport`: real sockets, a real HTTP/1.1 server.

The whole precompute already runs over this transport in test_openai_provider.py (every
model mode, 429, 5xx, hangs). Here, against a small scripted server on a real socket, the
connection handling a user would notice: connections kept alive and reused (one per
thread), a connection the server closed while idle replaced without an error, chunked and
gzip answers decoded, every fault raised as the client's own error types, no header line
that could smuggle a second header, no connection left open behind dead threads, and
https with the certificate verified.
"""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import openai
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from precompute.providers.http_transport import ThreadConnectionTransport, request_head
from tests.llm_server import LLMTestServer

HANG_UP = b""  # scripted reply: close the connection without answering


def _answer(payload: object, *, extra: bytes = b"") -> bytes:
    body = json.dumps(payload).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    return head + extra + b"\r\n" + body


def _chunked_gzip(payload: object) -> bytes:
    body = gzip.compress(json.dumps(payload).encode())
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:]))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"


@dataclass
class ScriptedServer:
    """HTTP/1.1 on 127.0.0.1: each request gets the next scripted reply (or `default`)."""

    replies: list[bytes] = field(default_factory=list)
    default: bytes = _answer({"ok": True})
    close_after_reply: bool = False  # close each connection once it has answered (keep-alive ended)
    tls: ssl.SSLContext | None = None  # serve https with this context
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    closed_by_client: int = 0
    closed_by_server: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._changed = threading.Condition(self._lock)
        self._sock = socket.create_server(("127.0.0.1", 0))
        # https by the certificate's name; plain http by address (no IPv6 lookup first).
        origin = "https://localhost" if self.tls else "http://127.0.0.1"
        self.url = f"{origin}:{self._sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):  # the client refused the certificate
                conn.close()
                return
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        with self._changed:
                            self.closed_by_client += 1
                            self._changed.notify_all()
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                body, buffer = buffer[:length], buffer[length:]
                with self._changed:
                    self.requests.append(head + b"\r\n\r\n" + body)
                    reply = self.replies.pop(0) if self.replies else self.default
                    self._changed.notify_all()
                if reply == HANG_UP:
                    return
                conn.sendall(reply)
                if self.close_after_reply:
                    conn.shutdown(socket.SHUT_RDWR)
                    with self._changed:
                        self.closed_by_server += 1
                        self._changed.notify_all()
                    return

    def wait_closed_by_server(self, count: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self.closed_by_server >= count, timeout=10)

    def wait_closed_by_client(self, count: int) -> int:
        with self._changed:
            self._changed.wait_for(lambda: self.closed_by_client >= count, timeout=10)
            return self.closed_by_client

    def stop(self) -> None:
        self._sock.close()


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    yield server
    server.stop()


def _client(url: str, transport: ThreadConnectionTransport, **options: object) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=url,
        api_key="k",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(transport=transport),
        **options,  # type: ignore[arg-type]
    )


def _post(client: openai.OpenAI, payload: object | None = None) -> object:
    body = json.dumps(payload or {"model": "m", "messages": []}).encode()
    return json.loads(client.post("/chat/completions", cast_to=bytes, content=body))


def test_one_thread_keeps_one_connection_for_all_its_calls(scripted: ScriptedServer) -> None:
    client = _client(scripted.url, ThreadConnectionTransport())
    scripted.replies = [_answer({"n": i}) for i in range(5)]
    assert [_post(client) for _ in range(5)] == [{"n": i} for i in range(5)]
    assert scripted.connections == 1
    assert len(scripted.requests) == 5
    first = scripted.requests[0]
    assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"\r\nauthorization: bearer k\r\n" in first.lower()
    client.close()


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error(
    scripted: ScriptedServer,
) -> None:
    scripted.close_after_reply = True  # the server ends keep-alive without saying so
    client = _client(scripted.url, ThreadConnectionTransport())
    answers = []
    for done in range(1, 4):
        answers.append(_post(client))
        scripted.wait_closed_by_server(done)  # closed before the next call, as an idle timeout would
    assert answers == [{"ok": True}] * 3
    assert scripted.connections == 3
    client.close()


def test_connection_close_in_the_answer_opens_a_new_connection_next_time(scripted: ScriptedServer) -> None:
    scripted.replies = [_answer({"n": 1}, extra=b"Connection: close\r\n"), _answer({"n": 2})]
    client = _client(scripted.url, ThreadConnectionTransport())
    assert [_post(client), _post(client)] == [{"n": 1}, {"n": 2}]
    assert scripted.connections == 2
    client.close()


def test_chunked_gzip_answers_are_decoded(scripted: ScriptedServer) -> None:
    payload = {"choices": [{"message": {"content": "ü" * 500}}]}
    scripted.replies = [_chunked_gzip(payload), _answer({"after": True})]
    client = _client(scripted.url, ThreadConnectionTransport())
    assert _post(client) == payload
    assert _post(client) == {"after": True}  # the chunked answer was read to its end: same connection
    assert scripted.connections == 1
    client.close()


def test_a_server_hanging_up_is_a_connection_error_and_the_next_call_reconnects(
    scripted: ScriptedServer,
) -> None:
    scripted.replies = [HANG_UP]
    client = _client(scripted.url, ThreadConnectionTransport())
    with pytest.raises(openai.APIConnectionError) as raised:
        _post(client)
    assert not isinstance(raised.value, openai.APITimeoutError)
    assert _post(client) == {"ok": True}
    assert scripted.connections == 2
    client.close()


def test_a_refused_connection_is_a_connection_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    client = _client(f"http://127.0.0.1:{port}/v1", ThreadConnectionTransport())
    with pytest.raises(openai.APIConnectionError):
        _post(client)
    client.close()


def test_an_answer_slower_than_the_timeout_is_the_clients_timeout_error(llm_server: LLMTestServer) -> None:
    llm_server.reset()
    llm_server.set_mode("hang")
    client = _client(llm_server.base_url, ThreadConnectionTransport(), timeout=0.3)
    try:
        with pytest.raises(openai.APITimeoutError):
            _post(client)
    finally:
        llm_server.reset()
        client.close()


def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent(
    scripted: ScriptedServer,
) -> None:
    client = _client(
        scripted.url,
        ThreadConnectionTransport(),
        default_headers={"X-Team": "growth\r\nX-Injected: 1"},
    )
    with pytest.raises(openai.APIConnectionError):
        _post(client)
    assert scripted.requests == []
    client.close()


def test_each_thread_has_its_own_connection_and_dead_threads_leave_none_open(
    scripted: ScriptedServer,
) -> None:
    transport = ThreadConnectionTransport()
    client = _client(scripted.url, transport)
    barrier = threading.Barrier(4)

    def calls() -> None:
        barrier.wait()
        _post(client)
        _post(client)

    threads = [threading.Thread(target=calls) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert scripted.connections == 4
    assert len(scripted.requests) == 8
    # A new thread's first call closes what the four finished threads left open.
    fresh = threading.Thread(target=_post, args=(client,))
    fresh.start()
    fresh.join()
    assert scripted.wait_closed_by_client(4) == 4
    client.close()  # and closing the client closes the rest
    assert scripted.wait_closed_by_client(5) == 5


_HEADER_BYTES = st.binary(max_size=12) | st.text(alphabet="ab:; \r\n\x00\t", max_size=12).map(str.encode)


@given(st.lists(st.tuples(_HEADER_BYTES, _HEADER_BYTES), max_size=4))
def test_every_header_is_one_line_or_the_request_is_refused(headers: list[tuple[bytes, bytes]]) -> None:
    url = "http://127.0.0.1:1/v1/chat/completions"
    try:
        request = httpx2.Request("POST", url, headers=headers, content=b"{}")
    except (ValueError, TypeError, httpx2.HTTPError):
        assume(False)  # httpx itself refused it: nothing reaches the transport
    raw = request.headers.raw
    if any(ch in part for name, value in raw for part in (name, value) for ch in (b"\r", b"\n", b"\x00")):
        with pytest.raises(httpx2.LocalProtocolError):
            request_head(request)
        return
    head = request_head(request)
    assert head.endswith(b"\r\n\r\n")
    lines = head[: -len(b"\r\n\r\n")].split(b"\r\n")
    assert lines[0] == b"POST /v1/chat/completions HTTP/1.1"
    assert lines[1:] == [name + b": " + value for name, value in raw]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost (the openssl command line)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        + ["-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_https_keeps_one_verified_connection_and_refuses_an_untrusted_certificate(
    certificate: tuple[Path, Path],
) -> None:
    cert, key = certificate
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server = ScriptedServer(tls=served)
    try:
        trusting = _client(
            server.url, ThreadConnectionTransport(ssl_context=ssl.create_default_context(cafile=cert))
        )
        assert [_post(trusting), _post(trusting)] == [{"ok": True}] * 2
        assert server.connections == 1
        trusting.close()
        # The default trust store does not know this certificate: no request is sent.
        default = _client(server.url, ThreadConnectionTransport())
        with pytest.raises(openai.APIConnectionError):
            _post(default)
        assert len(server.requests) == 2
        default.close()
    finally:
        server.stop()
