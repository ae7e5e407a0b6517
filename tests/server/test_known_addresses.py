"""Visitors without tokens remembered by the account their address places them in: the same
answer as the full path for every peer and X-Forwarded-For (spoofed ones included), shared by
every address of an account's ranges, never once the IP ranges, the zone sets or the config
changed; from a placement's second request; bounded."""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.identify import Identifier, Identity, IdentityMethod, TrustedProxies
from server.ip_index import IpRangeIndex
from server.known_visitors import ADDRESS_TTL_S, AddressKey, KnownAddresses
from server.visitor import Origin, Visitor, VisitorSources, placed_account
from server.zone_cache import ZoneSetCache
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    TENANT,
    account_in,
    make_zone_set,
    publish_ip_ranges,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.pagetools import body_data, without_per_request_values, zones
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.view import CampaignView
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.subject_requests import Subject, erase
from welcomemat.zones.store import ZoneSetStore

IP_ACCOUNT = account_in(Arm.PERSONAL, prefix="ipk")
OTHER_ACCOUNT = account_in(Arm.PERSONAL, prefix="otherk")
RANGES = {IP_ACCOUNT: ["203.0.113.0/24"], OTHER_ACCOUNT: ["198.51.100.0/24"]}
PROXY = "10.1.2.3"

# (peer, X-Forwarded-For): direct, through the trusted proxy, spoofed by an untrusted peer,
# a client-written hop left of the proxy's, nobody's range.
ORIGINS = [
    ("203.0.113.9", None),
    (PROXY, "203.0.113.9"),
    ("192.0.2.1", "203.0.113.9"),
    (PROXY, "203.0.113.9, 192.0.2.1"),
    (PROXY, "198.51.100.7"),
    ("192.0.2.1", None),
]


@pytest.fixture(autouse=True)
def personal_zone_sets(store: ZoneSetStore) -> None:
    for account in (IP_ACCOUNT, OTHER_ACCOUNT):
        store.publish(make_zone_set(account, texts={"hero_headline": f"Hello {account}"}))


def make_app(redis_client: redis.Redis, **tuning: Any) -> Starlette:
    options = {"watcher_poll_s": 0.05} | tuning
    return renderer_app(
        renderer_settings(trusted_proxies=("10.0.0.0/8",)),
        redis_client=redis_client,
        tuning=tuning_for_tests(**options),
    )


@pytest.fixture
def ranged(redis_client: redis.Redis, published: Campaign) -> None:
    publish_ip_ranges(redis_client, TENANT, CAMPAIGN, RANGES)


def get(app: Starlette, peer: str, forwarded: str | None, path: str = f"/c/{CAMPAIGN}") -> str:
    headers = {"x-forwarded-for": forwarded} if forwarded is not None else {}
    response = TestClient(app, base_url=BASE_URL, client=(peer, 40000)).get(path, headers=headers)
    assert response.status_code == 200, response.text
    assert "set-cookie" not in response.headers
    return response.text


def page(app: Starlette, peer: str, forwarded: str | None = None) -> str:
    return without_per_request_values(get(app, peer, forwarded))


def hero(html: str) -> str:
    return zones(html)["hero_headline"].text


def stats(app: Starlette) -> dict[str, int]:
    return dict(app.state.renderer.metrics.pages.known_addresses)


@pytest.fixture
def apps(redis_client: redis.Redis, ranged: None) -> Iterator[tuple[Starlette, Starlette]]:
    cached, uncached = make_app(redis_client), make_app(redis_client, known_visitor_entries=0)
    with TestClient(cached), TestClient(uncached):  # lifespans: watchers, event writer
        for app in (cached, uncached):
            _loaded(app)
        yield cached, uncached


