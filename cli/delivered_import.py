"""`welcomemat delivered import CAMPAIGN FILE.csv`: mark contacts `delivered` from a sequencer's file.

Sequencers export what they sent or delivered as CSV. The file needs the export's own id
columns, `account_id` and `contact_id` (sequencers keep custom variables on each lead, so a
sent or delivered report of a sequence loaded from `welcomemat export` carries them), and may
carry `delivered_at` (ISO 8601 with a UTC offset, years 2000-2100 in UTC: `welcomemat.bounded_time`;
without it, the time of the import). Other
columns are ignored. Each contact is marked `delivered` in its account record
(`welcomemat.records.contact_workflow`, batched, idempotent: importing the file again changes
nothing); a contact of an account without a record is skipped. A bad line is reported with
its file, line and field and skipped; the rest are recorded: the file is read as bytes, a line
at a time (`iter_lines`: a line over `CSV_LINE_MAX_BYTES` is skipped unread), so a byte that is
not UTF-8 or a record csv refuses costs its own line only.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

import redis

from cli.command_output import finish_import
from welcomemat.bounded_json import iter_lines
from welcomemat.bounded_time import parse_instant
from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.limits import CSV_LINE_MAX_BYTES
from welcomemat.records.contact_workflow import ContactState, record_marks

__all__ = ["DeliveredReport", "import_delivered", "run_delivered_import"]

_REQUIRED = ("account_id", "contact_id")
Mark = tuple[str, str, ContactState, int, Mapping[str, str | int | None]]


class _LineRefused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Lines:
    """The file's lines for `csv`, each refused on its own: one over `CSV_LINE_MAX_BYTES` (skipped
    unread) or not UTF-8 raises `_LineRefused` from `__next__`, and the next call goes on with
    the line after (a generator could not go on after raising). `number`: the last line's."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._lines = iter_lines(handle, CSV_LINE_MAX_BYTES)
        self.number = 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        self.number, line = next(self._lines)
        if line is None:
            raise _LineRefused(f"line longer than {CSV_LINE_MAX_BYTES} bytes")
        try:
            return line.decode("utf-8") + "\n"
        except UnicodeDecodeError as exc:
            raise _LineRefused(f"not UTF-8 (byte {exc.start + 1})") from None


@dataclass
class DeliveredReport:
    lines: int = 0
    written: int = 0
    problems: list[InputError] = field(default_factory=list)


def import_delivered(
    client: redis.Redis, tenant: str, campaign: str, path: Path, *, now: datetime
) -> DeliveredReport:
    """Mark every good line's contact `delivered`; `InputError` when the file cannot be read as one."""
    report = DeliveredReport()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror}", file=path) from exc
    with handle:
        lines = _Lines(handle)
        reader = csv.DictReader(lines)
        try:
            header = reader.fieldnames or []
        except (csv.Error, _LineRefused) as exc:
            raise InputError(f"not a CSV file: {exc}", file=path, line=1) from None
        missing = [c for c in _REQUIRED if c not in header]
        if missing:
            raise InputError(
                f"the header has no {', '.join(missing)} column", file=path, line=1, field=missing[0]
            )

        def marks() -> Iterator[Mark]:
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except (csv.Error, _LineRefused) as exc:  # that record only: csv starts afresh
                    report.lines += 1
                    report.problems.append(InputError(f"unreadable: {exc}", file=path, line=lines.number))
                    continue
                report.lines += 1
                mark = _mark(row, path, lines.number, now, report)
                if mark is not None:
                    yield mark

        report.written = record_marks(client, tenant, campaign, marks())
    return report


def _mark(
    row: dict[str, str | None], path: Path, line: int, now: datetime, report: DeliveredReport
) -> Mark | None:
    ids = {c: (row.get(c) or "").strip() for c in _REQUIRED}
    for column, value in ids.items():
        if not is_valid_id(value):
            report.problems.append(InputError(f"{value!r} is not an id", file=path, line=line, field=column))
            return None
    at = now
    raw = (row.get("delivered_at") or "").strip()
    if raw:
        try:  # bounded (years 2000-2100 UTC): explain turns the mark back into a date
            at = parse_instant(raw)
        except ValueError as exc:
            report.problems.append(InputError(str(exc), file=path, line=line, field="delivered_at"))
            return None
    return ids["account_id"], ids["contact_id"], ContactState.DELIVERED, int(at.timestamp() * 1000), {}


def run_delivered_import(campaign_ref: str, path: str, *, now: datetime) -> int:
    """`welcomemat delivered import`: exit 2 when any line was bad (the rest are recorded)."""
    from welcomemat.campaign.ref import resolve_campaign_ref
    from welcomemat.settings import Settings
    from welcomemat.storage.connection import connect, resolve_redis

    client = connect(resolve_redis(Settings.from_env()))
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        report = import_delivered(client, tenant, campaign, Path(path), now=now)
    finally:
        client.close()
    return finish_import(
        report.problems,
        f"delivered {tenant}/{campaign} {path}: {report.lines} lines, {report.written} marks written "
        f"(a repeat or an account without a record writes none), {len(report.problems)} bad lines skipped",
    )
