"""First clicks remembered: a link or QR token is verified once, and the cookie its arrival
earns is signed once, for as long as the token memo trusts the token (`server.identify`).

With the memo on, every answer is the one the renderer gives with it off (page, cookie,
redirect, events), for link and QR arrivals, a second click, an expired token, an erased
account and rotated keys; and the memo stays within its bound.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from typing import Any

import redis
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.testclient import TestClient

from server.cookies import identity_cookie_header, set_identity_cookie
from server.identify import Identifier
from tests.event_stream import stream_events
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    OTHER_SECRET,
    PERSONAL_ACCOUNT,
    PUBLIC_URL,
    SECRET,
    TENANT,
    make_zone_set,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.conftest import link_token as conftest_link_token
from tests.server.pagetools import without_per_request_values, zones
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.subject_requests import Subject, erase
from welcomemat.security.tokens import DEFAULT_COOKIE_TTL_S, TokenKind, TokenSigner
from welcomemat.zones.store import ZoneSetStore

# Both apps' clocks: fixed, so a cookie signed now is the same string in either.
NOW = float(int(time.time()))


def link_token(account: str = PERSONAL_ACCOUNT, **kwargs: Any) -> str:
    """A token signed on the renderers' clock (`NOW`), however long after import a test runs."""
    return conftest_link_token(account, clock=lambda: NOW, **kwargs)


MEMO_OFF = {"token_memo_entries": 0, "known_visitor_entries": 0}


def make_app(
    redis_client: redis.Redis, clock: Callable[[], float], secrets: str = SECRET, **tuning: Any
) -> Starlette:
    return renderer_app(
        renderer_settings(secret=secrets),
        redis_client=redis_client,
        clock=clock,
        tuning=tuning_for_tests(watcher_poll_s=0.05, **tuning),
    )


