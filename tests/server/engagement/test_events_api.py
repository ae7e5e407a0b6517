"""`POST /v1/events`: beacons checked, attributed only by their view token, deduplicated, limited;
with Redis down they wait in the queue and the snippet's API serves the fallback, never a 5xx."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from outbound.sync import parse_event
from outbound.webhook import crm_change
from server.bots import is_obvious_bot
from server.ip_index import normalise_ip
from server.rate_limit import RateLimiter, client_key
from tests.event_stream import stream_events
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    SECRET,
    TENANT,
    link_token,
    make_zone_set,
    publish_example_at,
    renderer_app,
    renderer_settings,
    signer,
    tuning_for_tests,
)
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.records.account_records import read_account_record
from welcomemat.records.erasure import ErasureMark, contact_field
from welcomemat.records.fold import FOLD_LUA, fold_events
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.store import ZoneSetStore

ORIGIN = "https://www.acmerevenue.example"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
HEADLESS = BROWSER.replace(" Chrome/", " HeadlessChrome/")


def view_token(**overrides: Any) -> str:
    args: dict[str, Any] = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "view_id": "view0000view0000",
        "arm": Arm.PERSONAL,
        "rung": "personal",
        "account": PERSONAL_ACCOUNT,
        "contact": "c_joram",
        "zone_set_version": 3,
    }
    token_signer = overrides.pop("signer", None) or signer()
    args.update(overrides)
    return token_signer.sign_view(**args)  # type: ignore[no-any-return]


def beacon(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"campaign": CAMPAIGN, "view": view_token(), "event_id": "ev-1", "type": "view"}
    body.update(fields)
    return {k: v for k, v in body.items() if v is not None}


def post(
    client: TestClient,
    body: dict[str, Any] | bytes | str,
    *,
    content_type: str = "text/plain;charset=UTF-8",
    user_agent: str = BROWSER,
    **headers: str,
) -> httpx.Response:
    content = json.dumps(body).encode() if isinstance(body, dict) else body
    return client.post(
        "/v1/events",
        content=content,
        headers={"content-type": content_type, "user-agent": user_agent, **headers},
    )


def stream(client: redis.Redis, tenant: str = TENANT) -> list[dict[str, str]]:
    return [
        {k.decode(): v.decode() for k, v in fields.items()} for _, fields in stream_events(client, tenant)
    ]


def wait_for_stream(client: redis.Redis, count: int, timeout_s: float = 5.0) -> list[dict[str, str]]:
    deadline = time.monotonic() + timeout_s
    while len(entries := stream(client)) < count:
        assert time.monotonic() < deadline, f"{len(entries)} events in the stream, waiting for {count}"
        time.sleep(0.02)
    return entries


def settle(app: Starlette) -> None:
    """Write whatever the app's event writer holds now."""
    writer = app.state.renderer.events
    while writer.flush_once():
        pass


# -- what gets written ---------------------------------------------------------------------------


