"""`welcomemat admin invite` and `revoke`: the sign-in link printed, or a person's access ended.

The link is `WELCOMEMAT_PUBLIC_URL` + `/admin/sign-in/` + an invite token signed by the one
signer (`welcomemat.security.tokens`); the invite itself and revoking are
`welcomemat.security.people` and `welcomemat.security.revocation`, in the renderer's Redis.
No secret: exit 2 before Redis is asked.
"""

from __future__ import annotations

from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.records.audit import Auditor
from welcomemat.security.people import INVITE_PATH, Role, check_email, invite_person
from welcomemat.security.revocation import revoke_person
from welcomemat.security.tokens import TokenSigner
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis

__all__ = ["run_invite", "run_revoke"]


def _tenant(tenant: str) -> str:
    if not is_valid_id(tenant):
        raise InputError(f"{tenant!r} is not a tenant id (letters, digits and '_.-')", field="--tenant")
    return tenant


def run_invite(email: str, *, tenant: str, role: str, auditor: Auditor) -> int:
    settings = Settings.from_env()
    signer = TokenSigner.from_setting(settings.require_secret())
    address, where = check_email(email), _tenant(tenant)
    client = connect(resolve_redis(settings))
    try:
        token = invite_person(client, signer, email=address, tenant=where, role=Role(role), auditor=auditor)
    finally:
        client.close()
    print(f"{settings.public_url}{INVITE_PATH}{token}")
    return 0


def run_revoke(email: str, *, tenant: str | None, auditor: Auditor) -> int:
    settings = Settings.from_env()
    address = check_email(email)
    where = _tenant(tenant) if tenant is not None else None
    client = connect(resolve_redis(settings))
    try:
        revoked = revoke_person(client, address, tenant=where, auditor=auditor)
    finally:
        client.close()
    tenants = ", ".join(revoked.tenants) or "none"
    print(f"revoked {address}: roles removed in {tenants}; {revoked.sessions} session(s) ended")
    return 0
