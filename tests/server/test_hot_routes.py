"""The hot routes (landing, continuation, /v1/zones, /q/{token}) dispatched ahead of Starlette's stack:
they match exactly what Starlette's routing would, and answer exactly what it would."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.routing import Match
from starlette.testclient import TestClient

from server.app import create_app
from server.hot_routes import HOT_PATHS, hot_route
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    PERSONAL_ACCOUNT,
    link_token,
    make_zone_set,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat.campaign.contract import Campaign
from welcomemat.security.tokens import TokenKind
from welcomemat.zones.store import ZoneSetStore

# The real app's route table (building it connects to nothing).
ROUTES = create_app(renderer_settings(), redis_client=redis.Redis(port=1)).routes
ORIGIN = "https://www.acmerevenue.example"


def starlette_match(method: str, path: str) -> tuple[str, dict[str, str]] | None:
    """What Starlette's router picks: the first route that matches fully, if it is a hot one."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
    for route in ROUTES:
        match, child = route.matches(scope)
        if match is Match.FULL:
            path_template = getattr(route, "path", None)
            if path_template not in HOT_PATHS or "GET" not in (getattr(route, "methods", None) or ()):
                return None  # not a hot route (the OPTIONS preflight shares /v1/zones' path)
            return path_template, dict(child["path_params"])
    return None


PATH_PARTS = st.sampled_from(
    ["/", "c", "/c/", "continue", "/continue", "v1", "/v1/zones", "zones", "q", "/q/", CAMPAIGN]
)
PATH_CHARS = st.text(alphabet="/cv1zones-_.%é x", max_size=6)
PATHS = st.lists(st.one_of(PATH_PARTS, PATH_CHARS), max_size=6).map("".join)
METHODS = st.sampled_from(["GET", "HEAD", "POST", "OPTIONS", "PUT"])


@settings(max_examples=1000)
@given(method=METHODS, path=PATHS)
def test_hot_route_matches_exactly_what_starlettes_router_picks(method: str, path: str) -> None:
    assert hot_route(method, path) == starlette_match(method, path)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", f"/c/{CAMPAIGN}", ("/c/{campaign}", {"campaign": CAMPAIGN})),
        ("HEAD", f"/c/{CAMPAIGN}/continue", ("/c/{campaign}/continue", {"campaign": CAMPAIGN})),
        ("GET", "/v1/zones", ("/v1/zones", {})),
        ("HEAD", "/v1/zones", ("/v1/zones", {})),  # Starlette adds HEAD to a GET route
        ("GET", "/q/eyJ0.abc", ("/q/{token}", {"token": "eyJ0.abc"})),
        ("HEAD", "/q/x", ("/q/{token}", {"token": "x"})),
        ("POST", "/q/x", None),  # Starlette answers 405
        ("GET", "/q/", None),
        ("GET", "/q/x/y", None),
        ("POST", f"/c/{CAMPAIGN}", None),  # Starlette answers 405
        ("GET", f"/c/{CAMPAIGN}/", None),  # Starlette redirects the trailing slash
        ("GET", "/c//continue", None),
        ("GET", "/c/continue/continue", ("/c/{campaign}/continue", {"campaign": "continue"})),
        ("OPTIONS", "/v1/zones", None),  # the CORS preflight route
    ],
)
def test_hot_route_examples(method: str, path: str, expected: tuple[str, dict[str, str]] | None) -> None:
    assert hot_route(method, path) == expected
    assert starlette_match(method, path) == expected


@pytest.fixture
def both(redis_client: redis.Redis, published: Campaign) -> Iterator[tuple[TestClient, TestClient]]:
    """The same renderer twice: hot routes on, and everything through Starlette's routing."""
    apps = [
        renderer_app(
            renderer_settings(),
            redis_client=redis_client,
            tuning=tuning_for_tests(watcher_poll_s=0.05, hot_routes=hot),
        )
        for hot in (True, False)
    ]
    with (
        TestClient(apps[0], base_url=BASE_URL) as hot_client,
        TestClient(apps[1], base_url=BASE_URL) as routed_client,
    ):
        yield hot_client, routed_client