def test_every_origin_gets_what_the_full_path_gives(apps: tuple[Starlette, Starlette]) -> None:
    """Pages and /v1/zones: with the cache on, the same bytes (but for nonce and view id) for
    each peer and header as with it off, a spoofed header included; remembered from the
    second request of each origin, answered from the third."""
    cached, uncached = apps
    expected = {
        ORIGINS[0]: f"Hello {IP_ACCOUNT}",
        ORIGINS[1]: f"Hello {IP_ACCOUNT}",
        ORIGINS[4]: f"Hello {OTHER_ACCOUNT}",
    }
    for origin in ORIGINS:
        answers = [page(app, *origin) for app in (cached, uncached, cached, cached, cached, uncached)]
        assert len(set(answers)) == 1, origin
        if origin in expected:
            assert hero(answers[0]) == expected[origin], origin
        else:  # anonymous: a spoofed header places no one
            assert body_data(answers[0])["data-wm-arm"] == "anonymous", origin
    # Three placements: IP_ACCOUNT (origins 0, 1), OTHER_ACCOUNT (4), no one (2, 3, 5 and
    # `_loaded`'s address). Each is remembered from its second request and answered from its
    # third, whichever of its origins asks: misses are `_loaded`'s, two for each account and
    # the second anonymous request (origin 2's first); the other 19 of the cached app's 24 hit.
    assert stats(cached) == {"hit": 19, "miss": 1 + 2 + 1 + 2}
    assert len(cached.state.renderer.known_page_addresses) == 3
    assert stats(uncached)["hit"] == 0 and len(uncached.state.renderer.known_page_addresses) == 0

    zones_path = f"/v1/zones?campaign={CAMPAIGN}"
    for origin in ORIGINS:
        bodies = []
        for app in (cached, uncached, cached, cached):
            body = json.loads(get(app, *origin, path=zones_path))
            body.pop("view_id"), body.pop("view", None)
            bodies.append(body)
        assert all(b == bodies[0] for b in bodies), origin


def test_every_address_of_an_accounts_ranges_shares_its_answer(apps: tuple[Starlette, Starlette]) -> None:
    """An office's visitors, each from an address not seen before: the account's page for each,
    the full path for the first two only; one entry for them all."""
    cached, uncached = apps
    for n in range(6):
        html = page(cached, f"203.0.113.{n + 10}")
        assert html == page(uncached, f"203.0.113.{n + 10}")
        assert hero(html) == f"Hello {IP_ACCOUNT}"
    assert stats(cached) == {"hit": 4, "miss": 1 + 2}  # 1: `_loaded`
    assert len(cached.state.renderer.known_page_addresses) == 1


def test_changed_ip_ranges_place_a_remembered_address_anew(redis_client: redis.Redis, ranged: None) -> None:
    """Ranges reloaded every 50 ms but unchanged keep what was remembered; the range moves to
    another account: the address is served the new account's page as soon as the renderer
    reloads its ranges; then they are dropped: anonymous."""
    app = make_app(redis_client, ip_refresh_s=0.05)
    with TestClient(app):
        _remember_the_office(app, pause_s=0.12)  # reloads between the views
        publish_ip_ranges(redis_client, TENANT, CAMPAIGN, {OTHER_ACCOUNT: ["203.0.113.0/24"]})
        _eventually(lambda: hero(page(app, "203.0.113.9")) == f"Hello {OTHER_ACCOUNT}")
        publish_ip_ranges(redis_client, TENANT, CAMPAIGN, {})
        _eventually(lambda: body_data(page(app, "203.0.113.9"))["data-wm-arm"] == "anonymous")


def test_a_remembered_ip_visitor_gets_a_newly_published_version(
    redis_client: redis.Redis, ranged: None, store: ZoneSetStore
) -> None:
    app = make_app(redis_client)
    with TestClient(app):
        _remember_the_office(app)
        store.publish(
            make_zone_set(IP_ACCOUNT, texts={"hero_headline": "Version two"}, input_hash="hash-version-2")
        )
        _eventually(lambda: hero(page(app, "203.0.113.9")) == "Version two")


