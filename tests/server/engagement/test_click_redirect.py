"""`GET /r/{token}`: a hosted page's CTA click is counted once and lands on the CTA's published URL.

The page's CTA links to its click redirect; following it answers 303 to the URL the account's
zone set (or the campaign's copy) publishes, and writes one `click` event carrying the view's
arm, account, zone-set version and variant. Whatever the token (tampered, expired, another
tenant's, not a token at all, a URL), the answer is never a URL the request names: the open
redirect corpus and generated tokens only ever reach the campaign's own allowlisted CTAs.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.engagement.click_redirect import default_cta_href
from tests.corpora import corpus_lines
from tests.event_stream import stream_events
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    PERSONAL_ACCOUNT,
    PUBLIC_URL,
    TENANT,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
    publish_example_at,
    renderer_app,
    renderer_settings,
    signer,
    tuning_for_tests,
)
from tests.server.pagetools import body_data, zones
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.arms import Arm
from welcomemat.campaign.view import campaign_view
from welcomemat.security.tokens import DEFAULT_CLICK_TTL_S
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.store import ZoneSetStore

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
PERSONAL_CTA = "https://meet.acmerevenue.example/ramp-review?utm=wm"
# The campaign's default CTA (`default_copy.cta` names talk_to_sales).
DEFAULT_CTA = "https://www.acmerevenue.example/contact"
_CLICK_LINK = re.compile(r"/r/[A-Za-z0-9_.-]+")


class Clock:
    """The renderer's clock, moved by the test (token expiry is read from it)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def stream(client: redis.Redis) -> list[dict[str, str]]:
    return [
        {k.decode(): v.decode() for k, v in fields.items()} for _, fields in stream_events(client, TENANT)
    ]


def clicks(client: redis.Redis) -> list[dict[str, str]]:
    return [e for e in stream(client) if e["type"] == "click"]


def settle(app: Starlette) -> None:
    """Wait until the event writer has written (or found duplicate) everything queued."""
    events = app.state.renderer.events
    deadline = time.monotonic() + 10
    while events.queued:
        assert time.monotonic() < deadline, f"{events.queued} events still queued"
        time.sleep(0.02)


def cta_link(client: TestClient, params: dict[str, str] | None = None) -> tuple[str, str]:
    """(the page's view id, the href its CTA links to) for a visit to the landing page."""
    response = client.get(f"/c/{CAMPAIGN}", params=params or {}, headers={"user-agent": BROWSER})
    assert response.status_code == 200
    href = zones(response.text)["cta"].href
    assert href is not None and _CLICK_LINK.fullmatch(href), href
    return body_data(response.text)["data-wm-view"], href


