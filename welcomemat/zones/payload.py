"""The one serializer of the zones payload: what `/v1/zones` answers and exports reproduce.

Public fields only (hard invariant 7): per zone its plain `text`, its `rung` and, for a
link zone, the `href` that passed the URL gate; the campaign's allowlisted link hosts,
so the snippet can check a link again before it sets one. Nothing of a zone's evidence,
cited facts, reason codes, confidence or provider metadata: a `ResolvedZone` does not
even carry them, and this module names every field it writes.

`zones` lists only what the snippet is to write. A zone whose rung is the campaign default
is left out unless the campaign sets `snippet.replace_default`: the customer's page holds
its own words there, and the campaign's generic copy is no better for a visitor it knows
nothing about (issue 26). Deciding it here, in the one serializer, keeps the snippet a
plain applier of what it is given (an old cached snippet.js included), and the answer
smaller. `best_rung` and `zone_rungs` still describe the ladder's decision for every zone,
so metrics and the view token say `default` for a visitor who was served the site's copy.

Built from already-resolved zones (`welcomemat.zones.resolution.resolve_zones`), without
Starlette: `zones_payload(campaign_id, arm, zones, links)` returns a `ZonesPayload`;
`as_dict(view_id, view)` is the JSON object, `encode(view_id, view)` its UTF-8 bytes. The
response depends on (campaign config, arm, segment or zone-set version) except for the
view id and view token, so a `ZonesPayload` is built once and cached; `encode` only
joins the per-request strings between two pre-serialized halves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from welcomemat.arms import Arm
from welcomemat.campaign.view import ResolvedZone
from welcomemat.zones.resolution import RUNG_ORDER, best_rung
from welcomemat.zones.zoneset import Rung

__all__ = ["ZonesPayload", "public_zone", "zones_payload"]


_JSON_SAFE = re.compile(r"[A-Za-z0-9_.-]*")


def _text(value: str) -> str:
    # Lone surrogates (possible in stored text) are not encodable as UTF-8: U+FFFD, as a
    # browser would show them.
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def public_zone(zone: ResolvedZone) -> dict[str, str]:
    """A zone's public fields: `text` (plain), `rung`, and `href` for a link zone."""
    entry = {"text": _text(zone.text), "rung": zone.rung.value}
    if zone.href is not None:
        entry["href"] = zone.href
    return entry


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ZonesPayload:
    """A zones response without its per-request fields (`view_id`, `view`)."""

    campaign: str
    arm: str
    zones: Mapping[str, Mapping[str, str]]
    links: tuple[str, ...]
    best_rung: str
    # (rung, number of zones served from it), for the zones-by-rung counter
    zone_rungs: tuple[tuple[str, int], ...]
    _head: bytes = field(repr=False)
    _tail: bytes = field(repr=False)

    def as_dict(self, view_id: str, view: str | None) -> dict[str, object]:
        """The JSON object: `{campaign, arm, view_id, view, zones, links}`."""
        return {
            "campaign": self.campaign,
            "arm": self.arm,
            "view_id": view_id,
            "view": view,
            "zones": {k: dict(v) for k, v in self.zones.items()},
            "links": list(self.links),
        }

    def encode(self, view_id: str, view: str | None) -> bytes:
        """`as_dict(view_id, view)` as compact UTF-8 JSON (the same document, built faster)."""
        if view is not None and _JSON_SAFE.fullmatch(view_id) and _JSON_SAFE.fullmatch(view):
            # View ids and tokens are URL-safe characters: nothing in them needs escaping.
            middle = f'"view_id":"{view_id}","view":"{view}",'
        else:
            middle = f'"view_id":{_dumps(view_id)},"view":{_dumps(view)},'
        return self._head + middle.encode() + self._tail


def zones_payload(
    campaign_id: str,
    arm: Arm,
    zones: Iterable[ResolvedZone],
    links: Iterable[str],
    *,
    replace_default: bool = False,
) -> ZonesPayload:
    """The payload for resolved zones (in order; a zone id twice keeps the first) and the
    campaign's allowlisted link hosts. Default-rung zones are written only with
    `replace_default` (the campaign's `snippet.replace_default`)."""
    resolved = list(zones)
    public: dict[str, dict[str, str]] = {}
    seen: set[str] = set()
    for zone in resolved:
        if zone.zone_id in seen:
            continue
        seen.add(zone.zone_id)
        if zone.rung is Rung.DEFAULT and not replace_default:
            continue  # the site's own copy stays
        public[zone.zone_id] = public_zone(zone)
    hosts = tuple(sorted(set(links)))
    rungs = [z.rung for z in resolved]
    counts = tuple((rung.value, rungs.count(rung)) for rung in RUNG_ORDER if rung in rungs)
    head = f'{{"campaign":{_dumps(campaign_id)},"arm":{_dumps(arm.value)},'
    tail = f'"zones":{_dumps(public)},"links":{_dumps(list(hosts))}}}'
    return ZonesPayload(
        campaign=campaign_id,
        arm=arm.value,
        zones=public,
        links=hosts,
        best_rung=best_rung(resolved),
        zone_rungs=counts,
        _head=head.encode(),
        _tail=tail.encode(),
    )
