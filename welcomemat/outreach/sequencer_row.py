"""One sequencer row per contact: the variables a sequencer template reads, built in one place.

`welcomemat export` streams these rows into its file (`outbound.export`) and
`welcomemat preview email` / the admin preview fill a template with them: the preview shows
exactly the variables the file would carry, never a second mapping. What each column holds,
and why a row holds its fallback (`RowStatus`), is documented on `outbound.export`.

`SequencerRowBuilder.account_rows` takes the account's arm from `assign_arm`; a preview asks
for one `Branch` instead (the personal copy, its segment fallback, the holdout), so every
branch an account's contacts could receive is rendered before a send.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.view import CampaignView, ResolvedZone
from welcomemat.errors import InputError, WelcomematError
from welcomemat.lift.counted_variant import declared_variants, zone_set_counted_variant
from welcomemat.outreach.export_cells import CellRefusal, export_cell
from welcomemat.records.account_records import AccountRecord, ContactProfile
from welcomemat.security.urlgate import source_href
from welcomemat.surfaces import Surface
from welcomemat.zones.payload import public_zone
from welcomemat.zones.resolution import PLAIN_RUNG, Variant, choose_variant, resolve_zones, segment_variant
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneSet, ZoneSetStatus

__all__ = [
    "FILLABLE_COLUMNS",
    "LEAD_COLUMNS",
    "TAIL_COLUMNS",
    "AccountRows",
    "Branch",
    "ExportError",
    "ExportProblem",
    "LinkMaker",
    "RowStatus",
    "SequencerRowBuilder",
    "column_name",
    "export_columns",
    "fact_statement",
    "parse_fill",
    "rung_column",
    "served_fact",
]

LEAD_COLUMNS = (
    "email",
    "first_name",
    "last_name",
    "title",
    "company",
    "account_id",
    "contact_id",
    "arm",
    "zone_set_version",
    "variant",
    "rung",
)
# `status` came last so that the columns before it keep the places they always had; the rung of
# each zone (`rung_<zone>`, `rung_column`) came later still, and follows it for the same reason.
TAIL_COLUMNS = ("fact", "fact_url", "fact_date", "page_url", "status")
_RUNG_PREFIX = "rung_"
_NOT_COLUMN_CHARS = re.compile(r"[^a-z0-9_]")
_CONTACT_COLUMNS = ("email", "first_name", "last_name", "title", "contact_id", "page_url")
# The optional contact columns `--fill-empty` may fill, for a sequencer without a fallback
# syntax of its own. Never `fact`: text standing in for a missing fact would be a claim.
FILLABLE_COLUMNS = ("first_name", "last_name", "title")
_FILL_MAX_CHARS = 80

# (account id, contact id) -> the contact's signed page URL.
LinkMaker = Callable[[str, str], str]


class RowStatus(enum.StrEnum):
    """A row's `status`: `ok`, or why it holds the fallback."""

    OK = "ok"
    PENDING_REVIEW = "pending_review"  # a person has not approved the zone set yet
    REJECTED = "rejected"  # a reviewer rejected it
    EXPIRED = "expired"  # past `valid_until`: its facts are too old to say
    UNREADABLE_ZONE_SET = "unreadable_zone_set"  # the stored zone set does not decode
    REFUSED_CELL = "refused_cell"  # a cell held markup, script or template syntax
    NO_COPY = "no_copy"  # the campaign has no copy at all for a zone


class ExportError(WelcomematError):
    """The export file cannot be produced at all (columns that clash, Redis gone)."""


@dataclass(frozen=True)
class ExportProblem:
    """An account (or one contact of it) whose rows hold the fallback, and why."""

    account_id: str
    contact_id: str | None  # None: every contact of the account
    status: RowStatus
    detail: str
    rows: int

    def __str__(self) -> str:
        who = f"account {self.account_id}" + (f", contact {self.contact_id}" if self.contact_id else "")
        return f"{who}: {self.status}: {self.detail} ({self.rows} row{'s' * (self.rows != 1)})"


