"""A renderer's memory follows its cache limits, not its visitors: after many more distinct
visitors than any cache holds (cookies, link clicks, /v1/zones, addresses), every per-visitor cache
holds at most its limit, and the visitors of the last requests are still served from them."""

from __future__ import annotations

import redis
from starlette.testclient import TestClient

from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    TENANT,
    accounts_in,
    link_token,
    make_zone_set,
    publish_ip_ranges,
    renderer_app,
    tuning_for_tests,
)
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.security.tokens import TokenKind
from welcomemat.zones.store import ZoneSetStore

VISITORS = 120
LIMITS = {
    "zone_cache_entries": 16,
    "render_cache_entries": 12,
    "known_visitor_entries": 8,
    "token_memo_entries": 24,
}


def test_caches_stay_within_their_limits_after_many_distinct_visitors(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    accounts = accounts_in(Arm.PERSONAL, VISITORS)
    for account in accounts:
        store.publish(make_zone_set(account, texts={"hero_headline": f"Congrats on the Series A, {account}"}))
    # One account's IP range: visitors without tokens are then told apart by their address.
    publish_ip_ranges(redis_client, TENANT, CAMPAIGN, {accounts[0]: ["203.0.113.0/24"]})
    app = renderer_app(redis_client=redis_client, tuning=tuning_for_tests(**LIMITS))
    renderer = app.state.renderer
    with TestClient(app, base_url=BASE_URL) as client:
        for account in accounts:
            client.cookies.clear()
            cookie = link_token(account, kind=TokenKind.COOKIE)
            link = link_token(account)
            for path, headers in (
                (f"/c/{CAMPAIGN}", {"cookie": f"wm_{CAMPAIGN}={cookie}"}),
                (f"/c/{CAMPAIGN}?wm={link}", {"dnt": "1"}),
                (f"/v1/zones?campaign={CAMPAIGN}&wm={link}", {}),
            ):
                response = client.get(path, headers=headers)
                assert response.status_code == 200, path
                assert account in response.text, path  # each visitor got their own copy
            client.cookies.clear()
        for n in range(VISITORS):  # anonymous visitors, each from its own address, twice
            for _ in range(2):
                visitor = TestClient(app, base_url=BASE_URL, client=(f"198.51.100.{n}", 40000))
                assert visitor.get(f"/c/{CAMPAIGN}").status_code == 200

        assert len(renderer.zone_cache) <= LIMITS["zone_cache_entries"]
        assert len(renderer.pages) <= LIMITS["render_cache_entries"]
        assert len(renderer.known_pages) <= LIMITS["known_visitor_entries"]
        assert 0 < len(renderer.known_page_addresses) <= LIMITS["known_visitor_entries"]
        assert len(renderer.known_page_addresses._seen) <= LIMITS["known_visitor_entries"]
        assert len(renderer.identifier) <= LIMITS["token_memo_entries"]

        # The most recent visitor is still held: their next page costs no Redis read.
        assert renderer.zone_cache.get((TENANT, CAMPAIGN, accounts[-1]))[0]
