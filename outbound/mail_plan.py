"""Who gets a mail piece and what it says: one recipient per contact with a postal address.

The same accounts and fallbacks as the sequencer export (`outbound.export`). The line is the
copy the `print` surface may show (`welcomemat.surfaces`) of one zone, for the arm
`assign_arm` gives the account: personal only when every fact it cites allows print, else
its fallback copy; a claim no longer true at the end of the in-home day gets the fallback
(`status=expires_before_in_home`). Every cell goes through the export's choke point
(`welcomemat.outreach.export_cells`); a recipient with a refused cell gets the fallback line.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_time

import redis

from outbound.export import ExportSummary, campaign_accounts
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.contract import CONTINUATION_PAGE_ID
from welcomemat.campaign.view import CampaignView
from welcomemat.errors import InputError
from welcomemat.outreach.export_cells import CellRefusal, export_cell
from welcomemat.outreach.sequencer_row import RowStatus, fact_statement, served_fact
from welcomemat.records.account_records import AccountRecord, ContactProfile
from welcomemat.security.urlgate import source_href
from welcomemat.surfaces import Surface
from welcomemat.zones.payload import public_zone
from welcomemat.zones.resolution import Variant, choose_variant, resolve_zones, segment_variant
from welcomemat.zones.zoneset import Rung, ZoneSet, ZoneSetStatus

__all__ = [
    "MAIL_COLUMNS",
    "QR_FOLDER",
    "MailPlan",
    "MailStatus",
    "QrMaker",
    "Recipient",
    "in_home_deadline",
    "mail_recipients",
    "mail_zone",
]

# The folder of the QR images, as the vendor file names each one.
QR_FOLDER = "qr"
MAIL_COLUMNS = (
    "account_id",
    "contact_id",
    "company",
    "first_name",
    "last_name",
    "title",
    "address_line1",
    "address_line2",
    "city",
    "region",
    "postal_code",
    "country",
    "line",
    "qr_url",
    "qr_image",
    "rung",
    "fact",
    "fact_url",
    "fact_date",
    "status",
)
_ADDRESS_COLUMNS = {
    "address_line1": "line1",
    "address_line2": "line2",
    "city": "city",
    "region": "region",
    "postal_code": "postal_code",
    "country": "country",
}

# (account id, contact id) -> the contact's signed QR URL.
QrMaker = Callable[[str, str], str]


class MailStatus(enum.StrEnum):
    """A recipient's `status`: `ok`, or why the line is the fallback copy."""

    OK = "ok"
    EXPIRES_BEFORE_IN_HOME = "expires_before_in_home"  # the claim is stale by the in-home date
    PENDING_REVIEW = RowStatus.PENDING_REVIEW.value
    REJECTED = RowStatus.REJECTED.value
    EXPIRED = RowStatus.EXPIRED.value
    UNREADABLE_ZONE_SET = RowStatus.UNREADABLE_ZONE_SET.value
    REFUSED_CELL = RowStatus.REFUSED_CELL.value
    NO_COPY = RowStatus.NO_COPY.value


@dataclass(frozen=True)
class Recipient:
    """One mail piece: its checked cells, and the page its QR code must land on."""

    cells: dict[str, str]
    # The continuation zone's HTML as the renderer shows this account (None: no such page).
    page_html: str | None

    @property
    def key(self) -> str:
        return f"{self.cells['account_id']}/{self.cells['contact_id']}"

    @property
    def qr_url(self) -> str:
        return self.cells["qr_url"]


@dataclass
class MailPlan:
    """The recipients of one campaign and what was left out."""

    recipients: list[Recipient] = field(default_factory=list)
    contacts_without_address: int = 0
    accounts: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    unreadable_records: list[str] = field(default_factory=list)


def in_home_deadline(in_home: date) -> datetime:
    """The last instant of the in-home day (UTC): a claim must still be true then."""
    return datetime.combine(in_home + timedelta(days=1), day_time(0), tzinfo=UTC) - timedelta(microseconds=1)


def mail_zone(view: CampaignView, zone: str | None) -> str:
    """The zone whose copy is the printed line: `zone`, else the continuation page's first."""
    page = view.page(CONTINUATION_PAGE_ID)
    if zone is None:
        if page is None:
            first = next(iter(view.campaign.pages.values()), None)
            if first is None:
                raise InputError(f"{view.tenant}/{view.campaign_id} has no pages", field="CAMPAIGN")
            return first.zones[0]
        return page.zones[0]
    if zone not in view.campaign.page_zone_ids():
        raise InputError(f"zone {zone!r} is on none of the campaign's pages", field="--zone")
    return zone