def test_a_view_beacon_is_written_with_what_the_token_says(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    response = post(client, beacon(event_id="ev-view-1"), origin=ORIGIN)
    assert response.status_code == 204 and response.content == b""
    settle(app)
    [event] = stream(redis_client)
    assert event.pop("ts").isdigit()
    assert event == {
        "event_id": "ev-view-1",
        "type": "view",
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "view_id": "view0000view0000",
        "arm": "personal",
        "account": PERSONAL_ACCOUNT,
        "contact": "c_joram",
        "rung": "personal",
        "version": "3",
    }


def test_a_click_names_its_zone_and_json_bodies_are_accepted(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    response = post(client, beacon(type="click", zone="cta"), content_type="application/json")
    assert response.status_code == 204
    settle(app)
    [event] = stream(redis_client)
    assert (event["type"], event["zone"]) == ("click", "cta")


def test_the_whole_round_trip_from_the_zones_api(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    ZoneSetStore(redis_client).publish(make_zone_set())
    answer = client.get(
        "/v1/zones", params={"campaign": CAMPAIGN, "wm": link_token(contact="c_joram")}
    ).json()
    assert post(client, beacon(view=answer["view"], event_id="e1")).status_code == 204
    assert (
        post(client, beacon(view=answer["view"], event_id="e2", type="click", zone="cta")).status_code == 204
    )
    settle(app)
    events = stream(redis_client)
    assert [(e["type"], e["view_id"], e["account"], e["contact"], e["arm"]) for e in events] == [
        ("view", answer["view_id"], PERSONAL_ACCOUNT, "c_joram", "personal"),
        ("click", answer["view_id"], PERSONAL_ACCOUNT, "c_joram", "personal"),
    ]


def test_the_copy_variant_rides_on_every_event_into_the_record_and_the_crm_change(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    """A zone set written for a copy variant: the page view, the snippet's view and click carry
    it, and the folded account record and its CRM change say which variant the account saw."""
    experimental = make_zone_set().model_copy(update={"experiment": "headline-angle", "variant": "direct"})
    ZoneSetStore(redis_client).publish(experimental)
    token = link_token(contact="c_joram")
    assert client.get(f"/c/{CAMPAIGN}", params={"wm": token}).status_code == 200
    answer = client.get("/v1/zones", params={"campaign": CAMPAIGN, "wm": token}).json()
    assert "variant" not in answer  # the public payload says nothing of the experiment
    assert post(client, beacon(view=answer["view"], event_id="e1")).status_code == 204
    assert (
        post(client, beacon(view=answer["view"], event_id="e2", type="click", zone="cta")).status_code == 204
    )
    settle(app)
    events = stream(redis_client)
    # The page view names its page; the snippet's beacons are of the customer's page, not ours.
    assert [(e["type"], e.get("version"), e.get("variant"), e.get("page")) for e in events] == [
        ("view", "1", "direct", "landing"),
        ("view", "1", "direct", None),
        ("click", "1", "direct", None),
    ]
    folds = [parse_event(TENANT, f"0-{i}", e) for i, e in enumerate(events)]
    fold_events(redis_client.register_script(FOLD_LUA), redis_client, [f for f in folds if f], outbox=False)
    record = read_account_record(redis_client, TENANT, PERSONAL_ACCOUNT)
    assert record is not None
    engagement = record.engagement[CAMPAIGN]
    assert (engagement.zone_set_version, engagement.variant) == (1, "direct")
    assert crm_change(record).campaigns[CAMPAIGN].variant == "direct"


def test_a_view_served_before_an_erasure_is_written_without_the_person(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    served_before = view_token()  # the signer's clock: now
    erased_at = datetime.now(UTC) + timedelta(seconds=5)
    mark = ErasureMark(erased_at=erased_at, revoke_before=int(erased_at.timestamp()) + 1)
    redis_client.hset(
        keys.erasures_key(TENANT), contact_field(PERSONAL_ACCOUNT, "c_joram"), mark.model_dump_json()
    )
    assert client.get(f"/c/{CAMPAIGN}").status_code == 200  # the campaign loads, with the erasure list
    assert post(client, beacon(view=served_before, event_id="ev-late")).status_code == 204
    settle(app)
    [event] = [e for e in stream(redis_client) if e["event_id"] == "ev-late"]
    assert event["rung"] == "personal"
    assert "account" not in event and "contact" not in event


def test_an_anonymous_view_is_attributed_to_no_account(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    answer = client.get("/v1/zones", params={"campaign": CAMPAIGN}).json()
    assert post(client, beacon(view=answer["view"])).status_code == 204
    settle(app)
    [event] = stream(redis_client)
    assert (event["arm"], event["rung"]) == ("anonymous", "default")
    assert "account" not in event and "contact" not in event


# -- refused -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (beacon(type="purchase"), "type"),
        (beacon(type="click"), "zone"),
        (beacon(account="acct_other"), "account"),
        (beacon(event_id="has space"), "event_id"),
        (beacon(event_id=None), "event_id"),
        (beacon(campaign="q4 pipeline"), "campaign"),
        (beacon(zone="../x"), "zone"),
        (beacon(view=12345), "view"),
        (beacon(view="x" * 600), "view"),
        (b"[1, 2]", "JSON object"),
        (b"{not json", "not valid JSON"),
        (b'{"campaign": "q4-pipeline"\xff}', "not UTF-8"),
        (b"", "not valid JSON"),
        ("\ufeff" + json.dumps(beacon()), "not valid JSON"),
        (b"[" * 1000 + b"]" * 1000, "nested deeper than 32 levels"),
        (json.dumps(beacon())[:-1] + ', "type": "click"}', "type: duplicate key 'type'"),
        (json.dumps(beacon())[:-1] + ', "zone": NaN}', "zone: NaN is not a number"),
    ],
)
def test_bad_bodies_are_400_with_a_clear_message(
    client: TestClient, app: Starlette, redis_client: redis.Redis, body: Any, words: str
) -> None:
    response = post(client, body.encode() if isinstance(body, str) else body)
    assert response.status_code == 400
    assert words in response.json()["error"]
    assert response.headers["vary"] == "Origin"
    settle(app)
    assert stream(redis_client) == []


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (view_token(campaign="other-campaign"), "not a view token of this campaign"),
        (link_token(), "bad_signature"),  # an identity token is never a view token
        (
            signer().sign(TokenKind.COOKIE, tenant=TENANT, campaign=CAMPAIGN, account="a1", ttl_s=60),
            "bad_signature",
        ),
        (view_token(signer=TokenSigner(["someone-else-0123456789-0123456789-0123"])), "bad_signature"),
        (view_token(ttl_s=1, signer=TokenSigner([SECRET], clock=lambda: 1_000_000.0)), "expired"),
        ("garbage.garbage", "not a view token"),
    ],
)
def test_a_beacon_without_a_genuine_view_token_of_this_campaign_is_refused(
    client: TestClient, app: Starlette, redis_client: redis.Redis, token: str, reason: str
) -> None:
    response = post(client, beacon(view=token))
    assert response.status_code == 400
    assert reason in response.json()["error"]
    settle(app)
    assert stream(redis_client) == []


def test_an_event_lands_in_the_stream_of_the_tenant_its_token_names(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    """The signed token, not the client, picks the tenant (the campaign not loaded here yet)."""
    assert post(client, beacon(view=view_token(tenant="globex"), event_id="g1")).status_code == 204
    settle(app)
    assert stream(redis_client) == []
    assert [e["event_id"] for e in stream(redis_client, "globex")] == ["g1"]


def test_a_view_token_of_a_tenant_that_does_not_own_the_campaign_is_refused(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    """A campaign id is one tenant's: once loaded, another tenant's events under it are refused."""
    assert client.get("/v1/zones", params={"campaign": CAMPAIGN}).status_code == 200
    response = post(client, beacon(view=view_token(tenant="globex"), event_id="g2"))
    assert response.status_code == 400 and "not a view token of this campaign" in response.json()["error"]
    assert post(client, beacon(event_id="a1")).status_code == 204  # the owner's own token
    settle(app)
    assert stream(redis_client, "globex") == []
    assert [e["event_id"] for e in stream(redis_client)] == ["a1"]


@pytest.mark.parametrize(
    "content_type",
    [
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/plain; charset=latin-1",
        "",
    ],
)
def test_other_media_types_are_415(client: TestClient, content_type: str) -> None:
    response = post(client, beacon(), content_type=content_type)
    assert response.status_code == 415


def test_a_body_over_4_kb_is_413_without_reading_it(client: TestClient) -> None:
    big = json.dumps(beacon(view="x" * 5000)).encode()
    assert post(client, big).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read, stopped at the limit
        for _ in range(1000):
            yield b"x" * 1024

    response = client.post(
        "/v1/events", content=chunks(), headers={"content-type": "text/plain", "user-agent": BROWSER}
    )
    assert response.status_code == 413


def test_a_huge_declared_body_is_refused_before_it_is_sent(app: Starlette) -> None:
    """Over a real socket: the answer comes while the 5 MB the client announced is still unsent."""
    with serve_in_thread(app) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/events HTTP/1.1\r\nHost: testserver\r\nContent-Type: text/plain\r\n"
                b"User-Agent: " + BROWSER.encode() + b"\r\nContent-Length: 5000000\r\n\r\n{"
            )
            head = sock.recv(4096).split(b"\r\n", 1)[0]
        assert head == b"HTTP/1.1 413 Request Entity Too Large"
        assert httpx.get(f"{base}/healthz").status_code == 200


# Zone ids a hostile beacon might name: near misses of the campaign's zones, record field names,
# page ids, the longest id; each would have become a field of the account record.
HOSTILE_ZONES = [
    "CTA", "cta2", "cta.", "cta-", "Cta", "hero-headline", "Hero_headline", "hero_headline2",
    "proof_", "proofs", "hero_support.x", "continuation", "landing", "zone", "zones", "clicks",
    "views", "rev", "updated_ms", "wh_pending", "first", "last", "arm", "ver", "facts", "e", "p",
    "0", "9", "a" * 64, "z" * 64, "x.y.z", "admin", "metrics", "healthz", "proto__", "constructor",
    "hasOwnProperty", "null", "None", "true", "NaN", "cta..cta", "cta_cta", "continuation_headline2",
    "hero", "headline", "support", "proof-of-concept", "x0", "x1", "x2", "x3", "x4", "x5", "x6",
    "x7", "x8", "x9", "x10",
]  # fmt: skip


@pytest.fixture
def proxied_app(redis_client: redis.Redis, published: Any) -> Starlette:
    """A renderer behind a trusted proxy (10.0.0.0/8): `X-Forwarded-For` names the client."""
    return renderer_app(renderer_settings(trusted_proxies=("10.0.0.0/8",)), redis_client=redis_client)


def test_a_beacon_naming_a_zone_the_campaign_does_not_have_is_refused(
    proxied_app: Starlette, redis_client: redis.Redis
) -> None:
    """Issue 25: any zone was accepted, each a new record field counted as clicks."""
    assert len(set(HOSTILE_ZONES)) == len(HOSTILE_ZONES) == 60
    refused = 0
    with TestClient(proxied_app, base_url=BASE_URL, client=("10.0.0.1", 40000)) as client:
        client.get("/v1/zones", params={"campaign": CAMPAIGN})  # the campaign is loaded
        for n, zone in enumerate(HOSTILE_ZONES):
            for kind in ("click", "view"):
                body = beacon(view=view_token(view_id=f"hz{n}{kind}"), type=kind, zone=zone)
                response = post(client, body, **{"x-forwarded-for": f"203.0.113.{n}"})
                assert response.status_code == 400, (zone, kind)
                assert f"zone: '{zone}' is not a zone of campaign" in response.json()["error"]
                refused += 1
        for zone in ("cta", "hero_headline", "continuation_headline"):  # the campaign's own zones
            body = beacon(view=view_token(view_id=f"ok-{zone}"), type="click", zone=zone)
            assert post(client, body).status_code == 204
        settle(proxied_app)
        metrics = client.get("/metrics").text
    assert refused == 120
    assert [(e["type"], e["zone"]) for e in stream(redis_client)] == [
        ("click", "cta"),
        ("click", "hero_headline"),
        ("click", "continuation_headline"),
    ]
    assert 'welcomemat_beacons_total{result="bad_request"} 120.0' in metrics


def test_one_view_token_replayed_from_120_addresses_counts_one_view_and_one_click(
    proxied_app: Starlette, redis_client: redis.Redis
) -> None:
    """Issue 25: one view token replayed from 120 addresses folded as 120 clicks. Through the
    trusted-proxy path: each replay comes from its own client address (its own rate bucket),
    half with the very same body, half with a fresh event id as the snippet makes them."""
    app = proxied_app
    token = view_token(view_id="-replayed_view_1")
    with TestClient(app, base_url=BASE_URL, client=("10.0.0.1", 40000)) as proxy:
        proxy.get("/v1/zones", params={"campaign": CAMPAIGN})  # loaded: zones are checked
        statuses = []
        for n in range(120):
            forwarded = {"x-forwarded-for": f"203.0.113.{n}"}
            event_ids = ("same-view", "same-click") if n % 2 else (f"view-{n}", f"click-{n}")
            statuses.append(post(proxy, beacon(view=token, event_id=event_ids[0]), **forwarded).status_code)
            statuses.append(
                post(
                    proxy, beacon(view=token, event_id=event_ids[1], type="click", zone="cta"), **forwarded
                ).status_code
            )
        assert statuses == [204] * 240  # nobody learns what was counted
        settle(app)
        metrics = proxy.get("/metrics").text
    events = stream(redis_client)
    assert sorted((e["type"], e["zone"] if "zone" in e else None) for e in events) == [
        ("click", "cta"),
        ("view", None),
    ]
    assert 'welcomemat_beacons_total{result="duplicate"} 238.0' in metrics
    folds = [parse_event(TENANT, f"0-{i}", e) for i, e in enumerate(events)]
    fold_events(redis_client.register_script(FOLD_LUA), redis_client, [f for f in folds if f], outbox=False)
    record = read_account_record(redis_client, TENANT, PERSONAL_ACCOUNT)
    assert record is not None
    engagement = record.engagement[CAMPAIGN]
    assert (engagement.views, engagement.clicks, engagement.clicks_by_zone) == (1, 1, {"cta": 1})


# -- duplicates, bots, rate limits ---------------------------------------------------------------------


def test_a_duplicate_event_id_is_written_once_even_across_renderers(
    client: TestClient, app: Starlette, redis_client: redis.Redis, published: Any
) -> None:
    for _ in range(3):
        assert post(client, beacon(event_id="ev-dup")).status_code == 204
    other_renderer = renderer_app(renderer_settings(), redis_client=redis_client)
    with TestClient(other_renderer, base_url=BASE_URL) as other:
        assert post(other, beacon(event_id="ev-dup")).status_code == 204
        settle(other_renderer)
    settle(app)
    assert [e["event_id"] for e in stream(redis_client)] == ["ev-dup"]
    metrics = client.get("/metrics").text
    assert 'welcomemat_beacons_total{result="duplicate"} 2.0' in metrics


def test_obvious_bots_are_counted_not_written(
    client: TestClient, app: Starlette, redis_client: redis.Redis
) -> None:
    for n, agent in enumerate(["Mozilla/5.0 (compatible; Googlebot/2.1)", "curl/8.5.0", ""]):
        assert post(client, beacon(event_id=f"bot-{n}"), user_agent=agent).status_code == 204
    assert post(client, beacon(event_id="headless"), user_agent=HEADLESS).status_code == 204
    settle(app)
    assert [e["event_id"] for e in stream(redis_client)] == ["headless"]
    assert 'welcomemat_beacons_total{result="bot"} 3.0' in client.get("/metrics").text


@pytest.fixture
def frozen_app(redis_client: redis.Redis, published: Any) -> Starlette:
    """An app whose clock stands still: rate-limit buckets never refill during a test."""
    now = time.time()
    return renderer_app(renderer_settings(), redis_client=redis_client, clock=lambda: now)


def test_a_flooding_client_gets_429_and_others_do_not(frozen_app: Starlette) -> None:
    token = view_token(signer=signer(clock=frozen_app.state.renderer.clock))
    with (
        TestClient(frozen_app, base_url=BASE_URL, client=("203.0.113.9", 1)) as flood,
        TestClient(frozen_app, base_url=BASE_URL, client=("203.0.113.10", 1)) as neighbour,
    ):
        statuses = [post(flood, beacon(view=token, event_id=f"f{n}")).status_code for n in range(60)]
        assert statuses[:50] == [204] * 50 and set(statuses[50:]) == {429}
        refused = post(flood, beacon(view=token, event_id="late"))
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert post(neighbour, beacon(view=token, event_id="n1")).status_code == 204


# -- CORS ---------------------------------------------------------------------------------------


def test_cors_grant_only_for_the_campaigns_origins(client: TestClient) -> None:
    client.get("/v1/zones", params={"campaign": CAMPAIGN})  # the campaign is loaded
    listed = post(client, beacon(event_id="c1"), origin=ORIGIN)
    assert listed.headers["access-control-allow-origin"] == ORIGIN
    assert "access-control-allow-credentials" not in listed.headers
    other = post(client, beacon(event_id="c2"), origin="https://evil.example")
    assert other.status_code == 204 and "access-control-allow-origin" not in other.headers
    assert listed.headers["vary"] == other.headers["vary"] == "Origin"
    preflight = {"origin": ORIGIN, "access-control-request-method": "POST"}
    granted = client.options("/v1/events", headers=preflight)
    assert granted.status_code == 204 and granted.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in granted.headers["access-control-allow-methods"]
    assert (
        client.options("/v1/events", headers={**preflight, "origin": "https://evil.example"}).status_code
        == 403
    )


# -- Redis down: real uvicorn, a Redis that stops and comes back --------------------------------------


def test_redis_outage_zones_serve_the_fallback_and_beacons_wait_in_the_queue(tmp_path: Path) -> None:
    home = tmp_path / "redis"
    tuning = tuning_for_tests(zone_cache_ttl_s=0.3, breaker_reset_s=0.3, watcher_backoff_max_s=0.5)
    first = temporary_redis(home)
    url = first.__enter__()
    try:
        publish_example_at(url, "Personal headline")
        time.sleep(1.1)  # appendfsync everysec: the data survives the restart below

        app = renderer_app(renderer_settings(redis_url=url, allowed_hosts=("127.0.0.1",)), tuning=tuning)
        params = {"campaign": CAMPAIGN, "wm": link_token()}
        headers = {"content-type": "text/plain", "user-agent": HEADLESS}
        with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=5) as http:
            answer = http.get("/v1/zones", params=params).json()
            assert answer["zones"]["hero_headline"]["rung"] == "personal"

            first.__exit__(None, None, None)  # Redis stops
            first = None
            time.sleep(0.4)  # the cached zone set ages out
            served = []
            for n in range(20):
                response = http.get("/v1/zones", params=params)
                assert response.status_code == 200
                served.append(response.json()["zones"])
                sent = http.post(
                    "/v1/events",
                    # 20 views (a view token's view is written once): one token each
                    content=json.dumps(beacon(view=view_token(view_id=f"outage{n}"), event_id=f"o{n}")),
                    headers=headers,
                )
                assert sent.status_code == 204
                assert http.get("/v1/zones", params={"campaign": "never-loaded"}).status_code in (200, 404)
            # The zone set (and so its segment) unreadable: every zone's rung is the default, which
            # the snippet leaves to the site's own copy (no zones to write).
            assert served == [{}] * 20
            assert app.state.renderer.events.queued > 0

            with temporary_redis(home) as again:  # Redis is back: the queued beacons are written
                reader = redis.Redis.from_url(again)
                deadline = time.monotonic() + 15
                while len(stream(reader)) < 20:
                    assert time.monotonic() < deadline, f"only {len(stream(reader))} events written"
                    time.sleep(0.1)
                assert sorted(e["event_id"] for e in stream(reader)) == sorted(f"o{n}" for n in range(20))
                reader.close()
    finally:
        if first is not None:
            first.__exit__(None, None, None)


# -- the pure parts -------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_refills_at_its_rate_and_forgets_the_oldest_client() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate_per_s=2.0, burst=3, max_clients=2, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.retry_after_s("a") == 1
    clock.now += 0.5  # one token back
    assert [limiter.allow("a") for _ in range(2)] == [True, False]
    clock.now -= 100  # a clock that jumps back refills nothing
    assert limiter.allow("a") is False
    limiter.allow("b")
    limiter.allow("c")  # a third client: the least recently seen ("a") is forgotten
    assert len(limiter) == 2 and limiter.allow("a") is True


def test_clients_share_a_bucket_per_ipv4_address_and_ipv6_64() -> None:
    assert client_key(normalise_ip("203.0.113.9")) == "203.0.113.9"
    assert client_key(normalise_ip("2001:db8:1:2::1")) == client_key(normalise_ip("2001:db8:1:2:ffff::9"))
    assert client_key(normalise_ip("2001:db8:1:2::1")) != client_key(normalise_ip("2001:db8:1:3::1"))
    assert client_key(normalise_ip("::ffff:203.0.113.9")) == "203.0.113.9"
    assert client_key(None) == "unknown"


@pytest.mark.parametrize(
    "agent",
    [
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
        "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
        "python-requests/2.32.3",
        "curl/8.5.0",
        "Go-http-client/2.0",
        "",
        "   ",
        None,
    ],
)
def test_obvious_bots_are_recognised(agent: str | None) -> None:
    assert is_obvious_bot(agent)


@pytest.mark.parametrize(
    "agent",
    [
        BROWSER,
        HEADLESS,
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/17.5 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "Mozilla/5.0 (Linux; Android 10; CUBOT X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120 Mobile",
    ],
)
def test_browsers_including_headless_chrome_are_not_bots(agent: str) -> None:
    assert not is_obvious_bot(agent)


@settings(max_examples=300, deadline=None)
@given(prefix=st.text(max_size=200), suffix=st.text(max_size=200))
def test_bot_check_never_fails_and_headless_chrome_is_never_a_bot(prefix: str, suffix: str) -> None:
    is_obvious_bot(prefix + suffix)  # any text: an answer, never an error
    agent = (
        f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/{len(prefix)}"
    )
    assert not is_obvious_bot(agent)