def _normalised(response: object) -> tuple[int, list[str], str, str]:
    """Status, header names, body and CSP with the per-request nonce, view id and view token
    blanked (the only parts that differ between two answers to the same request)."""
    headers = response.headers  # type: ignore[attr-defined]
    csp = headers.get("content-security-policy", "")
    nonce = re.search(r"'nonce-([^']+)'", csp)
    body: str = response.text  # type: ignore[attr-defined]
    if nonce:
        body, csp = body.replace(nonce.group(1), "NONCE"), csp.replace(nonce.group(1), "NONCE")
    body = re.sub(r'data-wm-view="[^"]*"', 'data-wm-view="VIEW"', body)
    body = re.sub(r'href="/r/[^"]*"', 'href="/r/CLICK"', body)  # a click token names its view
    if headers.get("content-type", "").startswith("application/json"):
        data = json.loads(body)
        for field in ("view_id", "view"):
            if field in data:
                data[field] = "X" if data[field] is not None else None
        body = json.dumps(data, sort_keys=True)
    names = sorted(k for k in headers if k not in ("date", "content-length"))
    return response.status_code, names, body, csp  # type: ignore[attr-defined]


def test_hot_and_routed_answers_are_the_same(
    both: tuple[TestClient, TestClient], store: ZoneSetStore
) -> None:
    store.publish(make_zone_set())
    personal, holdout = link_token(PERSONAL_ACCOUNT), link_token(HOLDOUT_ACCOUNT)
    cookie = link_token(PERSONAL_ACCOUNT, kind=TokenKind.COOKIE)
    requests: list[tuple[str, str, dict[str, str]]] = [
        ("GET", f"/c/{CAMPAIGN}", {}),
        ("GET", f"/c/{CAMPAIGN}?wm={personal}", {}),
        ("GET", f"/c/{CAMPAIGN}?wm={holdout}", {}),
        ("GET", f"/c/{CAMPAIGN}?wm=tampered{personal}", {}),
        ("GET", f"/c/{CAMPAIGN}", {"cookie": f"wm_{CAMPAIGN}={cookie}"}),
        ("HEAD", f"/c/{CAMPAIGN}?wm={personal}", {}),
        ("GET", f"/c/{CAMPAIGN}/continue", {"cookie": f"wm_{CAMPAIGN}={cookie}"}),
        ("GET", f"/q/{link_token(PERSONAL_ACCOUNT, kind=TokenKind.QR)}", {}),
        ("HEAD", f"/q/{link_token(PERSONAL_ACCOUNT, kind=TokenKind.QR)}", {}),
        ("GET", "/q/not-a-token", {}),
        ("GET", f"/q/{link_token(PERSONAL_ACCOUNT, kind=TokenKind.QR)}", {"dnt": "1"}),
        ("GET", "/c/no-such-campaign", {}),
        ("GET", "/c/not%20an%20id", {}),
        ("POST", f"/c/{CAMPAIGN}", {}),
        ("GET", f"/v1/zones?campaign={CAMPAIGN}&wm={personal}", {"origin": ORIGIN}),
        ("GET", f"/v1/zones?campaign={CAMPAIGN}", {"origin": "https://unlisted.example"}),
        ("GET", "/v1/zones", {}),
        ("GET", "/v1/zones?campaign=no-such-campaign", {}),
        ("GET", f"/c/{CAMPAIGN}", {"host": "evil.example"}),
    ]
    hot, routed = both
    for method, url, headers in requests:
        a = hot.request(method, url, headers=headers, follow_redirects=False)
        b = routed.request(method, url, headers=headers, follow_redirects=False)
        assert _normalised(a) == _normalised(b), (method, url)
        assert ("set-cookie" in a.headers) == ("set-cookie" in b.headers), (method, url)
