"""People in the admin pages: invite links, sessions, roles, CSRF-safe review buttons."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from server.admin.sessions import SESSION_COOKIE
from server.redis_guard import renderer_redis_client
from tests.precompute.test_pipeline import NOW, dymaxa
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PUBLIC_URL,
    SECRET,
    TENANT,
    example_inputs,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat import keys
from welcomemat.records.audit import AuditAction, Auditor, Via, read_entries
from welcomemat.security.admin_sessions import session_hash
from welcomemat.security.people import Role, invite_person
from welcomemat.security.revocation import revoke_person
from welcomemat.security.tokens import TokenSigner
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSetStatus

TOKEN = "admin-token-for-tests-0123456789abcdef"
DYMAXA = "acct_dymaxa"
RITA = "rita@acme.example"
QUEUE = f"/admin/review/{CAMPAIGN}"
APPROVE = f"/admin/review/{CAMPAIGN}/{DYMAXA}/approve"
SAME_ORIGIN = {"origin": PUBLIC_URL}


@dataclass
class Clock:
    """The apps' clock, moved by the tests (Unix seconds)."""

    now: float

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW.timestamp())


@pytest.fixture
def precomputed(tmp_path: Path, redis_client: redis.Redis) -> redis.Redis:
    """Dymaxa (tier 1) precomputed with the offline composer: published `pending_review`, queued."""
    campaign, zone_contracts = example_inputs()
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text(json.dumps(dymaxa(NOW.date())) + "\n")
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zone_contracts,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
    ).run(accounts)
    return redis_client


def _app(client: redis.Redis, clock: Clock, **settings: Any) -> Starlette:
    return renderer_app(
        renderer_settings(**{"admin_token": TOKEN, **settings}),
        redis_client=client,
        clock=clock,
        tuning=tuning_for_tests(watcher_poll_s=0.05),
    )


@pytest.fixture
def browser(precomputed: redis.Redis, clock: Clock) -> Iterator[TestClient]:
    with TestClient(_app(precomputed, clock), base_url=BASE_URL) as client:
        yield client


OPERATOR = Auditor("ops@acme.example", Via.CLI, lambda: datetime.now(UTC))


def invite(
    client: redis.Redis, clock: Clock, email: str = RITA, *, role: Role = Role.REVIEWER, **kw: Any
) -> str:
    """The path of a sign-in link for `email`, signed at the apps' clock."""
    token = invite_person(
        client,
        TokenSigner([SECRET], clock=clock),
        email=email,
        tenant=kw.pop("tenant", TENANT),
        role=role,
        auditor=OPERATOR,
    )
    return f"/admin/sign-in/{token}"


