"""`GET /q/{token}`: verify, cookie (unless GPC/DNT), qr_scan event, 303 to a configured URL."""

from __future__ import annotations

import time

import pytest
import redis
from hypothesis import example, given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.testclient import TestClient

from outbound.sync import parse_event
from server.cookies import cookie_name
from server.faults import NO_STORE
from server.qr import see_other
from tests.event_stream import stream_events
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    PUBLIC_URL,
    SECRET,
    TENANT,
    account_in,
    example_inputs,
    link_token,
    make_zone_set,
    publish_config,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from tests.server.pagetools import zones
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.records.account_records import read_account_record
from welcomemat.records.fold import FOLD_LUA, fold_events
from welcomemat.security.tokens import TokenKind, TokenSigner, claimed_scope
from welcomemat.zones.store import ZoneSetStore

CONTINUATION = f"{PUBLIC_URL}/c/{CAMPAIGN}/continue"


def qr_token(account: str = PERSONAL_ACCOUNT, **kwargs: object) -> str:
    return link_token(account, kind=TokenKind.QR, **kwargs)


def events(client: redis.Redis, wait_for: int = 1) -> list[dict[bytes, bytes]]:
    deadline = time.monotonic() + 5
    while True:
        entries = [fields for _, fields in stream_events(client, TENANT)]
        if len(entries) >= wait_for or time.monotonic() > deadline:
            return entries
        time.sleep(0.02)


def test_valid_qr_sets_the_cookie_and_redirects_to_the_continuation(client: TestClient) -> None:
    response = client.get(f"/q/{qr_token(contact='c_joram')}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == CONTINUATION
    cookie = response.headers["set-cookie"]
    for flag in ("HttpOnly", "Secure", "SameSite=lax", "Path=/"):
        assert flag in cookie
    value = cookie.split(";", 1)[0].split("=", 1)[1]
    claims = TokenSigner([SECRET]).verify(TokenKind.COOKIE, value, tenant=TENANT, campaign=CAMPAIGN)
    assert (claims.account, claims.contact) == (PERSONAL_ACCOUNT, "c_joram")


def test_the_continuation_then_picks_up_the_mailers_story(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"continuation_headline": "Your mailer, continued"}))
    client.get(f"/q/{qr_token()}", follow_redirects=False)
    page = client.get(f"/c/{CAMPAIGN}/continue")
    assert zones(page.text)["continuation_headline"].text == "Your mailer, continued"


