"""The bearer check every admin route makes, and the one decision on whose campaign it may act."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from server.admin.auth import require_credential
from tests.corpora import REPO_ROOT
from welcomemat.security.credentials import Credential

TOKEN = "admin-token-for-tests-0123456789abcdef"


def _client(token: str | None) -> TestClient:
    async def endpoint(request: Request) -> PlainTextResponse:
        require_credential(request, [Credential("admin", token)] if token is not None else [])
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


def test_a_named_or_scoped_token_is_known_by_its_name_and_scope() -> None:
    actors: list[str] = []
    credentials = [
        Credential("admin", TOKEN),
        Credential("rita", "rita-" + TOKEN),
        Credential("sam", "sam-" + TOKEN, "acme"),
    ]

    async def endpoint(request: Request) -> PlainTextResponse:
        actors.append(require_credential(request, credentials).actor)
        return PlainTextResponse("ok")

    client = TestClient(Starlette(routes=[Route("/admin/x", endpoint)]))
    for credential in credentials:
        answer = client.get("/admin/x", headers={"authorization": f"Bearer {credential.token}"})
        assert answer.status_code == 200
    assert actors == ["admin", "rita", "sam@acme"]
    assert client.get("/admin/x", headers={"authorization": "Bearer rita"}).status_code == 401
    assert client.get("/admin/x", headers={"authorization": "Bearer "}).status_code == 401


def test_a_scoped_credential_may_act_on_its_own_tenants_campaigns_only() -> None:
    operator, scoped = Credential("rita", TOKEN), Credential("sam", TOKEN, "acme")
    assert operator.may_act_on("acme") and operator.may_act_on("evil")
    assert scoped.may_act_on("acme") and not scoped.may_act_on("evil")
    assert not operator.may_act_on(None) and not scoped.may_act_on(None)  # nobody's campaign
    assert TOKEN not in repr(scoped)


def test_admin_and_crm_routes_reach_a_campaign_only_through_the_choke_point() -> None:
    """`admin_auth.campaign_for` decides whether a credential may act on a campaign: no route
    behind a bearer token looks a campaign up by itself."""
    server = REPO_ROOT / "server"
    routes = [p for p in sorted((server / "admin").glob("*.py")) if p.name not in ("__init__.py", "auth.py")]
    assert len(routes) >= 8, "the admin routes moved: this test must still see them"
    for path in (*routes, server / "engagement" / "conversions_api.py"):
        source = path.read_text()
        assert "campaigns.resolve(" not in source and "owner_of(" not in source, path.name
    # Admin routes reach their campaign through `path_campaign` or, the report pages,
    # `build_report`: both call the choke point, as the CRM route does itself.
    for name, step in {
        "admin/endpoint.py": "campaign_for(",
        "admin/report_pages.py": "campaign_for(",
        "engagement/conversions_api.py": "campaign_for(",
        "admin/routes.py": "path_campaign(",
        "admin/review_queue.py": "path_campaign(",
        "admin/lift.py": "build_report(",
        "admin/results.py": "build_report(",
    }.items():
        assert step in (server / name).read_text(), name
