"""`welcomemat mail CAMPAIGN --out DIR`: the print vendor's file, a QR code each, a proof sheet.

One recipient per contact with a postal address (`address` in accounts.jsonl, kept in the
account record by precompute) of every account in the campaign, whatever its zone set's
status: the same accounts and fallbacks as the sequencer export (`outbound.export`).

- **The line** is the copy the `print` surface may show (`welcomemat.surfaces`) of one zone
  (`--zone`, default the continuation page's first zone: the story the scan continues), for
  the arm `assign_arm` gives the account: personal only when every fact it cites allows
  print, else its fallback copy. A claim whose zone set stops being servable before the end
  of the in-home day (`valid_until`, the earliest expiry of its cited facts' recency words,
  `precompute.recency`) gets the fallback too (`status=expires_before_in_home`): a card
  that lands after its "congrats on last week's raise" is false must not say it.
- **The QR URL** is `<public url>/q/<token>` (`welcomemat.links.signed_url`, the one signer),
  written as a PNG by `outbound.qr_image`.
- **Every cell** goes through the export's choke point (`welcomemat.export_cells`), and the CSV
  writer applies `spreadsheet_safe`; a recipient with a refused cell gets the fallback line.

**Preflight** (blocking): every QR image is decoded back with ZXing and must give its URL;
every URL is requested from the running renderer and must answer 303 to a continuation page
that answers 200 and shows the very zone text that account sees there (its `web` copy, at
the renderer's hour). The preflight's requests carry `PREFLIGHT_USER_AGENT`, so the renderer
logs no scan or view for them. Nothing reaches DIR unless every recipient passes: the files
are written in a temporary folder beside it and renamed into place; a failure lists each
recipient and why, and leaves DIR as it was.
"""

from __future__ import annotations

import csv
import enum
import html
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import redis

from outbound.command_output import counts_in_words
from outbound.export import ExportSummary, campaign_accounts
from outbound.qr_image import write_qr_image
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign import CONTINUATION_PAGE_ID
from welcomemat.campaign_view import CampaignView
from welcomemat.contact_workflow import record_printed
from welcomemat.errors import InputError, WelcomematError
from welcomemat.export_cells import CellRefusal, export_cell
from welcomemat.links import PREFLIGHT_USER_AGENT
from welcomemat.records import AccountRecord, ContactProfile
from welcomemat.sequencer_row import RowStatus, fact_statement, served_fact
from welcomemat.settings import Settings
from welcomemat.spreadsheet import spreadsheet_safe
from welcomemat.surfaces import Surface
from welcomemat.urlgate import source_href
from welcomemat.zone_resolution import Variant, choose_variant, resolve_zones, segment_variant
from welcomemat.zones_payload import public_zone
from welcomemat.zoneset import Rung, ZoneSet, ZoneSetStatus

__all__ = [
    "MAIL_COLUMNS",
    "MailPlan",
    "MailStatus",
    "PreflightFailure",
    "PreflightReport",
    "Recipient",
    "in_home_deadline",
    "mail_recipients",
    "mail_zone",
    "preflight",
    "run_mail",
    "write_mail_folder",
    "write_proof_sheet",
]

VENDOR_FILE = "recipients.csv"
PROOF_FILE = "proof.pdf"
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
_PREFLIGHT_TIMEOUT_S = 10.0

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


@dataclass(frozen=True)
class PreflightFailure:
    recipient: str
    reason: str

    def __str__(self) -> str:
        return f"{self.recipient}: {self.reason}"


@dataclass
class PreflightReport:
    checked: int = 0
    decoded: int = 0
    resolved: int = 0
    seconds: float = 0.0
    failures: list[PreflightFailure] = field(default_factory=list)

    @property
    def decode_rate(self) -> float:
        return self.decoded / self.checked if self.checked else 1.0

    def as_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "decoded": self.decoded,
            "resolved": self.resolved,
            "decode_rate": round(self.decode_rate, 4),
            "seconds": round(self.seconds, 3),
            "seconds_per_1000": round(self.seconds * 1000 / self.checked, 3) if self.checked else 0.0,
            "failures": [{"recipient": f.recipient, "reason": f.reason} for f in self.failures],
        }


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


# -- writing ---------------------------------------------------------------------------------------


