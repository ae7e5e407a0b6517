"""People of the admin pages: their roles per tenant and the invites that let them sign in.

A person is an e-mail address (lower-cased; `check_email`). Their roles live in Redis per tenant
(`keys.admin_grants_key`, under the SHA-256 of the address, never the address): a `viewer` reads,
a `reviewer` also decides reviews (approve, reject, rollback), an `admin` also manages guidelines
and experiments (`Role.allows`).

`welcomemat admin invite` makes an invite: a record under a random id (`keys.admin_invite_key`,
15 minutes) and a sign-in token signed by the one signer that carries only that id
(`TokenSigner.sign_invite`). `take_invite` verifies the token, then reads and deletes the record
in one command (GETDEL): of two uses, racing or not, one gets it and the other `InviteUsed`.
The invite is audit-logged (who invited whom, the role, the tenant), as is revoking a person
(`welcomemat.security.revocation`).
"""

from __future__ import annotations

import enum
import hashlib
import re
import secrets
from typing import Final

import redis
from pydantic import BaseModel, ConfigDict, ValidationError

from welcomemat import keys
from welcomemat.errors import InputError, InviteUsed
from welcomemat.ids import OpaqueId
from welcomemat.records.audit import ACTOR_MAX_CHARS, AuditAction, Auditor, append_entry
from welcomemat.replies import reply_text
from welcomemat.security.tokens import DEFAULT_INVITE_TTL_S, TokenSigner

__all__ = [
    "INVITE_PATH",
    "InviteRecord",
    "Role",
    "check_email",
    "grant_role",
    "invite_person",
    "person_id",
    "role_in",
    "take_invite",
]

#: Where a sign-in link points, after `WELCOMEMAT_PUBLIC_URL`: the token follows.
INVITE_PATH: Final = "/admin/sign-in/"
# Plain addresses only: no display names, quotes, comments or IP literals; what the audit log
# records must be one short line an auditor can read.
_EMAIL = re.compile(r"[a-z0-9._%+'-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+")


class Role(enum.StrEnum):
    """What a person may do in a tenant's admin pages; each role may do what the one before may."""

    VIEWER = "viewer"  # reads every admin page
    REVIEWER = "reviewer"  # also approves, rejects and rolls back
    ADMIN = "admin"  # also manages guidelines and experiments

    def allows(self, needed: Role) -> bool:
        """Whether this role may do what `needed` may."""
        order = list(Role)
        return order.index(self) >= order.index(needed)


class InviteRecord(BaseModel):
    """A pending invite: who may sign in, to which tenant, with which role, and who invited them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    email: str
    tenant: OpaqueId
    role: Role
    invited_by: str


def check_email(value: str, *, source: str = "EMAIL") -> str:
    """`value` as a person's address: trimmed, lower-cased, `name@domain.tld`; InputError naming `source`."""
    email = value.strip().lower()
    if len(email) > ACTOR_MAX_CHARS or _EMAIL.fullmatch(email) is None:
        raise InputError(
            f"{value!r} is not a plain e-mail address (name@domain.tld, "
            f"at most {ACTOR_MAX_CHARS} characters)",
            field=source,
        )
    return email


def person_id(email: str) -> str:
    """The SHA-256 (hex) of an address, checked: the id of a person's keys (no address in a key name)."""
    return hashlib.sha256(check_email(email).encode("utf-8")).hexdigest()


def invite_person(
    client: redis.Redis,
    signer: TokenSigner,
    *,
    email: str,
    tenant: str,
    role: Role,
    auditor: Auditor,
    ttl_s: int = DEFAULT_INVITE_TTL_S,
) -> str:
    """Store an invite for `email` to `tenant` as `role` and audit-log it; its sign-in token.

    The record lives `keys.ADMIN_INVITE_TTL_S` at most (the token's own expiry is the one
    checked). Raises InputError for a bad address or tenant, AuditError when the invite is
    stored but its audit entry could not be written (the link is then not handed out).
    """
    record = InviteRecord(email=check_email(email), tenant=tenant, role=Role(role), invited_by=auditor.actor)
    invite_id = secrets.token_hex(16)  # 128 random bits; an id (hex) that fits a key
    token = signer.sign_invite(invite_id, ttl_s=ttl_s)
    client.set(
        keys.admin_invite_key(invite_id), record.model_dump_json(), ex=min(ttl_s, keys.ADMIN_INVITE_TTL_S)
    )
    append_entry(
        client,
        auditor.entry(
            AuditAction.ADMIN_INVITE, tenant=record.tenant, detail=f"invited {record.email} as {record.role}"
        ),
    )
    return token


def take_invite(client: redis.Redis, signer: TokenSigner, token: str) -> InviteRecord:
    """The invite `token` stands for, used up: read and deleted in one command (GETDEL), so a
    second use, or the slower of two at once, is refused.

    Raises what `TokenSigner.verify_invite` raises (before Redis is asked), and InviteUsed when
    the record is gone or does not decode.
    """
    claims = signer.verify_invite(token)
    raw = client.getdel(keys.admin_invite_key(claims.invite_id))
    if raw is None:
        raise InviteUsed("this sign-in link was used already, or has expired: ask for a new one")
    try:
        return InviteRecord.model_validate_json(raw)
    except ValidationError:
        raise InviteUsed("this sign-in link's invite does not decode: ask for a new one") from None


def grant_role(client: redis.Redis, email: str, tenant: str, role: Role) -> None:
    """Give `email` `role` in `tenant` (replacing the one they had there), for `keys.ADMIN_GRANTS_TTL_S`."""
    key = keys.admin_grants_key(person_id(email))
    pipe = client.pipeline(transaction=True)
    pipe.hset(key, tenant, Role(role).value)
    pipe.expire(key, keys.ADMIN_GRANTS_TTL_S)
    pipe.execute()


def role_in(client: redis.Redis, email: str, tenant: str) -> Role | None:
    """The role `email` holds in `tenant` now (None: none, revoked, or not one of ours)."""
    raw = client.hget(keys.admin_grants_key(person_id(email)), tenant)
    if raw is None:
        return None
    try:
        return Role(reply_text(raw))
    except ValueError:
        return None
