"""Campaigns the renderer serves: contract, zone contracts and fallback copy, loaded from Redis.

precompute publishes each campaign's contract and zone contracts as one JSON value
(`keys.campaign_config_key`) and indexes `tenant/campaign` in `keys.campaigns_index_key`.
The renderer finds the tenant of a URL's campaign id in that index, loads the config
once, and builds everything a page needs that does not depend on the visitor: the
allowlist, and every segment's and the default copy as resolved zones (text through
`markup.render_text`, CTA links through the URL gate). Cleaning allowed inline markup
with bleach happens here, at load, never per request. So does decoding the campaign's
theme (`welcomemat.theme.Theme`, its file rules checked again) and preparing its files for
`server.theme_assets`; its templates are built once per config version by `server.render`.

A campaign id published by two tenants is ambiguous from a URL alone: it is served by
neither (404, logged), rather than one tenant's page on the other's link.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import markupsafe
import redis

from server.ip_index import IpRangeIndex, parse_ip_ranges
from server.redis_guard import RedisGuard
from server.singleflight import SingleFlight
from server.theme_assets import ThemeFile, theme_files
from welcomemat import keys
from welcomemat.campaign import Campaign, PageSpec, ZoneCopy
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.markup import clean_inline, markup_to_text, render_text
from welcomemat.theme import Theme
from welcomemat.theme_rules import ThemeProblem
from welcomemat.urlgate import LinkAllowlist, safe_href
from welcomemat.yamlfile import FieldProblems
from welcomemat.zone_contract import ZoneContract, ZoneFallback
from welcomemat.zoneset import Rung

__all__ = [
    "CampaignRegistry",
    "CampaignState",
    "CampaignView",
    "ResolvedZone",
    "build_campaign_view",
    "campaign_view",
    "load_ip_index",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResolvedZone:
    """One zone as a page shows it. `html` comes from `markup.render_text` only."""

    zone_id: str
    html: markupsafe.Markup
    text: str
    href: str | None
    rung: Rung


@dataclass(frozen=True)
class CampaignView:
    """One version of a campaign's config, with its fallback copy resolved."""

    tenant: str
    campaign_id: str
    campaign: Campaign
    zones: Mapping[str, ZoneContract]
    allowlist: LinkAllowlist
    # Hash of the stored config: part of every rendered-page cache key.
    fingerprint: str
    default_zones: Mapping[str, ResolvedZone]
    segment_zones: Mapping[str, Mapping[str, ResolvedZone]]
    # The campaign's own branding, if it published one, and its files ready to serve.
    theme: Theme | None = None
    theme_files: Mapping[str, ThemeFile] = field(default_factory=dict)

    def page(self, page_id: str) -> PageSpec | None:
        return self.campaign.pages.get(page_id)

    def fallback_zone(self, segment: str | None, zone_id: str) -> ResolvedZone | None:
        """The ladder below personal: the segment's copy (if the zone falls back to segment
        copy and the segment is known), else the campaign default."""
        contract = self.zones.get(zone_id)
        if segment is not None and (contract is None or contract.fallback is ZoneFallback.SEGMENT):
            zone = self.segment_zones.get(segment, {}).get(zone_id)
            if zone is not None:
                return zone
        return self.default_zones.get(zone_id)


def _resolve_copy(
    zone_id: str, copy: ZoneCopy, rung: Rung, contract: ZoneContract | None, campaign: Campaign
) -> ResolvedZone:
    allowed = contract.markup if contract is not None else frozenset()
    cleaned = clean_inline(copy.text, allowed) if allowed and "<" in copy.text else None
    href = None
    if contract is not None and contract.link and copy.cta is not None:
        cta = campaign.cta(copy.cta)
        href = safe_href(cta.href if cta is not None else None, campaign.allowlist())
    text = markup_to_text(cleaned) if cleaned is not None else copy.text
    return ResolvedZone(
        zone_id=zone_id,
        html=render_text(text, cleaned, allowed),
        text=text,
        href=href,
        rung=rung,
    )


