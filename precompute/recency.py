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
    just        at most JUST_DAYS days before as_of      published + JUST_DAYS + 1 day
    recent      at most RECENT_DAYS days before as_of    published + RECENT_DAYS + 1 day
    new_role    a role change (a `leadership` fact) at   published + NEW_ROLE_DAYS + 1 day
                most NEW_ROLE_DAYS days before as_of
"""

from __future__ import annotations

from datetime import date, timedelta

from precompute.claim_patterns import DAY, JUST, LAST_WEEK, NEW_ROLE, RECENT, THIS_WEEK, YESTERDAY

__all__ = ["JUST_DAYS", "NEW_ROLE_DAYS", "RECENCY_KINDS", "RECENT_DAYS", "true_until"]

JUST_DAYS = 7  # "just raised", "freshly announced", "a few days ago": within a week
RECENT_DAYS = 30  # "recently", "your recent launch": within a month
NEW_ROLE_DAYS = 90  # "your new role": a role change at most a quarter old

RECENCY_KINDS: frozenset[str] = frozenset({DAY, YESTERDAY, THIS_WEEK, LAST_WEEK, JUST, RECENT, NEW_ROLE})
_ONE_DAY = timedelta(days=1)


def _monday_after(day: date) -> date:
    return day + timedelta(days=7 - day.weekday())


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
    days = {JUST: JUST_DAYS, RECENT: RECENT_DAYS, NEW_ROLE: NEW_ROLE_DAYS}[kind]
    return published + timedelta(days=days + 1) if age <= days else None
