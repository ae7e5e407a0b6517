"""The `{when}` slot: a phrase for a fact's date that stays true as long as the page needs.

A zone set is served until its `valid_until`, and the offline composer caps that with the
first day its `{when}` phrase would be false ("on Thursday" a week after Thursday). A phrase
that is true today but not next week would make a page expire days after it is published,
and a mail piece be printed with the fallback. So the phrase is chosen for the life the
zone's surfaces need, not only for today (`choose_date_phrase`):

    surface                          the phrase must stay true until (exclusive)
    a page (`web`, every zone set)   as_of + PAGE_LIFE_DAYS (14 days)
    a mail piece (`print`), when the the later of that and the in-home date +
    campaign has `mail_in_home_date`  MAIL_LIFE_DAYS (30 days)

capped by the earliest expiry of the facts the zone cites: a fact whose own window ends
sooner ends the zone set then, whatever the phrase (`needed_until`).

The candidates, most specific first; the first whose truth lasts until that day wins.
How long each stays true is `precompute.facts.recency`'s table (`true_until`), the one the checks
judge time words by:

    phrase               true of a fact published ...        stays true until (exclusive)
    "today"              on as_of                            as_of + 1 day
    "yesterday"          the day before as_of                as_of + 1 day
    "on Thursday"        1 to 6 days before as_of            published + 7 days
    "this month"         in as_of's calendar month           the 1st of the next month
    "in November"        in as_of's calendar year            1 January of the next year
    "recently"           at most 30 days before as_of        published + 31 days
    "in November 2025"   any day                             never changes (the last resort)

So on a page published on Sunday 29 November 2026, a Series A of Thursday the 26th is
"in November" (true until 1 January; "on Thursday" would be false from 3 December, "this
month" from 1 December, before the 13 December the page needs); on Wednesday 2 December, a
launch of the day before is "this month" (true until 1 January), and on Tuesday 22 December,
a Series A of Thursday the 17th is "recently" ("in December" would lose its year on 1
January, before the 5 January the page needs). A fact from the last days of the previous
year says "recently" or, past a month, its month and year.

Weekday and month names are English literals, not `strftime`: the page's language must not
depend on the machine's locale.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

from precompute.claims.patterns import DAY, RECENT, THIS_MONTH, YESTERDAY
from precompute.facts.recency import MONTH, WEEKDAY, true_until

__all__ = [
    "DATED",
    "MAIL_LIFE_DAYS",
    "PAGE_LIFE_DAYS",
    "DatePhrase",
    "choose_date_phrase",
    "needed_until",
]

PAGE_LIFE_DAYS = 14  # a published page stays true for at least two weeks, rerun or not
MAIL_LIFE_DAYS = 30  # a mail piece's QR page stays true for a month after it lands

# The kind of the last resort, "in November 2025": a date with its year never changes.
DATED = "dated"

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True, slots=True)
class DatePhrase:
    """The phrase chosen for a fact's date, how long it stays true, and what it was chosen over."""

    text: str  # "in November": lowercase, capitalised by the composer when it opens the line
    kind: str  # its row of `precompute.facts.recency` (`DATED` for the last resort)
    true_until: date | None  # the first day it is false; None: never
    needed_until: date  # the first day the page need not be true any more
    # More specific phrases that were true today but not long enough: (text, first day false).
    passed_over: tuple[tuple[str, date], ...] = ()

    def explain(self) -> str:
        """One line for `welcomemat explain`."""
        until = self.true_until.isoformat() if self.true_until is not None else "never false"
        line = f"“{self.text}” (true until {until}; needed until {self.needed_until.isoformat()})"
        if self.passed_over:
            passed = ", ".join(f"“{text}” false from {day.isoformat()}" for text, day in self.passed_over)
            line += f"; passed over {passed}"
        return line


def needed_until(as_of: date, *, mail_in_home: date | None = None, expires: Iterable[date] = ()) -> date:
    """The first day a zone's words need not be true any more (see the module docstring).

    `mail_in_home`: the campaign's in-home date, when the zone set may be printed;
    `expires`: the cited facts' expiry days (the zone set ends at the earliest anyway).
    """
    need = as_of + timedelta(days=PAGE_LIFE_DAYS)
    if mail_in_home is not None:
        need = max(need, mail_in_home + timedelta(days=MAIL_LIFE_DAYS))
    return min([need, *expires])


def _candidates(published: date) -> list[tuple[str, str]]:
    """(text, kind) of every phrase that may be true of `published`, most specific first."""
    weekday = "on " + _WEEKDAYS[published.weekday()]
    month = "in " + _MONTHS[published.month - 1]
    return [
        ("today", DAY),
        ("yesterday", YESTERDAY),
        (weekday, WEEKDAY),
        ("this month", THIS_MONTH),
        (month, MONTH),
        ("recently", RECENT),
    ]


def choose_date_phrase(published: date, as_of: date, needed: date) -> DatePhrase:
    """The most specific phrase for `published` that is true on every day from `as_of` until `needed`.

    `needed` is exclusive (`needed_until`): a phrase qualifies when `precompute.facts.recency`'s
    `true_until` for it, seen from `as_of`, is `needed` or later. When none does, the month
    and year ("in November 2025"), which never changes. Raises ValueError for a date after
    `as_of`: a future publish date has no true phrase.
    """
    if published > as_of:
        raise ValueError(f"published_at {published} is after as_of {as_of}")
    passed: list[tuple[str, date]] = []
    for text, kind in _candidates(published):
        until = true_until(kind, published, as_of)
        if until is None:
            continue  # not true today at all: not a phrase that was passed over
        if until >= needed:
            return DatePhrase(text, kind, None if until == date.max else until, needed, tuple(passed))
        passed.append((text, until))
    dated = f"in {_MONTHS[published.month - 1]} {published.year}"
    return DatePhrase(dated, DATED, None, needed, tuple(passed))
