"""The sequencer export: the rows `welcomemat export` writes (`cli.export_command` runs it).

One row per contact of every account in the campaign: every account with a zone set in it,
whatever its status (contacts from the account's shared record, `welcomemat.records.account_records`).
Each row carries the copy the account's channel may show on the `email` surface
(`welcomemat.surfaces`): the zones are resolved by `welcomemat.zones.resolution` (the one
fallback ladder) for the arm `assign_arm` gives the account, and written through
`welcomemat.zones.payload.public_zone` (the serializer `/v1/zones` uses), so a holdout
account gets its segment copy in the email too and the experiment holds across channels.
A personal zone whose facts are not all allowed on `email` takes its fallback copy here.

Columns (stable, lowercase `[a-z0-9_]`, usable as lemlist / Smartlead / Outreach / Apollo
custom variables):

    email first_name last_name title company account_id contact_id arm zone_set_version variant rung
    <one per zone of the campaign's pages, in page order; a link zone adds <zone>_url>
    fact fact_url fact_date page_url status
    <rung_<zone> per zone of the campaign's pages, in page order>

- `rung`: the headline's rung (`personal`, `segment`, `default`; `plain` when it has no copy at
  all): the first zone of the campaign's pages, the line a rep would quote. A row whose only
  personal zone is the proof point says `segment` here, and `personal` in `rung_proof`.
- `rung_<zone>` (e.g. `rung_hero_headline`, `rung_proof`, `rung_cta`): the rung each zone's copy
  in this row came from, so a rep knows which line is about the account.
- `zone_set_version`: the version of the account's zone set the row was resolved from
  (empty when it does not decode).
- `variant`: the copy variant (`welcomemat.campaign.experiments`) the lift report counts the account in,
  decided by the report's own rule (`welcomemat.lift.counted_variant`): filled for a personal account
  of the report's population (zone set `published`) whose zone set was written with a variant of
  the experiment, even when the row holds its fallback today (expired facts, a refused cell);
  empty outside an experiment, in the holdout, and for a zone set pending review or rejected.
- `fact`, `fact_url`, `fact_date`: the first fact a zone served as personal cites, for the
  rep: its statement (as the account record holds it; until the record has one, the text
  of the personal zone that cites it), its source link (through the URL gate) and its ISO
  publish date. Empty when the row serves no personal zone (holdout, expired, fallback):
  the rep then has no fact to mention, which keeps the holdout clean.
- `page_url`: the contact's signed personal link (`/c/<campaign>?wm=…`, 30 days), so a
  click identifies the visitor. Needs `WELCOMEMAT_SECRET`.
- `status` (`RowStatus`): `ok`, or why the row holds its fallback.

One bad record never stops the file. An account whose zone set waits for review, was
rejected, has expired or does not decode, and a row with a cell the choke point refuses
(`welcomemat.outreach.export_cells`), gets its **fallback row**: the zones' segment copy (else the
campaign default), empty fact columns, `company` from the domain or id when the name is
refused, a refused contact field empty, and `status` saying why; each such account (or
contact) is listed in the summary's `problems`. Empty optional fields (`first_name`,
`last_name`, `title`, the fact columns) are empty cells, for the sequencer's own fallback
(docs/outbound.md: per sequencer), unless `fill` (`--fill-empty`) names text for the contact columns.
The zone columns are never empty unless the campaign has no copy for a zone at all
(`no_copy`).

CSV only: every cell goes through `spreadsheet_safe`. CSV is UTF-8 without a BOM, RFC 4180
quoting; JSON Lines has the same fields, unprefixed. Rows come in SCAN order (any), one
batch of accounts at a time: memory stays flat whatever the campaign's size.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import redis

from welcomemat.campaign.view import CampaignView
from welcomemat.errors import InputError, StoredValueError
from welcomemat.outreach.export_cells import CellRefusal, export_cell
from welcomemat.outreach.sequencer_row import (
    LEAD_COLUMNS,
    TAIL_COLUMNS,
    ExportError,
    ExportProblem,
    LinkMaker,
    RowStatus,
    SequencerRowBuilder,
    column_name,
    export_columns,
)
from welcomemat.records.account_records import AccountRecord, iter_account_records
from welcomemat.records.contact_workflow import WorkflowRecorder
from welcomemat.spreadsheet import spreadsheet_safe
from welcomemat.zones.published import PUBLISHED_BATCH, zone_set_batch
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "EXPORT_FORMATS",
    "LEAD_COLUMNS",
    "TAIL_COLUMNS",
    "ExportError",
    "ExportProblem",
    "ExportSummary",
    "LinkMaker",
    "RowStatus",
    "campaign_accounts",
    "column_name",
    "export_campaign",
    "export_columns",
    "export_rows",
    "write_export",
]

EXPORT_FORMATS = ("csv", "jsonl")


@dataclass
class ExportSummary:
    """What an export wrote, and every record that got its fallback."""

    rows: int = 0
    accounts: int = 0
    accounts_without_contacts: int = 0
    by_arm: dict[str, int] = field(default_factory=dict)
    by_rung: dict[str, int] = field(default_factory=dict)
    by_status: dict[str, int] = field(default_factory=dict)
    problems: list[ExportProblem] = field(default_factory=list)
    # Account records that do not decode: their contacts are unknown, so they have no row.
    unreadable_records: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "accounts": self.accounts,
            "accounts_without_contacts": self.accounts_without_contacts,
            "by_arm": dict(sorted(self.by_arm.items())),
            "by_rung": dict(sorted(self.by_rung.items())),
            "by_status": dict(sorted(self.by_status.items())),
            "problems": [
                {
                    "account_id": p.account_id,
                    "contact_id": p.contact_id,
                    "status": p.status.value,
                    "detail": p.detail,
                    "rows": p.rows,
                }
                for p in self.problems
            ],
            "unreadable_records": list(self.unreadable_records),
        }


def campaign_accounts(
    client: redis.Redis, tenant: str, campaign: str, summary: ExportSummary
) -> Iterator[tuple[AccountRecord, ZoneSet | None, str | None]]:
    """Account records of the tenant with a zone set in the campaign, in any status.

    Yields (record, zone set, None), or (record, None, what is wrong) when the zone set does
    not decode. Records lead (they hold the contacts, and `iter_account_records` pipelines
    them); each batch's zone sets are read in one MGET.
    """
    store = ZoneSetStore(client)
    record_problems: list[StoredValueError] = []
    batch: list[AccountRecord] = []

    def flush() -> Iterator[tuple[AccountRecord, ZoneSet | None, str | None]]:
        found, unreadable = zone_set_batch(store, tenant, campaign, [r.account_id for r in batch])
        for record in batch:
            if record.account_id in found:
                yield record, found[record.account_id], None
            elif record.account_id in unreadable:
                yield record, None, unreadable[record.account_id]

    for record in iter_account_records(client, tenant, problems=record_problems):
        batch.append(record)
        if len(batch) >= PUBLISHED_BATCH:
            yield from flush()
            batch = []
    if batch:
        yield from flush()
    summary.unreadable_records.extend(str(p) for p in record_problems)


def export_rows(
    client: redis.Redis,
    view: CampaignView,
    link_for: LinkMaker,
    *,
    now: datetime,
    summary: ExportSummary | None = None,
    on_account: Callable[[], object] = lambda: None,
    recorder: WorkflowRecorder | None = None,
    fill: Mapping[str, str] | None = None,
) -> tuple[tuple[str, ...], Iterator[dict[str, str]]]:
    """The header and a lazy stream of rows (column -> checked cell, not yet spreadsheet-safe).

    With `recorder`, each contact whose row is produced is marked `exported` (with the row's
    arm, rung, status, variant and zone-set version), one script call per batch of accounts.
    `fill` (column -> text, from `parse_fill`) fills those columns' empty cells.
    """
    builder = SequencerRowBuilder(view, link_for, now, fill)
    tally = summary if summary is not None else ExportSummary()

    def generate() -> Iterator[dict[str, str]]:
        for record, zone_set, unreadable in campaign_accounts(client, view.tenant, view.campaign_id, tally):
            account = builder.account_rows(record, zone_set, unreadable)
            tally.accounts += 1
            tally.problems.extend(account.problems)
            on_account()
            if recorder is not None:
                recorder.exported(record.account_id, account.rows)
            if not account.rows:
                tally.accounts_without_contacts += 1
                continue
            arm = account.arm.value
            tally.by_arm[arm] = tally.by_arm.get(arm, 0) + len(account.rows)
            for row in account.rows:
                tally.rows += 1
                tally.by_rung[row["rung"]] = tally.by_rung.get(row["rung"], 0) + 1
                tally.by_status[row["status"]] = tally.by_status.get(row["status"], 0) + 1
                yield row
        if recorder is not None:
            recorder.flush()

    return builder.header, generate()


def write_export(header: tuple[str, ...], rows: Iterable[dict[str, str]], out: TextIO, fmt: str) -> None:
    """Write rows as CSV (spreadsheet-safe cells) or JSON Lines (the same fields, as they are).

    Every cell is checked once more by the choke point (`export_cell`): a row that did not
    come from `export_rows` cannot smuggle markup out either.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}", field="--format")
    writer = csv.writer(out, lineterminator="\r\n") if fmt == "csv" else None
    if writer is not None:
        writer.writerow(header)
    for row in rows:
        cells = [_final(row[c]) for c in header]
        if writer is not None:
            writer.writerow([spreadsheet_safe(cell) for cell in cells])
        else:
            out.write(json.dumps(dict(zip(header, cells, strict=True)), ensure_ascii=False) + "\n")