def sign_in(browser: TestClient, link: str) -> str:
    """Sign in with the link as a browser does (the page, then its button); the session id."""
    assert browser.get(link).status_code == 200
    answer = browser.post(link, headers=SAME_ORIGIN, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"{PUBLIC_URL}/admin"
    return browser.cookies[SESSION_COOKIE]


def csrf_of(browser: TestClient) -> str:
    page = browser.get(QUEUE, headers={"accept": "text/html"})
    assert page.status_code == 200, page.text
    marker = 'name="csrf" value="'
    start = page.text.index(marker) + len(marker)
    return page.text[start : page.text.index('"', start)]


def _pending_version(client: redis.Redis) -> int:
    current = ZoneSetStore(client).get(TENANT, CAMPAIGN, DYMAXA)
    assert current is not None and current.status is ZoneSetStatus.PENDING_REVIEW
    return current.version


# -- invite links ----------------------------------------------------------------------------


def test_an_invite_link_signs_in_once_and_a_get_uses_nothing(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    link = invite(precomputed, clock)
    for _ in range(2):  # a mail scanner's fetch, then the person's
        page = browser.get(link)
        assert page.status_code == 200 and "Sign in</button>" in page.text
        assert page.headers["cache-control"] == "no-store"
    session_id = sign_in(browser, link)

    set_cookie = browser.post(link, headers=SAME_ORIGIN, follow_redirects=False)
    assert set_cookie.status_code == 410 and "used already" in set_cookie.text
    home = browser.get("/admin")
    assert home.status_code == 200 and RITA in home.text and f"/admin/review/{CAMPAIGN}" in home.text
    # Redis holds the session under its hash, never the id itself.
    names = [k.decode() for k in precomputed.scan_iter(match="wm:*")]
    assert keys.admin_session_key(session_hash(session_id)) in names
    assert not [n for n in names if session_id in n]
    assert not [n for n in names if session_id.encode() in (precomputed.dump(n) or b"")]
    invited = [e for e in read_entries(precomputed, TENANT) if e.action is AuditAction.ADMIN_INVITE]
    assert [(e.actor, e.detail) for e in invited] == [("ops@acme.example", f"invited {RITA} as reviewer")]


def test_the_session_cookie_is_httponly_strict_and_scoped_to_admin(
    precomputed: redis.Redis, clock: Clock
) -> None:
    for public_url, secure in (("http://wm.example.com", False), (PUBLIC_URL, True)):
        with TestClient(_app(precomputed, clock, public_url=public_url), base_url=BASE_URL) as client:
            link = invite(precomputed, clock)
            answer = client.post(link, headers={"origin": public_url}, follow_redirects=False)
        assert answer.status_code == 303
        cookie = answer.headers["set-cookie"]
        attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
        assert {"httponly", "path", "samesite", "max-age"} <= attributes
        assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
        assert "Path=/admin" in cookie and "Max-Age=43200" in cookie
        assert ("secure" in attributes) is secure


def test_expired_tampered_and_cross_origin_sign_ins_are_refused(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    link = invite(precomputed, clock)
    tampered = link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB")
    assert browser.get(tampered).status_code == 400
    assert browser.post(tampered, headers=SAME_ORIGIN).status_code == 400
    assert browser.post(link, headers={"origin": "https://evil.example"}).status_code == 403
    assert browser.post(link).status_code == 403  # no Origin, no Referer
    clock.now += 15 * 60  # the link's 15 minutes are up
    assert browser.get(link).status_code == 410
    assert browser.post(link, headers=SAME_ORIGIN).status_code == 410
    assert SESSION_COOKIE not in browser.cookies


def test_each_sign_in_starts_a_fresh_session_and_ends_the_one_before(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    first = sign_in(browser, invite(precomputed, clock))
    second = sign_in(browser, invite(precomputed, clock))
    assert first != second
    browser.cookies.clear()
    browser.cookies.set(SESSION_COOKIE, first)
    assert browser.get(QUEUE).status_code == 401
    assert precomputed.get(keys.admin_session_key(session_hash(first))) is None


# -- sessions end ----------------------------------------------------------------------------


def test_a_session_ends_after_its_idle_timeout(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    sign_in(browser, invite(precomputed, clock))
    clock.now += 1799
    assert browser.get(QUEUE).status_code == 200  # used: idle again from now
    clock.now += 1799
    assert browser.get(QUEUE).status_code == 200
    clock.now += 1800
    ended = browser.get(QUEUE)
    assert ended.status_code == 401 and "sign in again" in ended.text
    assert 'wm-admin=""' in ended.headers["set-cookie"] or "wm-admin=;" in ended.headers["set-cookie"]


def test_a_session_ends_after_its_absolute_timeout_however_busy(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    sign_in(browser, invite(precomputed, clock))
    for _ in range(43):  # a request every 1000 s: never idle
        clock.now += 1000
        assert browser.get(QUEUE).status_code == 200
    clock.now += 200  # 43,200 s after sign-in
    assert browser.get(QUEUE).status_code == 401


def test_a_revoked_persons_session_stops_working_at_once(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    session_id = sign_in(browser, invite(precomputed, clock))
    assert browser.get(QUEUE).status_code == 200
    revoked = revoke_person(precomputed, RITA, tenant=None, auditor=OPERATOR)
    assert (revoked.tenants, revoked.sessions) == ((TENANT,), 1)
    assert browser.get(QUEUE).status_code == 401
    assert precomputed.get(keys.admin_session_key(session_hash(session_id))) is None
    entry = [e for e in read_entries(precomputed, TENANT) if e.action is AuditAction.ADMIN_REVOKE]
    assert [(e.actor, e.detail) for e in entry] == [
        ("ops@acme.example", f"revoked {RITA}, was reviewer: 1 session(s) ended")
    ]


def test_signing_out_ends_the_session(browser: TestClient, precomputed: redis.Redis, clock: Clock) -> None:
    session_id = sign_in(browser, invite(precomputed, clock))
    csrf = csrf_of(browser)
    assert browser.post("/admin/sign-out", headers=SAME_ORIGIN).status_code == 403  # no CSRF token
    out = browser.post("/admin/sign-out", data={"csrf": csrf}, headers=SAME_ORIGIN)
    assert out.status_code == 200 and "signed out" in out.text
    assert precomputed.get(keys.admin_session_key(session_hash(session_id))) is None
    browser.cookies.clear()
    browser.cookies.set(SESSION_COOKIE, session_id)
    assert browser.get(QUEUE).status_code == 401


# -- roles, tenants, CSRF --------------------------------------------------------------------


def test_a_reviewer_approves_with_the_queue_pages_button(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    sign_in(browser, invite(precomputed, clock))
    version = _pending_version(precomputed)
    page = browser.get(QUEUE, headers={"accept": "text/html"})
    assert f"Signed in as <strong>{RITA}</strong>" in page.text and "Sign out</button>" in page.text
    assert f'action="{APPROVE}"' in page.text and 'name="reason" required' in page.text
    answer = browser.post(
        APPROVE,
        data={"csrf": csrf_of(browser), "version": str(version)},
        headers=SAME_ORIGIN,
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == (
        f"{PUBLIC_URL}{QUEUE}?done=approve&account={DYMAXA}&version={version + 1}"
    )
    done = browser.get(answer.headers["location"].removeprefix(PUBLIC_URL), headers={"accept": "text/html"})
    assert f"Approved {DYMAXA}: now at v{version + 1}." in done.text
    current = ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, DYMAXA)
    assert current is not None and current.status is ZoneSetStatus.PUBLISHED
    approved = [
        e for e in read_entries(precomputed, TENANT, account=DYMAXA) if e.action is AuditAction.APPROVE
    ]
    assert [(e.actor, e.via) for e in approved] == [(RITA, Via.HTTP)]


def test_a_rejection_by_form_needs_a_reason_and_refusals_are_html(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    sign_in(browser, invite(precomputed, clock))
    version = _pending_version(precomputed)
    reject = f"/admin/review/{CAMPAIGN}/{DYMAXA}/reject"
    form = {"csrf": csrf_of(browser), "version": str(version), "reason": "  "}
    answer = browser.post(reject, data=form, headers=SAME_ORIGIN)
    assert answer.status_code == 400 and answer.headers["content-type"].startswith("text/html")
    assert "needs a reason" in answer.text
    assert _pending_version(precomputed) == version
    # Referer stands in for a missing Origin.
    form["reason"] = "the claim is stale"
    done = browser.post(
        reject, data=form, headers={"referer": f"{PUBLIC_URL}{QUEUE}"}, follow_redirects=False
    )
    assert done.status_code == 303
    rejected = [
        e for e in read_entries(precomputed, TENANT, account=DYMAXA) if e.action is AuditAction.REJECT
    ]
    assert [(e.actor, e.reason) for e in rejected] == [(RITA, "the claim is stale")]


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("no token", "no_token"),
        ("wrong token", "wrong_token"),
        ("other origin", "cross_origin"),
        ("same site, other port", "cross_origin"),
        ("no origin", "no_origin"),
        ("viewer", "role"),
    ],
)
def test_a_refused_post_is_403_logged_counted_and_changes_nothing(
    precomputed: redis.Redis, clock: Clock, caplog: pytest.LogCaptureFixture, case: str, reason: str
) -> None:
    app = _app(precomputed, clock)
    with TestClient(app, base_url=BASE_URL) as browser:
        sign_in(browser, invite(precomputed, clock, role=Role.VIEWER if case == "viewer" else Role.REVIEWER))
        version = _pending_version(precomputed)
        form = {"csrf": csrf_of(browser) if case != "viewer" else "", "version": str(version)}
        headers = dict(SAME_ORIGIN)
        if case == "no token":
            del form["csrf"]
        elif case == "wrong token":
            form["csrf"] = "x" * 43
        elif case == "other origin":
            headers = {"origin": "https://evil.example"}
        elif case == "same site, other port":
            headers = {"origin": PUBLIC_URL + ":8443"}
        elif case == "no origin":
            headers = {}
        elif case == "viewer":
            viewer = browser.get(QUEUE, headers={"accept": "text/html"})
            assert "Approve v" not in viewer.text  # no buttons for a viewer
            form["csrf"] = _session_csrf(precomputed, browser.cookies[SESSION_COOKIE])
        with caplog.at_level(logging.WARNING, logger="server.admin.csrf"):
            answer = browser.post(APPROVE, data=form, headers=headers, follow_redirects=False)
        counted = app.state.renderer.metrics.admin_refusals.labels("review_approve", reason)._value.get()
    assert answer.status_code == 403, answer.text
    assert _pending_version(precomputed) == version
    assert not [
        e for e in read_entries(precomputed, TENANT, account=DYMAXA) if e.action is AuditAction.APPROVE
    ]
    assert counted == 1
    assert any(f"(review_approve) refused: {reason}" in r.getMessage() for r in caplog.records)


def _session_csrf(client: redis.Redis, session_id: str) -> str:
    raw = client.get(keys.admin_session_key(session_hash(session_id)))
    assert raw is not None
    token: str = json.loads(raw)["csrf"]
    return token


def test_a_json_post_with_a_session_needs_the_csrf_header(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    session_id = sign_in(browser, invite(precomputed, clock))
    version = _pending_version(precomputed)
    refused = browser.post(APPROVE, json={"version": version}, headers=SAME_ORIGIN)
    assert refused.status_code == 403
    csrf = _session_csrf(precomputed, session_id)
    answer = browser.post(APPROVE, json={"version": version}, headers={**SAME_ORIGIN, "x-csrf-token": csrf})
    assert answer.status_code == 200 and answer.json()["status"] == "published"


def test_a_person_of_another_tenant_meets_this_campaign_as_unknown(
    browser: TestClient, precomputed: redis.Redis, clock: Clock
) -> None:
    sign_in(browser, invite(precomputed, clock, "bob@other.example", role=Role.ADMIN, tenant="other"))
    for path in (QUEUE, f"/admin/explain/{CAMPAIGN}/{DYMAXA}", f"/admin/results/{CAMPAIGN}?format=json"):
        answer = browser.get(path)
        assert answer.status_code == 404, path
        assert f"no published campaign {CAMPAIGN!r}" in answer.text
    assert browser.get("/admin").text.count(CAMPAIGN) == 0
    session_id = browser.cookies[SESSION_COOKIE]
    csrf = _session_csrf(precomputed, session_id)
    version = _pending_version(precomputed)
    answer = browser.post(APPROVE, data={"csrf": csrf, "version": str(version)}, headers=SAME_ORIGIN)
    assert answer.status_code == 404 and _pending_version(precomputed) == version


def test_the_bearer_token_needs_no_csrf_token_and_stays_json(
    browser: TestClient, precomputed: redis.Redis
) -> None:
    version = _pending_version(precomputed)
    answer = browser.post(APPROVE, json={"version": version}, headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200 and answer.json()["status"] == "published"


def test_sessions_answer_503_not_500_when_redis_is_down(clock: Clock) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = _app(renderer_redis_client(f"redis://127.0.0.1:{port}/0"), clock)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        client.cookies.set(SESSION_COOKIE, "s" * 43, path="/admin")
        assert client.get(QUEUE).status_code == 503
        token = TokenSigner([SECRET], clock=clock).sign_invite("a" * 32)
        assert client.post(f"/admin/sign-in/{token}", headers=SAME_ORIGIN).status_code == 503
