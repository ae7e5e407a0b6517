"""`welcomemat admin revoke`: a person's admin roles removed and their sessions ended, audit-logged.

The roles go first: a session started meanwhile is refused anyway, since every request reads
the person's role (`welcomemat.security.admin_sessions.read_session`).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from welcomemat import keys
from welcomemat.records.audit import AuditAction, Auditor, append_entry
from welcomemat.replies import reply_text
from welcomemat.security.admin_sessions import end_person_sessions
from welcomemat.security.people import check_email, person_id

__all__ = ["Revoked", "revoke_person"]


@dataclass(frozen=True)
class Revoked:
    """The tenants a revoke took a role from, and how many sessions it ended."""

    tenants: tuple[str, ...]
    sessions: int


def revoke_person(client: redis.Redis, email: str, *, tenant: str | None, auditor: Auditor) -> Revoked:
    """Remove `email`'s roles (in `tenant`, or everywhere) and end their sessions there.

    One audit entry per tenant that lost a role (one in `tenant`'s log, or the log of no one
    tenant, when there was none to remove): who revoked whom, the role they had, how many
    sessions ended. AuditError when it is done but could not be logged.
    """
    address = check_email(email)
    key = keys.admin_grants_key(person_id(address))
    held = {reply_text(t): reply_text(r) for t, r in client.hgetall(key).items()}
    lost = tuple(sorted(t for t in held if tenant is None or t == tenant))
    if lost:
        client.hdel(key, *lost)
    ended = end_person_sessions(client, address, tenant)
    for where in lost or (tenant,):
        had = f", was {held[where]}" if where is not None and where in held else ""
        detail = f"revoked {address}{had}: {ended} session(s) ended"
        append_entry(client, auditor.entry(AuditAction.ADMIN_REVOKE, tenant=where, detail=detail))
    return Revoked(lost, ended)
