"""Identification order (link ▸ cookie ▸ IP ▸ anonymous), token failures, cookies, client address."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterator

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.cookies import cookie_name
from server.identify import TrustedProxies, client_address
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    HOLDOUT_ACCOUNT,
    OTHER_SECRET,
    PERSONAL_ACCOUNT,
    SECRET,
    TENANT,
    account_in,
    link_token,
    make_zone_set,
    publish_ip_ranges,
    renderer_app,
    renderer_settings,
    signer,
)
from tests.server.pagetools import body_data, zones
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.zones.store import ZoneSetStore

IP_ACCOUNT = account_in(Arm.PERSONAL, prefix="ip")
OTHER_ACCOUNT = account_in(Arm.PERSONAL, prefix="other")


@pytest.fixture(autouse=True)
def personal_zone_sets(store: ZoneSetStore) -> None:
    for account in (PERSONAL_ACCOUNT, IP_ACCOUNT, OTHER_ACCOUNT):
        store.publish(make_zone_set(account, texts={"hero_headline": f"Hello {account}"}))


def view(client: TestClient, **kwargs: object) -> tuple[str, str, str]:
    """(arm, identified account's headline text, rung) of the landing page."""
    response = client.get(f"/c/{CAMPAIGN}", **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 200
    headline = zones(response.text)["hero_headline"]
    return body_data(response.text)["data-wm-arm"], headline.text, headline.rung


def _tampered_signature() -> str:
    token = link_token()
    last = "A" if token[-2] != "A" else "B"
    return token[:-2] + last + token[-1]


def _tampered_payload() -> str:
    body, _, sig = link_token().rpartition(".")
    forged = signer().sign(TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=OTHER_ACCOUNT, ttl_s=60)
    return forged.rpartition(".")[0] + "." + sig if body else sig


BAD_TOKENS: dict[str, Callable[[], str]] = {
    "garbage": lambda: "not-a-token",
    "empty": lambda: "",
    "truncated": lambda: link_token()[:-10],
    "tampered signature": _tampered_signature,
    "tampered payload": _tampered_payload,
    "expired": lambda: TokenSigner([SECRET], clock=lambda: time.time() - 7200).sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=3600
    ),
    "from the future": lambda: TokenSigner([SECRET], clock=lambda: time.time() + 3600).sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=3600
    ),
    "other tenant": lambda: link_token(tenant="globex"),
    "other campaign": lambda: link_token(campaign="q1-other"),
    "qr kind": lambda: link_token(kind=TokenKind.QR),
    "cookie kind": lambda: link_token(kind=TokenKind.COOKIE),
    "unknown key": lambda: TokenSigner([OTHER_SECRET]).sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=3600
    ),
    "oversized": lambda: "a" * 600 + "." + "b" * 43,
    "odd characters": lambda: "\x00<script>\u202e\u00ff.\u00e9",
}


@pytest.mark.parametrize("make", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_every_bad_link_token_is_anonymous_with_200(client: TestClient, make: Callable[[], str]) -> None:
    arm, text, rung = view(client, params={"wm": make()})
    assert (arm, rung) == ("anonymous", "default")
    assert "Hello" not in text


@pytest.mark.parametrize("query", ["wm=%ff%fe%00%3Cscript%3E", "wm=%ED%A0%80", "wm=%", "wm=a&wm=b", "wm"])
def test_undecodable_query_is_anonymous_with_200(client: TestClient, query: str) -> None:
    response = client.get(f"/c/{CAMPAIGN}?{query}")
    assert response.status_code == 200
    assert body_data(response.text)["data-wm-arm"] == "anonymous"


# A cookie value is ASCII on the wire; a COOKIE-kind token is a good cookie.
BAD_COOKIES = {k: v for k, v in BAD_TOKENS.items() if k not in ("cookie kind", "odd characters")} | {
    "link kind": link_token
}


@pytest.mark.parametrize("make", BAD_COOKIES.values(), ids=BAD_COOKIES.keys())
def test_every_bad_cookie_is_anonymous_with_200(client: TestClient, make: Callable[[], str]) -> None:
    client.cookies.set(cookie_name(CAMPAIGN), make())
    arm, _, rung = view(client)
    assert (arm, rung) == ("anonymous", "default")


def test_rejections_are_counted_by_reason(client: TestClient) -> None:
    view(client, params={"wm": BAD_TOKENS["expired"]()})
    metrics = client.get("/metrics").text
    assert 'welcomemat_token_rejections_total{kind="link",reason="expired"} 1.0' in metrics


def test_link_identifies_and_sets_a_strict_cookie(client: TestClient) -> None:
    response = client.get(f"/c/{CAMPAIGN}", params={"wm": link_token(contact="c_joram")})
    assert zones(response.text)["hero_headline"].text == f"Hello {PERSONAL_ACCOUNT}"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(CAMPAIGN)}=")
    for flag in ("HttpOnly", "Secure", "SameSite=lax", "Path=/", "Max-Age=7776000"):
        assert flag in cookie
    value = cookie.split(";", 1)[0].split("=", 1)[1]
    claims = signer().verify(TokenKind.COOKIE, value, tenant=TENANT, campaign=CAMPAIGN)
    assert (claims.account, claims.contact) == (PERSONAL_ACCOUNT, "c_joram")
    # The next visit, without the link, is identified by the cookie.
    arm, text, rung = view(client)
    assert (arm, text, rung) == ("personal", f"Hello {PERSONAL_ACCOUNT}", "personal")