def test_an_erased_account_is_not_served_to_its_remembered_address(
    redis_client: redis.Redis, ranged: None
) -> None:
    """An office address remembered for an account: once the account is erased (its ranges
    dropped with it), that address gets the anonymous page, within the watcher's reaction."""
    app = make_app(redis_client)
    with TestClient(app):
        _remember_the_office(app)
        auditor = Auditor("dpo", Via.CLI, lambda: datetime.now(UTC))
        erase(redis_client, Subject(TENANT, IP_ACCOUNT), auditor=auditor, reason="request")
        _eventually(lambda: body_data(page(app, "203.0.113.9"))["data-wm-arm"] == "anonymous")
        for _ in range(3):  # and stays so, remembered again or not
            html = page(app, "203.0.113.9")
            assert body_data(html)["data-wm-arm"] == "anonymous" and IP_ACCOUNT not in html


def _remember_the_office(app: Starlette, pause_s: float = 0.0) -> None:
    """The campaign loaded, then three views from the office's address: the account's page
    each time, remembered from the second, answered from memory on the third."""
    _loaded(app)
    for _ in range(3):
        assert hero(page(app, "203.0.113.9")) == f"Hello {IP_ACCOUNT}"
        time.sleep(pause_s)
    assert stats(app)["hit"] == 1


def _loaded(app: Starlette) -> None:
    """Load the campaign and wait for its watcher: subscribing clears the campaign's cached
    zone sets (a fresh start), which also voids what was remembered before."""
    page(app, "192.0.2.200")
    watcher = next(iter(app.state.renderer.watchers.values()))
    assert watcher.subscribed.wait(5)


def _eventually(check: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.02)


# -- the cache itself ------------------------------------------------------------------------


def _view() -> CampaignView:
    return cast(CampaignView, SimpleNamespace(tenant=TENANT))


def _parts(size: int = 10) -> tuple[KnownAddresses[str], ZoneSetCache, list[float]]:
    mono = [1000.0]
    zone_cache = ZoneSetCache(100, ttl_s=30, clock=lambda: mono[0])
    known: KnownAddresses[str] = KnownAddresses(zone_cache, max_entries=size, monotonic=lambda: mono[0])
    return known, zone_cache, mono


def _cached(zone_cache: ZoneSetCache, account: str) -> Any:
    zone_set = make_zone_set(account)
    zone_cache.put((TENANT, CAMPAIGN, account), zone_set, zone_cache.begin_fetch((TENANT, CAMPAIGN, account)))
    return zone_set


ANONYMOUS = Visitor(Identity(IdentityMethod.ANONYMOUS), None, Arm.ANONYMOUS, None)


def _twice(known: KnownAddresses[str], key: AddressKey, view: CampaignView, visitor: Visitor) -> list[Any]:
    return [known.remember(key, view, 0, visitor, "page") for _ in range(2)]


def test_a_placement_is_remembered_from_its_second_request() -> None:
    known, _, _ = _parts()
    key, view = (CAMPAIGN, "landing", None, IpRangeIndex.empty()), _view()
    first, second = _twice(known, key, view, ANONYMOUS)
    assert first is None and second is not None
    hit = known.get(key, view)
    assert hit is not None and hit.result == "page" and hit.identity.method is IdentityMethod.ANONYMOUS


def test_new_ip_ranges_are_a_new_key() -> None:
    known, _, _ = _parts()
    index, view = IpRangeIndex.empty(), _view()
    _twice(known, (CAMPAIGN, "landing", None, index), view, ANONYMOUS)
    assert known.get((CAMPAIGN, "landing", None, index), view) is not None
    assert known.get((CAMPAIGN, "landing", None, IpRangeIndex.empty()), view) is None


def test_an_anonymous_entry_ends_after_the_ttl_and_an_ip_one_with_its_zone_set() -> None:
    known, zone_cache, mono = _parts()
    view, index = _view(), IpRangeIndex.empty()
    anonymous_key = (CAMPAIGN, "landing", None, index)
    _twice(known, anonymous_key, view, ANONYMOUS)
    ip_key = (CAMPAIGN, "landing", "acct_ip", index)
    ip_visitor = Visitor(
        Identity(IdentityMethod.IP, "acct_ip"), None, Arm.PERSONAL, _cached(zone_cache, "acct_ip")
    )
    _twice(known, ip_key, view, ip_visitor)
    mono[0] += 31  # past the zone-set cache's TTL
    assert known.get(ip_key, view) is None and known.get(anonymous_key, view) is not None
    mono[0] += ADDRESS_TTL_S
    assert known.get(anonymous_key, view) is None


