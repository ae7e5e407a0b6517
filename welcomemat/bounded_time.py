"""Dates and times from outside, bounded to the years 2000–2100 (UTC, after the offset).

Why: Python's `datetime` reaches from year 1 to 9999, and ISO 8601 lets an offset move an
instant past either end: `9999-12-31T23:00:00-14:00` is year 10000 in UTC, `0001-01-01T00:00:00+14:00`
year 0. Such a value parses, is stored, and then every reader that moves it to UTC, to a day or to
a Unix time crashes (issue 25). So every date or time that comes in (an HTTP body, a CSV or JSONL
line, a YAML field, a command-line argument) passes one of these, and nothing outside
`EARLIEST`..`LATEST` is ever stored:

- `BoundedInstant` (pydantic) / `parse_instant` (plain): an ISO 8601 date and time with a UTC offset
  (`2026-11-28T15:30:00+01:00`, `...Z`), ASCII digits, offset within ±14:00, normalised to UTC;
- `BoundedDay` (pydantic) / `parse_day` (plain): a calendar day `YYYY-MM-DD` (or a YAML date),
  year 2000 to 2100.

Numbers (epoch seconds), naive times, `24:00`, leap seconds, other digits and spaces are refused
with a message that names the bound: the caller adds the file, line and field. Readers of values
stored before the bound existed use `instant_from_ms` / `ms_text`, which never raise.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from pydantic import AwareDatetime, BeforeValidator

__all__ = [
    "BOUND_TEXT",
    "EARLIEST",
    "EARLIEST_MS",
    "LATEST",
    "LATEST_MS",
    "MAX_YEAR",
    "MIN_YEAR",
    "BoundedDay",
    "BoundedInstant",
    "bounded_day",
    "bounded_instant",
    "instant_from_ms",
    "ms_text",
    "parse_day",
    "parse_instant",
]

MIN_YEAR = 2000
MAX_YEAR = 2100
EARLIEST = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
LATEST = datetime(MAX_YEAR, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
EARLIEST_MS = int(EARLIEST.timestamp() * 1000)  # Unix ms
LATEST_MS = int(LATEST.timestamp() * 1000)  # Unix ms
BOUND_TEXT = f"between {MIN_YEAR}-01-01T00:00:00Z and {MAX_YEAR}-12-31T23:59:59Z (UTC, after its offset)"
_MAX_OFFSET = timedelta(hours=14)  # the widest offset any place uses (UTC+14, Kiribati)
_MAX_TEXT = 40  # characters: the longest form below is 32

# re.ASCII: `\d` would match `２０２６`; only the forms written here, not all fromisoformat reads.
_INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?(?:Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_INSTANT_EXAMPLE = "an ISO 8601 time with a UTC offset (e.g. 2026-11-28T15:30:00+01:00)"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_TEXT + 2 else text[:_MAX_TEXT] + "…"


def bounded_instant(value: datetime) -> datetime:
    """`value` in UTC; ValueError when it is naive or outside `EARLIEST`..`LATEST`."""
    offset = value.utcoffset()
    if offset is None:
        raise ValueError(f"{value.isoformat()} has no UTC offset; expected {_INSTANT_EXAMPLE}")
    if abs(offset) > _MAX_OFFSET:
        raise ValueError(f"{value.isoformat()} has an offset beyond ±14:00")
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):  # past year 1 or 9999 once moved to UTC
        raise ValueError(f"{value.isoformat()} must be {BOUND_TEXT}") from None
    if not EARLIEST <= utc <= LATEST:
        raise ValueError(f"{value.isoformat()} must be {BOUND_TEXT}")
    return utc


def parse_instant(text: object) -> datetime:
    """An instant from `text` (see the module's forms), in UTC; ValueError saying why not."""
    if not isinstance(text, str):
        raise ValueError(f"{_shown(text)} is not text; expected {_INSTANT_EXAMPLE}")
    if len(text) > _MAX_TEXT or not _INSTANT.fullmatch(text):
        raise ValueError(f"{_shown(text)} is not {_INSTANT_EXAMPLE}")
    try:
        value = datetime.fromisoformat(text)
    except ValueError:  # the right shape, no such time: 2026-02-30, 24:00, a leap second, +25:00
        raise ValueError(f"{_shown(text)} is not a real date and time") from None
    return bounded_instant(value)


def bounded_day(value: date) -> date:
    """`value` when its year is `MIN_YEAR`..`MAX_YEAR`; ValueError naming the bound if not."""
    if isinstance(value, datetime):
        raise ValueError(f"{value.isoformat()} is a time; expected a day (YYYY-MM-DD)")
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ValueError(f"{value.isoformat()} must be a day in the years {MIN_YEAR} to {MAX_YEAR}")
    return value


def parse_day(text: object) -> date:
    """A day written `YYYY-MM-DD` (or a `date`, as YAML reads one), bounded; ValueError saying why not."""
    if isinstance(text, date):
        return bounded_day(text)
    if not isinstance(text, str):
        raise ValueError(f"{_shown(text)} is not a day (YYYY-MM-DD)")
    if not _DAY.fullmatch(text):
        raise ValueError(f"{_shown(text)} is not a day (YYYY-MM-DD)")
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{_shown(text)} is not a real day") from None
    return bounded_day(day)


def _instant_before(value: object) -> datetime:
    return bounded_instant(value) if isinstance(value, datetime) else parse_instant(value)


BoundedInstant = Annotated[AwareDatetime, BeforeValidator(_instant_before)]
BoundedDay = Annotated[date, BeforeValidator(parse_day)]


def instant_from_ms(ms: object) -> datetime | None:
    """A stored Unix-ms time as a UTC datetime, or None when it is not one inside the bound."""
    if isinstance(ms, bool) or not isinstance(ms, int) or not EARLIEST_MS <= ms <= LATEST_MS:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC)


def ms_text(ms: object) -> str:
    """A stored Unix-ms time for people (`2026-11-28T14:30:00+00:00`); never raises: a value
    outside the bound (stored by an older version) reads `unreadable time (<value>)`."""
    at = instant_from_ms(ms)
    return at.isoformat(timespec="seconds") if at is not None else f"unreadable time ({_shown(ms)})"
