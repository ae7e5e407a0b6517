"""Who is asking and what they are shown, the same way for pages and for `/v1/zones`.

Client address (only when some account has IP ranges: parsing costs) ▸ identification
(link token ▸ cookie ▸ IP ▸ anonymous) ▸ arm ▸ the account's zone set (in-process cache,
else one guarded Redis read, which may raise `RedisUnavailable`).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from server.campaigns import CampaignState
from server.identify import Identity, client_address
from server.renderer import Renderer
from welcomemat.arms import Arm, assign_arm
from welcomemat.tokens import TokenClaims
from welcomemat.zoneset import ZoneSet

__all__ = ["Visitor", "identify_visitor"]


@dataclass(slots=True)
class Visitor:
    identity: Identity
    cookie_claims: TokenClaims | None  # a valid cookie's claims: does it already say what a link says?
    arm: Arm
    zone_set: ZoneSet | None


async def identify_visitor(
    renderer: Renderer,
    request: Request,
    state: CampaignState,
    link_token: str | None,
    cookie_token: str | None,
) -> Visitor:
    """`cookie_token`: the campaign's cookie (`server.cookies.identity_cookie`), read by the
    caller, which also keys `server.known_visitors` by it."""
    view = state.view
    tenant, campaign_id = view.tenant, view.campaign_id
    address = None
    if state.ip_index.size:  # parsing addresses costs; skip it when no account has ranges
        client = request.client
        address = client_address(
            client.host if client else None,
            ",".join(request.headers.getlist("x-forwarded-for")) or None,
            renderer.proxies,
        )
    identity, cookie_claims = renderer.identifier.identify(
        tenant=tenant,
        campaign=campaign_id,
        link_token=link_token,
        cookie_token=cookie_token,
        address=address,
        ip_index=state.ip_index,
    )
    arm = assign_arm(tenant, campaign_id, identity.account, view.campaign.holdout_fraction)
    zone_set = None
    if identity.account is not None:
        lookup = renderer.zone_sets.cached(tenant, campaign_id, identity.account)
        if lookup is None:
            lookup = await renderer.zone_sets.get(tenant, campaign_id, identity.account)
        zone_set = lookup.zone_set
    return Visitor(identity, cookie_claims, arm, zone_set)
