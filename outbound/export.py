"""`welcomemat export CAMPAIGN --format csv|jsonl [--out FILE]`: the sequencer export.

One row per contact of every account with a published zone set in the campaign (contacts
from the account's shared record, `welcomemat.records`). Each row carries exactly the copy
the web page serves that account: the zones are resolved by `welcomemat.zone_resolution`
(the one fallback ladder) for the arm `assign_arm` gives the account, and written through
`welcomemat.zones_payload.public_zone` (the serializer `/v1/zones` uses), so a holdout
account gets its segment copy in the email too and the experiment holds across channels.

Columns (stable, lowercase `[a-z0-9_]`, usable as lemlist / Smartlead custom variables):

    email first_name last_name title company account_id contact_id arm zone_set_version variant rung
    <one per zone of the campaign's pages, in page order; a link zone adds <zone>_url>
    fact fact_url fact_date page_url

- `rung`: the most personal rung among the row's zones (`personal`, `segment`, `default`).
- `zone_set_version`: the version of the account's zone set the row was resolved from,
  the one the page serves (personal zones of it, or the segment it names).
- `variant`: the copy variant (`welcomemat.experiments`) of the zone set served as personal,
  as on the page's events; `none` outside an experiment, in the holdout and on fallback.
- `fact`, `fact_url`, `fact_date`: the first fact a served personal zone cites, for the rep:
  its statement (as the account record holds it; until the record has one, the text of
  the personal zone that cites it, i.e. what the page says about it), its source link
  (through the URL gate) and its ISO publish date. `none` in all three when the row serves
  no personal zone (holdout, expired, fallback): the rep then has no fact to mention,
  which keeps the holdout clean.
- `page_url`: the contact's signed personal link (`/c/<campaign>?wm=…`, 30 days), so a
  click identifies the visitor. Needs `WELCOMEMAT_SECRET`.

No cell is ever empty. Missing profile values get neutral words: `first_name` becomes
`there` (so "Hi {{first_name}}" reads "Hi there"), `company` the domain or account id,
anything else `none`. No cell may contain a template marker (`{{`, `{%`, `[[`, `%NAME%`,
`{slot}`, `${`): the export stops with an error naming the account, contact and column
(with `--out`, the file is then left untouched).

CSV only: a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a
leading `'` so a spreadsheet opening the file shows it as text instead of running it as
a formula (OWASP's advice against CSV injection). CSV is UTF-8 without a BOM, RFC 4180
quoting; JSON Lines has the same fields, unprefixed. Rows come in SCAN order (any), one
batch of accounts at a time: memory stays flat whatever the campaign's size.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import redis

from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign_view import CampaignView, ResolvedZone, load_campaign_view
from welcomemat.errors import InputError, StoredValueError, WelcomematError
from welcomemat.published import PUBLISHED_BATCH, published_batch
from welcomemat.records import AccountRecord, ContactProfile, iter_account_records
from welcomemat.spreadsheet import SPREADSHEET_TRIGGERS, spreadsheet_safe
from welcomemat.store import ZoneSetStore
from welcomemat.urlgate import source_href
from welcomemat.zone_resolution import Variant, best_rung, choose_variant, resolve_zones
from welcomemat.zones_payload import public_zone
from welcomemat.zoneset import CitedFact, Rung, ZoneSet

__all__ = [
    "EXPORT_FORMATS",
    "FIRST_NAME_FALLBACK",
    "LEAD_COLUMNS",
    "NONE_VALUE",
    "SPREADSHEET_TRIGGERS",
    "TAIL_COLUMNS",
    "ExportError",
    "ExportSummary",
    "LinkMaker",
    "column_name",
    "export_columns",
    "export_rows",
    "find_template_marker",
    "run_export",
    "spreadsheet_safe",
    "write_export",
]

EXPORT_FORMATS = ("csv", "jsonl")
NONE_VALUE = "none"
FIRST_NAME_FALLBACK = "there"
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
TAIL_COLUMNS = ("fact", "fact_url", "fact_date", "page_url")
# Accounts whose zone sets and records are handled per round trip.
# What a sequencer, a template engine or a composer slot looks like when left unfilled.
_TEMPLATE_MARKER = re.compile(
    r"\{\{|\}\}|\{%|%\}|\{#|#\}|\[\[|\]\]|\$\{|%[A-Z][A-Z_]{3,}%|\{[A-Za-z_][A-Za-z0-9_]*\}"
)
_NOT_COLUMN_CHARS = re.compile(r"[^a-z0-9_]")

# (account id, contact id) -> the contact's signed page URL.
LinkMaker = Callable[[str, str], str]


class ExportError(WelcomematError):
    """The export cannot be written as promised (a template marker, an empty cell, a clash)."""


@dataclass
class ExportSummary:
    """What an export wrote."""

    rows: int = 0
    accounts: int = 0
    accounts_without_contacts: int = 0
    by_arm: dict[str, int] = field(default_factory=dict)
    by_rung: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def column_name(zone_id: str) -> str:
    """A zone id as a column name: lowercase, anything but `[a-z0-9_]` becomes `_`."""
    return _NOT_COLUMN_CHARS.sub("_", zone_id.lower())


def export_columns(view: CampaignView) -> tuple[tuple[str, ...], dict[str, tuple[str, str | None]]]:
    """The header, and zone id -> (text column, url column or None)."""
    zone_columns: dict[str, tuple[str, str | None]] = {}
    header = list(LEAD_COLUMNS)
    for zone_id in view.campaign.page_zone_ids():
        contract = view.zones.get(zone_id)
        text = column_name(zone_id)
        url = f"{text}_url" if contract is not None and contract.link else None
        zone_columns[zone_id] = (text, url)
        header += [text] if url is None else [text, url]
    header += TAIL_COLUMNS
    clashes = sorted({c for c in header if header.count(c) > 1})
    if clashes:
        raise ExportError(
            f"zone ids of {view.tenant}/{view.campaign_id} give columns that clash: {', '.join(clashes)}; "
            "rename the zone"
        )
    return tuple(header), zone_columns


def find_template_marker(text: str) -> str | None:
    """The first unfilled-template marker in `text`, or None."""
    match = _TEMPLATE_MARKER.search(text)
    return match.group(0) if match else None


def _records_with_zone_sets(
    client: redis.Redis, tenant: str, campaign: str, problems: list[str]
) -> Iterator[tuple[AccountRecord, ZoneSet]]:
    """Account records of the tenant joined with their published zone set in the campaign.

    Records lead (they are what holds contacts, and `iter_account_records` pipelines them);
    each batch's zone sets are read in one MGET.
    """
    store = ZoneSetStore(client)
    record_problems: list[StoredValueError] = []
    batch: list[AccountRecord] = []

    def flush() -> Iterator[tuple[AccountRecord, ZoneSet]]:
        published = published_batch(store, tenant, campaign, [r.account_id for r in batch], problems)
        for record in batch:
            zone_set = published.get(record.account_id)
            if zone_set is not None:
                yield record, zone_set

    for record in iter_account_records(client, tenant, problems=record_problems):
        batch.append(record)
        if len(batch) >= PUBLISHED_BATCH:
            yield from flush()
            batch = []
    if batch:
        yield from flush()
    problems.extend(str(p) for p in record_problems)


def _fact_statement(record: AccountRecord, fact_id: str) -> str | None:
    """The statement of a fact as the account record holds it (written at publish), or None."""
    known = record.facts.get(fact_id)
    if known is not None:
        return known.statement
    for engagement in record.engagement.values():
        for shown in engagement.facts_shown:
            if shown.id == fact_id:
                return shown.statement
    return None


def _served_fact(
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


class _RowBuilder:
    def __init__(self, view: CampaignView, link_for: LinkMaker, now: datetime) -> None:
        self.view = view
        self.link_for = link_for
        self.now = now
        self.header, self.zone_columns = export_columns(view)
        self.zone_ids = tuple(self.zone_columns)
        self.site = view.campaign.site_base_url

    def rows(self, record: AccountRecord, zone_set: ZoneSet) -> tuple[Arm, str, list[dict[str, str]]]:
        view = self.view
        account_id = zone_set.account_id
        arm = assign_arm(view.tenant, view.campaign_id, account_id, view.campaign.holdout_fraction)
        variant = choose_variant(arm, zone_set, self.now)
        zones = resolve_zones(view, self.zone_ids, variant)
        by_id = {z.zone_id: z for z in zones}
        rung = best_rung(zones)
        shared: dict[str, str] = {
            "company": record.name or record.domain or account_id,
            "account_id": account_id,
            "arm": arm.value,
            "zone_set_version": str(zone_set.version),
            "variant": variant.copy_variant or "none",
            "rung": rung,
        }
        for zone_id, (text_column, url_column) in self.zone_columns.items():
            zone = by_id.get(zone_id)
            if zone is None:
                raise ExportError(
                    f"{view.tenant}/{view.campaign_id}: zone {zone_id!r} has no copy for account "
                    f"{account_id} (neither personal, segment nor default); fix the campaign's copy"
                )
            public = public_zone(zone)  # the very fields /v1/zones serves
            shared[text_column] = public["text"]
            if url_column is not None:
                shared[url_column] = public.get("href") or self.site
        served = _served_fact(variant, self.zone_ids, by_id)
        if served is None:
            shared.update(fact=NONE_VALUE, fact_url=NONE_VALUE, fact_date=NONE_VALUE)
        else:
            fact, zone_text = served
            shared.update(
                fact=_fact_statement(record, fact.fact_id) or zone_text,
                fact_url=source_href(fact.source_url) or NONE_VALUE,
                fact_date=fact.published_at.isoformat(),
            )
        if not record.contacts:
            return arm, rung, []
        # Cells every contact of the account shares are checked once, not once per contact.
        first = record.contacts[0].contact_id
        checked = {column: self._cell(column, value, account_id, first) for column, value in shared.items()}
        rows = [self._contact_row(checked, contact, account_id) for contact in record.contacts]
        return arm, rung, rows

    def _cell(self, column: str, value: str, account_id: str, contact_id: str) -> str:
        """The cell as exported: stripped, never empty, never holding a template marker."""
        value = value.strip()
        if not value:
            value = FIRST_NAME_FALLBACK if column == "first_name" else NONE_VALUE
        marker = find_template_marker(value)
        if marker is not None:
            raise ExportError(
                f"{self.view.tenant}/{self.view.campaign_id}: account {account_id}, contact "
                f"{contact_id}, column {column!r} holds the template marker {marker!r} "
                f"({value[:80]!r}); fix the copy or the record, then export again"
            )
        return value

    def _contact_row(
        self, shared: dict[str, str], contact: ContactProfile, account_id: str
    ) -> dict[str, str]:
        contact_id = contact.contact_id
        own = {
            "email": contact.email,
            "first_name": contact.first_name or FIRST_NAME_FALLBACK,
            "last_name": contact.last_name or NONE_VALUE,
            "title": contact.title or NONE_VALUE,
            "contact_id": contact_id,
            "page_url": self.link_for(account_id, contact_id),
        }
        row = {**shared, **{c: self._cell(c, v, account_id, contact_id) for c, v in own.items()}}
        return {column: row[column] for column in self.header}


def export_rows(
    client: redis.Redis,
    view: CampaignView,
    link_for: LinkMaker,
    *,
    now: datetime,
    summary: ExportSummary | None = None,
    on_account: Callable[[], object] = lambda: None,
) -> tuple[tuple[str, ...], Iterator[dict[str, str]]]:
    """The header and a lazy stream of rows (column -> non-empty cell, not yet spreadsheet-safe)."""
    builder = _RowBuilder(view, link_for, now)
    tally = summary if summary is not None else ExportSummary()

    def generate() -> Iterator[dict[str, str]]:
        for record, zone_set in _records_with_zone_sets(
            client, view.tenant, view.campaign_id, tally.problems
        ):
            arm, rung, rows = builder.rows(record, zone_set)
            tally.accounts += 1
            on_account()
            if not rows:
                tally.accounts_without_contacts += 1
                continue
            tally.by_arm[arm.value] = tally.by_arm.get(arm.value, 0) + len(rows)
            tally.by_rung[rung] = tally.by_rung.get(rung, 0) + len(rows)
            for row in rows:
                tally.rows += 1
                yield row

    return builder.header, generate()


def write_export(header: tuple[str, ...], rows: Iterable[dict[str, str]], out: TextIO, fmt: str) -> None:
    """Write rows as CSV (spreadsheet-safe cells) or JSON Lines (the same fields, as they are)."""
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([spreadsheet_safe(row[c]) for c in header])
    elif fmt == "jsonl":
        for row in rows:
            out.write(json.dumps({c: row[c] for c in header}, ensure_ascii=False) + "\n")
    else:
        raise InputError(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}", field="--format")


def _write_atomically(path: Path, write: Callable[[TextIO], None]) -> None:
    """Write to a temporary file beside `path`, then rename it over `path` (all or nothing)."""
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("the folder to write the export to does not exist", file=path, field="--out")
    fd, temp_name = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def run_export(campaign_ref: str, fmt: str, out: str | None) -> int:
    """`welcomemat export`: write the campaign's rows to `out` (atomically) or stdout."""
    from welcomemat.campaign_ref import resolve_campaign_ref
    from welcomemat.connection import connect, resolve_redis
    from welcomemat.links import signed_url
    from welcomemat.settings import Settings
    from welcomemat.tokens import DEFAULT_TTL_S, TokenKind, TokenSigner

    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}", field="--format")
    settings = Settings.from_env()
    signer = TokenSigner.from_setting(settings.require_secret())
    ttl_s = DEFAULT_TTL_S[TokenKind.LINK]
    client = connect(resolve_redis(settings))
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        view = load_campaign_view(client, tenant, campaign)

        def link_for(account_id: str, contact_id: str) -> str:
            return signed_url(
                signer,
                settings.public_url,
                tenant=tenant,
                campaign=campaign,
                account=account_id,
                contact=contact_id,
                qr=False,
                ttl_s=ttl_s,
            )

        summary = ExportSummary()
        from tqdm import tqdm

        bar = tqdm(unit="acct", disable=not sys.stderr.isatty(), file=sys.stderr, dynamic_ncols=True)
        try:
            header, rows = export_rows(
                client,
                view,
                link_for,
                now=datetime.now(UTC),
                summary=summary,
                on_account=lambda: bar.update(1),
            )
            if out is None:
                write_export(header, rows, sys.stdout, fmt)
                sys.stdout.flush()
            else:
                _write_atomically(Path(out), lambda handle: write_export(header, rows, handle, fmt))
        finally:
            bar.close()
    finally:
        client.close()
    arms = ", ".join(f"{n} {arm}" for arm, n in sorted(summary.by_arm.items())) or "none"
    rungs = ", ".join(f"{n} {rung}" for rung, n in sorted(summary.by_rung.items())) or "none"
    print(
        f"export {tenant}/{campaign}: {summary.rows} rows from {summary.accounts} accounts "
        f"({summary.accounts_without_contacts} without contacts) to {out or 'stdout'}; "
        f"rows by arm: {arms}; by rung: {rungs}",
        file=sys.stderr,
    )
    for problem in summary.problems:
        print(f"welcomemat: skipped: {problem}", file=sys.stderr)
    return 1 if summary.problems else 0
