"""The one check every `/admin/...` and operator route makes: the bearer token, whose it is, and
whether it may act on the campaign asked for.

Admin routes pass every admin credential (`Settings.admin_credentials`: the shared
`WELCOMEMAT_ADMIN_TOKEN` as `admin`, each `WELCOMEMAT_ADMIN_TOKENS` entry as its name), the
CRM's `POST /v1/conversions` every CRM credential (`Settings.crm_credentials`). No token
configured means the routes are off (404, as if they did not exist), so a renderer deployed
without the variables exposes nothing. A missing or wrong token is 401 with
`WWW-Authenticate: Bearer`. The comparison is constant-time and made against every configured
token (no early exit), so neither a token nor which names exist can be guessed from response
times. The credential that matched is who the audit log says acted (`Credential.actor`).

People signed in with a session are scoped to their tenant the same way (`server.admin.actor`,
`server.admin.endpoint`).

`campaign_for` is the only way these routes reach a campaign: a credential scoped to a tenant
(`NAME@TENANT:TOKEN`, a `WELCOMEMAT_CRM_TOKENS` entry) gets every campaign that tenant does not
own exactly as an unknown one (the same 404 and message), and nothing of it is loaded for it:
its owner is looked up before its config. The decision itself is `Credential.may_act_on`.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Protocol

from starlette.exceptions import HTTPException
from starlette.requests import Request

from server.campaigns import CampaignRegistry, CampaignState
from server.problems import HTTPProblem
from welcomemat.security.credentials import Credential

__all__ = ["TenantScope", "campaign_for", "require_credential", "unknown_campaign"]

_SCHEME = "bearer "


class TenantScope(Protocol):
    """What `campaign_for` asks of whoever acts: a bearer `Credential`, or an `AdminActor` (a
    person's session as well)."""

    @property
    def tenant(self) -> str | None: ...

    def may_act_on(self, owner: str | None) -> bool: ...


def require_credential(request: Request, credentials: Sequence[Credential]) -> Credential:
    """The credential whose token the request carries.

    Raises 404 when none is configured (its routes are off), 401 unless the request carries one.
    """
    configured = [c for c in credentials if c.token]
    if not configured:
        raise HTTPException(404, "Not Found")
    header = request.headers.get("authorization", "")
    offered = header[len(_SCHEME) :].strip() if header[: len(_SCHEME)].lower() == _SCHEME else ""
    matched: Credential | None = None
    for credential in configured:
        if hmac.compare_digest(offered.encode(), credential.token.encode()) and offered:
            matched = credential
    if matched is None:
        raise HTTPException(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
    return matched


def unknown_campaign(campaign_id: str) -> HTTPProblem:
    """The answer for a campaign id nobody serves, and for one the credential may not act on."""
    return HTTPProblem(404, f"no published campaign {campaign_id!r}")


async def campaign_for(
    credential: TenantScope, campaigns: CampaignRegistry, campaign_id: str
) -> CampaignState:
    """The campaign `campaign_id` names, if `credential` may act on it; else 404 as an unknown one.

    A scoped credential's tenant is compared with the id's owner before the campaign is loaded,
    so another tenant's config is never read for it (nor can its being unreadable answer
    otherwise than an unknown id). Raises what `CampaignRegistry.resolve` raises (Redis faults,
    a stored config that does not decode) for a campaign the credential may act on.
    """
    if credential.tenant is not None:
        loaded = campaigns.cached(campaign_id)
        owner = loaded.tenant if loaded is not None else await campaigns.owner_of(campaign_id)
        if not credential.may_act_on(owner):
            raise unknown_campaign(campaign_id)
    state = await campaigns.resolve(campaign_id)
    if state is None or not credential.may_act_on(state.tenant):
        raise unknown_campaign(campaign_id)
    return state