@pytest.mark.parametrize("header", [{"Sec-GPC": "1"}, {"DNT": "1"}])
def test_no_cookie_for_visitors_who_refuse_tracking(client: TestClient, header: dict[str, str]) -> None:
    response = client.get(f"/c/{CAMPAIGN}", params={"wm": link_token()}, headers=header)
    assert "set-cookie" not in response.headers
    assert zones(response.text)["hero_headline"].rung == "personal"  # the link still personalises


def test_cookie_is_not_reissued_when_it_already_says_the_same(client: TestClient) -> None:
    token = link_token()
    assert "set-cookie" in client.get(f"/c/{CAMPAIGN}", params={"wm": token}).headers
    assert "set-cookie" not in client.get(f"/c/{CAMPAIGN}", params={"wm": token}).headers


def test_link_wins_over_a_cookie_for_another_account(client: TestClient) -> None:
    client.get(f"/c/{CAMPAIGN}", params={"wm": link_token(OTHER_ACCOUNT)})
    _, text, _ = view(client, params={"wm": link_token()})
    assert text == f"Hello {PERSONAL_ACCOUNT}"
    _, text, _ = view(client)  # the cookie now names the link's account
    assert text == f"Hello {PERSONAL_ACCOUNT}"


def test_cookie_of_another_campaign_identifies_no_one(client: TestClient) -> None:
    other = signer().sign(
        TokenKind.COOKIE, tenant=TENANT, campaign="q1-other", account=PERSONAL_ACCOUNT, ttl_s=60
    )
    client.cookies.set(cookie_name(CAMPAIGN), other)
    assert view(client)[0] == "anonymous"


def test_holdout_arm_is_the_same_for_the_whole_account(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(HOLDOUT_ACCOUNT, texts={"hero_headline": "never shown"}))
    arms = {
        view(client, params={"wm": link_token(HOLDOUT_ACCOUNT, contact=c)})[0] for c in ("c_a", "c_b", None)
    }
    assert arms == {"holdout"}


# -- IP ranges ----------------------------------------------------------------------------------


@pytest.fixture
def ip_app(redis_client: redis.Redis, published: Campaign) -> Starlette:
    publish_ip_ranges(
        redis_client,
        TENANT,
        CAMPAIGN,
        {IP_ACCOUNT: ["203.0.113.0/24", "2001:db8:1::/48"], OTHER_ACCOUNT: ["203.0.0.0/16"]},
    )
    return renderer_app(renderer_settings(trusted_proxies=("10.0.0.0/8",)), redis_client=redis_client)


@pytest.fixture
def visit_from(ip_app: Starlette) -> Iterator[Callable[..., tuple[str, str, str]]]:
    clients: list[TestClient] = []

    def visit(peer: str, **kwargs: object) -> tuple[str, str, str]:
        client = TestClient(ip_app, base_url=BASE_URL, client=(peer, 40000))
        clients.append(client)
        return view(client, **kwargs)

    yield visit
    ip_app.state.renderer.close()


def test_ip_inside_an_accounts_range_identifies_it(visit_from: Callable[..., tuple[str, str, str]]) -> None:
    assert visit_from("203.0.113.9")[1] == f"Hello {IP_ACCOUNT}"


def test_most_specific_range_wins(visit_from: Callable[..., tuple[str, str, str]]) -> None:
    assert visit_from("203.0.114.9")[1] == f"Hello {OTHER_ACCOUNT}"  # only in the /16


def test_ipv6_and_mapped_ipv4_peers(visit_from: Callable[..., tuple[str, str, str]]) -> None:
    assert visit_from("2001:db8:1::42")[1] == f"Hello {IP_ACCOUNT}"
    assert visit_from("::ffff:203.0.113.9")[1] == f"Hello {IP_ACCOUNT}"


def test_ip_outside_every_range_is_anonymous(visit_from: Callable[..., tuple[str, str, str]]) -> None:
    assert visit_from("198.51.100.1")[0] == "anonymous"


def test_forwarded_for_from_an_untrusted_peer_is_ignored(
    visit_from: Callable[..., tuple[str, str, str]],
) -> None:
    arm, _, _ = visit_from("198.51.100.1", headers={"X-Forwarded-For": "203.0.113.9"})
    assert arm == "anonymous"