class _Planner:
    def __init__(self, view: CampaignView, qr_for: QrMaker, zone: str, now: datetime, in_home: date) -> None:
        self.view = view
        self.qr_for = qr_for
        self.zone = zone
        self.now = now
        self.deadline = in_home_deadline(in_home)
        page = view.page(CONTINUATION_PAGE_ID)
        self.page_zone = None if page is None else (zone if zone in page.zones else page.zones[0])

    def recipients(
        self, record: AccountRecord, zone_set: ZoneSet | None, unreadable: str | None
    ) -> list[Recipient]:
        with_address = [c for c in record.contacts if c.address is not None]
        if not with_address:
            return []
        view = self.view
        arm = assign_arm(view.tenant, view.campaign_id, record.account_id, view.campaign.holdout_fraction)
        segment = zone_set.segment if zone_set is not None else record.segment
        fallback = segment_variant(arm, segment)
        status = self._status(zone_set, arm is Arm.PERSONAL)
        variant = choose_variant(arm, zone_set, self.deadline) if status is MailStatus.OK else fallback
        shared = self._line_cells(record, variant)
        if isinstance(shared, MailStatus):
            status, shared = shared, self._line_cells(record, fallback)
            if isinstance(shared, MailStatus):
                shared = {"line": "", "rung": "", "fact": "", "fact_url": "", "fact_date": ""}
                status = MailStatus.NO_COPY if status is MailStatus.NO_COPY else MailStatus.REFUSED_CELL
        page_html = self._page_html(zone_set, arm)
        out: list[Recipient] = []
        for contact in with_address:
            cells, refused = self._contact_cells(record, contact)
            row_status = MailStatus.REFUSED_CELL if refused else status
            line_cells = shared
            if refused and shared["rung"] == Rung.PERSONAL.value:
                fallback_cells = self._line_cells(record, fallback)
                line_cells = fallback_cells if isinstance(fallback_cells, dict) else shared
            cells.update(line_cells)
            cells["status"] = row_status.value
            out.append(Recipient({c: cells.get(c, "") for c in MAIL_COLUMNS}, page_html))
        return out

    def _status(self, zone_set: ZoneSet | None, personal_arm: bool) -> MailStatus:
        if zone_set is None:
            return MailStatus.UNREADABLE_ZONE_SET
        if zone_set.status is ZoneSetStatus.PENDING_REVIEW:
            return MailStatus.PENDING_REVIEW
        if zone_set.status is ZoneSetStatus.REJECTED:
            return MailStatus.REJECTED
        if personal_arm and not zone_set.is_servable_as_personal(self.now):
            return MailStatus.EXPIRED
        if personal_arm and not zone_set.is_servable_as_personal(self.deadline):
            return MailStatus.EXPIRES_BEFORE_IN_HOME
        return MailStatus.OK

    def _line_cells(self, record: AccountRecord, variant: Variant) -> dict[str, str] | MailStatus:
        """The line, its rung and its claim's provenance, checked; or why they cannot be printed."""
        zones = resolve_zones(self.view, (self.zone,), variant, Surface.PRINT)
        if not zones:
            return MailStatus.NO_COPY
        by_id = {z.zone_id: z for z in zones}
        served = served_fact(variant, (self.zone,), by_id)
        fact, zone_text = served if served is not None else (None, "")
        raw = {
            "line": public_zone(zones[0])["text"],
            "rung": zones[0].rung.value,
            "fact": (fact_statement(record, fact.fact_id) or zone_text) if fact else None,
            "fact_url": source_href(fact.source_url) if fact else None,
            "fact_date": fact.published_at.isoformat() if fact else None,
        }
        cells: dict[str, str] = {}
        for column, value in raw.items():
            cell = export_cell(value)
            if isinstance(cell, CellRefusal):
                return MailStatus.REFUSED_CELL
            cells[column] = cell
        return cells

    def _contact_cells(self, record: AccountRecord, contact: ContactProfile) -> tuple[dict[str, str], bool]:
        address = contact.address
        assert address is not None
        values: dict[str, str | None] = {
            "account_id": record.account_id,
            "contact_id": contact.contact_id,
            "company": record.name or record.domain or record.account_id,
            "first_name": contact.first_name,
            "last_name": contact.last_name,
            "title": contact.title,
            "qr_url": self.qr_for(record.account_id, contact.contact_id),
            "qr_image": f"{QR_FOLDER}/{record.account_id}__{contact.contact_id}.png",
        }
        values.update({column: getattr(address, part) for column, part in _ADDRESS_COLUMNS.items()})
        cells: dict[str, str] = {}
        refused = False
        for column, value in values.items():
            cell = export_cell(value)
            if isinstance(cell, CellRefusal):
                refused = True
                cell = ""
            cells[column] = cell
        if not cells["company"]:
            cells["company"] = record.account_id
        return cells, refused

    def _page_html(self, zone_set: ZoneSet | None, arm: Arm) -> str | None:
        """The continuation zone as the renderer shows this account now (its `web` copy)."""
        if self.page_zone is None:
            return None
        zones = resolve_zones(
            self.view, (self.page_zone,), choose_variant(arm, zone_set, self.now), Surface.WEB
        )
        return str(zones[0].html) if zones else None


def mail_recipients(
    client: redis.Redis,
    view: CampaignView,
    qr_for: QrMaker,
    *,
    now: datetime,
    in_home: date,
    zone: str | None = None,
) -> MailPlan:
    """Every recipient of the campaign (contacts with an address), in SCAN order."""
    planner = _Planner(view, qr_for, mail_zone(view, zone), now, in_home)
    plan = MailPlan()
    tally = ExportSummary()
    for record, zone_set, unreadable in campaign_accounts(client, view.tenant, view.campaign_id, tally):
        plan.accounts += 1
        plan.contacts_without_address += sum(1 for c in record.contacts if c.address is None)
        for recipient in planner.recipients(record, zone_set, unreadable):
            status = recipient.cells["status"]
            plan.by_status[status] = plan.by_status.get(status, 0) + 1
            plan.recipients.append(recipient)
    plan.unreadable_records = tally.unreadable_records
    return plan
