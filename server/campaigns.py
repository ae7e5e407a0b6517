"""Campaigns the renderer serves: loaded from Redis on first request, kept fresh by watchers.

precompute publishes each campaign's config as one value (`keys.campaign_config_key`, its
codec `welcomemat.campaign.config`) and indexes `tenant/campaign` in
`keys.campaigns_index_key`, after claiming the id for its tenant (`keys.campaign_owner_key`).
The renderer finds a URL's campaign id in that index, then its owner
(`welcomemat.campaign.owner`), loads the owner's config once as a
`welcomemat.campaign.view.CampaignView` (everything a page needs that does not depend on the
visitor), and its IP-range index; its templates are built once per config version by
`server.render`.

Only the owner's campaign is ever served under an id. When the index also lists other
tenants for it (published before owners were recorded) the owner is served and the conflict
logged; an id the index lists under several tenants and no recorded owner is ambiguous from a
URL alone: served by none (404, logged) rather than one tenant's page on the other's link.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import redis

from server.ip_index import IpRangeIndex, parse_ip_ranges
from server.redis_guard import RedisGuard
from server.singleflight import SingleFlight
from welcomemat import keys
from welcomemat.campaign.owner import CampaignOwnership, parse_campaigns_index
from welcomemat.campaign.view import CampaignView, build_campaign_view
from welcomemat.ids import is_valid_id
from welcomemat.records.erasure import Revocations, load_revocations

__all__ = ["CampaignRegistry", "CampaignState", "load_ip_index"]

log = logging.getLogger(__name__)


def load_ip_index(client: redis.Redis, tenant: str, campaign_id: str) -> IpRangeIndex:
    """The campaign's IP-range index from `keys.ip_ranges_key` (blocking; run in a thread)."""
    raw: Mapping[bytes, bytes] = client.hgetall(keys.ip_ranges_key(tenant, campaign_id))  # type: ignore[assignment]
    ranges, bad = parse_ip_ranges(raw)
    if bad:
        log.warning("ip ranges of %s/%s: %d unusable entries skipped", tenant, campaign_id, bad)
    return IpRangeIndex(ranges)


@dataclass
class CampaignState:
    """A loaded campaign. The watcher replaces `view`, `ip_index` and `revocations` whole (atomic
    swaps). `revocations`: the tenant's erased subjects, whose older tokens identify no one."""

    view: CampaignView
    ip_index: IpRangeIndex
    revocations: Revocations = field(default_factory=Revocations)
    loaded_at: float = field(default_factory=time.monotonic)

    @property
    def tenant(self) -> str:
        return self.view.tenant

    @property
    def campaign_id(self) -> str:
        return self.view.campaign_id


class CampaignRegistry:
    """Campaign id -> loaded campaign, filled on first request, kept fresh by watchers."""

    def __init__(
        self,
        client: redis.Redis,
        guard: RedisGuard,
        *,
        index_ttl_s: float,
        on_loaded: Callable[[CampaignState], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._guard = guard
        self._index_ttl_s = index_ttl_s
        self._on_loaded = on_loaded
        self._clock = clock
        self._by_id: dict[str, CampaignState] = {}
        self._index: dict[str, tuple[str, ...]] = {}
        self._index_expires_at = 0.0
        self._flights: SingleFlight[str, CampaignState | None] = SingleFlight()
        self._index_flight: SingleFlight[str, dict[str, tuple[str, ...]]] = SingleFlight()
        # Indexed ids whose config is gone (expired): campaign id -> until when, so requests
        # for them do not each cost a Redis read.
        self._missing: dict[str, float] = {}

    def loaded(self) -> list[CampaignState]:
        return list(self._by_id.values())

    def cached(self, campaign_id: str) -> CampaignState | None:
        """A loaded campaign, without touching Redis."""
        return self._by_id.get(campaign_id)

    def forget(self, campaign_id: str) -> None:
        """The campaign's config is gone from Redis: stop serving it."""
        self._by_id.pop(campaign_id, None)
        self._index_expires_at = 0.0

    async def resolve(self, campaign_id: str) -> CampaignState | None:
        """The campaign for a URL's id, its owner's; None when nobody (or, ambiguously, several) publishes it.

        Raises `RedisUnavailable` when it is not loaded yet and Redis cannot answer, and
        `StoredValueError` when its stored config does not decode.
        """
        state = self._by_id.get(campaign_id)
        if state is not None:
            return state
        if not is_valid_id(campaign_id):
            return None
        missing_until = self._missing.get(campaign_id)
        if missing_until is not None:
            if self._clock() < missing_until:
                return None
            del self._missing[campaign_id]
        return await self._flights.run(campaign_id, lambda: self._load(campaign_id))

    async def tenants_of(self, campaign_id: str) -> tuple[str, ...]:
        if self._clock() >= self._index_expires_at:
            self._index = await self._index_flight.run("index", self._read_index)
            self._index_expires_at = self._clock() + self._index_ttl_s
        return self._index.get(campaign_id, ())

    async def _read_index(self) -> dict[str, tuple[str, ...]]:
        raw: Iterable[bytes] = await self._guard.call(
            "campaign_index",
            lambda: self._client.hkeys(keys.campaigns_index_key()),  # type: ignore[arg-type,return-value]
        )
        return parse_campaigns_index(raw)

    async def owner_of(self, campaign_id: str) -> str | None:
        """The tenant whose campaign the id is (None: unpublished, or ambiguous legacy state).

        An id the index does not list costs no read of its owner (ids come from URLs).
        """
        tenants = await self.tenants_of(campaign_id)
        if not tenants:
            return None
        raw_owner = await self._guard.call(
            "campaign_owner",
            lambda: self._client.get(keys.campaign_owner_key(campaign_id)),
        )
        recorded = raw_owner.decode("utf-8", "replace") if isinstance(raw_owner, bytes) else None
        ownership = CampaignOwnership(
            campaign_id, recorded if recorded and is_valid_id(recorded) else None, tenants
        )
        if ownership.conflict:
            if ownership.owner is None:
                log.warning(
                    "campaign id %r is published by several tenants (%s) and has no recorded owner: "
                    "not served until one of them publishes it again",
                    campaign_id,
                    ", ".join(ownership.conflict),
                )
            else:
                log.warning(
                    "campaign id %r is also published by %s, not its owner: serving its owner %s",
                    campaign_id,
                    ", ".join(ownership.conflict),
                    ownership.owner,
                )
        return ownership.tenant

    async def _load(self, campaign_id: str) -> CampaignState | None:
        tenant = await self.owner_of(campaign_id)
        if tenant is None:
            return None

        def read() -> CampaignState | None:
            raw = self._client.get(keys.campaign_config_key(tenant, campaign_id))
            if raw is None:
                return None
            view = build_campaign_view(tenant, campaign_id, raw)  # type: ignore[arg-type]
            return CampaignState(
                view=view,
                ip_index=load_ip_index(self._client, tenant, campaign_id),
                revocations=load_revocations(self._client, tenant),
            )

        # Loading validates the whole campaign (pydantic, URL gate, bleach for markup copy): far
        # more work than a read, once per campaign and process, so it gets a larger budget.
        state = await self._guard.call("campaign_config", read, timeout_s=max(1.0, self._guard.timeout_s))
        if state is None:
            if len(self._missing) > 10_000:  # ids come from URLs: keep the map bounded
                self._missing.clear()
            self._missing[campaign_id] = self._clock() + self._index_ttl_s
            return None
        self._by_id[campaign_id] = state
        self._on_loaded(state)
        return state
