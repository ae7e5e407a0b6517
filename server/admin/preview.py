"""Preview-as-account: the page an account would see, and each zone's provenance beside it.

Which copy each zone shows is never decided here: the renderer renders the page
(`PageRenderer.render`, the same call and cache a visitor's request uses) and this module
reads the answer back from the page itself — every zone element carries `data-wm-zone`
and `data-wm-rung` (DESIGN.md). So the preview cannot drift from the ladder a visitor
gets. Provenance comes from the published zone set (cited facts with source and date)
and the explain record (rung reason, checks, the draft that failed them, the provider's
note on a zone it wrote no draft for); each reason code is shown with its one-line meaning
(`welcomemat.reasons`), a code it does not know as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html.parser import HTMLParser

from server.admin.payloads import CheckFailure, ExplainHeld, ExplainPayload
from welcomemat.arms import Arm
from welcomemat.reasons import parse_reason
from welcomemat.security.urlgate import source_href
from welcomemat.zones.zoneset import ZoneSet, ZoneSetStatus

__all__ = [
    "CitedSource",
    "PageZone",
    "ZoneProvenance",
    "personal_refusal",
    "read_page_zones",
    "zone_provenance",
]


@dataclass(frozen=True, slots=True)
class PageZone:
    """A zone as the rendered page shows it."""

    zone_id: str
    rung: str
    text: str
    href: str | None


class _ZoneReader(HTMLParser):
    """Collects `[data-wm-zone]` elements (never nested) with their rung, text and href."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.zones: list[PageZone] = []
        self._open: tuple[str, str, str, str | None] | None = None  # tag, zone, rung, href
        self._depth = 0
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._open is not None:
            if tag == self._open[0]:
                self._depth += 1
            return
        values = dict(attrs)
        zone = values.get("data-wm-zone")
        if zone is not None:
            self._open = (tag, zone, values.get("data-wm-rung") or "", values.get("href"))
            self._depth = 0
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if self._open is None or tag != self._open[0]:
            return
        if self._depth:
            self._depth -= 1
            return
        _, zone, rung, href = self._open
        self.zones.append(PageZone(zone, rung, " ".join("".join(self._text).split()), href))
        self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)


def read_page_zones(html: str) -> list[PageZone]:
    """The zones of a rendered page, in page order."""
    reader = _ZoneReader()
    reader.feed(html)
    reader.close()
    return reader.zones


@dataclass(frozen=True, slots=True)
class CitedSource:
    fact_id: str
    statement: str | None
    href: str | None  # through the URL gate (https, named host), else None: shown as text only
    raw_url: str | None
    published_at: str | None


@dataclass(frozen=True, slots=True)
class ZoneProvenance:
    """Why a zone shows what it shows."""

    zone: PageZone
    published_rung: str | None  # the zone set's rung for this zone (None: not in the zone set)
    reason: str | None
    reason_doc: str | None  # the reason code's one-line meaning; None for a code not known here
    note: str | None  # why the provider wrote no draft, in its words (e.g. the self-review's)
    sources: tuple[CitedSource, ...]
    checks: tuple[CheckFailure, ...]
    draft: str | None
    held: ExplainHeld | None = None  # a draft doubt kept off the page, for a person to approve

    @property
    def checks_passed(self) -> bool:
        return not self.checks


def zone_provenance(
    zones: list[PageZone], zone_set: ZoneSet | None, explain: ExplainPayload | None
) -> list[ZoneProvenance]:
    rows: list[ZoneProvenance] = []
    for zone in zones:
        content = zone_set.zone(zone.zone_id) if zone_set is not None else None
        explained = explain.zone(zone.zone_id) if explain is not None else None
        sources = []
        for cited in content.facts if content is not None else ():
            fact = explain.fact(cited.fact_id) if explain is not None else None
            sources.append(
                CitedSource(
                    fact_id=cited.fact_id,
                    statement=fact.statement if fact is not None else None,
                    href=source_href(cited.source_url),
                    raw_url=cited.source_url,
                    published_at=cited.published_at.isoformat(),
                )
            )
        reason = content.reason if content is not None else (explained.reason if explained else None)
        rows.append(
            ZoneProvenance(
                zone=zone,
                published_rung=content.rung.value if content is not None else None,
                reason=reason,
                reason_doc=parse_reason(reason).doc if reason is not None else None,
                note=explained.note if explained is not None else None,
                sources=tuple(sources),
                checks=explained.checks if explained is not None else (),
                draft=explained.draft if explained is not None and explained.checks else None,
                held=explained.held if explained is not None else None,
            )
        )
    return rows


def personal_refusal(arm: Arm, zone_set: ZoneSet | None, now: datetime) -> str | None:
    """Why this account's personal copy is not served (None: it is)."""
    if arm is Arm.ANONYMOUS:
        return "anonymous visitors see the campaign default"
    if arm is Arm.HOLDOUT:
        return "holdout arm: the account sees its segment's copy"
    if zone_set is None:
        return "no zone set is published for this account"
    if zone_set.status is not ZoneSetStatus.PUBLISHED:
        return f"zone set v{zone_set.version} is {zone_set.status.value}"
    if not zone_set.is_servable_as_personal(now):
        return f"zone set v{zone_set.version} expired at {zone_set.valid_until}"
    return None
