"""A campaign as pages, the snippet API and exports serve it: one config version, fallback copy resolved.

Built from the stored config (`welcomemat.campaign.config`) once per config version: the
allowlist, and every segment's and the default copy as resolved zones (text through
`markup.render_text`, CTA links through the URL gate). Cleaning allowed inline markup with
bleach happens here, at load, never per request. So does preparing the campaign's theme
files (`welcomemat.theme.files`). The renderer (`server.campaigns`) keeps views fresh; the
exports and the lift report load one with `load_campaign_view`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import markupsafe
import redis

from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.sections import PageSpec, ZoneCopy
from welcomemat.errors import InputError
from welcomemat.security.markup import clean_inline, markup_to_text, render_text
from welcomemat.security.urlgate import LinkAllowlist, safe_href
from welcomemat.theme.files import ThemeFile, theme_files
from welcomemat.theme.folder import Theme
from welcomemat.zones.contract import ZoneContract, ZoneFallback
from welcomemat.zones.zoneset import Rung

__all__ = ["CampaignView", "ResolvedZone", "build_campaign_view", "campaign_view", "load_campaign_view"]


@dataclass(frozen=True, slots=True)
class ResolvedZone:
    """One zone as a page shows it. `html` comes from `markup.render_text` only."""

    zone_id: str
    html: markupsafe.Markup
    text: str
    href: str | None
    rung: Rung
    # The campaign CTA a link zone's href is (None without one): a hosted page's CTA links
    # through the click redirect, which names the zone and this id (`server.engagement.click_redirect`).
    cta_id: str | None = None


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
    href = cta_id = None
    if contract is not None and contract.link and copy.cta is not None:
        cta = campaign.cta(copy.cta)
        href = safe_href(cta.href if cta is not None else None, campaign.allowlist())
        cta_id = copy.cta if href is not None else None
    text = markup_to_text(cleaned) if cleaned is not None else copy.text
    return ResolvedZone(
        zone_id=zone_id,
        html=render_text(text, cleaned, allowed),
        text=text,
        href=href,
        rung=rung,
        cta_id=cta_id,
    )


def build_campaign_view(tenant: str, campaign_id: str, raw: bytes) -> CampaignView:
    """Decode and check a stored config (`welcomemat.campaign.config`) into its view.

    Raises `StoredValueError` naming the key when it does not decode or names another campaign.
    """
    stored = decode_campaign_config(tenant, campaign_id, raw)
    fingerprint = hashlib.sha256(raw).hexdigest()[:16]
    return campaign_view(tenant, campaign_id, stored.campaign, stored.zones, stored.theme, fingerprint)


def load_campaign_view(client: redis.Redis, tenant: str, campaign: str) -> CampaignView:
    """The campaign as published (contract, zone contracts, fallback copy), as the renderer loads it."""
    raw = client.get(keys.campaign_config_key(tenant, campaign))
    if raw is None:
        raise InputError(
            f"campaign {tenant}/{campaign} is not published (or expired); run `welcomemat precompute` first",
            field="CAMPAIGN",
        )
    return build_campaign_view(tenant, campaign, raw)  # type: ignore[arg-type]


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