@contextmanager
def memo_on_and_off(
    redis_client: redis.Redis, clock: Callable[[], float] = lambda: NOW, secrets: str = SECRET
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two renderers on the same Redis and clock, with the memos (token and returning
    visitor) and without."""
    with ExitStack() as stack:
        clients = [
            stack.enter_context(
                TestClient(make_app(redis_client, clock, secrets, **tuning), base_url=BASE_URL)
            )
            for tuning in ({}, MEMO_OFF)
        ]
        for client in clients:
            client.get(f"/c/{CAMPAIGN}")  # load the campaign
            watcher = next(iter(client.app.state.renderer.watchers.values()))  # type: ignore[attr-defined]
            assert watcher.subscribed.wait(5)
        yield clients[0], clients[1]


def answer(client: TestClient, path: str) -> tuple[int, str, str | None, str | None]:
    """(status, page without its per-request values, Set-Cookie, Location); no cookie kept."""
    client.cookies.clear()
    response = client.get(path, follow_redirects=False)
    return (
        response.status_code,
        without_per_request_values(response.text),
        response.headers.get("set-cookie"),
        response.headers.get("location"),
    )


def event_fields(redis_client: redis.Redis) -> list[tuple[bytes | None, ...]]:
    """The stream's events without their view ids (random per view), oldest first."""
    wanted = (b"type", b"account", b"contact", b"arm", b"rung", b"identified_by")
    return [tuple(fields.get(name) for name in wanted) for _, fields in stream_events(redis_client, TENANT)]


def cookie_claims(set_cookie: str | None, secrets: list[str]) -> Any:
    assert set_cookie is not None
    value = set_cookie.split(";", 1)[0].split("=", 1)[1]
    return TokenSigner(secrets).verify(TokenKind.COOKIE, value, tenant=TENANT, campaign=CAMPAIGN)


def test_link_and_qr_arrivals_get_the_same_answers_remembered(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    """First click, second and third click, a QR scan and its repeat, each in turn through the
    renderer with its memos and the one without: the same page, cookie, redirect, events."""
    store.publish(make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"}))
    link = f"/c/{CAMPAIGN}?wm={link_token(contact='c_joram')}"
    qr = f"/q/{link_token(kind=TokenKind.QR, contact='c_joram')}"
    with memo_on_and_off(redis_client) as (on, off):
        redis_client.delete(keys.events_stream_key(TENANT))
        for path in (link, link, link, qr, qr, f"/c/{CAMPAIGN}/continue?wm={link_token()}"):
            with_memo, without = answer(on, path), answer(off, path)
            assert with_memo == without, path
            assert with_memo[2] is not None  # a cookie was set
        renderer = on.app.state.renderer  # type: ignore[attr-defined]
        assert len(renderer.identifier) == 3  # three tokens, each verified once
        assert len(off.app.state.renderer.identifier) == 0  # type: ignore[attr-defined]
    # both renderers closed: their last events written (in whatever order their writers ran)
    # (the anonymous views that loaded the campaign left out)
    events = Counter(e for e in event_fields(redis_client) if e[5] != b"anonymous")
    assert sum(events.values()) == 12 and all(n % 2 == 0 for n in events.values())  # as many each
    account = PERSONAL_ACCOUNT.encode()
    assert events[(b"view", account, b"c_joram", b"personal", b"personal", b"link")] == 2 * 3
    assert events[(b"qr_scan", account, b"c_joram", b"personal", None, b"qr")] == 2 * 2
    # the cookie is the signer's, for the token's account and contact, living 90 days
    claims = cookie_claims(with_memo[2], [SECRET])
    assert (claims.account, claims.contact, claims.expires_at - claims.issued_at) == (
        PERSONAL_ACCOUNT,
        None,
        DEFAULT_COOKIE_TTL_S,
    )


def test_a_second_click_gets_the_cookie_the_first_signed(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    """Time moves between clicks: the remembered cookie is the first click's (issued then),
    signed once; without the memo each click signs a new one, issued at its own second."""
    store.publish(make_zone_set())
    now = [NOW]
    link = f"/c/{CAMPAIGN}?wm={link_token()}"
    with memo_on_and_off(redis_client, lambda: now[0]) as (on, off):
        first_on, first_off = answer(on, link)[2], answer(off, link)[2]
        assert first_on == first_off
        now[0] += 5
        assert answer(on, link)[2] == first_on
        later = answer(off, link)[2]
        assert cookie_claims(later, [SECRET]).issued_at == cookie_claims(first_on, [SECRET]).issued_at + 5


def test_an_expired_token_is_refused_remembered_or_not(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "PERSONAL"}))
    now = [NOW]
    issued = TokenSigner([SECRET], clock=lambda: NOW)  # issued at the renderers' now
    link_token = issued.sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=600
    )
    qr_token = issued.sign(
        TokenKind.QR, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=600
    )
    link, qr = f"/c/{CAMPAIGN}?wm={link_token}", f"/q/{qr_token}"
    with memo_on_and_off(redis_client, lambda: now[0]) as (on, off):
        for path in (link, qr, link, qr):  # remembered (with their cookies) by the one app
            assert answer(on, path) == answer(off, path)
        now[0] += 601  # both tokens have expired; nothing else changed
        for path in (link, qr):
            with_memo, without = answer(on, path), answer(off, path)
            assert with_memo == without and with_memo[2] is None  # no cookie
        status, html, _, _ = answer(on, link)
        assert status == 200 and {z.rung for z in zones(html).values()} == {"default"}
        assert answer(on, qr)[3] == f"{PUBLIC_URL}/c/{CAMPAIGN}/continue"  # anonymous, no cookie


def test_an_erased_account_is_anonymous_at_once_remembered_or_not(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    """Clicked (and so remembered, cookie and all) before its account is erased: after the
    erasure the link and the QR code identify no one and set no cookie, in both renderers."""
    store.publish(make_zone_set(texts={"hero_headline": "PERSONAL"}))
    link = f"/c/{CAMPAIGN}?wm={link_token(contact='c_joram')}"
    qr = f"/q/{link_token(kind=TokenKind.QR, contact='c_joram')}"
    with memo_on_and_off(redis_client, time.time) as (on, off):
        for path in (link, qr, link, qr):
            assert answer(on, path)[2] is not None and answer(off, path)[2] is not None
        auditor = Auditor("dpo", Via.CLI, lambda: datetime.now(UTC))
        erase(redis_client, Subject(TENANT, PERSONAL_ACCOUNT), auditor=auditor, reason="request")
        deadline = time.monotonic() + 5
        while answer(on, link)[2] is not None or answer(off, link)[2] is not None:
            assert time.monotonic() < deadline, "the erasure did not reach the renderers within 5 s"
            time.sleep(0.02)
        for path in (link, qr):
            with_memo, without = answer(on, path), answer(off, path)
            assert with_memo == without and with_memo[2] is None
        assert "PERSONAL" not in answer(on, link)[1]


def test_rotated_keys_give_the_same_answers_remembered_or_not(
    redis_client: redis.Redis, published: Campaign, store: ZoneSetStore
) -> None:
    """A new key first, the old one kept: a link signed by the old key still works and earns
    a cookie signed by the new one; once the old key is removed, that link identifies no one."""
    store.publish(make_zone_set(texts={"hero_headline": "PERSONAL"}))
    old_link = f"/c/{CAMPAIGN}?wm={link_token()}"  # signed with SECRET
    old_qr = f"/q/{link_token(kind=TokenKind.QR)}"
    with memo_on_and_off(redis_client, secrets=f"{OTHER_SECRET},{SECRET}") as (on, off):
        for path in (old_link, old_qr, old_link, old_qr):
            with_memo, without = answer(on, path), answer(off, path)
            assert with_memo == without
            assert cookie_claims(with_memo[2], [OTHER_SECRET]).account == PERSONAL_ACCOUNT
    with memo_on_and_off(redis_client, secrets=OTHER_SECRET) as (on, off):
        for path in (old_link, old_qr, old_link):
            with_memo, without = answer(on, path), answer(off, path)
            assert with_memo == without and with_memo[2] is None
        assert "PERSONAL" not in answer(on, old_link)[1]


def test_the_memo_is_bounded_and_keeps_cookies_only_with_their_tokens() -> None:
    signer = TokenSigner([SECRET], clock=lambda: NOW)
    identifier = Identifier(signer, clock=lambda: NOW, memo_entries=3)
    tokens = [link_token(f"acct_{n}") for n in range(5)]
    headers = []
    for token in tokens:
        claims = identifier.verify(TokenKind.LINK, token, tenant=TENANT, campaign=CAMPAIGN)
        assert claims is not None
        headers.append(
            identifier.arrival_cookie(
                TokenKind.LINK, token, claims.account, claims.contact, tenant=TENANT, campaign=CAMPAIGN
            )
        )
    assert len(identifier) == 3  # the oldest two went
    assert identifier.trust(TokenKind.LINK, tokens[0], tenant=TENANT, campaign=CAMPAIGN) is None
    assert identifier.trust(TokenKind.LINK, tokens[4], tenant=TENANT, campaign=CAMPAIGN) is not None
    # a forgotten token's cookie is signed again when asked (the same string: same clock)
    again = identifier.arrival_cookie(
        TokenKind.LINK, tokens[0], "acct_0", None, tenant=TENANT, campaign=CAMPAIGN
    )
    assert again == headers[0]
    assert len(identifier) == 3


def test_the_cookie_header_is_what_starlette_writes() -> None:
    token = link_token(kind=TokenKind.COOKIE)
    ours, starlettes = Response(), Response()
    set_identity_cookie(ours, identity_cookie_header(CAMPAIGN, token, DEFAULT_COOKIE_TTL_S))
    starlettes.set_cookie(
        f"wm_{CAMPAIGN}",
        token,
        max_age=DEFAULT_COOKIE_TTL_S,
        path="/",
        secure=True,
        httponly=True,
        samesite="lax",
    )
    assert ours.raw_headers == starlettes.raw_headers