def test_a_fallback_and_token_visitors_are_not_remembered_by_address() -> None:
    known, _, _ = _parts()
    view, index = _view(), IpRangeIndex.empty()
    fallback = Visitor(Identity(IdentityMethod.IP, "acct_ip"), None, Arm.PERSONAL, None)  # not in the cache
    assert _twice(known, (CAMPAIGN, "landing", "acct_ip", index), view, fallback) == [None, None]
    for method in (IdentityMethod.LINK, IdentityMethod.COOKIE):
        visitor = Visitor(Identity(method, "acct_t"), None, Arm.PERSONAL, None)
        assert _twice(known, (CAMPAIGN, "landing", "acct_t", index), view, visitor) == [None, None]
    assert len(known) == 0


def test_entries_and_addresses_seen_once_are_bounded() -> None:
    known, _, _ = _parts(size=3)
    view, index = _view(), IpRangeIndex.empty()
    keys = [(CAMPAIGN, f"page{n}", None, index) for n in range(6)]
    for key in keys:
        _twice(known, key, view, ANONYMOUS)
    assert len(known) == 3 and len(known._seen) == 0
    assert [known.get(k, view) is not None for k in keys] == [False] * 3 + [True] * 3
    for n in range(100):
        known.remember((CAMPAIGN, f"other{n}", None, index), view, 0, ANONYMOUS, "page")
    assert len(known._seen) == 3


def test_a_size_of_zero_turns_it_off() -> None:
    known, _, _ = _parts(size=0)
    _twice(known, (CAMPAIGN, "landing", None, IpRangeIndex.empty()), _view(), ANONYMOUS)
    assert len(known) == 0


_HOSTS = ["203.0.113.9", "198.51.100.7", "192.0.2.1", "10.1.2.3", "10.9.9.9", "2001:db8::1", "garbage"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_HOSTS),
            st.none() | st.lists(st.sampled_from(_HOSTS), min_size=1, max_size=3).map(", ".join),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_a_remembered_answer_is_the_one_the_address_gets_afresh(
    requests: list[tuple[str, str | None]],
) -> None:
    """Whatever peers and headers come, in whatever order: the identity remembered for a
    request's placement is the one identification gives that request from scratch."""
    known, zone_cache, _ = _parts(size=8)
    proxies = TrustedProxies(["10.0.0.0/8"])
    index = IpRangeIndex({a: [ipaddress.ip_network(r) for r in rs] for a, rs in RANGES.items()})
    identifier = Identifier(None)
    for account in RANGES:
        _cached(zone_cache, account)
    view = _view()

    def fresh(peer: str, forwarded: str | None) -> Identity:
        identity, _ = identifier.identify(
            tenant=TENANT,
            campaign=CAMPAIGN,
            link_token=None,
            cookie_token=None,
            address=lambda: proxies.client_address(peer, forwarded),
            ip_index=index,
        )
        return identity

    sources = cast(VisitorSources, SimpleNamespace(proxies=proxies))
    for peer, forwarded in requests:
        key = (CAMPAIGN, "landing", placed_account(sources, Origin(peer, forwarded, index)), index)
        identity = fresh(peer, forwarded)
        hit = known.get(key, view)
        if hit is not None:
            assert hit.identity == identity
            continue
        zone_set = zone_cache.get((TENANT, CAMPAIGN, identity.account))[1] if identity.account else None
        arm = Arm.PERSONAL if identity.account else Arm.ANONYMOUS
        known.remember(key, view, zone_cache.changes, Visitor(identity, None, arm, zone_set), "page")
