"""People's admin sessions in Redis: started from an invite, checked at each request, ended.

A session id is 256 random bits (`secrets`), handed to the browser once (its cookie) and
stored nowhere: Redis holds the session under the SHA-256 of the id (`keys.admin_session_key`),
so a copy of the database signs nobody in. The record says whose it is (e-mail, tenant), its
CSRF token, and when it started and was last used; each person's session hashes are kept in a
set (`keys.admin_person_sessions_key`) so that revoking them ends every one.

`read_session` ends a session idle for `idle_s` or older than `max_s` (both measured on the
clock passed in, so tests need not wait), and one whose person no longer holds a role in its
tenant; the role is read from the person's grants at each request, never from the session, so a
revoke or a new invite takes effect on the next request. Every key gets a TTL: the session's is
what is left of its idle or absolute timeout, whichever ends first.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from welcomemat import keys
from welcomemat.ids import OpaqueId
from welcomemat.replies import reply_text
from welcomemat.security.people import Role, grant_role, person_id, role_in

__all__ = [
    "SessionRecord",
    "SignedIn",
    "end_person_sessions",
    "end_session",
    "read_session",
    "session_hash",
    "start_session",
]


class SessionRecord(BaseModel):
    """What Redis holds of a session (never its id). Times are Unix seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    email: str
    tenant: OpaqueId
    csrf: str
    started_at: float
    seen_at: float


@dataclass(frozen=True)
class SignedIn:
    """A live session: whose, where, the role they hold there now, and its CSRF token."""

    session_hash: str
    email: str
    tenant: str
    role: Role
    csrf: str


def session_hash(session_id: str) -> str:
    """The SHA-256 (hex) of a session id: the key it is stored under."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def _ttl_s(record: SessionRecord, now: float, idle_s: int, max_s: int) -> int:
    return max(1, math.ceil(min(record.seen_at + idle_s, record.started_at + max_s) - now))


def start_session(
    client: redis.Redis, *, email: str, tenant: str, role: Role, now: float, idle_s: int, max_s: int
) -> tuple[str, SignedIn]:
    """A new session of `email` in `tenant`, who now holds `role` there: its id (for the cookie,
    shown once) and what it is. Always a fresh id: a session never outlives a sign-in's link."""
    session_id = secrets.token_urlsafe(32)
    hashed = session_hash(session_id)
    record = SessionRecord(
        email=email, tenant=tenant, csrf=secrets.token_urlsafe(32), started_at=now, seen_at=now
    )
    client.set(
        keys.admin_session_key(hashed), record.model_dump_json(), ex=_ttl_s(record, now, idle_s, max_s)
    )
    grant_role(client, email, tenant, role)
    mine = keys.admin_person_sessions_key(person_id(email))
    pipe = client.pipeline(transaction=True)
    pipe.sadd(mine, hashed)
    pipe.expire(mine, keys.ADMIN_SESSIONS_TTL_S)
    pipe.execute()
    return session_id, SignedIn(hashed, email, tenant, role, record.csrf)


def _record(client: redis.Redis, hashed: str) -> SessionRecord | None:
    raw = client.get(keys.admin_session_key(hashed))
    if raw is None:
        return None
    try:
        return SessionRecord.model_validate_json(raw)
    except ValidationError:
        return None  # not one of ours: as good as no session


def read_session(
    client: redis.Redis, session_id: str, *, now: float, idle_s: int, max_s: int
) -> SignedIn | None:
    """The live session `session_id` names, its last use moved to `now`; None (and the session
    ended) when there is none, it timed out, or its person no longer holds a role in its tenant."""
    if not 20 <= len(session_id) <= 128:  # not an id we made: no hashing, no Redis
        return None
    hashed = session_hash(session_id)
    record = _record(client, hashed)
    if record is None:
        return None
    if now - record.seen_at >= idle_s or now - record.started_at >= max_s:
        end_session(client, hashed)
        return None
    role = role_in(client, record.email, record.tenant)
    if role is None:
        end_session(client, hashed)
        return None
    seen = record.model_copy(update={"seen_at": now})
    # XX: a session ended meanwhile (sign-out, revoke) is not brought back by this request.
    client.set(
        keys.admin_session_key(hashed), seen.model_dump_json(), ex=_ttl_s(seen, now, idle_s, max_s), xx=True
    )
    return SignedIn(hashed, record.email, record.tenant, role, record.csrf)


def end_session(client: redis.Redis, hashed: str) -> None:
    """End the session stored under `hashed` (a sign-out, a timeout); nothing when it is gone."""
    record = _record(client, hashed)
    client.delete(keys.admin_session_key(hashed))
    if record is not None:
        client.srem(keys.admin_person_sessions_key(person_id(record.email)), hashed)


def end_person_sessions(client: redis.Redis, email: str, tenant: str | None) -> int:
    """End every session of `email` (in `tenant` only, when given); how many were live."""
    mine = keys.admin_person_sessions_key(person_id(email))
    ended = 0
    for raw in client.smembers(mine):
        hashed = reply_text(raw)
        record = _record(client, hashed)
        if record is not None and tenant is not None and record.tenant != tenant:
            continue
        ended += client.delete(keys.admin_session_key(hashed))
        client.srem(mine, hashed)
    return ended
