"""A request's steps, written once for the landing page, the continuation and `/v1/zones`.

Find the campaign (loaded, else one guarded read of its config) ▸ the answer remembered for
the visitor (`server.known_visitors`: by the tokens they carry, else by the account their
address places them in) ▸ else identify the visitor (`server.visitor`: address, identification, arm, zone
set) ▸ the route's answer for that visitor (a rendered page, a zones payload) ▸ remembered
when it may be. What the route then does with the `Visit` (headers, cookie, view event,
counters) stays the route's.

A campaign that cannot be served is a `CampaignMiss`, not an exception: the pages answer
404 or the plain page, `/v1/zones` 404 or no zones. Redis faults while loading the config
are `UNAVAILABLE` (the guard counted them; a stored config that does not decode is counted
and logged here), never an error.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from starlette.requests import Request

from server.campaigns import CampaignRegistry, CampaignState
from server.cookies import identity_cookie
from server.known_visitors import KnownAddresses, KnownVisitors
from server.metrics import RendererMetrics
from server.redis_guard import RedisUnavailable
from server.visitor import Visit, Visitor, VisitorSources, identify_visitor, placed_account, request_origin
from server.zone_cache import ZoneSetCache
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id

__all__ = ["CampaignMiss", "VisitResolver", "VisitSources", "load_campaign"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class CampaignMiss(enum.Enum):
    """Why a request has no campaign to be served from."""

    NOT_FOUND = "not_found"  # not an id, or nothing published under it
    NO_PAGE = "no_page"  # the campaign has no such page
    UNAVAILABLE = "unavailable"  # its config could not be read: serve the plain answer


class VisitSources(VisitorSources, Protocol):
    """What resolving a request reads besides the visitor's sources (the renderer's state has them all)."""

    @property
    def campaigns(self) -> CampaignRegistry: ...

    @property
    def metrics(self) -> RendererMetrics: ...

    @property
    def zone_cache(self) -> ZoneSetCache: ...


async def load_campaign(sources: VisitSources, campaign_id: str) -> CampaignState | CampaignMiss:
    """A campaign not loaded yet: its config, read once (faults are `UNAVAILABLE`)."""
    if not is_valid_id(campaign_id):
        return CampaignMiss.NOT_FOUND
    try:
        state = await sources.campaigns.resolve(campaign_id)
    except RedisUnavailable:
        return CampaignMiss.UNAVAILABLE
    except StoredValueError as exc:
        sources.metrics.stored_value_errors.inc()
        log.error("%s", exc)
        return CampaignMiss.UNAVAILABLE
    return CampaignMiss.NOT_FOUND if state is None else state


class VisitResolver(Generic[T]):
    """Resolves requests to a `Visit` whose result is one route's kind of answer.

    `answer(view, slot, visitor)` builds that answer on the full path; `known` remembers it
    for returning visitors by their tokens, `known_addresses` for those without tokens by
    where they come from. `slot` is the page id for pages, the route for an API.
    """

    def __init__(
        self,
        sources: VisitSources,
        known: KnownVisitors[T],
        known_addresses: KnownAddresses[T],
        answer: Callable[[CampaignView, str, Visitor], T],
    ) -> None:
        self._sources = sources
        self._known = known
        self._known_addresses = known_addresses
        self._answer = answer
        # Read on every request: held here, one attribute away (this is the hot path).
        self._campaigns = sources.campaigns
        self._zone_cache = sources.zone_cache
        self._known_counts = sources.metrics.pages.known_visitors
        self._address_counts = sources.metrics.pages.known_addresses

    async def resolve(
        self, request: Request, campaign_id: str, slot: str, link_token: str | None, page: bool
    ) -> Visit[T] | CampaignMiss:
        """The visit for this request; with `page`, `slot` must be one of the campaign's pages."""
        state = self._campaigns.cached(campaign_id)  # a loaded campaign: no coroutine to run
        if state is None:
            found = await load_campaign(self._sources, campaign_id)
            if isinstance(found, CampaignMiss):
                return found
            state = found
        view = state.view
        if page and view.page(slot) is None:
            return CampaignMiss.NO_PAGE
        cookie_token = identity_cookie(request, campaign_id)
        changes = self._zone_cache.changes  # read before any look-up: a change meanwhile voids the entry
        if link_token is not None or cookie_token is not None:
            key = (campaign_id, slot, link_token, cookie_token)
            known = self._known.get(key, view)
            if known is not None:  # a returning visitor, and nothing changed since: the same answer
                self._known_counts["hit"] += 1
                return known
            self._known_counts["miss"] += 1
            visitor = await identify_visitor(self._sources, request, state, link_token, cookie_token)
            result = self._answer(view, slot, visitor)
            known = self._known.remember(key, view, changes, visitor, result)
        else:  # no token: an IP-identified or anonymous visitor, remembered by the account placing them
            origin = request_origin(request, state.ip_index)
            address_key = (campaign_id, slot, placed_account(self._sources, origin), origin.ip_index)
            known = self._known_addresses.get(address_key, view)
            if known is not None:
                self._address_counts["hit"] += 1
                return known
            self._address_counts["miss"] += 1
            visitor = await identify_visitor(self._sources, request, state, None, None, origin)
            result = self._answer(view, slot, visitor)
            known = self._known_addresses.remember(address_key, view, changes, visitor, result)
        if known is not None:
            return known
        return Visit(view, visitor.identity, visitor.cookie_claims, visitor.arm, result)
