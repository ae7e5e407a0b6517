"""Who is asking and what they are shown, the same way for pages and for `/v1/zones`.

Identification (link token ▸ cookie ▸ IP ▸ anonymous; the client address is worked out
only when no token identifies the visitor and some account has IP ranges) ▸ arm ▸ the
account's zone set (in-process cache, else one guarded Redis read, which may raise
`RedisUnavailable`).

It needs three of the renderer's components, named by `VisitorSources`, not the whole
app state: so the app state can build what depends on `Visitor` (`server.known_visitors`,
`server.visit`) without an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from starlette.requests import Request

from server.campaigns import CampaignState
from server.identify import Identifier, Identity, TrustedProxies
from server.ip_index import IpAddress, IpRangeIndex
from server.scope_headers import joined_header
from server.zone_set_reader import ZoneSetReader
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.view import CampaignView
from welcomemat.security.tokens import TokenClaims, ViewTokenTemplate
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "Origin",
    "Visit",
    "Visitor",
    "VisitorSources",
    "identify_visitor",
    "placed_account",
    "request_origin",
]

T = TypeVar("T")


class VisitorSources(Protocol):
    """What identifying a visitor reads: the token checks, the trusted proxies, the zone sets."""

    @property
    def identifier(self) -> Identifier: ...

    @property
    def proxies(self) -> TrustedProxies: ...

    @property
    def zone_set_reader(self) -> ZoneSetReader: ...


@dataclass(slots=True)
class Visitor:
    """Who the request is from, their arm, and the zone set they may be shown."""

    identity: Identity
    cookie_claims: TokenClaims | None  # a valid cookie's claims: does it already say what a link says?
    arm: Arm
    zone_set: ZoneSet | None


@dataclass(slots=True)
class Visit(Generic[T]):
    """A request resolved (`server.visit`): the campaign config, the visitor, the route's answer."""

    view: CampaignView
    identity: Identity
    cookie_claims: TokenClaims | None
    arm: Arm
    result: T  # what the route serves: a rendered page, a zones payload
    # The click-token templates of a page's CTAs, in page order (None: the CTA keeps its own
    # href), worked out by the page route on the first request of a remembered answer
    # (`server.known_visitors`): they depend on nothing a later request of it can change.
    click_templates: tuple[ViewTokenTemplate | None, ...] | None = field(default=None, kw_only=True)


class Origin(NamedTuple):
    """Where a request comes from, as sent, and the campaign's IP ranges that may place it."""

    peer: str | None  # the TCP peer
    forwarded_for: str | None  # X-Forwarded-For, every line joined; None when absent or empty
    ip_index: IpRangeIndex


def request_origin(request: Request, ip_index: IpRangeIndex) -> Origin:
    """The request's origin. Without ranges no address places anyone: then not read (None, None)."""
    if not ip_index.size:
        return Origin(None, None, ip_index)
    scope = request.scope
    client = scope.get("client")
    return Origin(client[0] if client else None, joined_header(scope, b"x-forwarded-for") or None, ip_index)


def placed_account(sources: VisitorSources, origin: Origin) -> str | None:
    """The account whose IP ranges the request's client address falls in (None: none, or the
    campaign has no ranges, or no trusted address): what identifies a visitor without tokens,
    worked out as `identify_visitor` does."""
    if not origin.ip_index.size:
        return None
    return origin.ip_index.lookup(sources.proxies.client_address(origin.peer, origin.forwarded_for))


async def identify_visitor(
    sources: VisitorSources,
    request: Request,
    state: CampaignState,
    link_token: str | None,
    cookie_token: str | None,
    origin: Origin | None = None,
) -> Visitor:
    """`cookie_token`: the campaign's cookie (`server.cookies.identity_cookie`), read by the
    caller, which also keys `server.known_visitors` by it. `origin`: where the request comes
    from and the IP ranges to place it in, when the caller has read them (`request_origin`)."""
    view = state.view
    tenant, campaign_id = view.tenant, view.campaign_id
    ip_index = state.ip_index if origin is None else origin.ip_index

    def address() -> IpAddress | None:
        where = origin if origin is not None else request_origin(request, ip_index)
        return sources.proxies.client_address(where.peer, where.forwarded_for)

    identity, cookie_claims = sources.identifier.identify(
        tenant=tenant,
        campaign=campaign_id,
        link_token=link_token,
        cookie_token=cookie_token,
        address=address,  # asked only when no token identifies the visitor and ranges exist
        ip_index=ip_index,
        revocations=state.revocations,
    )
    arm = assign_arm(tenant, campaign_id, identity.account, view.campaign.holdout_fraction)
    zone_set = None
    if identity.account is not None:
        reader = sources.zone_set_reader
        lookup = reader.cached(tenant, campaign_id, identity.account)
        if lookup is None:
            lookup = await reader.get(tenant, campaign_id, identity.account)
        zone_set = lookup.zone_set
    return Visitor(identity, cookie_claims, arm, zone_set)