class Branch(enum.StrEnum):
    """Which copy a preview asks the builder for, whatever arm the account is in."""

    PERSONAL = "personal"  # the personal arm, its personal copy where the ladder serves it
    SEGMENT = "segment"  # the personal arm's fallback row: the segment copy, no fact
    HOLDOUT = "holdout"  # the holdout arm: its segment copy, as the experiment holds


def parse_fill(spec: str) -> tuple[str, str]:
    """`COLUMN=TEXT` (`--fill-empty`): a fillable column and the checked text for its empty cells.

    `InputError` (exit 2) for another column, no `=`, blank or overlong text, or text the
    export's choke point refuses (markup, template syntax, control characters).
    """
    column, sep, text = spec.partition("=")
    column = column.strip()
    if not sep or column not in FILLABLE_COLUMNS:
        raise InputError(
            f"{spec[:40]!r}: write COLUMN=TEXT with COLUMN one of {', '.join(FILLABLE_COLUMNS)}",
            field="--fill-empty",
        )
    cell = export_cell(text[: _FILL_MAX_CHARS + 1])
    if isinstance(cell, CellRefusal):
        raise InputError(f"{column}: {cell}", field="--fill-empty")
    if not cell.strip() or len(text) > _FILL_MAX_CHARS:  # blank once control characters are spaces
        raise InputError(f"{column}: the text must be 1-{_FILL_MAX_CHARS} characters", field="--fill-empty")
    return column, cell


def column_name(zone_id: str) -> str:
    """A zone id as a column name: lowercase, anything but `[a-z0-9_]` becomes `_`."""
    return _NOT_COLUMN_CHARS.sub("_", zone_id.lower())


def rung_column(zone_id: str) -> str:
    """The column naming the rung a zone's copy came from: `rung_<zone column>`."""
    return _RUNG_PREFIX + column_name(zone_id)


def export_columns(view: CampaignView) -> tuple[tuple[str, ...], dict[str, tuple[str, str | None]]]:
    """The header, and zone id -> (text column, url column or None).

    Lead columns, then each page zone's text (and url) column in page order, the tail columns,
    then each page zone's rung column (`rung_column`) in the same order.
    """
    zone_columns: dict[str, tuple[str, str | None]] = {}
    header = list(LEAD_COLUMNS)
    for zone_id in view.campaign.page_zone_ids():
        contract = view.zones.get(zone_id)
        text = column_name(zone_id)
        url = f"{text}_url" if contract is not None and contract.link else None
        zone_columns[zone_id] = (text, url)
        header += [text] if url is None else [text, url]
    header += TAIL_COLUMNS
    header += [rung_column(zone_id) for zone_id in zone_columns]
    clashes = sorted({c for c in header if header.count(c) > 1})
    if clashes:
        raise ExportError(
            f"zone ids of {view.tenant}/{view.campaign_id} give columns that clash: {', '.join(clashes)}; "
            "rename the zone"
        )
    return tuple(header), zone_columns


def fact_statement(record: AccountRecord, fact_id: str) -> str | None:
    """The statement of a fact as the account record holds it (written at publish), or None."""
    known = record.facts.get(fact_id)
    if known is not None:
        return known.statement
    for engagement in record.engagement.values():
        for shown in engagement.facts_shown:
            if shown.id == fact_id:
                return shown.statement
    return None


def served_fact(
    variant: Variant, zone_ids: Iterable[str], served: Mapping[str, ResolvedZone]
) -> tuple[CitedFact, str] | None:
    """The first fact cited by a zone served as personal (page order), with that zone's text."""
    if variant.personal is None:
        return None
    for zone_id in zone_ids:
        zone = served.get(zone_id)
        if zone is None or zone.rung is not Rung.PERSONAL:
            continue
        content = variant.personal.zone(zone_id)
        if content is not None and content.facts:
            return content.facts[0], zone.text
    return None