def follow(client: TestClient, href: str, user_agent: str | None = BROWSER) -> httpx.Response:
    headers = {"user-agent": user_agent} if user_agent is not None else {}
    response = client.get(href, headers=headers, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(redis_client: redis.Redis, clock: Clock) -> Starlette:
    campaign, zones_ = example_inputs()
    publish_config(redis_client, campaign, zones_)
    ZoneSetStore(redis_client).publish(
        make_zone_set(texts={"hero_headline": "Personal", "cta": "Book"}, hrefs={"cta": PERSONAL_CTA})
    )
    return renderer_app(
        redis_client=redis_client, clock=clock, tuning=tuning_for_tests(event_flush_interval_s=0.01)
    )


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(app, base_url=BASE_URL) as test_client:
        yield test_client


def test_a_personal_cta_click_lands_on_its_published_url_and_is_counted(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    view_id, href = cta_link(client, {"wm": link_token()})
    response = follow(client, href)
    assert response.headers["location"] == PERSONAL_CTA
    assert response.headers["cache-control"] == "private, no-store"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    settle(app)
    [click] = clicks(redis_client)
    assert (click["view_id"], click["zone"], click["arm"], click["account"]) == (
        view_id,
        "cta",
        "personal",
        PERSONAL_ACCOUNT,
    )
    assert (click["version"], click["rung"]) == ("1", "personal")
    [view] = [e for e in stream(redis_client) if e["type"] == "view"]
    assert view["view_id"] == view_id and view["version"] == click["version"]


def test_the_click_carries_the_copy_variant_of_the_view(
    client: TestClient, app: Starlette, redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    store.publish(
        make_zone_set(
            texts={"hero_headline": "Personal, variant b", "cta": "Book"}, hrefs={"cta": PERSONAL_CTA}
        ).model_copy(update={"experiment": "exp1", "variant": "b", "input_hash": "input-hash-0002"})
    )
    _, href = cta_link(client, {"wm": link_token()})
    assert follow(client, href).headers["location"] == PERSONAL_CTA
    settle(app)
    [click] = clicks(redis_client)
    assert (click["variant"], click["version"]) == ("b", "2")


def test_segment_and_default_copy_clicks_go_to_the_cta_that_copy_names(
    client: TestClient, app: Starlette, redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    _, anonymous = cta_link(client)
    assert follow(client, anonymous).headers["location"] == DEFAULT_CTA
    store.publish(make_zone_set(HOLDOUT_ACCOUNT, texts={"hero_headline": "Held out"}))  # saas-mid
    _, held_out = cta_link(client, {"wm": link_token(HOLDOUT_ACCOUNT)})
    assert follow(client, held_out).headers["location"] == "https://meet.acmerevenue.example/ramp-review"
    settle(app)
    assert [(c["arm"], c.get("account"), c["rung"]) for c in clicks(redis_client)] == [
        ("anonymous", None, "default"),
        ("holdout", HOLDOUT_ACCOUNT, "segment"),
    ]


def test_a_replayed_click_is_counted_once(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    _, href = cta_link(client, {"wm": link_token()})
    for forwarded in ("", "203.0.113.9", "198.51.100.200"):
        headers = (
            {"user-agent": BROWSER, "x-forwarded-for": forwarded} if forwarded else {"user-agent": BROWSER}
        )
        response = client.get(href, headers=headers, follow_redirects=False)
        assert (response.status_code, response.headers["location"]) == (303, PERSONAL_CTA)
    settle(app)
    assert len(clicks(redis_client)) == 1
    assert app.state.renderer.events.duplicates >= 1


def test_a_tampered_token_goes_to_the_default_cta_uncounted(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    _, href = cta_link(client, {"wm": link_token()})
    body, _, signature = href.removeprefix("/r/").rpartition(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    forged = {**payload, "a": "acct_someone_else", "k": "see_playbook"}  # the same signature
    forged_body = base64.urlsafe_b64encode(json.dumps(forged, separators=(",", ":")).encode()).decode()
    for tampered in (f"{body}.{flipped}", f"{forged_body.rstrip('=')}.{signature}", f"{body}.{signature}x"):
        assert follow(client, f"/r/{tampered}").headers["location"] == DEFAULT_CTA
    # Cut short, it names no campaign at all: no page to send the visitor to but a 404.
    assert client.get(f"/r/{body[:-5]}.{signature}", follow_redirects=False).status_code == 404
    settle(app)
    assert clicks(redis_client) == []


def test_an_expired_token_goes_to_the_default_cta_uncounted(
    client: TestClient, app: Starlette, redis_client: redis.Redis, clock: Clock
) -> None:
    _, href = cta_link(client, {"wm": link_token(clock=clock)})
    clock.now += DEFAULT_CLICK_TTL_S
    assert follow(client, href).headers["location"] == DEFAULT_CTA
    settle(app)
    assert clicks(redis_client) == []
    clock.now -= 1  # the last second of its life: its own CTA, counted
    assert follow(client, href).headers["location"] == PERSONAL_CTA
    settle(app)
    assert len(clicks(redis_client)) == 1


def _click_token(**fields: object) -> str:
    values: dict[str, object] = {
        "zone": "cta",
        "cta": "book_ramp_review",
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "arm": Arm.PERSONAL,
        "rung": "personal",
        "account": PERSONAL_ACCOUNT,
        "zone_set_version": 1,
    }
    values.update(fields)
    return signer().click_template(**values).sign("view-forged-0001")  # type: ignore[arg-type]


def test_another_tenants_token_goes_to_the_default_cta_uncounted(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    # Signed with the renderer's own key, for a tenant that does not own the campaign id.
    assert follow(client, f"/r/{_click_token(tenant='globex')}").headers["location"] == DEFAULT_CTA
    other = client.get(f"/r/{_click_token(campaign='other-campaign')}", follow_redirects=False)
    assert other.status_code == 404  # names a campaign nobody publishes
    settle(app)
    assert clicks(redis_client) == []
    assert stream(redis_client) == []


def test_a_cta_the_gate_refuses_now_never_leaves_the_allowlist(
    client: TestClient, app: Starlette, redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    # A zone set published with a link the gate refuses: the page serves the segment copy's
    # CTA, and its click goes to that CTA's URL, never to the zone set's.
    store.publish(
        make_zone_set(
            texts={"hero_headline": "Personal", "cta": "Book"},
            hrefs={"cta": "https://evil.example/phish"},
            input_hash="input-hash-0003",
        )
    )
    _, href = cta_link(client, {"wm": link_token()})
    assert follow(client, href).headers["location"] == "https://meet.acmerevenue.example/ramp-review"
    # A CTA id the campaign no longer has, and a zone that is not a link: the default CTA.
    assert follow(client, f"/r/{_click_token(cta='retired_cta')}").headers["location"] == DEFAULT_CTA
    assert follow(client, f"/r/{_click_token(zone='proof')}").headers["location"] == DEFAULT_CTA
    settle(app)
    # Genuine tokens: every click is counted, whatever URL it was sent to.
    assert len(clicks(redis_client)) == 3


@pytest.mark.parametrize(
    "user_agent",
    ["", "Googlebot/2.1 (+http://www.google.com/bot.html)", "curl/8.5.0", "Slackbot-LinkExpanding 1.0"],
)
def test_bots_are_redirected_but_not_counted(
    client: TestClient, app: Starlette, redis_client: redis.Redis, user_agent: str
) -> None:
    _, href = cta_link(client, {"wm": link_token()})
    assert follow(client, href, user_agent=user_agent).headers["location"] == PERSONAL_CTA
    settle(app)
    assert clicks(redis_client) == []


def test_a_head_request_is_not_a_click(client: TestClient, app: Starlette, redis_client: redis.Redis) -> None:
    _, href = cta_link(client, {"wm": link_token()})
    response = client.head(href, headers={"user-agent": BROWSER}, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, PERSONAL_CTA)
    settle(app)
    assert clicks(redis_client) == []


def test_a_token_naming_no_campaign_is_a_404_page(client: TestClient) -> None:
    for path in ("/r/not-a-token", f"/r/{_click_token(campaign='never-published')}"):
        response = client.get(path, headers={"user-agent": BROWSER}, follow_redirects=False)
        assert response.status_code == 404 and "location" not in response.headers
        assert response.headers["content-type"].startswith("text/html")


def test_without_a_secret_ctas_link_to_their_own_url(redis_client: redis.Redis) -> None:
    campaign, zones_ = example_inputs()
    publish_config(redis_client, campaign, zones_)
    app = renderer_app(renderer_settings(secret=None), redis_client=redis_client)
    with TestClient(app, base_url=BASE_URL) as plain:
        html = plain.get(f"/c/{CAMPAIGN}").text
        assert zones(html)["cta"].href == DEFAULT_CTA
        # Any token: nothing verifies, so the campaign's default CTA.
        assert follow(plain, f"/r/{_click_token()}").headers["location"] == DEFAULT_CTA


# -- no open redirect ----------------------------------------------------------------------------


def _allowed_locations() -> set[str]:
    """Every URL a click may be sent to: the campaign's CTAs (as the gate normalises them), the
    zone set's CTA, and the campaign's landing page (while it cannot be loaded)."""
    campaign, zones_ = example_inputs()
    view = campaign_view(TENANT, CAMPAIGN, campaign, zones_, None, "f")
    return {
        *(c.href for c in campaign.ctas),
        PERSONAL_CTA,
        default_cta_href(view) or "",
        f"{PUBLIC_URL}/c/{CAMPAIGN}",
    }


def _redirect_inputs(genuine: str) -> list[str]:
    """The open-redirect corpus (its placeholder host made one the campaign allows), as the token,
    after a genuine token, in its payload, and as query parameters beside a genuine token."""
    payloads = [
        line.replace("www.whitelisteddomain.tld", "www.acmerevenue.example")
        for line in corpus_lines("open-redirect/Open-Redirect-payloads.txt")
    ]
    body, _, signature = genuine.rpartition(".")
    paths: list[str] = []
    for payload in payloads:
        quoted = quote(payload, safe="")
        paths += [
            f"/r/{quoted}",
            f"/r/{payload}",
            f"/r/{genuine}{quoted}",
            f"/r/{body}{quoted}.{signature}",
            f"/r/{genuine}?next={quoted}&url={quoted}&redirect={quoted}&to={quoted}",
            f"/r/{genuine}/{quoted}",
        ]
    return paths


def _assert_stays_home(client: TestClient, path: str, allowed: set[str]) -> int:
    response = client.get(path, headers={"user-agent": BROWSER}, follow_redirects=False)
    assert response.status_code in (303, 404), (path, response.status_code)
    if response.status_code == 303:
        assert response.headers["location"] in allowed, (path, response.headers["location"])
    else:
        assert "location" not in response.headers
    return response.status_code


_ALLOWED = _allowed_locations()


def test_no_input_of_the_open_redirect_corpus_leaves_the_allowlist(client: TestClient) -> None:
    allowed = _ALLOWED
    _, href = cta_link(client, {"wm": link_token()})
    inputs = _redirect_inputs(href.removeprefix("/r/"))
    assert len(inputs) >= 6 * 240
    statuses: dict[int, int] = {}
    for path in inputs:
        status = _assert_stays_home(client, path, allowed)
        statuses[status] = statuses.get(status, 0) + 1
    for path in inputs[:50]:  # a hostile Host or forwarding header changes nothing either
        response = client.get(
            path,
            headers={"user-agent": BROWSER, "x-forwarded-host": "evil.example", "x-forwarded-proto": "http"},
            follow_redirects=False,
        )
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.headers.get("location", PERSONAL_CTA) in allowed
    print(f"open-redirect inputs: {len(inputs) + 50}, statuses: {statuses}")


_TOKEN_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=_TOKEN_TEXT)
def test_generated_tokens_never_leave_the_allowlist(client: TestClient, token: str) -> None:
    _assert_stays_home(client, "/r/" + quote(token, safe=""), _ALLOWED)


# -- Redis down: real uvicorn, a Redis that stops ----------------------------------------------------


def test_redis_down_the_click_still_lands_and_waits_in_the_queue(tmp_path: Path) -> None:
    home = tmp_path / "redis"
    tuning = tuning_for_tests(zone_cache_ttl_s=0.3, breaker_reset_s=0.3, watcher_backoff_max_s=0.5)
    first = temporary_redis(home)
    url = first.__enter__()
    stopped = False
    try:
        publish_example_at(url, "Personal headline")
        app = renderer_app(renderer_settings(redis_url=url, allowed_hosts=("127.0.0.1",)), tuning=tuning)
        cold = renderer_app(renderer_settings(redis_url=url, allowed_hosts=("127.0.0.1",)), tuning=tuning)
        with serve_in_thread(app) as base, serve_in_thread(cold) as cold_base:
            with httpx.Client(base_url=base, timeout=5, headers={"user-agent": BROWSER}) as http:
                page = http.get(f"/c/{CAMPAIGN}", params={"wm": link_token()}).text
                href = zones(page)["cta"].href
                assert href is not None and href.startswith("/r/")
                first.__exit__(None, None, None)  # Redis stops
                stopped = True
                time.sleep(0.4)  # the cached zone set ages out: the click cannot read it
                queued = app.state.renderer.events.queued
                response = http.get(href)
                assert response.status_code == 303
                # The segment copy's CTA (saas-mid), from the campaign loaded before Redis stopped.
                assert response.headers["location"] == "https://meet.acmerevenue.example/ramp-review"
                assert app.state.renderer.events.queued > queued  # the click waits to be written
            with httpx.Client(base_url=cold_base, timeout=5, headers={"user-agent": BROWSER}) as http:
                # A renderer that never loaded the campaign: its landing page (the plain page now).
                response = http.get(href)
                assert (response.status_code, response.headers["location"]) == (
                    303,
                    f"{PUBLIC_URL}/c/{CAMPAIGN}",
                )
    finally:
        if not stopped:
            first.__exit__(None, None, None)


def test_the_openapi_document_describes_the_redirect(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/r/{token}"]["get"]
    assert set(operation["responses"]) == {"303", "404"}
    assert operation["responses"]["303"]["headers"]["Location"]["required"] is True
