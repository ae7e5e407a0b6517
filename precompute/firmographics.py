"""Firmographics plausible enough to put on a page: anything doubtful is hidden, with a reason.

CRM firmographics are typed in by people and enriched by vendors; they drift, collide and
sometimes carry markup. A page that says "teams of 5,001+" to a 12-person startup is the
specific-but-false line DESIGN.md warns about, so each value must pass a plausibility rule
or it is None, and `Firmographics.hidden` says why (for `explain`).

* Employees are given as a bucket, never the exact count (a count is rarely current).
  Hidden when missing, 0, absurd (over 2,000,000: larger than any employer), or when the
  segment's name carries a size (``-smb``, ``-mid``, ``-enterprise``) the count
  contradicts by more than a factor of 2 (a tolerance for growth and stale records).
* Industry and city: non-empty, shorter than 60 characters, printable, no ``<`` or ``>``.
* Country: an ISO 3166-1 alpha-2 shaped code (two ASCII letters), upper-cased.
"""

from __future__ import annotations

from dataclasses import dataclass

from precompute.context import Firmographics
from welcomemat.campaign.contract import Campaign
from welcomemat.records.accounts import Account

__all__ = [
    "EMPLOYEE_BUCKETS",
    "MAX_PLAUSIBLE_EMPLOYEES",
    "SEGMENT_SIZE_HINTS",
    "SIZE_TOLERANCE",
    "SizeHint",
    "employee_bucket",
    "plausible_firmographics",
]

# (floor, ceiling or None for open-ended, label), ascending and contiguous.
EMPLOYEE_BUCKETS: tuple[tuple[int, int | None, str], ...] = (
    (1, 10, "1-10"),
    (11, 50, "11-50"),
    (51, 200, "51-200"),
    (201, 500, "201-500"),
    (501, 1000, "501-1000"),
    (1001, 5000, "1001-5000"),
    (5001, None, "5001+"),
)
MAX_PLAUSIBLE_EMPLOYEES = 2_000_000  # the largest employers have about this many people
SIZE_TOLERANCE = 2  # a count may be off its segment's range by this factor before it contradicts it
_MAX_TEXT_CHARS = 60  # industry / city longer than this is a sentence, not a value
_MARKUP_CHARS = frozenset("<>")


@dataclass(frozen=True, slots=True)
class SizeHint:
    """The employee range a segment's name implies: ``low <= count < high`` (None: unbounded)."""

    low: int | None
    high: int | None

    def contradicts(self, count: int) -> bool:
        """Whether ``count`` lies outside the range even after the tolerance factor."""
        if self.low is not None and count * SIZE_TOLERANCE < self.low:
            return True
        return self.high is not None and count >= self.high * SIZE_TOLERANCE


# Segment id suffix -> the size it implies (e.g. "saas-smb" is under 50 people).
SEGMENT_SIZE_HINTS: dict[str, SizeHint] = {
    "-smb": SizeHint(None, 50),
    "-mid": SizeHint(50, 501),
    "-enterprise": SizeHint(501, None),
}


def employee_bucket(count: int) -> str | None:
    """The bucket label for a positive head count; None for 0 or less."""
    for floor, ceiling, label in EMPLOYEE_BUCKETS:
        if count >= floor and (ceiling is None or count <= ceiling):
            return label
    return None


def _size_hint(segment: str) -> SizeHint | None:
    return next((hint for suffix, hint in SEGMENT_SIZE_HINTS.items() if segment.endswith(suffix)), None)


def _employees(count: int | None, segment: str) -> tuple[str | None, str | None]:
    """``(bucket, None)`` when plausible, else ``(None, hidden reason)``."""
    if count is None:
        return None, "employee_count_missing"
    if count <= 0:
        return None, "employee_count_zero"
    if count > MAX_PLAUSIBLE_EMPLOYEES:
        return None, "employee_count_absurd"
    hint = _size_hint(segment)
    if hint is not None and hint.contradicts(count):
        return None, "employee_count_contradicts_segment"
    return employee_bucket(count), None


def _text(name: str, value: object) -> tuple[str | None, str | None]:
    """A short plain-text value, or ``(None, reason)``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, f"{name}_missing"
    if not isinstance(value, str):
        return None, f"{name}_not_text"
    value = value.strip()
    if len(value) >= _MAX_TEXT_CHARS:
        return None, f"{name}_too_long"
    if not value.isprintable() or not _MARKUP_CHARS.isdisjoint(value):
        return None, f"{name}_markup"
    return value, None


def _country(value: str | None) -> tuple[str | None, str | None]:
    if value is None or not value.strip():
        return None, "country_missing"
    value = value.strip()
    if len(value) == 2 and value.isascii() and value.isalpha():
        return value.upper(), None
    return None, "country_not_iso2"


def plausible_firmographics(account: Account, campaign: Campaign) -> Firmographics:
    """The account's firmographics that pass the rules in this module's docstring.

    ``campaign`` is where a segment would carry an explicit size in future; today the
    segment id's suffix is the only size signal.
    """
    bucket, employees_hidden = _employees(account.employee_count, account.segment)
    industry, industry_hidden = _text("industry", account.industry)
    country, country_hidden = _country(account.country)
    city, city_hidden = _text("city", (account.model_extra or {}).get("city"))
    hidden = tuple(r for r in (employees_hidden, industry_hidden, country_hidden, city_hidden) if r)
    return Firmographics(employee_bucket=bucket, industry=industry, country=country, city=city, hidden=hidden)