def test_forwarded_for_from_a_trusted_proxy_names_the_client(
    visit_from: Callable[..., tuple[str, str, str]],
) -> None:
    assert visit_from("10.1.2.3", headers={"X-Forwarded-For": "203.0.113.9"})[1] == f"Hello {IP_ACCOUNT}"
    # A client-written hop left of the real one proves nothing.
    spoofed = {"X-Forwarded-For": "203.0.113.9, 198.51.100.1"}
    assert visit_from("10.1.2.3", headers=spoofed)[0] == "anonymous"


def test_ip_identification_sets_no_cookie(ip_app: Starlette) -> None:
    with TestClient(ip_app, base_url=BASE_URL, client=("203.0.113.9", 1)) as client:
        response = client.get(f"/c/{CAMPAIGN}")
        assert "set-cookie" not in response.headers
        assert zones(response.text)["hero_headline"].rung == "personal"


def test_token_beats_ip(visit_from: Callable[..., tuple[str, str, str]]) -> None:
    assert visit_from("203.0.113.9", params={"wm": link_token()})[1] == f"Hello {PERSONAL_ACCOUNT}"


# -- client address --------------------------------------------------------------------------------

PROXIES = TrustedProxies(["10.0.0.0/8", "fd00::/8"])


@pytest.mark.parametrize(
    ("peer", "xff", "expected"),
    [
        ("198.51.100.1", None, "198.51.100.1"),
        ("198.51.100.1", "203.0.113.9", "198.51.100.1"),  # untrusted peer: header ignored
        ("10.0.0.1", "203.0.113.9", "203.0.113.9"),
        ("10.0.0.1", "203.0.113.9, 10.0.0.2", "203.0.113.9"),  # skip our own proxies
        ("10.0.0.1", "1.2.3.4, 203.0.113.9", "203.0.113.9"),  # rightmost untrusted hop
        ("10.0.0.1", "garbage", None),
        ("10.0.0.1", "203.0.113.9:5555", "203.0.113.9"),
        ("10.0.0.1", "[2001:db8::1]:443", "2001:db8::1"),
        ("fd00::1", "::ffff:203.0.113.9", "203.0.113.9"),
        ("::ffff:10.0.0.1", "203.0.113.9", "203.0.113.9"),
        ("::ffff:198.51.100.1", None, "198.51.100.1"),
        ("testclient", None, None),
        (None, "203.0.113.9", None),
    ],
)
def test_client_address(peer: str | None, xff: str | None, expected: str | None) -> None:
    result = client_address(peer, xff, PROXIES)
    assert result == (ipaddress.ip_address(expected) if expected else None)


def test_no_trusted_proxies_means_the_peer_is_the_client() -> None:
    assert client_address("10.0.0.1", "203.0.113.9", TrustedProxies([])) == ipaddress.ip_address("10.0.0.1")


NETWORKS = st.tuples(st.ip_addresses(), st.integers(0, 128)).map(
    lambda a: ipaddress.ip_network((a[0], a[1] % (a[0].max_prefixlen + 1)), strict=False)
)


@settings(max_examples=500)
@given(networks=st.lists(NETWORKS, max_size=3), near=st.integers(-1, 1), data=st.data())
def test_a_trusted_proxy_is_one_in_a_configured_network(
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network], near: int, data: st.DataObject
) -> None:
    """Membership is what `ipaddress` says, at the networks' edges too, for either family: an
    IPv4 address is never in an IPv6 network of the same integers, nor the other way round."""
    proxies = TrustedProxies([str(n) for n in networks])
    edges = [e for n in networks for e in (n.network_address, n.broadcast_address)]
    address = data.draw(st.sampled_from(edges) | st.ip_addresses() if edges else st.ip_addresses())
    value = int(address) + near
    candidates = [ipaddress.IPv6Address(value)] if 0 <= value < 2**128 else []
    if 0 <= value < 2**32:
        candidates.append(ipaddress.IPv4Address(value))
    for candidate in candidates:
        assert (candidate in proxies) == any(candidate in n for n in networks), candidate
    assert str(address) not in proxies and int(address) not in proxies  # only addresses are


HOPS = st.sampled_from(["203.0.113.9", "10.0.0.2", "10.0.0.3:443", "[2001:db8::1]:443", "garbage", " ", ""])


@settings(max_examples=300)
@given(
    peer=st.none() | st.sampled_from(["10.0.0.1", "198.51.100.7", "::1", "not-an-ip"]),
    forwarded=st.none() | st.lists(HOPS, max_size=4).map(", ".join),
)
def test_a_remembered_client_address_is_the_one_worked_out(peer: str | None, forwarded: str | None) -> None:
    """`TrustedProxies.client_address` remembers `client_address`'s answer per (peer, header):
    the same answer, asked once or again, and never more pairs than its bound."""
    proxies = TrustedProxies(["10.0.0.0/8"], remembered=2)
    expected = client_address(peer, forwarded, proxies)
    for other in ("198.51.100.9", "10.9.9.9", peer):  # fill and overflow the memo around it
        proxies.client_address(other, forwarded)
    assert proxies.client_address(peer, forwarded) == expected
    assert proxies.client_address(peer, forwarded) == expected
    assert len(proxies._addresses) <= 2