def test_location_comes_from_configuration_not_the_host_header(client: TestClient) -> None:
    response = client.get(
        f"/q/{qr_token()}",
        headers={"Host": "wm.example.com", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == CONTINUATION


@given(location=st.text(max_size=40).map(lambda path: f"{PUBLIC_URL}/c/{path}/continue"))
@example(location=f"{PUBLIC_URL}/c/a b%2F?x=é#frag/continue")
def test_the_redirect_has_the_headers_starlettes_redirect_writes(location: str) -> None:
    """The 303 lists its headers itself (the hot path): the same bytes, in the same order."""
    expected = RedirectResponse(location, status_code=303, headers=NO_STORE)
    try:
        answer = see_other(location)
    except UnicodeEncodeError:  # Starlette cannot encode such a Location either
        return
    assert (answer.status_code, answer.body, answer.raw_headers) == (303, b"", expected.raw_headers)


@pytest.mark.parametrize("header", [{"Sec-GPC": "1"}, {"DNT": "1"}])
def test_no_cookie_when_the_visitor_refuses_tracking(client: TestClient, header: dict[str, str]) -> None:
    response = client.get(f"/q/{qr_token()}", headers=header, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == CONTINUATION
    assert "set-cookie" not in response.headers


def test_qr_scan_is_logged_with_account_contact_and_arm(
    client: TestClient, redis_client: redis.Redis
) -> None:
    client.get(f"/q/{qr_token(contact='c_joram')}", follow_redirects=False)
    logged = events(redis_client)
    assert len(logged) == 1
    event = logged[0]
    assert event[b"type"] == b"qr_scan"
    assert event[b"account"] == PERSONAL_ACCOUNT.encode() and event[b"contact"] == b"c_joram"
    assert event[b"arm"] == b"personal" and event[b"campaign"] == CAMPAIGN.encode()


def test_expired_qr_still_lands_on_the_story_anonymously(
    client: TestClient, redis_client: redis.Redis
) -> None:
    old = TokenSigner([SECRET], clock=lambda: time.time() - 200 * 86400).sign(
        TokenKind.QR, tenant=TENANT, campaign=CAMPAIGN, account=PERSONAL_ACCOUNT, ttl_s=120 * 86400
    )
    response = client.get(f"/q/{old}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == CONTINUATION
    assert "set-cookie" not in response.headers
    time.sleep(0.2)
    assert redis_client.xlen(keys.events_stream_key(TENANT)) == 0


@pytest.mark.parametrize(
    "token",
    [
        "garbage",
        "a.b",
        "x" * 600,
        "%00",
        "..x",
        ".eJyrVipRslJKTM5NVdJRSgYyC010CzILUnMy80AiiWDJ5JL4lMrcxIpEoEgBUCQ5Piu_KDEXyMtUsjI0tzS1tDQ2.AAAA",
    ],
)
def test_unreadable_code_is_a_404_page(client: TestClient, token: str) -> None:
    response = client.get(f"/q/{token}", follow_redirects=False)
    assert response.status_code == 404
    assert "not valid" in response.text
    assert "set-cookie" not in response.headers


def test_token_for_an_unpublished_campaign_is_404_when_not_genuine(client: TestClient) -> None:
    forged = TokenSigner(["x" * 40]).sign(TokenKind.QR, tenant=TENANT, campaign="nope", account="a", ttl_s=60)
    assert client.get(f"/q/{forged}", follow_redirects=False).status_code == 404


@pytest.mark.parametrize("genuine", [True, False])
def test_a_code_is_never_redirected_into_a_404(
    client: TestClient, redis_client: redis.Redis, genuine: bool
) -> None:
    """No continuation of the token's campaign to land on: 404 here, not a 303 to a 404 (no such
    campaign or page) or to another tenant's campaign under the same id."""
    campaign, zones_ = example_inputs()
    without = campaign.model_dump(mode="json")
    without.update(campaign="no-continuation", pages={"landing": without["pages"]["landing"]})
    publish_config(redis_client, without, zones_)
    evils = campaign.model_dump(mode="json")
    evils.update(tenant="evil", campaign="evil-launch")
    publish_config(redis_client, evils, zones_)
    redis_client.set(keys.campaign_owner_key("evil-launch"), b"evil")
    signing = TokenSigner([SECRET if genuine else "x" * 40])
    for campaign_id, there in (("never-published", 404), ("no-continuation", 404), ("evil-launch", 200)):
        token = signing.sign(TokenKind.QR, tenant=TENANT, campaign=campaign_id, account="acct_x", ttl_s=60)
        response = client.get(f"/q/{token}", follow_redirects=False)
        assert response.status_code == 404, campaign_id
        assert "set-cookie" not in response.headers
        assert client.get(f"/c/{campaign_id}/continue").status_code == there  # what a 303 would have hit
    time.sleep(0.2)
    assert redis_client.xlen(keys.events_stream_key(TENANT)) == 0


def test_link_token_is_not_a_qr_code(client: TestClient) -> None:
    response = client.get(f"/q/{link_token()}", follow_redirects=False)
    assert response.status_code == 303  # names a published campaign: the story, anonymously
    assert "set-cookie" not in response.headers


def test_claimed_scope_reads_only_well_formed_ids() -> None:
    assert claimed_scope(qr_token()) == (TENANT, CAMPAIGN)
    assert claimed_scope("garbage") is None
    assert claimed_scope("e30.abc") is None  # {} has no tenant or campaign


def test_qr_cookie_is_honoured_on_the_landing_page_too(client: TestClient, store: ZoneSetStore) -> None:
    store.publish(make_zone_set(texts={"hero_headline": "Hello from the QR"}))
    client.get(f"/q/{qr_token()}", follow_redirects=False)
    assert client.cookies.get(cookie_name(CAMPAIGN))
    assert zones(client.get(f"/c/{CAMPAIGN}").text)["hero_headline"].text == "Hello from the QR"


def test_a_genuine_code_of_a_campaign_not_published_here_sets_no_cookie(client: TestClient) -> None:
    # Nothing to continue to (never a redirect into a 404), and its revocations cannot be
    # checked: a cookie made now would outlive an erasure it did not see.
    genuine = qr_token(campaign="not-published-here")
    response = client.get(f"/q/{genuine}", follow_redirects=False)
    assert response.status_code == 404 and "set-cookie" not in response.headers


def test_a_genuine_code_while_redis_is_down_continues_anonymously_and_sets_no_cookie() -> None:
    # The campaign cannot be loaded to check revocations: the story goes on, without a cookie
    # that would outlive an erasure it did not see.
    from server.redis_guard import renderer_redis_client
    from tests.server.conftest import BASE_URL, renderer_settings

    dead = renderer_redis_client("redis://127.0.0.1:9/0")  # discard port: nothing listens
    app = renderer_app(renderer_settings(), redis_client=dead, tuning=tuning_for_tests(breaker_failures=1))
    with TestClient(app, base_url=BASE_URL) as down:
        response = down.get(f"/q/{qr_token()}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == CONTINUATION
    assert "set-cookie" not in response.headers


def text_of(entry: dict[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in entry.items()}


def test_a_scan_in_a_copy_experiment_logs_the_variant_and_version_the_continuation_serves(
    client: TestClient, app: Starlette, store: ZoneSetStore, redis_client: redis.Redis
) -> None:
    """The scan, the page it leads to and the folded record agree on the variant and version,
    and the scan and the page cost one zone-set read between them (the cache)."""
    store.publish(make_zone_set().model_copy(update={"experiment": "headline-angle", "variant": "direct"}))
    assert client.get(f"/c/{CAMPAIGN}").status_code == 200  # loads the campaign and starts its watcher
    # Subscribing clears the campaign's cached zone sets: wait for it, then count the reads.
    assert next(iter(app.state.renderer.watchers.values())).subscribed.wait(5)
    reads = app.state.renderer.metrics.pages.zone_cache
    reads_before = reads["miss"]
    assert client.get(f"/q/{qr_token(contact='c_joram')}", follow_redirects=False).status_code == 303
    assert client.get(f"/c/{CAMPAIGN}/continue").status_code == 200
    assert reads["miss"] - reads_before == 1  # the scan read the zone set; the page found it cached
    logged = [text_of(e) for e in events(redis_client, wait_for=3)][1:]  # after the anonymous view
    assert [(e["type"], e.get("version"), e.get("variant"), e.get("page")) for e in logged] == [
        ("qr_scan", "1", "direct", None),
        ("view", "1", "direct", "continuation"),
    ]
    folds = [parse_event(TENANT, f"0-{i}", e) for i, e in enumerate(logged)]
    fold_events(redis_client.register_script(FOLD_LUA), redis_client, [f for f in folds if f], outbox=False)
    record = read_account_record(redis_client, TENANT, PERSONAL_ACCOUNT)
    assert record is not None
    engagement = record.engagement[CAMPAIGN]
    assert (engagement.qr_scans, engagement.views) == (1, 1)
    assert (engagement.zone_set_version, engagement.variant) == (1, "direct")


def test_a_scan_of_a_holdout_account_carries_no_variant(
    client: TestClient, store: ZoneSetStore, redis_client: redis.Redis
) -> None:
    holdout = account_in(Arm.HOLDOUT)
    store.publish(
        make_zone_set(holdout).model_copy(update={"experiment": "headline-angle", "variant": "direct"})
    )
    assert client.get(f"/q/{qr_token(holdout)}", follow_redirects=False).status_code == 303
    [scan] = [text_of(e) for e in events(redis_client)]
    assert scan["arm"] == "holdout" and "version" not in scan and "variant" not in scan


def test_a_scan_while_redis_stalls_still_redirects_and_is_logged_without_the_variant(
    redis_client: redis.Redis, published: object, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set().model_copy(update={"experiment": "headline-angle", "variant": "direct"}))
    app = renderer_app(
        renderer_settings(), redis_client=redis_client, tuning=tuning_for_tests(redis_timeout_s=0.1)
    )
    with TestClient(app, base_url=BASE_URL) as client:
        assert client.get(f"/c/{CAMPAIGN}").status_code == 200  # the campaign loaded while Redis is fine
        pauser = redis.Redis(connection_pool=redis_client.connection_pool)
        pauser.execute_command("CLIENT", "PAUSE", 1500, "ALL")
        try:
            response = client.get(f"/q/{qr_token()}", follow_redirects=False)
        finally:
            time.sleep(1.6)  # let the pause end: the queued event is written, the fixture can flush
        assert response.status_code == 303 and response.headers["location"] == CONTINUATION
        scans = [text_of(e) for e in events(redis_client, wait_for=2) if e[b"type"] == b"qr_scan"]
    assert len(scans) == 1
    assert scans[0]["account"] == PERSONAL_ACCOUNT and scans[0]["arm"] == "personal"
    assert "version" not in scans[0] and "variant" not in scans[0]