def _final(value: str) -> str:
    cell = export_cell(value)
    return "" if isinstance(cell, CellRefusal) else cell


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


def export_campaign(
    client: redis.Redis,
    view: CampaignView,
    link_for: LinkMaker,
    fmt: str,
    out: TextIO | Path,
    *,
    now: datetime,
    fill: Mapping[str, str] | None = None,
    on_account: Callable[[], object] = lambda: None,
) -> ExportSummary:
    """Every row of the campaign, written to `out`; what was written and every fallback, counted.

    `out` is the stream the command chose (written as the rows come, then flushed) or a file
    path, written atomically: all or nothing. Each contact whose row is produced is marked
    `exported` (`welcomemat.records.contact_workflow`). A Redis failure while the rows are read
    is raised as it is (`redis.RedisError`): a file is then left untouched, a stream holds the
    rows written before it.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}", field="--format")
    summary = ExportSummary()
    recorder = WorkflowRecorder(client, view.tenant, view.campaign_id, int(now.timestamp() * 1000))
    header, rows = export_rows(
        client, view, link_for, now=now, summary=summary, on_account=on_account, recorder=recorder, fill=fill
    )
    if isinstance(out, Path):
        _write_atomically(out, lambda handle: write_export(header, rows, handle, fmt))
    else:
        write_export(header, rows, out, fmt)
        out.flush()
    return summary
