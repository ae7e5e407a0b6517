"""A campaign's own theme on the renderer: its base.html frames the pages, its files are served,
zones keep their attributes and their escaping, and a theme the renderer cannot use is not used."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.theme.templates import THEME_VARIABLES
from tests.corpora import REPO_ROOT
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.pagetools import parse, text_of, zones
from tests.server.test_security import csp
from tests.server.test_xss import PAYLOADS, chunks, contract, expected_text, zone_ids
from tests.server.test_xss import campaign_config as xss_campaign_config
from welcomemat.theme.folder import Theme, load_theme
from welcomemat.theme.rules import MAX_ASSET_BYTES
from welcomemat.zones.store import ZoneSetStore

EXAMPLE_THEME = REPO_ROOT / "examples" / "theme"
THEME_PREFIX = f"/c/{CAMPAIGN}/theme/"
FOOTER = "onboarding that gets new sellers to quota sooner"  # examples/theme/base.html


def example_theme() -> Theme:
    return load_theme(EXAMPLE_THEME)


def themed_app(redis_client: redis.Redis, theme: Theme | dict[str, object] | None) -> Starlette:
    campaign, zone_contracts = example_inputs()
    publish_config(redis_client, campaign, zone_contracts, theme)
    tuning = tuning_for_tests(watcher_poll_s=0.02, config_refresh_s=0.05)
    return renderer_app(renderer_settings(), redis_client=redis_client, tuning=tuning)


@pytest.fixture
def themed(redis_client: redis.Redis) -> Iterator[TestClient]:
    with TestClient(themed_app(redis_client, example_theme()), base_url=BASE_URL) as client:
        yield client


def stylesheets(html: str) -> list[str]:
    return [e.get("href", "") for e in parse(html).iter("link") if e.get("rel") == "stylesheet"]


# -- pages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "zone_ids_shown"),
    [
        (f"/c/{CAMPAIGN}", ["hero_headline", "hero_support", "proof", "cta"]),
        (f"/c/{CAMPAIGN}/continue", ["continuation_headline", "hero_support", "cta"]),
    ],
)
def test_pages_render_in_the_themes_frame_with_every_zone_intact(
    themed: TestClient, path: str, zone_ids_shown: list[str]
) -> None:
    response = themed.get(path)
    assert response.status_code == 200
    html = response.text
    root = parse(html)
    assert FOOTER in text_of(root.find(".//footer"))  # type: ignore[arg-type]
    assert stylesheets(html) == ["/static/welcomemat.css", f"{THEME_PREFIX}acme.css"]
    logo = root.find(".//header//img")
    assert logo is not None and logo.get("src") == f"{THEME_PREFIX}logo.svg"
    found = zones(html)
    assert list(found) == zone_ids_shown  # the renderer's zone partials, in the page's order
    for zone in found.values():
        assert zone.rung == "default"
    # The partial's classes (which reserve the zone's space) are the renderer's own.
    classes = {e.get("data-wm-zone"): e.get("class", "") for e in root.iter() if e.get("data-wm-zone")}
    assert all(f"wm-zone wm-zone--{z}" in c for z, c in classes.items())
    assert "<script" not in html


def test_personal_page_in_the_theme(themed: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))
    html = themed.get(f"/c/{CAMPAIGN}", params={"wm": link_token(PERSONAL_ACCOUNT)}).text
    assert zones(html)["hero_headline"].rung == "personal"
    assert text_of(parse(html).find(".//title")).startswith("Congrats on the Series A, Dymaxa")  # type: ignore[arg-type]
    assert FOOTER in html


def test_themed_page_keeps_the_page_csp(themed: TestClient) -> None:
    policy = csp(themed.get(f"/c/{CAMPAIGN}").headers)
    assert policy["style-src"] == "'self'" and policy["font-src"] == "'self'"
    assert policy["img-src"] == "'self' data:"
    assert "unsafe-inline" not in themed.get(f"/c/{CAMPAIGN}").headers["content-security-policy"]


def test_campaign_without_a_theme_keeps_the_built_in_frame(client: TestClient) -> None:
    html = client.get(f"/c/{CAMPAIGN}").text
    assert stylesheets(html) == ["/static/welcomemat.css"]
    assert "<footer" not in html
    assert client.get(f"{THEME_PREFIX}acme.css").status_code == 404


# -- escaping inside a themed page -----------------------------------------------------------------

THEMED_ELEMENTS = {"html", "head", "meta", "title", "link", "body", "main", "section", "h1", "p", "a"} | {
    "header",
    "img",
    "footer",
}


def test_hostile_zone_text_stays_text_in_a_themed_page(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    """Every XSS payload of ../shared/corpora/xss/ as zone text (and the page title) of a themed page."""
    xss_campaign = "xss-check"
    publish_config(
        redis_client,
        xss_campaign_config([["filler"]], ["filler"]),
        {z: contract(z) for z in zone_ids()},
        example_theme(),
    )
    app = renderer_app(renderer_settings(), redis_client=redis_client)
    ids = zone_ids()
    with TestClient(app, base_url=BASE_URL) as client:
        for n, group in enumerate(chunks(PAYLOADS)):
            account = f"acct_theme_xss_{n}"
            texts = dict(zip(ids, group, strict=False))
            hrefs = {"z_cta": "https://www.acmerevenue.example/go"}
            store.publish(
                make_zone_set(account, texts=texts, hrefs=hrefs, segment="s0", campaign=xss_campaign)
            )
            token = link_token(account, campaign=xss_campaign)
            html = client.get(f"/c/{xss_campaign}", params={"wm": token}).text
            root = parse(html)
            for element in root.iter():
                assert element.tag in THEMED_ELEMENTS, f"injected element <{element.tag}>"
                for name, value in element.attrib.items():
                    assert not name.lower().startswith("on"), f"event handler attribute {name}"
                    if name in ("href", "src"):  # a CTA links through its signed click redirect
                        allowed = ("https://", "/static/", f"/c/{xss_campaign}/theme/", "/r/")
                        assert value.startswith(allowed), value
            found = zones(html)
            for zone_id, payload in texts.items():
                assert found[zone_id].rung == "personal", zone_id
                assert found[zone_id].text == expected_text(payload)
            title = text_of(root.find(".//title"))  # type: ignore[arg-type]
            assert title == expected_text(texts["z_headline"]) + " · Acme Revenue"
            assert FOOTER in html


# -- the theme's files --------------------------------------------------------------------------------


def test_stylesheet_is_served_inside_the_theme_layer(themed: TestClient) -> None:
    response = themed.get(f"{THEME_PREFIX}acme.css")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/css; charset=utf-8"
    assert response.headers["cache-control"] == "public, no-cache"
    body = response.text
    assert body.startswith("@layer welcomemat, theme;\n@layer theme {\n") and body.endswith("\n}\n")
    assert (EXAMPLE_THEME / "acme.css").read_text() in body
    again = themed.get(f"{THEME_PREFIX}acme.css", headers={"if-none-match": response.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_svg_is_an_image_with_a_sandboxing_policy(themed: TestClient) -> None:
    response = themed.get(f"{THEME_PREFIX}logo.svg")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.content == (EXAMPLE_THEME / "logo.svg").read_bytes()
    policy = csp(response.headers)
    assert policy["default-src"] == "'none'" and "sandbox" in policy and "script-src" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    [
        f"{THEME_PREFIX}base.html",  # the template's source is not one of the files
        f"{THEME_PREFIX}nope.css",
        f"{THEME_PREFIX}..%2F..%2F..%2Fpyproject.toml",
        f"{THEME_PREFIX}..%2fbase.html",
        f"{THEME_PREFIX}%2e%2e/%2e%2e/static/welcomemat.css",
        f"{THEME_PREFIX}acme.css%00.png",
        f"{THEME_PREFIX}.acme.css",
        f"{THEME_PREFIX}ACME.CSS",
        f"{THEME_PREFIX}..\\acme.css",
        "/c/nope/theme/acme.css",
        "/c/..%2Fq4-pipeline/theme/acme.css",
    ],
)
def test_anything_but_a_theme_file_is_404(themed: TestClient, path: str) -> None:
    response = themed.get(path)
    assert response.status_code == 404, path
    assert "@layer" not in response.text and "{%" not in response.text


def test_raw_traversal_paths_are_404(themed: TestClient) -> None:
    """Paths exactly as sent by a client that does not normalise `..` (httpx would)."""
    assert themed.get(f"{THEME_PREFIX}acme.css").status_code == 200
    for raw in (f"{THEME_PREFIX}../../../pyproject.toml", f"{THEME_PREFIX}../theme/acme.css"):
        assert _asgi_status(themed.app, raw) == 404, raw


def _asgi_status(app: object, path: str) -> int:
    statuses: list[int] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(int(message["status"]))  # type: ignore[call-overload]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "client": ("198.51.100.7", 50000),
        "server": ("testserver", 443),
    }
    asyncio.run(app(scope, receive, send))  # type: ignore[operator]
    return statuses[0]


# -- stored themes the renderer does not use ------------------------------------------------------------


def test_a_stored_theme_over_the_size_limit_does_not_decode(redis_client: redis.Redis) -> None:
    """Like any broken field of a stored config: the plain page, counted (a running renderer
    would keep serving the config it had)."""
    theme = example_theme().model_dump(mode="json")
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * MAX_ASSET_BYTES
    theme["files"]["big.png"] = base64.b64encode(big).decode()
    with TestClient(themed_app(redis_client, theme), base_url=BASE_URL) as client:
        page = client.get(f"/c/{CAMPAIGN}")
        assert page.status_code == 200 and "data-wm-zone" not in page.text  # the plain page
        assert client.get(f"{THEME_PREFIX}big.png").status_code == 404
        assert "welcomemat_stored_value_errors_total 1.0" in client.get("/metrics").text


def test_a_stored_theme_breaking_a_template_rule_falls_back_to_the_built_in_frame(
    redis_client: redis.Redis,
) -> None:
    """A config written without the command line's checks: the renderer checks again at load."""
    good = example_theme()
    assert "csp_nonce" not in THEME_VARIABLES
    broken = Theme.of(
        good.base_html.replace("<main", '<p data-nonce="{{ csp_nonce }}"></p>\n<main'), dict(good.files)
    )
    with TestClient(themed_app(redis_client, broken), base_url=BASE_URL) as client:
        for _ in range(2):
            html = client.get(f"/c/{CAMPAIGN}").text
            assert FOOTER not in html and "data-nonce" not in html
            assert set(zones(html)) == {"hero_headline", "hero_support", "proof", "cta"}
        # Checked once per config version, not per request.
        assert "welcomemat_stored_value_errors_total 1.0" in client.get("/metrics").text


def test_theme_is_built_once_per_config_version_and_follows_a_new_one(
    redis_client: redis.Redis,
) -> None:
    app = themed_app(redis_client, example_theme())
    pages = app.state.renderer.pages
    with TestClient(app, base_url=BASE_URL) as client:
        for _ in range(3):
            assert FOOTER in client.get(f"/c/{CAMPAIGN}").text
        assert len(pages._themed) == 1
        first_env = next(iter(pages._themed.values()))

        good = example_theme()
        new_look = Theme.of(good.base_html.replace(FOOTER, "A new look for spring"), dict(good.files))
        campaign, zone_contracts = example_inputs()
        publish_config(redis_client, campaign, zone_contracts, new_look)
        deadline = time.monotonic() + 5
        while "A new look for spring" not in client.get(f"/c/{CAMPAIGN}").text:
            assert time.monotonic() < deadline, "the renderer never picked up the new theme"
            time.sleep(0.05)
        assert len(pages._themed) == 2 and first_env in pages._themed.values()


def test_example_theme_passes_every_check(tmp_path: Path) -> None:
    from server.render import check_campaign_theme

    campaign, zone_contracts = example_inputs()
    check_campaign_theme(example_theme(), EXAMPLE_THEME, campaign, zone_contracts)
