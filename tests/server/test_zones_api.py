"""`GET /v1/zones`: the snippet's JSON serves exactly the page's copy, to the campaign's origins only."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode

import markupsafe
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server.query import query_values
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    PERSONAL_ACCOUNT,
    TENANT,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
    publish_ip_ranges,
    renderer_app,
    renderer_settings,
    signer,
)
from tests.server.pagetools import cta_destination
from tests.server.pagetools import zones as page_zones
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.view import CampaignView, ResolvedZone, build_campaign_view
from welcomemat.security.markup import clean_inline, markup_to_text
from welcomemat.security.tokens import DEFAULT_COOKIE_TTL_S, TokenKind
from welcomemat.surfaces import Surface
from welcomemat.zones.payload import zones_payload
from welcomemat.zones.resolution import choose_variant, resolve_zones
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet

ORIGIN = "https://www.acmerevenue.example"


def get_zones(client: TestClient, **params: str) -> dict:  # type: ignore[type-arg]
    response = client.get("/v1/zones", params={"campaign": CAMPAIGN, **params})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "private, no-store"
    assert response.headers["vary"] == "Origin"
    data: dict = response.json()  # type: ignore[type-arg]
    return data


def test_anonymous_visitor_gets_no_zones_to_write_and_a_view_token(
    client: TestClient, published: Campaign
) -> None:
    data = get_zones(client)
    assert set(data) == {"campaign", "arm", "view_id", "view", "zones", "links"}
    assert (data["campaign"], data["arm"]) == (CAMPAIGN, "anonymous")
    # Every zone's rung is the default: the site keeps its own copy (tests/server/test_zones_site_copy.py).
    assert data["zones"] == {}
    assert data["links"] == sorted(published.link_allowlist)
    claims = signer().verify_view(data["view"], tenant=TENANT, campaign=CAMPAIGN)
    assert (claims.view_id, claims.arm, claims.rung, claims.account) == (
        data["view_id"],
        Arm.ANONYMOUS,
        "default",
        None,
    )
    assert get_zones(client)["view_id"] != data["view_id"]  # a fresh view id per request


def test_personal_visitor_gets_the_zone_set_and_a_token_bound_to_it(
    client: TestClient, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))
    data = get_zones(client, wm=link_token(contact="c_joram"))
    assert data["arm"] == "personal"
    assert data["zones"]["hero_headline"] == {"text": "Congrats on the Series A, Dymaxa", "rung": "personal"}
    assert data["zones"]["hero_support"]["rung"] == "segment"
    claims = signer().verify_view(data["view"], tenant=TENANT, campaign=CAMPAIGN)
    assert (claims.account, claims.contact, claims.arm, claims.rung, claims.zone_set_version) == (
        PERSONAL_ACCOUNT,
        "c_joram",
        Arm.PERSONAL,
        "personal",
        1,
    )


def test_holdout_account_gets_its_segment_copy(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(HOLDOUT_ACCOUNT, texts={"hero_headline": "Personal text held out"}))
    data = get_zones(client, wm=link_token(HOLDOUT_ACCOUNT))
    assert data["arm"] == "holdout"
    assert {z["rung"] for z in data["zones"].values()} == {"segment"}
    assert "Personal text held out" not in json.dumps(data)


@pytest.mark.parametrize("account", [None, PERSONAL_ACCOUNT, HOLDOUT_ACCOUNT])
def test_the_json_serves_exactly_what_the_page_shows(
    client: TestClient, store: ZoneSetStore, account: str | None
) -> None:
    store.publish(
        make_zone_set(
            texts={"hero_headline": "Congrats on the Series A, Dymaxa", "cta": "Book the review"},
            hrefs={"cta": "https://meet.acmerevenue.example/ramp-review?utm=wm"},
        )
    )
    store.publish(make_zone_set(HOLDOUT_ACCOUNT, texts={"hero_headline": "Held out"}))
    params = {"wm": link_token(account)} if account else {}
    page = page_zones(client.get(f"/c/{CAMPAIGN}", params=params).text)
    data = get_zones(client, **params)
    for zone_id, element in page.items():
        if element.rung == "default":  # the snippet leaves the site's own copy there
            assert zone_id not in data["zones"]
            continue
        served = data["zones"][zone_id]
        assert (served["text"], served["rung"], served.get("href")) == (
            element.text,
            element.rung,
            cta_destination(client, element.href),  # the page's CTA goes through its click redirect
        )


def test_inline_markup_is_served_as_plain_text(client: TestClient, store: ZoneSetStore) -> None:
    cleaned = clean_inline("Ramp <em>new sellers</em> in half the time", frozenset({"em", "strong"}))
    base = make_zone_set(texts={"hero_support": markup_to_text(cleaned)})
    zone = base.zones[0].model_copy(update={"markup": cleaned})
    store.publish(base.model_copy(update={"zones": (zone,)}))
    page = client.get(f"/c/{CAMPAIGN}", params={"wm": link_token()}).text
    assert "<em>new sellers</em>" in page  # the page renders the cleaned markup
    served = get_zones(client, wm=link_token())["zones"]["hero_support"]
    assert served == {"text": "Ramp new sellers in half the time", "rung": "personal"}


def test_a_personal_link_off_the_allowlist_falls_back_with_its_text(
    client: TestClient, store: ZoneSetStore, published: Campaign
) -> None:
    store.publish(
        make_zone_set(texts={"cta": "Claim your prize"}, hrefs={"cta": "https://evil.example/prize"})
    )
    cta = get_zones(client, wm=link_token())["zones"]["cta"]
    assert cta["rung"] == "segment" and cta["text"] != "Claim your prize"
    assert cta["href"].startswith("https://meet.acmerevenue.example/")


def test_internal_fields_never_leave(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))
    body = client.get("/v1/zones", params={"campaign": CAMPAIGN, "wm": link_token()}).text
    for internal in ("dymaxa.com/press", "personal:funding", "facts", "reason", "input_hash", "saas-mid"):
        assert internal not in body


def test_a_cookie_identifies_too(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Cookie visitor"}))
    cookie = signer().sign(
        TokenKind.COOKIE,
        tenant=TENANT,
        campaign=CAMPAIGN,
        account=PERSONAL_ACCOUNT,
        ttl_s=DEFAULT_COOKIE_TTL_S,
    )
    response = client.get(
        "/v1/zones", params={"campaign": CAMPAIGN}, headers={"cookie": f"wm_{CAMPAIGN}={cookie}"}
    )
    assert response.json()["zones"]["hero_headline"]["text"] == "Cookie visitor"
    assert "set-cookie" not in response.headers  # the API never sets the identification cookie


def test_ip_range_identifies(redis_client: redis.Redis, client: TestClient, store: ZoneSetStore) -> None:
    publish_ip_ranges(redis_client, TENANT, CAMPAIGN, {PERSONAL_ACCOUNT: ["198.51.100.0/24"]})
    store.publish(make_zone_set(texts={"hero_headline": "Hello office visitor"}))
    data = get_zones(client)  # the test client's address is 198.51.100.7
    assert data["zones"]["hero_headline"]["text"] == "Hello office visitor"


@pytest.mark.parametrize("token", ["garbage", "x" * 5000, link_token(campaign="other-campaign")])
def test_a_bad_link_token_is_anonymous_not_an_error(client: TestClient, token: str) -> None:
    assert get_zones(client, wm=token)["arm"] == "anonymous"


@pytest.mark.parametrize(
    "query, words",
    [
        ("", "exactly one campaign"),
        ("campaign=", "exactly one campaign"),
        (f"campaign={CAMPAIGN}&campaign=other", "exactly one campaign"),
        ("campaign=bad%20id", "must be an id"),
        ("campaign=%FF%FE", "must be an id"),
        ("campaign=" + "a" * 65, "must be an id"),
        ("campaign=..%2F..%2Fetc", "must be an id"),
    ],
)
def test_bad_parameters_are_400_with_a_clear_message(client: TestClient, query: str, words: str) -> None:
    response = client.get(f"/v1/zones?{query}", headers={"origin": ORIGIN})
    assert response.status_code == 400
    assert words in response.json()["error"]
    assert response.headers["vary"] == "Origin"


def test_unknown_campaign_is_404_json(client: TestClient) -> None:
    response = client.get("/v1/zones", params={"campaign": "no-such-campaign"})
    assert response.status_code == 404
    assert response.json() == {"error": "No such campaign."}
    assert response.headers["vary"] == "Origin"


# -- CORS -----------------------------------------------------------------------------------


def test_a_listed_origin_is_granted_without_credentials(client: TestClient) -> None:
    response = client.get("/v1/zones", params={"campaign": CAMPAIGN}, headers={"origin": ORIGIN})
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "access-control-allow-credentials" not in response.headers
    assert response.headers["vary"] == "Origin"


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://www.acmerevenue.example", "null", ORIGIN + ".evil.example"]
)
def test_other_origins_get_no_grant(client: TestClient, origin: str) -> None:
    response = client.get("/v1/zones", params={"campaign": CAMPAIGN}, headers={"origin": origin})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers
    assert response.headers["vary"] == "Origin"


def test_loopback_http_origins_can_be_listed_for_development(
    redis_client: redis.Redis, client: TestClient, published: Campaign
) -> None:
    local = published.model_copy(update={"snippet_origins": ("http://127.0.0.1:5173",)})
    publish_config(redis_client, local, example_inputs()[1])
    response = client.get(
        "/v1/zones", params={"campaign": CAMPAIGN}, headers={"origin": "http://127.0.0.1:5173"}
    )
    assert response.headers["access-control-allow-origin"] == "http://127.0.0.1:5173"


def test_preflight_is_answered_for_listed_origins_only(client: TestClient) -> None:
    headers = {"origin": ORIGIN, "access-control-request-method": "GET"}
    granted = client.options("/v1/zones", params={"campaign": CAMPAIGN}, headers=headers)
    assert granted.status_code == 204
    assert granted.headers["access-control-allow-origin"] == ORIGIN
    assert "GET" in granted.headers["access-control-allow-methods"]
    assert "access-control-allow-credentials" not in granted.headers
    refused = client.options(
        "/v1/zones", params={"campaign": CAMPAIGN}, headers={**headers, "origin": "https://evil.example"}
    )
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers
    assert refused.headers["vary"] == "Origin"


# -- caching, metrics, description --------------------------------------------------------------


def test_a_republished_zone_set_is_served_at_once(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "First version"}))
    assert get_zones(client, wm=link_token())["zones"]["hero_headline"]["text"] == "First version"
    store.publish(make_zone_set(texts={"hero_headline": "Second version"}, input_hash="input-hash-0002"))
    deadline = time.monotonic() + 5
    while get_zones(client, wm=link_token())["zones"]["hero_headline"]["text"] != "Second version":
        assert time.monotonic() < deadline, "the new version was never served"
        time.sleep(0.05)


def test_metrics_count_zone_requests_by_route_arm_and_rung(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set())
    get_zones(client)
    get_zones(client, wm=link_token())
    metrics = client.get("/metrics").text
    assert 'welcomemat_page_requests_total{arm="anonymous",route="/v1/zones",rung="default"} 1.0' in metrics
    assert 'welcomemat_page_requests_total{arm="personal",route="/v1/zones",rung="personal"} 1.0' in metrics


def test_openapi_describes_the_snippet_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "get" in paths["/v1/zones"] and "post" in paths["/v1/events"] and "get" in paths["/snippet.js"]
    assert "options" not in paths["/v1/zones"]
    params = {p["name"] for p in paths["/v1/zones"]["get"]["parameters"]}
    assert params == {"campaign", "wm"}


def test_no_secret_means_no_view_token_but_still_the_copy(
    redis_client: redis.Redis, published: Campaign
) -> None:
    app = renderer_app(renderer_settings(secret=None), redis_client=redis_client)
    with TestClient(app, base_url=BASE_URL) as anonymous_client:
        data = get_zones(anonymous_client)
    assert data["view"] is None and data["arm"] == "anonymous"
    assert data["zones"] == {}  # all default rung: the site keeps its copy


# -- the serializer, without an app ---------------------------------------------------------------


def build_view(client: redis.Redis) -> CampaignView:
    raw = client.get(keys.campaign_config_key(TENANT, CAMPAIGN))
    assert raw is not None
    return build_campaign_view(TENANT, CAMPAIGN, raw)  # type: ignore[arg-type]


def test_resolution_and_serializer_work_without_an_app(
    redis_client: redis.Redis, published: Campaign
) -> None:
    """What an export calls: the same texts `/v1/zones` serves, from the stored config alone."""
    view = build_view(redis_client)
    zone_set: ZoneSet = make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"})
    variant = choose_variant(Arm.PERSONAL, zone_set, datetime.now(UTC))
    payload = zones_payload(
        CAMPAIGN,
        Arm.PERSONAL,
        resolve_zones(view, view.campaign.page_zone_ids(), variant, Surface.WEB),
        view.allowlist.hosts,
    )
    document = payload.as_dict("view-1", None)
    assert document["zones"]["hero_headline"] == {
        "text": "Congrats on the Series A, Dymaxa",
        "rung": "personal",
    }  # type: ignore[index]
    assert json.loads(payload.encode("view-1", None)) == document
    assert (payload.best_rung, dict(payload.zone_rungs)) == ("personal", {"personal": 1, "segment": 4})


zone_texts = st.text(max_size=80)


@settings(deadline=None)  # timing is not the property; a loaded machine must not fail it
@given(
    texts=st.lists(zone_texts, min_size=1, max_size=5),
    view_id=st.from_regex(r"[A-Za-z0-9_-]{16}", fullmatch=True),
)
def test_encode_is_the_same_document_as_as_dict(texts: list[str], view_id: str) -> None:
    zones = [
        ResolvedZone(
            zone_id=f"z{i}",
            html=markupsafe.Markup(""),
            text=text,
            href="https://www.acmerevenue.example/x" if i == 0 else None,
            rung=Rung.SEGMENT,
        )
        for i, text in enumerate(texts)
    ]
    payload = zones_payload("c1", Arm.HOLDOUT, zones, ["b.example", "a.example", "b.example"])
    encoded = payload.encode(view_id, "tok.en")
    decoded = json.loads(encoded.decode("utf-8"))  # valid UTF-8 JSON, whatever the text held
    assert decoded == payload.as_dict(view_id, "tok.en")
    assert decoded["links"] == ["a.example", "b.example"]
    for i, text in enumerate(texts):
        expected = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert decoded["zones"][f"z{i}"]["text"] == expected


@settings(deadline=None)  # timing is not the property; a loaded machine must not fail it
@given(st.lists(st.tuples(st.text(max_size=12), st.text(max_size=40)), max_size=6))
def test_query_parser_reads_what_a_browser_encodes_like_parse_qsl(pairs: list[tuple[str, str]]) -> None:
    query = urlencode(pairs).encode("ascii")
    expected: dict[str, list[str]] = {}
    for name, value in parse_qsl(query.decode(), keep_blank_values=True):
        expected.setdefault(name, []).append(value)
    assert query_values(query) == expected


@settings(deadline=None)  # timing is not the property; a loaded machine must not fail it
@given(st.binary(max_size=200))
def test_query_parser_never_fails_on_any_bytes(query: bytes) -> None:
    for name, values in query_values(query).items():
        assert isinstance(name, str) and all(isinstance(v, str) for v in values)


def test_a_config_that_does_not_decode_is_answered_with_no_zones_not_an_error(
    redis_client: redis.Redis, client: TestClient
) -> None:
    redis_client.set(keys.campaign_config_key(TENANT, CAMPAIGN), b'{"campaign": "not a campaign"}')
    response = client.get("/v1/zones", params={"campaign": CAMPAIGN}, headers={"origin": ORIGIN})
    assert response.status_code == 200
    data = response.json()
    assert (data["zones"], data["links"], data["view"], data["arm"]) == ({}, [], None, "anonymous")
    assert "access-control-allow-origin" not in response.headers  # no config: no origins to grant
    assert "welcomemat_stored_value_errors_total 1.0" in client.get("/metrics").text
