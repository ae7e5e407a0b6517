"""Hostile dates and times: what a broken CRM export or an attacker sends in a date field.

`HOSTILE_INSTANTS` pairs each value with what `welcomemat.bounded_time` makes of it: the
normalised UTC ISO text when it is a legal instant inside 2000–2100, None when it is refused.
`HOSTILE_DAYS` does the same for calendar days. Each input path's tests (HTTP, CSV, JSONL,
YAML) send them all.
"""

from __future__ import annotations

__all__ = ["HOSTILE_DAYS", "HOSTILE_INSTANTS", "refused_instants"]

HOSTILE_INSTANTS: tuple[tuple[object, str | None], ...] = (
    # The edges of Python's range, moved past them by the offset (issue 25)
    ("9999-12-31T23:00:00-14:00", None),
    ("9999-12-31T23:59:59+14:00", None),
    ("9999-12-31T23:59:59Z", None),
    ("0001-01-01T00:00:00+14:00", None),
    ("0001-01-01T00:00:00-14:00", None),
    ("0001-01-01T00:00:00Z", None),
    # Around the 2000 bound: the offset decides
    ("1999-12-31T23:59:59-01:00", "2000-01-01T00:59:59+00:00"),
    ("1999-12-31T23:59:59+01:00", None),
    ("2000-01-01T00:00:00Z", "2000-01-01T00:00:00+00:00"),
    ("1999-12-31T23:59:59.999999Z", None),
    ("2000-01-01T00:30:00+01:00", None),
    # Around the 2100 bound
    ("2100-12-31T23:59:59+00:00", "2100-12-31T23:59:59+00:00"),
    ("2100-12-31T23:59:59.999999Z", "2100-12-31T23:59:59.999999+00:00"),
    ("2101-01-01T00:00:00Z", None),
    ("2100-12-31T23:59:59-00:01", None),
    ("2101-01-01T00:30:00+01:00", "2100-12-31T23:30:00+00:00"),
    # Ordinary legal values, other offsets
    ("2026-11-28T15:30:00+01:00", "2026-11-28T14:30:00+00:00"),
    ("2026-11-28T15:30Z", "2026-11-28T15:30:00+00:00"),
    ("2026-11-28T15:30:00.123456-05:30", "2026-11-28T21:00:00.123456+00:00"),
    ("2026-11-28T00:00:00+14:00", "2026-11-27T10:00:00+00:00"),
    # Leap days and seconds
    ("2024-02-29T12:00:00Z", "2024-02-29T12:00:00+00:00"),
    ("2100-02-29T12:00:00Z", None),  # 2100 is not a leap year
    ("2026-02-29T12:00:00Z", None),
    ("2016-12-31T23:59:60Z", None),
    ("2026-11-28T24:00:00Z", None),
    ("2026-11-28T24:00Z", None),
    ("2026-13-01T00:00:00Z", None),
    ("2026-00-10T00:00:00Z", None),
    # Years past any calendar, negative years
    ("+275760-09-13T00:00:00Z", None),
    ("275760-09-13T00:00:00Z", None),
    ("-000001-01-01T00:00:00Z", None),
    ("-2026-11-28T00:00:00Z", None),
    ("10000-01-01T00:00:00Z", None),
    # Offsets past what any place uses, or not an offset
    ("2026-11-28T12:00:00+24:00", None),
    ("2026-11-28T12:00:00+99:99", None),
    ("2026-11-28T12:00:00+14:01", None),
    ("2026-11-28T12:00:00-23:59", None),
    ("2026-11-28T12:00:00+0100", None),
    ("2026-11-28T12:00:00 UTC", None),
    # Naive, partial, other separators
    ("2026-11-28T12:00:00", None),
    ("2026-11-28", None),
    ("2026-11-28 12:00:00Z", None),
    ("20261128T120000Z", None),
    ("2026-W48-6T12:00:00Z", None),
    ("yesterday", None),
    ("", None),
    # Epoch times as strings and numbers, and numbers no clock holds
    ("1764336600", None),
    ("1764336600000", None),
    (1764336600, None),
    (1764336600.5, None),
    (0, None),
    (-1, None),
    (1e308, None),
    (float("nan"), None),
    (True, None),
    (None, None),
    # Unicode digits, whitespace, control characters, length
    ("２０２６-11-28T12:00:00Z", None),
    ("٢٠٢٦-11-28T12:00:00Z", None),
    (" 2026-11-28T12:00:00Z", None),
    ("2026-11-28T12:00:00Z ", None),
    ("2026-11-28T12:00:00Z\n", None),
    ("2026-11-28T12:00:00Z\x00", None),
    ("2026-11-28T12:00:00\u200bZ", None),
    ("2" * 10_000 + "-11-28T12:00:00Z", None),
    ("2026-11-28T12:00:00." + "9" * 5000 + "Z", None),
)

HOSTILE_DAYS: tuple[tuple[object, str | None], ...] = (
    ("2026-12-08", "2026-12-08"),
    ("2000-01-01", "2000-01-01"),
    ("2100-12-31", "2100-12-31"),
    ("2024-02-29", "2024-02-29"),
    ("1999-12-31", None),
    ("2101-01-01", None),
    ("9999-12-31", None),
    ("0001-01-01", None),
    ("2100-02-29", None),
    ("2026-02-30", None),
    ("2026-13-01", None),
    ("+275760-09-13", None),
    ("-0001-01-01", None),
    ("2026-12-08T00:00:00Z", None),
    ("20261208", None),
    ("２０２６-12-08", None),
    (" 2026-12-08", None),
    ("1764336600", None),
    (1764336600, None),
    (1e308, None),
    ("", None),
    ("x" * 10_000, None),
)


def refused_instants() -> list[object]:
    """The instants every path must refuse."""
    return [value for value, expected in HOSTILE_INSTANTS if expected is None]
