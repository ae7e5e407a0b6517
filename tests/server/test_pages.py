"""Landing and continuation pages: arms, rungs, fallbacks, zone markup, cache invalidation."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
import redis
from starlette.testclient import TestClient

from tests.server.conftest import (
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    PERSONAL_ACCOUNT,
    TENANT,
    link_token,
    make_zone_set,
    publish_config,
    renderer_app,
)
from tests.server.pagetools import body_data, cta_destination, zones
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSetStatus

LANDING_ZONES = ["hero_headline", "hero_support", "proof", "cta"]


def landing(client: TestClient, account: str | None = PERSONAL_ACCOUNT, page: str = "") -> str:
    params = {"wm": link_token(account)} if account else {}
    response = client.get(f"/c/{CAMPAIGN}{page}", params=params)
    assert response.status_code == 200, response.text
    return response.text


def test_anonymous_visitor_gets_the_campaign_default(client: TestClient, published: Campaign) -> None:
    html = landing(client, None)
    found = zones(html)
    assert list(found) == LANDING_ZONES
    assert {z.rung for z in found.values()} == {"default"}
    assert found["hero_headline"].text == published.default_copy["hero_headline"].text
    assert found["hero_headline"].tag == "h1"
    assert cta_destination(client, found["cta"].href) == "https://www.acmerevenue.example/contact"
    assert found["cta"].tag == "a"
    assert body_data(html)["data-wm-arm"] == Arm.ANONYMOUS


def test_personal_zones_from_the_zone_set_rest_from_its_segment(
    client: TestClient, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))
    found = zones(landing(client))
    assert found["hero_headline"].rung == "personal"
    assert found["hero_headline"].text == "Congrats on the Series A, Dymaxa"
    assert found["hero_support"].rung == "segment"  # saas-mid copy
    assert cta_destination(client, found["cta"].href) == "https://meet.acmerevenue.example/ramp-review"


def test_every_zone_element_carries_zone_and_rung_and_a_space_reserving_class(client: TestClient) -> None:
    html = landing(client, None)
    for zone_id in LANDING_ZONES:
        assert f'class="wm-zone wm-zone--{zone_id}' in html
    assert "style=" not in html  # CSP: style-src 'self', no inline styles


def test_holdout_account_gets_its_segment_copy_not_its_zone_set(
    client: TestClient, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(HOLDOUT_ACCOUNT, texts={"hero_headline": "PERSONAL TEXT"}, segment="fintech"))
    html = landing(client, HOLDOUT_ACCOUNT)
    found = zones(html)
    assert "PERSONAL TEXT" not in html
    assert {z.rung for z in found.values()} == {"segment"}
    assert found["hero_headline"].text == "Ramp sellers fast in a regulated market"
    assert body_data(html)["data-wm-arm"] == Arm.HOLDOUT


def test_identified_account_without_a_zone_set_gets_the_default(client: TestClient) -> None:
    found = zones(landing(client, "acct_never_published"))
    assert {z.rung for z in found.values()} == {"default"}


@pytest.mark.parametrize("status", [ZoneSetStatus.PENDING_REVIEW, ZoneSetStatus.REJECTED])
def test_unpublished_zone_set_is_not_served(
    client: TestClient, store: ZoneSetStore, status: ZoneSetStatus
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "NOT YET APPROVED"}, status=status))
    html = landing(client)
    assert "NOT YET APPROVED" not in html
    assert zones(html)["hero_headline"].rung == "segment"


def test_zone_set_past_valid_until_falls_back(client: TestClient, store: ZoneSetStore) -> None:
    expired = datetime.now(UTC) - timedelta(minutes=1)
    store.publish(make_zone_set(texts={"hero_headline": "STALE CLAIM"}, valid_until=expired))
    html = landing(client)
    assert "STALE CLAIM" not in html
    assert zones(html)["hero_headline"].rung == "segment"


def test_valid_until_is_checked_per_request_even_when_the_page_is_cached(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    from tests.server.conftest import BASE_URL, renderer_settings

    now = [time.time()]
    app = renderer_app(renderer_settings(), redis_client=redis_client, clock=lambda: now[0])
    store.publish(
        make_zone_set(
            texts={"hero_headline": "FRESH CLAIM"}, valid_until=datetime.now(UTC) + timedelta(hours=1)
        )
    )
    with TestClient(app, base_url=BASE_URL) as client:
        assert "FRESH CLAIM" in landing(client)
        now[0] += 2 * 3600  # two hours later, nothing republished, zone set still cached
        params = {"wm": link_token()}
        html = client.get(f"/c/{CAMPAIGN}", params=params).text
        assert "FRESH CLAIM" not in html


def test_link_refused_at_render_falls_back_for_that_zone(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(
        make_zone_set(
            texts={"hero_headline": "Personal headline", "cta": "Book now"},
            hrefs={"cta": "https://evil.example/phish"},
        )
    )
    found = zones(landing(client))
    assert found["hero_headline"].rung == "personal"
    assert found["cta"].rung == "segment"
    assert cta_destination(client, found["cta"].href) == "https://meet.acmerevenue.example/ramp-review"


def test_allowlisted_personal_link_is_rendered_normalised(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(
        make_zone_set(
            texts={"cta": "Book your review"}, hrefs={"cta": "HTTPS://Meet.AcmeRevenue.example/ramp-review"}
        )
    )
    found = zones(landing(client))
    assert found["cta"].rung == "personal"
    assert cta_destination(client, found["cta"].href) == "https://meet.acmerevenue.example/ramp-review"


def test_new_published_version_is_served_after_invalidation(
    app: object, client: TestClient, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Version one"}, input_hash="hash-version-1"))
    assert zones(landing(client))["hero_headline"].text == "Version one"
    watcher = next(iter(client.app.state.renderer.watchers.values()))  # type: ignore[attr-defined]
    assert watcher.subscribed.wait(5)
    store.publish(make_zone_set(texts={"hero_headline": "Version two"}, input_hash="hash-version-2"))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if zones(landing(client))["hero_headline"].text == "Version two":
            break
        time.sleep(0.02)
    else:
        pytest.fail("the new version was not served within 5 s (zone cache TTL is 30 s)")


def test_rollback_to_pending_is_honoured_after_invalidation(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Approved claim"}))
    assert zones(landing(client))["hero_headline"].rung == "personal"
    watcher = next(iter(client.app.state.renderer.watchers.values()))  # type: ignore[attr-defined]
    assert watcher.subscribed.wait(5)
    store.set_status("acme", CAMPAIGN, PERSONAL_ACCOUNT, ZoneSetStatus.REJECTED)
    deadline = time.monotonic() + 5
    while zones(landing(client))["hero_headline"].rung == "personal":
        assert time.monotonic() < deadline, "rejected zone set still served"
        time.sleep(0.02)


def test_continuation_page_uses_the_same_zone_set(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"continuation_headline": "Congrats again on the Series A"}))
    found = zones(landing(client, page="/continue"))
    assert list(found) == ["continuation_headline", "hero_support", "cta"]
    assert found["continuation_headline"].rung == "personal"


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/c/no-such-campaign", 404),
        ("/c/no-such-campaign/continue", 404),
        ("/c/bad%20id", 404),
        ("/c/%2e%2e", 404),
        ("/c/" + "x" * 65, 404),
        ("/c/{bad}", 404),
        ("/nowhere", 404),
    ],
)
def test_unknown_or_invalid_campaign_is_404_not_5xx(client: TestClient, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status
    assert "text/html" in response.headers["content-type"]


def test_campaign_without_a_continuation_page_is_404(
    redis_client: redis.Redis, client: TestClient, published: Campaign
) -> None:
    from tests.server.conftest import example_inputs

    campaign, zone_contracts = example_inputs()
    data = campaign.model_dump(mode="json")
    data["campaign"] = "landing-only"
    data["pages"] = {"landing": data["pages"]["landing"]}
    publish_config(redis_client, data, zone_contracts)
    assert client.get("/c/landing-only").status_code == 200
    assert client.get("/c/landing-only/continue").status_code == 404


def test_ambiguous_campaign_id_is_served_by_neither_tenant_until_one_owns_it(
    redis_client: redis.Redis, client: TestClient, published: Campaign
) -> None:
    """Two tenants under one id with no recorded owner (published before owners were recorded)."""
    from tests.server.conftest import example_inputs

    campaign, zone_contracts = example_inputs()
    data = campaign.model_dump(mode="json")
    data["tenant"] = "globex"
    data["default_copy"] = {**data["default_copy"], "hero_headline": "Globex copy for every visitor"}
    publish_config(redis_client, data, zone_contracts)
    client.app.state.renderer.campaigns.forget(CAMPAIGN)  # type: ignore[attr-defined]
    assert client.get(f"/c/{CAMPAIGN}").status_code == 404
    redis_client.set(keys.campaign_owner_key(CAMPAIGN), TENANT)
    client.app.state.renderer.campaigns.forget(CAMPAIGN)  # type: ignore[attr-defined]
    page = client.get(f"/c/{CAMPAIGN}")
    assert page.status_code == 200 and "Globex" not in page.text
    assert zones(page.text)["hero_headline"].text == published.default_copy["hero_headline"].text


def test_head_is_answered_without_a_body(client: TestClient) -> None:
    response = client.head(f"/c/{CAMPAIGN}")
    assert response.status_code == 200 and response.content == b""


def test_page_is_not_cacheable_by_shared_caches(client: TestClient) -> None:
    assert client.get(f"/c/{CAMPAIGN}").headers["cache-control"] == "private, no-store"


def test_each_view_gets_its_own_view_id(client: TestClient) -> None:
    first, second = (body_data(landing(client, None))["data-wm-view"] for _ in range(2))
    assert first != second and len(first) == 16


def test_stamped_inline_markup_renders_and_a_forged_stamp_is_escaped(
    client: TestClient, store: ZoneSetStore
) -> None:
    from welcomemat.security.markup import CleanedMarkup, clean_inline, markup_to_text
    from welcomemat.zones.zoneset import ZoneSet

    source = "Ramp <em>every</em> new seller"
    good = clean_inline(source, frozenset({"em", "strong"}))  # hero_support allows em, strong
    plain = markup_to_text(good)  # a zone stores its plain text beside the cleaned markup
    forged = CleanedMarkup(html='<em onclick="x()">every</em>', stamp=good.stamp)
    for markup, expect_em in ((good, True), (forged, False)):
        base = make_zone_set(texts={"hero_support": plain}, input_hash=f"hash-{expect_em}")
        zone_set = ZoneSet.model_validate(
            base.model_dump() | {"zones": [base.zones[0].model_copy(update={"markup": markup}).model_dump()]}
        )
        store.publish(zone_set)
        client.app.state.renderer.zone_cache.clear_campaign("acme", CAMPAIGN)  # type: ignore[attr-defined]
        html = landing(client)
        assert ("<em>every</em>" in html) is expect_em
        assert "onclick" not in html
        assert zones(html)["hero_support"].text == "Ramp every new seller"