def write_mail_folder(recipients: list[Recipient], folder: Path) -> None:
    """The vendor file, one QR image per recipient and the proof sheet, into `folder`."""
    (folder / QR_FOLDER).mkdir()
    for recipient in recipients:
        write_qr_image(recipient.qr_url, folder / recipient.cells["qr_image"])
    with open(folder / VENDOR_FILE, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\r\n")
        writer.writerow(MAIL_COLUMNS)
        for recipient in recipients:
            writer.writerow([spreadsheet_safe(recipient.cells[c]) for c in MAIL_COLUMNS])
    write_proof_sheet(recipients, folder, folder / PROOF_FILE)


_A5_MM = (148.0, 210.0)  # the proof page (landscape): a postcard-sized sheet
_UNICODE_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def write_proof_sheet(recipients: Iterable[Recipient], folder: Path, path: Path) -> None:
    """One A5-landscape page per recipient: the address, the line, the QR and the claim's provenance."""
    from fpdf import FPDF

    pdf = FPDF(orientation="landscape", unit="mm", format=_A5_MM)
    pdf.set_auto_page_break(auto=False)
    pdf.set_margins(10, 10, 10)
    if _UNICODE_FONT.is_file():
        pdf.add_font("Body", fname=str(_UNICODE_FONT))
        font, text = "Body", _as_is
    else:  # the PDF core fonts cover Latin-1 only: anything else shows as `?`
        font, text = "Helvetica", _latin1
    for recipient in recipients:
        cells = recipient.cells
        pdf.add_page()
        pdf.set_font(font, size=9)
        who = " ".join(p for p in (cells["first_name"], cells["last_name"]) if p) or cells["contact_id"]
        address = [cells["company"], cells["address_line1"], cells["address_line2"]]
        address += [" ".join(p for p in (cells["postal_code"], cells["city"], cells["region"]) if p)]
        address += [cells["country"]]
        pdf.multi_cell(120, 4.5, text("\n".join([who, *[a for a in address if a]])))
        pdf.image(str(folder / cells["qr_image"]), x=150, y=10, w=50, h=50)
        pdf.set_xy(10, 62)
        pdf.set_font(font, size=14)
        pdf.multi_cell(190, 7, text(cells["line"] or "(no line)"))
        pdf.set_font(font, size=8)
        pdf.ln(3)
        claim = (
            [f"Claim: {cells['fact']}", f"Source: {cells['fact_url']}", f"Published: {cells['fact_date']}"]
            if cells["fact"]
            else ["Claim: none (segment copy)"]
        )
        tail = [f"Status: {cells['status']}   Rung: {cells['rung']}", f"QR: {cells['qr_url']}"]
        pdf.multi_cell(190, 4, text("\n".join([*claim, *tail])))
    pdf.output(str(path))


def _as_is(value: str) -> str:
    return value


def _latin1(value: str) -> str:
    return value.encode("latin-1", "replace").decode("latin-1")


# -- preflight -------------------------------------------------------------------------------------


def preflight(
    recipients: list[Recipient], folder: Path, renderer_url: str, public_url: str
) -> PreflightReport:
    """Decode every QR image and follow every URL through the renderer at `renderer_url`.

    Requests go to `renderer_url` with the public URL's host in `Host`, so a renderer on a
    private address is checked exactly as the printed URL will reach it.
    """
    import zxingcpp
    from PIL import Image

    report = PreflightReport()
    started = time.perf_counter()
    public = urlsplit(public_url)
    headers = {"host": public.netloc, "user-agent": PREFLIGHT_USER_AGENT}
    with httpx.Client(base_url=renderer_url, timeout=_PREFLIGHT_TIMEOUT_S, follow_redirects=False) as http:
        for recipient in recipients:
            report.checked += 1
            with Image.open(folder / recipient.cells["qr_image"]) as image:
                found = zxingcpp.read_barcodes(
                    image, formats=zxingcpp.BarcodeFormats(zxingcpp.BarcodeFormat.QRCode)
                )
            texts = [b.text for b in found]
            if texts != [recipient.qr_url]:
                what = "no code" if not texts else f"{texts!r}"
                report.failures.append(PreflightFailure(recipient.key, f"the QR image decodes to {what}"))
                continue
            report.decoded += 1
            why = _follow(http, headers, recipient, public_url)
            if why is None:
                report.resolved += 1
            else:
                report.failures.append(PreflightFailure(recipient.key, why))
    report.seconds = time.perf_counter() - started
    return report


def _follow(http: httpx.Client, headers: dict[str, str], recipient: Recipient, public_url: str) -> str | None:
    """Why the recipient's URL does not land on its continuation page, or None when it does."""
    target = urlsplit(recipient.qr_url)
    try:
        scan = http.get(target.path, headers=headers)
        if scan.status_code != 303:
            return f"the renderer answered {scan.status_code} to the QR URL, not 303 to a continuation page"
        location = scan.headers.get("location", "")
        if not location.startswith(f"{public_url}/c/") or not location.endswith("/continue"):
            return f"the QR URL redirects to {location!r}, not to a continuation page"
        cookie = scan.headers.get("set-cookie", "").split(";", 1)[0]
        page = http.get(
            urlsplit(location).path, headers={**headers, **({"cookie": cookie} if cookie else {})}
        )
    except httpx.HTTPError as exc:
        return f"the renderer did not answer ({type(exc).__name__}: {exc})"
    if page.status_code != 200:
        return f"the continuation page answered {page.status_code}, not 200"
    if recipient.page_html is None:
        return "the campaign has no continuation page"
    if recipient.page_html not in page.text:
        return (
            f"the continuation page does not show this account's copy {html.unescape(recipient.page_html)!r}"
        )
    return None


# -- the command -----------------------------------------------------------------------------------


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("exists and is not an empty folder; nothing was written", file=out, field="--out")
    if not out.parent.is_dir():
        raise InputError(f"folder {str(out.parent)!r} does not exist", file=out, field="--out")


def _publish(folder: Path, out: Path) -> None:
    """Move the checked folder into place (a rename on the same file system)."""
    if out.is_dir():
        out.rmdir()  # empty: checked before anything was written
    os.chmod(folder, 0o755)
    os.replace(folder, out)


def run_mail(
    campaign_ref: str,
    out: str,
    *,
    in_home: date | None,
    base_url: str | None,
    renderer_url: str | None,
    zone: str | None,
    now: datetime,
    as_json: bool = False,
) -> int:
    """`welcomemat mail`: 0 when the folder was written, 1 when the preflight failed (nothing written)."""
    import json

    from welcomemat.campaign_ref import resolve_campaign_ref
    from welcomemat.campaign_view import load_campaign_view
    from welcomemat.connection import connect, resolve_redis
    from welcomemat.links import contact_links
    from welcomemat.settings import origin_url
    from welcomemat.tokens import TokenSigner

    target = Path(out)
    _check_out(target)
    day = in_home or now.date()
    if day < now.date():
        raise InputError(
            f"{day.isoformat()} is before today ({now.date().isoformat()})", field="--in-home-date"
        )
    settings = Settings.from_env()
    public_url = origin_url(base_url, "--base-url") if base_url else settings.public_url
    renderer = origin_url(renderer_url, "--renderer-url") if renderer_url else public_url
    signer = TokenSigner.from_setting(settings.require_secret())
    client = connect(resolve_redis(settings))
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        view = load_campaign_view(client, tenant, campaign)

        qr_for = contact_links(signer, public_url, tenant=tenant, campaign=campaign, qr=True)
        plan = mail_recipients(client, view, qr_for, now=now, in_home=day, zone=zone)
    except redis.RedisError as exc:
        raise WelcomematError(f"mail {campaign_ref}: Redis failed ({exc}); nothing was written") from exc
    finally:
        client.close()
    folder = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        write_mail_folder(plan.recipients, folder)
        report = preflight(plan.recipients, folder, renderer, public_url)
        if not report.failures:
            _publish(folder, target)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not report.failures:
        _mark_printed(settings, tenant, campaign, plan.recipients, target, now)
    name = f"{tenant}/{campaign}"
    _report(name, target, day, plan, report)
    if as_json:
        summary = {
            "campaign": name,
            "out": str(target),
            "written": not report.failures,
            "in_home_date": day.isoformat(),
            "recipients": len(plan.recipients),
            "accounts": plan.accounts,
            "contacts_without_address": plan.contacts_without_address,
            "by_status": dict(sorted(plan.by_status.items())),
            "unreadable_records": plan.unreadable_records,
            "preflight": report.as_json(),
        }
        print(json.dumps(summary, indent=2))
    return 1 if report.failures else 0


def _mark_printed(
    settings: Settings, tenant: str, campaign: str, recipients: list[Recipient], out: Path, now: datetime
) -> None:
    """Each piece in the folder is its contact's `printed` mark (`welcomemat.contact_workflow`).

    The folder is already in place: a Redis failure here costs the marks, not the files, and
    is said on stderr (the exit code stays the folder's)."""
    from welcomemat.connection import connect, resolve_redis

    marks = (
        (
            r.cells["account_id"],
            r.cells["contact_id"],
            {"rung": r.cells["rung"], "status": r.cells["status"], "file": str(out)},
        )
        for r in recipients
    )
    client = connect(resolve_redis(settings))
    try:
        record_printed(client, tenant, campaign, marks, now_ms=int(now.timestamp() * 1000))
    except redis.RedisError as exc:
        print(
            f"welcomemat: the pieces were written but not marked printed (Redis failed: {exc})",
            file=sys.stderr,
        )
    finally:
        client.close()


def _report(name: str, out: Path, day: date, plan: MailPlan, report: PreflightReport) -> None:
    statuses = counts_in_words(plan.by_status)
    per_1000 = report.seconds * 1000 / report.checked if report.checked else 0.0
    print(
        f"mail {name}: {len(plan.recipients)} recipients from {plan.accounts} accounts "
        f"({plan.contacts_without_address} contacts without an address), in home {day.isoformat()}; "
        f"by status: {statuses}; preflight: {report.decoded}/{report.checked} QR codes decoded, "
        f"{report.resolved} landed on their page, {report.seconds:.2f} s ({per_1000:.1f} s per 1,000)",
        file=sys.stderr,
    )
    for unreadable in plan.unreadable_records:
        print(f"welcomemat: no recipients (record does not decode): {unreadable}", file=sys.stderr)
    for failure in report.failures:
        print(f"welcomemat: preflight failed: {failure}", file=sys.stderr)
    if report.failures:
        print(
            f"welcomemat: preflight failed for {len(report.failures)} recipient(s); nothing written to {out}",
            file=sys.stderr,
        )
    else:
        print(f"written to {out}: {VENDOR_FILE}, {PROOF_FILE}, {QR_FOLDER}/", file=sys.stderr)
