"""A click on a hosted page's CTA, in Chromium, with no snippet: it lands and it counts.

A visitor opens their personal page from its signed link and clicks the CTA. The browser
follows the renderer's click redirect (`/r/<token>`) to the CTA's allowlisted URL, a target
site served over https on loopback (the campaign allows its host name; this test's Chromium
resolves that name to the loopback server, `--host-resolver-rules`, and accepts its
self-signed certificate, made with `openssl`), and the click is in the lift report once
`welcomemat sync --once` has folded it: one CTA click in the personal arm. With JavaScript
on and off alike: the page runs no script of its own, the link is a plain `<a href>`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route as StarletteRoute

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.corpora import REPO_ROOT
from tests.event_stream import stream_events as all_events
from tests.server.conftest import (
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    TENANT,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
)
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
TARGET_HOST = "book.target.example"
PERSONAL_CTA = f"https://{TARGET_HOST}/ramp-review?utm=wm"
LANDED = "Your ramp review is booked"


@dataclass
class TargetSite:
    """The CTA's destination, on loopback: what it was asked for."""

    base: str
    paths: list[str] = field(default_factory=list)
    referers: list[str] = field(default_factory=list)


def self_signed(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) for TARGET_HOST, self-signed, valid a day."""
    cert, key = folder / "target.pem", folder / "target.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-days", "1", "-subj", f"/CN={TARGET_HOST}"),
            *("-addext", f"subjectAltName=DNS:{TARGET_HOST}", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.fixture
def target(tmp_path: Path) -> Iterator[TargetSite]:
    site = TargetSite("")
    cert, key = self_signed(tmp_path)

    async def page(request: Request) -> HTMLResponse:
        site.paths.append(request.url.path + ("?" + request.url.query if request.url.query else ""))
        site.referers.append(request.headers.get("referer", ""))
        return HTMLResponse(f"<!doctype html><title>Booked</title><h1 id='landed'>{LANDED}</h1>")

    app = Starlette(routes=[StarletteRoute("/{path:path}", page)])
    with serve_in_thread(app, ssl_certfile=str(cert), ssl_keyfile=str(key)) as base:
        site.base = base
        yield site


@pytest.fixture
def mapped_browser(chromium: Browser, target: TargetSite) -> Iterator[Browser]:
    """A Chromium of its own whose resolver sends TARGET_HOST (any port) to the target's port."""
    port = target.base.rsplit(":", 1)[1]
    args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {TARGET_HOST} 127.0.0.1:{port}"]
    browser = chromium.browser_type.launch(executable_path=str(CHROMIUM), args=args)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def published(redis_client: redis.Redis) -> None:
    """The example campaign with its booking CTA on the target's host (allowlisted), and the
    account's personal zone set whose CTA links there."""
    campaign, zones = example_inputs()
    config = campaign.model_dump(mode="json")
    config["link_allowlist"] = [*config["link_allowlist"], TARGET_HOST]
    for cta in config["ctas"]:
        if cta["id"] == "book_ramp_review":
            cta["href"] = f"https://{TARGET_HOST}/ramp-review"
    publish_config(redis_client, config, zones)
    ZoneSetStore(redis_client).publish(
        make_zone_set(
            texts={"hero_headline": "Congrats on the Series A, Dymaxa", "cta": "Book your ramp review"},
            hrefs={"cta": PERSONAL_CTA},
        )
    )


def welcomemat(*args: str, redis_url: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home)})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def wait_for_click(client: redis.Redis) -> dict[str, str]:
    deadline = time.monotonic() + 10
    while True:
        entries = all_events(client, TENANT)
        found = [{k.decode(): v.decode() for k, v in fields.items()} for _, fields in entries]
        clicks = [e for e in found if e["type"] == "click"]
        if clicks:
            assert len(clicks) == 1, clicks
            return clicks[0]
        assert time.monotonic() < deadline, f"no click in the stream: {found}"
        time.sleep(0.05)


def personal_arm(report: dict[str, object]) -> dict[str, object]:
    arms = report["arms"]
    assert isinstance(arms, list)
    [arm] = [a for a in arms if a["arm"] == "personal"]
    return arm  # type: ignore[no-any-return]


@pytest.mark.parametrize("javascript", [True, False], ids=["js-on", "js-off"])
def test_a_hosted_cta_click_lands_on_the_allowlisted_url_and_shows_in_the_lift_report(
    mapped_browser: Browser,
    renderer_url: str,
    redis_url: str,
    published: None,
    target: TargetSite,
    tmp_path: Path,
    javascript: bool,
) -> None:
    # The target's certificate is its own (self-signed): accepted in this context only.
    context = mapped_browser.new_context(java_script_enabled=javascript, ignore_https_errors=True)
    try:
        page = context.new_page()
        response = page.goto(f"{renderer_url}/c/{CAMPAIGN}?wm={link_token()}")
        assert response is not None and response.status == 200
        cta = page.locator("[data-wm-zone='cta']")
        assert cta.get_attribute("data-wm-rung") == "personal"
        assert (cta.get_attribute("href") or "").startswith("/r/")
        with page.expect_navigation():
            cta.click()
        assert page.url == PERSONAL_CTA
        assert page.locator("#landed").inner_text() == LANDED
        assert target.paths[0] == "/ramp-review?utm=wm"  # (then the browser's /favicon.ico)
        # The page's link token and the click token stay home: the referrer is the origin only.
        assert target.referers[0] == renderer_url + "/"
    finally:
        context.close()

    # Written by the renderer's event writer (a background thread): wait for the stream.
    client = redis.Redis.from_url(redis_url)
    try:
        click = wait_for_click(client)
        assert (click["arm"], click["account"], click["zone"], click["version"]) == (
            "personal",
            PERSONAL_ACCOUNT,
            "cta",
            "1",
        )
        synced = welcomemat("sync", "--once", redis_url=redis_url, home=tmp_path)
        assert synced.returncode == 0, synced.stderr
        printed = welcomemat("report", "lift", CAMPAIGN, "--json", redis_url=redis_url, home=tmp_path)
        assert printed.returncode == 0, printed.stderr
        personal = personal_arm(json.loads(printed.stdout))
        assert (personal["cta_clicks"], personal["accounts_clicked"], personal["visits"]) == (1, 1, 1)
    finally:
        client.close()
