"""Request bodies are read in one place, bounded before and while they are read: over a real
socket, a huge declared body is refused before it is sent, a chunked one is cut off at the
limit, and the connection is closed so the rest is never read."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.admin.review_queue import MAX_BODY_BYTES as ADMIN_MAX_BYTES
from server.admin.routes import MAX_TEMPLATE_BYTES
from server.bodies import BodyRefused, declared_length
from server.engagement.events_api import MAX_BODY_BYTES as BEACON_MAX_BYTES
from tests.corpora import REPO_ROOT
from tests.server.conftest import BASE_URL, CAMPAIGN, renderer_app, renderer_settings, tuning_for_tests
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.records.conversions import CONVERSION_BODY_MAX_BYTES

ADMIN_TOKEN = "admin-token-for-body-tests-0123456789"
CRM_TOKEN = "crm-token-for-body-tests-0123456789"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"


@dataclass(frozen=True)
class BodyRoute:
    path: str
    headers: dict[str, str]
    limit: int


ROUTES = [
    BodyRoute("/v1/events", {"content-type": "text/plain", "user-agent": BROWSER}, BEACON_MAX_BYTES),
    BodyRoute(
        "/v1/conversions",
        {"content-type": "application/json", "authorization": f"Bearer {CRM_TOKEN}"},
        CONVERSION_BODY_MAX_BYTES,
    ),
    BodyRoute(
        f"/admin/review/{CAMPAIGN}/acct_dymaxa/approve",
        {"content-type": "application/json", "authorization": f"Bearer {ADMIN_TOKEN}"},
        ADMIN_MAX_BYTES,
    ),
]
IDS = ["events", "conversions", "admin-review"]
# The admin preview's e-mail template: a body route too, answered in HTML.
PREVIEW = BodyRoute(
    f"/admin/preview/{CAMPAIGN}/acct_dymaxa",
    {"content-type": "text/plain", "authorization": f"Bearer {ADMIN_TOKEN}"},
    MAX_TEMPLATE_BYTES,
)
BODY_READ_TIMEOUT_S = 0.5


@pytest.fixture
def body_app(redis_client: redis.Redis, published: object) -> Starlette:
    settings = renderer_settings(admin_token=ADMIN_TOKEN, crm_token=CRM_TOKEN)
    tuning = tuning_for_tests(watcher_poll_s=0.05, body_read_timeout_s=BODY_READ_TIMEOUT_S)
    return renderer_app(settings, redis_client=redis_client, tuning=tuning)


@pytest.fixture
def served(body_app: Starlette) -> Iterator[tuple[str, int]]:
    with serve_in_thread(body_app) as base:
        host, port = base.removeprefix("http://").split(":")
        yield host, int(port)


def request_head(route: BodyRoute, **more: str) -> bytes:
    lines = [f"POST {route.path} HTTP/1.1", "Host: testserver"]
    lines += [f"{name}: {value}" for name, value in {**route.headers, **more}.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_head(sock: socket.socket) -> tuple[str, dict[str, str]]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"the connection closed before an answer: {data!r}"
        data += chunk
    status, *lines = data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    return status, {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes the connection (the socket's timeout fails the test otherwise)."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_declared_10_gb_body_is_413_before_any_of_it_is_sent(
    served: tuple[str, int], route: BodyRoute
) -> None:
    with socket.create_connection(served, timeout=10) as sock:
        sock.sendall(request_head(route, **{"content-length": str(10 * 1024**3)}))
        status, headers = read_head(sock)  # nothing of the body was sent: the answer comes anyway
        assert status == "HTTP/1.1 413 Request Entity Too Large"
        assert headers["connection"] == "close"
        assert closed_by_server(sock)


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_chunked_body_over_the_limit_is_cut_off(served: tuple[str, int], route: BodyRoute) -> None:
    """The client would send 64 MB in 1 KB chunks: it gets 413 and a closed connection instead."""
    total = 64 * 1024 * 1024
    sent = 0

    def send_body(sock: socket.socket) -> None:
        nonlocal sent
        chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
        try:
            while sent < total:
                sock.sendall(chunk)
                sent += 1024
            sock.sendall(b"0\r\n\r\n")
        except OSError:  # reset or broken pipe: the server stopped reading
            pass

    with socket.create_connection(served, timeout=10) as sock:
        sock.sendall(request_head(route, **{"transfer-encoding": "chunked"}))
        sender = threading.Thread(target=send_body, args=(sock,), daemon=True)
        sender.start()
        status, headers = read_head(sock)
        assert status == "HTTP/1.1 413 Request Entity Too Large"
        assert headers["connection"] == "close"
        assert closed_by_server(sock)
        sender.join(30)
    assert not sender.is_alive() and sent < total


@pytest.mark.parametrize("route", [*ROUTES, PREVIEW], ids=[*IDS, "admin-preview"])
@pytest.mark.parametrize(
    ("framing", "sent"),
    [
        ({"content-length": "200"}, b""),  # declared within the limit, never sent
        ({"content-length": "200"}, b'{"version": 1'),  # part of it, then nothing
        ({"transfer-encoding": "chunked"}, b'5\r\n{"ver\r\n'),  # a chunk, then nothing
    ],
    ids=["declared-nothing-sent", "declared-part-sent", "chunked-stalled"],
)
def test_a_body_that_stops_arriving_is_408_and_the_connection_closed(
    served: tuple[str, int], route: BodyRoute, framing: dict[str, str], sent: bytes
) -> None:
    """A client that announces a body within the limit and then sends nothing more holds no
    connection past the renderer's read timeout (slowloris): 408, then the connection closes."""
    with socket.create_connection(served, timeout=10) as sock:
        started = time.monotonic()  # before sending: the server's clock starts once it has the head
        sock.sendall(request_head(route, **framing) + sent)
        status, headers = read_head(sock)
        waited = time.monotonic() - started
        assert status == "HTTP/1.1 408 Request Timeout"
        assert headers["content-type"].startswith("text/html" if route is PREVIEW else "application/json")
        assert headers["connection"] == "close"
        assert closed_by_server(sock)
    assert BODY_READ_TIMEOUT_S <= waited < BODY_READ_TIMEOUT_S + 5


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_bodies_over_the_limit_in_process(body_app: Starlette, route: BodyRoute) -> None:
    with TestClient(body_app, base_url=BASE_URL) as client:
        declared = client.post(route.path, headers=route.headers, content=b" " * (route.limit + 1))
        assert declared.status_code == 413
        assert f"at most {route.limit} bytes" in declared.json()["error"]
        streamed = client.post(route.path, headers=route.headers, content=iter([b" " * route.limit, b" "]))
        assert streamed.status_code == 413
        assert f"at most {route.limit} bytes" in streamed.json()["error"]


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
@pytest.mark.parametrize(
    "body",
    [
        "[" * 500 + "]" * 500,  # every body within every route's limit: refused for its shape
        '{"version": 1, "version": 2}',
        '{"version": NaN}',
        '{"version": ' + "9" * 1000 + "}",
        '{"version": 1e999}',
        '{"version": "\\ud800"}',
    ],
)
def test_hostile_json_is_a_400_and_logs_no_traceback(
    body_app: Starlette, route: BodyRoute, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    with TestClient(body_app, base_url=BASE_URL) as client:
        answer = client.post(route.path, headers=route.headers, content=body.encode())
    assert answer.status_code == 400, answer.text
    assert json.loads(answer.text)["error"]
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL") or r.exc_info]


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("10", None),
        ("0", None),
        ("4097", 413),
        ("9" * 5000, 413),  # past Python's int digits: still a plain 413
        ("-1", 400),
        ("1e3", 400),
        ("", 400),
        (" 12 ", None),
    ],
)
def test_declared_lengths(value: str, status: int | None) -> None:
    if status is None:
        assert declared_length(value, 4096) == int(value)
        return
    with pytest.raises(BodyRefused) as refused:
        declared_length(value, 4096)
    assert refused.value.status == status
    assert refused.value.headers == {"connection": "close"}


def test_every_body_is_read_by_the_one_reader() -> None:
    """No route reads a body but through `server/bodies.py` (a second reader would be unbounded)."""
    readers = re.compile(r"\.(body|json|form|stream)\(\)")
    offenders = [
        f"{path.name}:{number}"
        for path in sorted((REPO_ROOT / "server").rglob("*.py"))
        if path.name != "bodies.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if readers.search(line)
    ]
    assert offenders == []


def test_no_answer_leaves_a_beacon_body_half_read(body_app: Starlette) -> None:
    """A bot's beacon is read (bounded) before its 204; a flood's 429 closes the connection."""
    route = ROUTES[0]
    bot = {**route.headers, "user-agent": "curl/8.5.0"}
    with TestClient(body_app, base_url=BASE_URL) as client:
        assert client.post(route.path, headers=bot, content=b"{}").status_code == 204
        over = client.post(route.path, headers=bot, content=iter([b" " * route.limit, b" "]))
        assert over.status_code == 413 and over.headers["connection"] == "close"
        answers = [client.post(route.path, headers=route.headers, content=b"{}") for _ in range(60)]
    limited = [a for a in answers if a.status_code == 429]
    assert limited and all(a.headers["connection"] == "close" for a in limited)
