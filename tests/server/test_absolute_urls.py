"""Redirects and absolute URLs come only from `WELCOMEMAT_PUBLIC_URL`, never from the request.

Over real HTTP (uvicorn in a thread), with every host allowed (`WELCOMEMAT_ALLOWED_HOSTS=*`,
the setting that lets a hostile `Host` header through to the app) and an https public URL:
no answer names the host a request claimed, no redirect leaves the configured origin or
downgrades it to http, whatever `Host` and `X-Forwarded-*` headers say.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import redis

from tests.corpora import REPO_ROOT
from tests.server.conftest import (
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    PUBLIC_URL,
    TENANT,
    renderer_app,
    renderer_settings,
    signer,
)
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.campaign.contract import Campaign
from welcomemat.security.tokens import TokenKind

EVIL = "evil.example"
HOSTILE_HEADERS = [
    {"host": EVIL},
    {"host": f"{EVIL}:8443"},
    {"host": EVIL, "x-forwarded-host": EVIL, "x-forwarded-proto": "http", "x-forwarded-port": "80"},
    {"x-forwarded-host": EVIL, "x-forwarded-proto": "http", "forwarded": f"host={EVIL};proto=http"},
    {"x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "http", "x-forwarded-scheme": "http"},
]
ADMIN_TOKEN = "admin-token-for-url-tests-0123456789abcdef"


def _qr_token() -> str:
    return signer().sign(TokenKind.QR, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=3600)


# Paths a router might "fix" with a redirect (a trailing slash added or removed), and the QR
# entry, whose 303 is the renderer's one redirect.
PATHS = [
    f"/c/{CAMPAIGN}/",
    f"/c/{CAMPAIGN}/continue/",
    f"/c/{CAMPAIGN}/?wm=anything",
    "/v1/zones/",
    "/snippet.js/",
    "/healthz/",
    "/openapi.json/",
    "/static",
    f"/admin/review/{CAMPAIGN}/",
    f"/q/{_qr_token()}/",
    f"/q/{_qr_token()}",
]


@pytest.fixture
def base(redis_client: redis.Redis, published: Campaign) -> Iterator[str]:
    app = renderer_app(
        renderer_settings(allowed_hosts=("*",), admin_token=ADMIN_TOKEN), redis_client=redis_client
    )
    with serve_in_thread(app) as url:
        yield url


@pytest.mark.parametrize("headers", HOSTILE_HEADERS, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_no_answer_is_built_from_the_request_host(base: str, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=base, timeout=5, follow_redirects=False) as http:
        for path in PATHS:
            response = http.get(path, headers={**headers, "authorization": f"Bearer {ADMIN_TOKEN}"})
            assert response.status_code < 500, path
            location = response.headers.get("location")
            if response.is_redirect:
                assert location is not None and location.startswith(f"{PUBLIC_URL}/"), (path, location)
            else:
                assert location is None, (path, location)
            assert EVIL not in str(response.headers).lower(), (path, response.headers)
            assert EVIL not in response.text, path


def test_a_trailing_slash_is_not_redirected(base: str) -> None:
    """Starlette's router would answer 307 to `http://<Host>/c/q4-pipeline`: an open redirect
    under `ALLOWED_HOSTS=*`, and an http downgrade of an https public URL."""
    with httpx.Client(base_url=base, timeout=5, follow_redirects=False) as http:
        response = http.get(f"/c/{CAMPAIGN}/", headers={"host": EVIL})
    assert response.status_code == 404
    assert "location" not in response.headers


def test_the_qr_redirect_keeps_the_configured_origin_and_scheme(base: str) -> None:
    with httpx.Client(base_url=base, timeout=5, follow_redirects=False) as http:
        response = http.get(f"/q/{_qr_token()}", headers={"host": EVIL, "x-forwarded-proto": "http"})
    assert response.status_code == 303
    assert response.headers["location"] == f"{PUBLIC_URL}/c/{CAMPAIGN}/continue"
    assert PUBLIC_URL.startswith("https://")


# What builds a URL from a request: Starlette's `url_for` / `base_url` / `request.url` (other
# than its path), a redirect (`RedirectResponse`, a `Location` header) anywhere but the QR entry
# (which reads the public URL).
_FROM_REQUEST = re.compile(r"\burl_for\(|\bbase_url\b|\brequest\.url(?!\.path\b)|\bscope\[\"server\"\]")


def test_no_server_module_builds_a_url_from_the_request() -> None:
    offenders = []
    for path in sorted((REPO_ROOT / "server").rglob("*.py")):
        text = path.read_text()
        for number, line in enumerate(text.splitlines(), start=1):
            if _FROM_REQUEST.search(line):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
        if ("RedirectResponse(" in text or 'b"location"' in text) and path.name != "qr.py":
            offenders.append(f"{path.name}: a redirect outside the QR entry")
    qr = (REPO_ROOT / "server" / "qr.py").read_text()
    assert 'see_other(f"{renderer.settings.public_url}/' in qr
    assert offenders == []