@dataclass
class _Cells:
    """Checked cells (refused ones left empty) and what was refused or missing, by column."""

    values: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def put(self, column: str, value: str | None) -> bool:
        cell = export_cell(value)
        if isinstance(cell, CellRefusal):
            self.values[column] = ""
            self.refused[column] = str(cell)
            return False
        self.values[column] = cell
        return True

    def why(self) -> tuple[RowStatus, str] | None:
        parts = [f"column {c!r} refused: {why}" for c, why in self.refused.items()]
        parts += [f"no copy at all for zone column {c!r}" for c in self.missing]
        if not parts:
            return None
        return (RowStatus.REFUSED_CELL if self.refused else RowStatus.NO_COPY), "; ".join(parts)


@dataclass
class AccountRows:
    """An account's rows, the arm they were built for, and the fallbacks among them."""

    arm: Arm
    rung: str
    rows: list[dict[str, str]]
    problems: list[ExportProblem]


class SequencerRowBuilder:
    """Builds an account's rows (column -> checked cell) for one campaign at one instant."""

    def __init__(
        self, view: CampaignView, link_for: LinkMaker, now: datetime, fill: Mapping[str, str] | None = None
    ) -> None:
        self.view = view
        self.link_for = link_for
        self.now = now
        self.fill = dict(fill or {})  # column -> text for its empty cells (`parse_fill`)
        self.header, self.zone_columns = export_columns(view)
        self.zone_ids = tuple(self.zone_columns)
        self.site = view.campaign.site_base_url
        self.declared = declared_variants(view.campaign)

    def account_rows(
        self,
        record: AccountRecord,
        zone_set: ZoneSet | None,
        unreadable: str | None,
        branch: Branch | None = None,
    ) -> AccountRows:
        """The account's rows in its own arm, or (`branch`) in the branch a preview asks for."""
        view = self.view
        account_id = record.account_id
        if branch is None:
            arm = assign_arm(view.tenant, view.campaign_id, account_id, view.campaign.holdout_fraction)
        else:
            arm = Arm.HOLDOUT if branch is Branch.HOLDOUT else Arm.PERSONAL
        segment = zone_set.segment if zone_set is not None else record.segment
        version = str(zone_set.version) if zone_set is not None else ""
        status, detail = self._account_status(arm, zone_set, unreadable)
        fallback = segment_variant(arm, segment)
        personal = status is RowStatus.OK and branch is not Branch.SEGMENT
        variant = choose_variant(arm, zone_set, self.now) if personal else fallback
        # The variant the lift report counts the account in, whatever copy the row holds.
        counted = zone_set_counted_variant(arm, zone_set, self.declared)
        rung, shared = self._shared(record, variant, version, counted)
        trouble = shared.why()
        if trouble is not None and variant.personal is not None:
            first = shared
            rung, shared = self._shared(record, fallback, version, counted)  # the fallback row
            status, detail = trouble
            still = [c for c in [*shared.refused, *shared.missing] if c not in first.refused]
            if still:
                detail += f"; the fallback too: {', '.join(still)}"
        elif trouble is not None:
            status = trouble[0] if status is RowStatus.OK else status
            detail = f"{detail}; {trouble[1]}" if detail else trouble[1]
        problems: list[ExportProblem] = []
        if status is not RowStatus.OK:
            problems.append(ExportProblem(account_id, None, status, detail, len(record.contacts)))
        rows: list[dict[str, str]] = []
        fallback_cells: _Cells | None = None
        for contact in record.contacts:
            own = self._contact_cells(contact, account_id)
            row_status, cells = status, shared
            if own.refused:
                if variant.personal is not None and status is RowStatus.OK:
                    fallback_cells = fallback_cells or self._shared(record, fallback, version, counted)[1]
                    cells = fallback_cells
                row_status = RowStatus.REFUSED_CELL
                why = own.why()
                problems.append(
                    ExportProblem(account_id, contact.contact_id, row_status, why[1] if why else "", 1)
                )
            row = {**cells.values, **own.values, "status": row_status.value}
            rows.append({column: row[column] for column in self.header})
        return AccountRows(arm, rung, rows, problems)

    def _account_status(
        self, arm: Arm, zone_set: ZoneSet | None, unreadable: str | None
    ) -> tuple[RowStatus, str]:
        if zone_set is None:
            return RowStatus.UNREADABLE_ZONE_SET, unreadable or "the zone set does not decode"
        if zone_set.status is ZoneSetStatus.PENDING_REVIEW:
            return RowStatus.PENDING_REVIEW, f"version {zone_set.version} waits for a person's approval"
        if zone_set.status is ZoneSetStatus.REJECTED:
            return RowStatus.REJECTED, f"version {zone_set.version} was rejected in review"
        if arm is Arm.PERSONAL and not zone_set.is_servable_as_personal(self.now):
            return RowStatus.EXPIRED, f"version {zone_set.version} expired at {zone_set.valid_until}"
        return RowStatus.OK, ""

    def _shared(
        self, record: AccountRecord, variant: Variant, version: str, counted: str | None
    ) -> tuple[str, _Cells]:
        """The headline's rung and the cells every contact of the account shares, for one variant
        of the copy; `counted`: the copy experiment's variant the lift report counts the account in."""
        zones = resolve_zones(self.view, self.zone_ids, variant, Surface.EMAIL)
        by_id = {z.zone_id: z for z in zones}
        cells = _Cells()
        # The name, else the domain, else the id: the first that is clean. A refused name is
        # a refusal (the personal copy may build on it), a missing one is not.
        cells.put("company", record.name)
        for candidate in (record.domain, record.account_id):
            clean = export_cell(candidate)
            if not cells.values["company"] and isinstance(clean, str):
                cells.values["company"] = clean
        cells.put("account_id", record.account_id)
        cells.put("arm", variant.arm.value)
        cells.put("zone_set_version", version)
        cells.put("variant", counted)
        # `rung` is the headline's: the first zone of the campaign's pages, the line a rep
        # quotes. Each zone's own rung is in its `rung_<zone>` column.
        rungs = {z: by_id[z].rung.value if z in by_id else PLAIN_RUNG for z in self.zone_ids}
        cells.put("rung", rungs[self.zone_ids[0]] if self.zone_ids else PLAIN_RUNG)
        for zone_id, (text_column, url_column) in self.zone_columns.items():
            cells.put(rung_column(zone_id), rungs[zone_id])
            zone = by_id.get(zone_id)
            if zone is None:
                cells.values[text_column] = ""
                cells.missing.append(text_column)
                if url_column is not None:
                    cells.values[url_column] = ""
                continue
            public = public_zone(zone)  # the very fields /v1/zones serves
            cells.put(text_column, public["text"])
            if url_column is not None:
                cells.put(url_column, public.get("href") or self.site)
        served = served_fact(variant, self.zone_ids, by_id)
        fact, zone_text = served if served is not None else (None, "")
        cells.put("fact", (fact_statement(record, fact.fact_id) or zone_text) if fact else None)
        cells.put("fact_url", source_href(fact.source_url) if fact else None)
        cells.put("fact_date", fact.published_at.isoformat() if fact else None)
        return cells.values["rung"], cells

    def _contact_cells(self, contact: ContactProfile, account_id: str) -> _Cells:
        cells = _Cells()
        values = {
            "email": contact.email,
            "first_name": contact.first_name,
            "last_name": contact.last_name,
            "title": contact.title,
            "contact_id": contact.contact_id,
            "page_url": self.link_for(account_id, contact.contact_id),
        }
        for column in _CONTACT_COLUMNS:
            cells.put(column, values[column])
        for column, text in self.fill.items():
            if not cells.values[column]:
                cells.values[column] = text  # checked by `parse_fill`; a refusal stays recorded
        return cells
