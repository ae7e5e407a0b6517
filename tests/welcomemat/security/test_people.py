"""Admin people: addresses, roles, invite tokens and records, sessions and revoking, on a real Redis."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from welcomemat import keys
from welcomemat.errors import InputError, InviteUsed, TokenBadSignature, TokenExpired, TokenMalformed
from welcomemat.records.audit import Auditor, Via
from welcomemat.security.admin_sessions import read_session, session_hash, start_session
from welcomemat.security.people import Role, check_email, invite_person, person_id, role_in, take_invite
from welcomemat.security.revocation import revoke_person
from welcomemat.security.tokens import TokenKind, TokenSigner

SECRET = "people-test-secret-0123456789abcdef-xyz"
NOW = 1_800_000_000.0
OPERATOR = Auditor("ops", Via.CLI, lambda: datetime.fromtimestamp(NOW, UTC))


def signer(now: float = NOW) -> TokenSigner:
    return TokenSigner([SECRET], clock=lambda: now)


# -- addresses and roles ---------------------------------------------------------------------


@given(st.text(max_size=200))
def test_an_address_is_refused_or_read_as_one_plain_lowercase_line(text: str) -> None:
    try:
        email = check_email(text)
    except InputError as exc:
        assert exc.field == "EMAIL"
        return
    assert email == email.lower() == email.strip() and email.count("@") == 1
    assert not any(c.isspace() or ord(c) < 32 for c in email) and len(email) <= 128
    assert check_email(email) == email and person_id(text) == person_id(email)


@pytest.mark.parametrize(
    "bad", ["", "rita", "rita@acme", "Rita <rita@acme.example>", "a@b@c.example", "r ita@x.io"]
)
def test_not_an_address(bad: str) -> None:
    with pytest.raises(InputError):
        check_email(bad)


def test_each_role_may_do_what_the_ones_before_may() -> None:
    assert Role.ADMIN.allows(Role.REVIEWER) and Role.REVIEWER.allows(Role.VIEWER)
    assert not Role.VIEWER.allows(Role.REVIEWER) and not Role.REVIEWER.allows(Role.ADMIN)


# -- invite tokens ---------------------------------------------------------------------------


def test_an_invite_token_is_its_own_kind_and_expires_in_15_minutes() -> None:
    token = signer().sign_invite("0123456789abcdef0123456789abcdef")
    claims = signer(NOW + 899).verify_invite(token)
    assert (claims.invite_id, claims.expires_at - claims.issued_at) == (
        "0123456789abcdef0123456789abcdef",
        900,
    )
    with pytest.raises(TokenExpired):
        signer(NOW + 900).verify_invite(token)
    with pytest.raises(TokenBadSignature):  # a link token is no invite, nor the other way round
        signer().verify_invite(signer().sign(TokenKind.LINK, tenant="t", campaign="c", account="a", ttl_s=60))
    with pytest.raises(TokenBadSignature):
        signer().verify(TokenKind.LINK, token, tenant="t", campaign="c")
    with pytest.raises(TokenBadSignature):
        TokenSigner(["another-secret-0123456789abcdef-xyz"]).verify_invite(token)
    with pytest.raises(TokenMalformed):
        signer().verify_invite(token[:-1])


# -- invites, sessions, revoke ---------------------------------------------------------------


def test_an_invite_is_taken_once_even_by_two_at_the_same_time(redis_client: redis.Redis) -> None:
    token = invite_person(
        redis_client, signer(), email="Rita@Acme.example", tenant="acme", role=Role.REVIEWER, auditor=OPERATOR
    )
    ttl = redis_client.ttl(next(iter(redis_client.scan_iter(match="wm:*admin_invite:*"))))
    assert 0 < ttl <= keys.ADMIN_INVITE_TTL_S  # type: ignore[operator]
    results: list[object] = []
    barrier = threading.Barrier(8)

    def use() -> None:
        barrier.wait()
        try:
            results.append(take_invite(redis_client, signer(), token))
        except InviteUsed as exc:
            results.append(exc)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [r for r in results if not isinstance(r, InviteUsed)]
    assert len(taken) == 1 and len(results) == 8
    assert taken[0].email == "rita@acme.example" and taken[0].role is Role.REVIEWER  # type: ignore[attr-defined]


def test_sessions_time_out_follow_the_role_and_end_on_revoke(redis_client: redis.Redis) -> None:
    limits = {"idle_s": 1800, "max_s": 43200}
    sid, started = start_session(
        redis_client, email="rita@acme.example", tenant="acme", role=Role.VIEWER, now=NOW, **limits
    )
    other, _ = start_session(
        redis_client, email="rita@acme.example", tenant="beta", role=Role.ADMIN, now=NOW, **limits
    )
    assert started.role is Role.VIEWER and len(started.csrf) >= 40 and sid != other
    every_key = b" ".join(redis_client.scan_iter(match="wm:*"))
    assert sid.encode() not in every_key and b"rita" not in every_key  # hashes only in key names
    assert all(redis_client.ttl(k) > 0 for k in redis_client.scan_iter(match="wm:*"))  # type: ignore[operator]
    assert read_session(redis_client, sid, now=NOW + 1799, **limits) is not None
    assert read_session(redis_client, other, now=NOW + 1000, **limits) is not None
    assert read_session(redis_client, sid[:-1] + "x", now=NOW + 1799, **limits) is None
    # the role is read at each request: a new invite's role counts at once
    start_session(
        redis_client, email="rita@acme.example", tenant="acme", role=Role.REVIEWER, now=NOW, **limits
    )
    found = read_session(redis_client, sid, now=NOW + 1800, **limits)
    assert found is not None and found.role is Role.REVIEWER
    revoked = revoke_person(redis_client, "RITA@acme.example", tenant="acme", auditor=OPERATOR)
    assert revoked.tenants == ("acme",) and revoked.sessions == 2
    assert read_session(redis_client, sid, now=NOW + 1801, **limits) is None
    assert role_in(redis_client, "rita@acme.example", "acme") is None
    assert read_session(redis_client, other, now=NOW + 1801, **limits) is not None  # beta: kept
    assert read_session(redis_client, other, now=NOW + 1801 + 1800, **limits) is None  # idle since +1801
    assert redis_client.get(keys.admin_session_key(session_hash(other))) is None
