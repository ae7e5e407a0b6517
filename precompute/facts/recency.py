"""How long a time-relative word stays true of a dated fact, seen from the run's day.

"Congrats on the raise this week" is true of a fact published this ISO week, and only until
Sunday; "just raised" for a week; "recently" for a month. A zone set is served until its
`valid_until` (the earliest expiry of the facts it cites, or sooner if a draft says so), so a
recency word is backed only when a cited fact makes it true on the run's day (`as_of`, a
parameter, never the clock) *and* it stays true on every day the zone may be served. The
providers cap a draft's `valid_until` with `true_until` so that a true line is published, and
stops being served the day it would become false.

    kind        true of a fact published ...             and stays true until (exclusive)
    day         on as_of ("today", "this morning")       as_of + 1 day
    yesterday   the day before as_of                     as_of + 1 day
    this_week   in as_of's ISO week                      the Monday after as_of
    last_week   in the ISO week before as_of's           the Monday after as_of
    this_month  in as_of's calendar month ("this month")  the 1st of the next month
    weekday     1 to 6 days before as_of ("on Thursday":  published + 7 days (then the weekday
                the most recent past one of that name)   names a later day)
    month       in as_of's calendar year ("in November",  1 January of the next year (then the
                no year)                                 year would be missing)
    just        at most JUST_DAYS days before as_of      published + JUST_DAYS + 1 day
    recent      at most RECENT_DAYS days before as_of    published + RECENT_DAYS + 1 day
    new_role    a role change (a `leadership` fact) at   published + NEW_ROLE_DAYS + 1 day
                most NEW_ROLE_DAYS days before as_of

`weekday` and `month` are not words a claim pattern looks for (the date check matches the
weekday or month name against the fact's date); they are here so that the offline
composer's `{when}` phrases (`precompute.date_phrases`) are judged by the same table.
"""

from __future__ import annotations

from datetime import MAXYEAR, date, timedelta

from precompute.claims.patterns import (
    DAY,
    JUST,
    LAST_WEEK,
    NEW_ROLE,
    RECENT,
    THIS_MONTH,
    THIS_WEEK,
    YESTERDAY,
)

__all__ = [
    "JUST_DAYS",
    "MONTH",
    "NEW_ROLE_DAYS",
    "RECENCY_KINDS",
    "RECENT_DAYS",
    "WEEKDAY",
    "WEEKDAY_DAYS",
    "true_until",
]

JUST_DAYS = 7  # "just raised", "freshly announced", "a few days ago": within a week
RECENT_DAYS = 30  # "recently", "your recent launch": within a month
NEW_ROLE_DAYS = 90  # "your new role": a role change at most a quarter old

WEEKDAY = "weekday"  # "on Thursday"
MONTH = "month"  # "in November"
WEEKDAY_DAYS = 6  # a bare weekday names one past day for six days; on the seventh it could mean today

RECENCY_KINDS: frozenset[str] = frozenset(
    {DAY, YESTERDAY, THIS_WEEK, LAST_WEEK, THIS_MONTH, WEEKDAY, MONTH, JUST, RECENT, NEW_ROLE}
)
_ONE_DAY = timedelta(days=1)


def _monday_after(day: date) -> date:
    return day + timedelta(days=7 - day.weekday())


def _first_of_next_month(day: date) -> date:
    if day.month < 12:
        return date(day.year, day.month + 1, 1)
    return date(day.year + 1, 1, 1) if day.year < MAXYEAR else date.max


def _iso_week(day: date) -> tuple[int, int]:
    year, week, _ = day.isocalendar()
    return year, week


def true_until(kind: str, published: date, as_of: date) -> date | None:
    """The first day on which `kind` said of a fact published on `published` is false, or None
    when it is not true on `as_of` (a fact from after `as_of` makes nothing recent).

    Raises KeyError for a kind that is not one of RECENCY_KINDS.
    """
    if kind not in RECENCY_KINDS:
        raise KeyError(kind)
    age = (as_of - published).days
    if age < 0:
        return None
    if kind == DAY:
        return as_of + _ONE_DAY if age == 0 else None
    if kind == YESTERDAY:
        return as_of + _ONE_DAY if age == 1 else None
    if kind == THIS_WEEK:
        return _monday_after(as_of) if _iso_week(published) == _iso_week(as_of) else None
    if kind == LAST_WEEK:
        last = _iso_week(as_of - timedelta(days=7))
        return _monday_after(as_of) if _iso_week(published) == last else None
    if kind == THIS_MONTH:
        same = (published.year, published.month) == (as_of.year, as_of.month)
        return _first_of_next_month(as_of) if same else None
    if kind == WEEKDAY:
        return published + timedelta(days=WEEKDAY_DAYS + 1) if 1 <= age <= WEEKDAY_DAYS else None
    if kind == MONTH:
        if published.year != as_of.year:
            return None
        return date(as_of.year + 1, 1, 1) if as_of.year < MAXYEAR else date.max
    days = {JUST: JUST_DAYS, RECENT: RECENT_DAYS, NEW_ROLE: NEW_ROLE_DAYS}[kind]
    return published + timedelta(days=days + 1) if age <= days else None