def build_campaign_view(tenant: str, campaign_id: str, raw: bytes) -> CampaignView:
    """Decode and check a stored config (the same checks as loading campaign.yaml and its theme).

    Raises `StoredValueError` naming the key when it does not decode or names another campaign.
    """
    key = keys.campaign_config_key(tenant, campaign_id)
    try:
        config = json.loads(raw)
        zones = {k: ZoneContract.model_validate(v) for k, v in config["zones"].items()}
        campaign = Campaign.model_validate(config["campaign"], context={"zones": zones})
        stored_theme = config.get("theme")
        theme = Theme.model_validate(stored_theme) if stored_theme is not None else None
    # ValidationError is a ValueError; FieldProblems: the campaign's cross-field checks.
    except (ValueError, KeyError, TypeError, AttributeError, FieldProblems) as exc:
        raise StoredValueError(key, f"campaign config does not decode: {exc}") from exc
    except ThemeProblem as problem:
        raise StoredValueError(key, f"the campaign's theme breaks a rule: theme/{problem}") from None
    if (campaign.tenant, campaign.campaign) != (tenant, campaign_id):
        raise StoredValueError(
            key, f"holds {campaign.tenant}/{campaign.campaign}, not {tenant}/{campaign_id}"
        )
    fingerprint = hashlib.sha256(raw).hexdigest()[:16]
    return campaign_view(tenant, campaign_id, campaign, zones, theme, fingerprint)


def campaign_view(
    tenant: str,
    campaign_id: str,
    campaign: Campaign,
    zones: Mapping[str, ZoneContract],
    theme: Theme | None,
    fingerprint: str,
) -> CampaignView:
    """A view of checked inputs: fallback copy resolved, theme files prepared."""
    zone_ids = set(campaign.page_zone_ids())
    default_zones = {
        z: _resolve_copy(z, copy, Rung.DEFAULT, zones.get(z), campaign)
        for z, copy in campaign.default_copy.items()
        if z in zone_ids
    }
    segment_zones = {
        name: {
            z: _resolve_copy(z, copy, Rung.SEGMENT, zones.get(z), campaign)
            for z, copy in segment.zones.items()
            if z in zone_ids
        }
        for name, segment in campaign.segments.items()
    }
    return CampaignView(
        tenant=tenant,
        campaign_id=campaign_id,
        campaign=campaign,
        zones=zones,
        allowlist=campaign.allowlist(),
        fingerprint=fingerprint,
        default_zones=default_zones,
        segment_zones=segment_zones,
        theme=theme,
        theme_files=theme_files(theme) if theme is not None else {},
    )


def load_ip_index(client: redis.Redis, tenant: str, campaign_id: str) -> IpRangeIndex:
    """The campaign's IP-range index from `keys.ip_ranges_key` (blocking; run in a thread)."""
    raw: Mapping[bytes, bytes] = client.hgetall(keys.ip_ranges_key(tenant, campaign_id))  # type: ignore[assignment]
    ranges, bad = parse_ip_ranges(raw)
    if bad:
        log.warning("ip ranges of %s/%s: %d unusable entries skipped", tenant, campaign_id, bad)
    return IpRangeIndex(ranges)


@dataclass
class CampaignState:
    """A loaded campaign. The watcher replaces `view` and `ip_index` whole (atomic swaps)."""

    view: CampaignView
    ip_index: IpRangeIndex
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
        """The campaign for a URL's id; None when no tenant (or more than one) publishes it.

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
        raw: Mapping[bytes, bytes] = await self._guard.call(
            "campaign_index",
            lambda: self._client.hgetall(keys.campaigns_index_key()),  # type: ignore[arg-type,return-value]
        )
        index: dict[str, list[str]] = {}
        for entry in raw:
            tenant, _, campaign_id = entry.decode("utf-8", "replace").partition("/")
            if is_valid_id(tenant) and is_valid_id(campaign_id):
                index.setdefault(campaign_id, []).append(tenant)
        return {c: tuple(sorted(t)) for c, t in index.items()}

    async def _load(self, campaign_id: str) -> CampaignState | None:
        tenants = await self.tenants_of(campaign_id)
        if len(tenants) != 1:
            if tenants:
                log.warning(
                    "campaign id %r is published by several tenants (%s): not served",
                    campaign_id,
                    ", ".join(tenants),
                )
            return None
        tenant = tenants[0]

        def read() -> CampaignState | None:
            raw = self._client.get(keys.campaign_config_key(tenant, campaign_id))
            if raw is None:
                return None
            view = build_campaign_view(tenant, campaign_id, raw)  # type: ignore[arg-type]
            return CampaignState(view=view, ip_index=load_ip_index(self._client, tenant, campaign_id))

        # Loading validates the whole campaign (pydantic, URL gate, bleach for markup copy):
        # a few ms once per campaign and process, so it gets a larger budget than a read.
        state = await self._guard.call("campaign_config", read, timeout_s=max(1.0, self._guard.timeout_s))
        if state is None:
            if len(self._missing) > 10_000:  # ids come from URLs: keep the map bounded
                self._missing.clear()
            self._missing[campaign_id] = self._clock() + self._index_ttl_s
            return None
        self._by_id[campaign_id] = state
        self._on_loaded(state)
        return state
