"""The bearer check every admin route makes."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from server.admin_auth import require_admin

TOKEN = "admin-token-for-tests-0123456789abcdef"


def _client(token: str | None) -> TestClient:
    async def endpoint(request: Request) -> PlainTextResponse:
        require_admin(request, token)
        return PlainTextResponse("ok")

    return TestClient(Starlette(routes=[Route("/admin/x", endpoint)]))


def test_admin_routes_are_off_without_a_configured_token() -> None:
    assert _client(None).get("/admin/x", headers={"authorization": "Bearer anything"}).status_code == 404
    assert _client("").get("/admin/x").status_code == 404


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        f"Basic {TOKEN}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer \u00ff",
    ],
)
def test_missing_or_wrong_token_is_401_with_a_challenge(header: str | None) -> None:
    # latin-1 on the wire, as HTTP headers are; a non-ASCII token never matches
    headers = {} if header is None else {"authorization": header.encode("latin-1")}
    response = _client(TOKEN).get("/admin/x", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN} "])
def test_the_right_token_passes(header: str) -> None:
    response = _client(TOKEN).get("/admin/x", headers={"authorization": header})
    assert response.status_code == 200
    assert response.text == "ok"


def test_a_named_token_is_known_by_its_name() -> None:
    names: list[str] = []
    tokens = {"admin": TOKEN, "rita": "rita-" + TOKEN, "sam": "sam-" + TOKEN}

    async def endpoint(request: Request) -> PlainTextResponse:
        names.append(require_admin(request, tokens))
        return PlainTextResponse("ok")

    client = TestClient(Starlette(routes=[Route("/admin/x", endpoint)]))
    for token in tokens.values():
        assert client.get("/admin/x", headers={"authorization": f"Bearer {token}"}).status_code == 200
    assert names == ["admin", "rita", "sam"]
    assert client.get("/admin/x", headers={"authorization": "Bearer rita"}).status_code == 401
    assert client.get("/admin/x", headers={"authorization": "Bearer "}).status_code == 401
