"""Which copy each zone serves: the fallback ladder at serve time, for pages, `/v1/zones` and exports.

One function decides, so a page, the snippet's JSON and a sequencer export row can never
disagree about a visitor's copy:

- anonymous visitors: the campaign default for every zone;
- holdout accounts, and accounts whose zone set is missing, past `valid_until` or not
  `published`: their segment's copy (from the zone set's `segment`), else the default;
- personal: each zone of the zone set, re-checked here: a zone whose cited facts are not
  all allowed on the channel asked for (`welcomemat.surfaces`: web for pages and the
  snippet, email for the sequencer export, seller, print) takes its fallback copy on that
  channel; a link zone's href must pass the URL gate again (hard invariant 2; else that
  zone takes its fallback copy), its page markup comes from `markup.render_text` only.
  A zone missing from the set takes its fallback copy; a zone with no copy at all is left
  out (fail closed).

Pure and synchronous: no Starlette, no Redis, no templates. Importable by anything that
holds a `CampaignView` (`welcomemat.campaign.view.build_campaign_view` builds one from the stored
config) and a zone set:

    variant = choose_variant(arm, zone_set, now)
    zones = resolve_zones(view, view.campaign.page_zone_ids(), variant, Surface.WEB)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from welcomemat.arms import Arm
from welcomemat.campaign.view import CampaignView, ResolvedZone
from welcomemat.security.markup import render_text
from welcomemat.security.urlgate import safe_href
from welcomemat.surfaces import Surface
from welcomemat.zones.zoneset import Rung, ZoneSet

__all__ = [
    "PLAIN_RUNG",
    "RUNG_ORDER",
    "Variant",
    "best_rung",
    "choose_variant",
    "resolve_zones",
    "segment_variant",
]

# The "rung" of a response served fail-closed (no campaign copy at all).
PLAIN_RUNG = "plain"
# Most personal first.
RUNG_ORDER = (Rung.PERSONAL, Rung.SEGMENT, Rung.DEFAULT)


@dataclass(slots=True)
class Variant:
    """The copy a visitor gets, decided once per request (not frozen: a frozen dataclass's
    `__init__` costs several times more, and this one is built per request; nothing mutates it).

    `personal` is the zone set when it is served as personal (arm personal, published,
    inside `valid_until`), else None; `segment` names the segment copy below it (None for
    anonymous visitors and accounts without a known zone set). `key` is everything a
    cached page or payload depends on besides the campaign config.
    """

    arm: Arm
    personal: ZoneSet | None
    segment: str | None
    key: tuple[object, ...]

    @property
    def zone_set_version(self) -> int | None:
        return self.personal.version if self.personal is not None else None

    @property
    def copy_variant(self) -> str | None:
        """The copy experiment's variant of the zone set served as personal (None otherwise)."""
        return self.personal.variant if self.personal is not None else None


def choose_variant(arm: Arm, zone_set: ZoneSet | None, now: datetime) -> Variant:
    """The variant for an arm and the account's zone set (None: none known) at `now`."""
    if arm is Arm.ANONYMOUS:
        return Variant(arm, None, None, (arm.value, "default"))
    segment = zone_set.segment if zone_set is not None else None
    if arm is Arm.PERSONAL and zone_set is not None and zone_set.is_servable_as_personal(now):
        return Variant(arm, zone_set, segment, (arm.value, "personal", zone_set.account_id, zone_set.version))
    return segment_variant(arm, segment)


def segment_variant(arm: Arm, segment: str | None) -> Variant:
    """The segment copy (else the default) for an arm: what any account falls back to."""
    return Variant(arm, None, segment, (arm.value, "segment", segment))


def resolve_zones(
    view: CampaignView, zone_ids: Iterable[str], variant: Variant, surface: Surface
) -> list[ResolvedZone]:
    """The zones to show on `surface`, in `zone_ids` order; zones with no copy at all are left out."""
    resolved: list[ResolvedZone] = []
    for zone_id in zone_ids:
        zone = None
        if variant.personal is not None:
            zone = _personal_zone(view, variant.personal, zone_id, surface)
        if zone is None:
            zone = view.fallback_zone(variant.segment, zone_id)
        if zone is not None:
            resolved.append(zone)
    return resolved


def best_rung(zones: Iterable[ResolvedZone]) -> str:
    """The label of a response for metrics, events and view tokens: its most personal rung."""
    rungs = {z.rung for z in zones}
    for rung in RUNG_ORDER:
        if rung in rungs:
            return rung.value
    return PLAIN_RUNG


def _personal_zone(
    view: CampaignView, zone_set: ZoneSet, zone_id: str, surface: Surface
) -> ResolvedZone | None:
    content = zone_set.zone(zone_id)
    if content is None or not content.allows(surface):
        return None
    contract = view.zones.get(zone_id)
    allowed = contract.markup if contract is not None else frozenset()
    href = None
    if contract is not None and contract.link:
        href = safe_href(content.href, view.allowlist)
        if href is None:  # hard invariant 2, checked again at serve time: this zone falls back
            return None
    return ResolvedZone(
        zone_id=zone_id,
        html=render_text(content.text, content.markup, allowed),
        # Stored plain: precompute keeps `markup_to_text` of cleaned markup as the text.
        text=content.text,
        href=href,
        rung=content.rung,
        cta_id=content.cta_id if href is not None else None,
    )
