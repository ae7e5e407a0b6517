"""`{when}`: the date phrase stays true for as long as the zone's surfaces need, never shorter.

Explicit dates only: the run's day is a parameter (`as_of`), never the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from precompute.date_phrases import (
    DATED,
    MAIL_LIFE_DAYS,
    PAGE_LIFE_DAYS,
    choose_date_phrase,
    needed_until,
)
from precompute.facts.recency import true_until

SUNDAY = date(2026, 11, 29)
THURSDAY = date(2026, 11, 26)
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = "January February March April May June July August September October November December".split()


def phrase(
    published: date, as_of: date, *, mail_in_home: date | None = None, expires: Sequence[date] = ()
) -> str:
    return choose_date_phrase(
        published, as_of, needed_until(as_of, mail_in_home=mail_in_home, expires=expires)
    ).text


def test_a_weekday_that_would_expire_the_page_within_14_days_is_replaced() -> None:
    # "on Thursday" is false from 3 December; the page needs 13 December.
    chosen = choose_date_phrase(THURSDAY, SUNDAY, needed_until(SUNDAY))
    assert chosen.text == "in November"
    assert chosen.true_until == date(2027, 1, 1)
    assert chosen.needed_until == SUNDAY + timedelta(days=PAGE_LIFE_DAYS) == date(2026, 12, 13)
    assert chosen.passed_over == (("on Thursday", date(2026, 12, 3)), ("this month", date(2026, 12, 1)))


@pytest.mark.parametrize(
    ("published", "as_of", "expected"),
    [
        (THURSDAY, SUNDAY, "in November"),  # "this month" ends on 1 December, before the 13th
        (SUNDAY, SUNDAY, "in November"),  # "today" would be false tomorrow
        (date(2026, 12, 1), date(2026, 12, 2), "this month"),  # true until 1 January
        (date(2026, 12, 17), date(2026, 12, 22), "recently"),  # "in December" loses its year on 1 January
        (date(2026, 12, 20), date(2027, 1, 5), "recently"),  # last year's: until 20 January
        (date(2026, 11, 20), date(2027, 1, 5), "in November 2026"),  # over a month, last year's
        (date(2026, 10, 1), SUNDAY, "in October"),
    ],
)
def test_the_first_phrase_true_for_the_whole_page_life_wins(
    published: date, as_of: date, expected: str
) -> None:
    assert phrase(published, as_of) == expected


def test_a_fact_that_expires_sooner_keeps_the_specific_phrase() -> None:
    # The zone set ends when the fact does: "on Thursday" is true until then.
    assert phrase(THURSDAY, SUNDAY, expires=[date(2026, 12, 3)]) == "on Thursday"
    assert phrase(THURSDAY, SUNDAY, expires=[date(2026, 12, 4)]) == "in November"
    assert phrase(SUNDAY, SUNDAY, expires=[SUNDAY + timedelta(days=1)]) == "today"
    assert phrase(date(2026, 11, 28), SUNDAY, expires=[SUNDAY + timedelta(days=1)]) == "yesterday"


def test_a_mail_in_home_date_extends_the_need() -> None:
    # A page alone needs 13 December: "in November" (true until 1 January) will do.
    assert needed_until(SUNDAY) == date(2026, 12, 13)
    # Landing on 1 December, the piece needs 31 December: still "in November".
    assert needed_until(SUNDAY, mail_in_home=date(2026, 12, 1)) == date(2026, 12, 31)
    assert phrase(THURSDAY, SUNDAY, mail_in_home=date(2026, 12, 1)) == "in November"
    # Landing on 8 December, it needs 7 January: only the month with its year stays true.
    assert needed_until(SUNDAY, mail_in_home=date(2026, 12, 8)) == date(2027, 1, 7)
    assert phrase(THURSDAY, SUNDAY, mail_in_home=date(2026, 12, 8)) == "in November 2026"
    # An in-home date long past needs nothing beyond the page's own 14 days.
    assert needed_until(SUNDAY, mail_in_home=date(2026, 1, 1)) == date(2026, 12, 13)
    # And the fact's own expiry still ends it first.
    assert needed_until(SUNDAY, mail_in_home=date(2026, 12, 8), expires=[date(2026, 12, 26)]) == date(
        2026, 12, 26
    )
    assert MAIL_LIFE_DAYS == 30


def test_a_future_date_has_no_phrase() -> None:
    with pytest.raises(ValueError, match="after as_of"):
        choose_date_phrase(SUNDAY + timedelta(days=1), SUNDAY, needed_until(SUNDAY))


def test_explain_says_what_was_passed_over() -> None:
    line = choose_date_phrase(THURSDAY, SUNDAY, needed_until(SUNDAY)).explain()
    assert line == (
        "“in November” (true until 2027-01-01; needed until 2026-12-13); "
        "passed over “on Thursday” false from 2026-12-03, “this month” false from 2026-12-01"
    )


def expected_phrase(published: date, today: date, window_days: int) -> str:
    """The phrase a page composed on `today` dates a fact with (no mail): the most specific one a
    reader finds true on the last day the page may be served (two weeks on, or the fact's window
    if sooner). An independent reading of the rule, for the tests of whole pages: a phrase
    true on `today` and on that last day is true on every day between."""
    last = min(today + timedelta(days=PAGE_LIFE_DAYS), published + timedelta(days=window_days))
    last -= timedelta(days=1)
    days, span = (today - published).days, (last - published).days
    month = MONTHS[published.month - 1]
    if days == 0 and last == today:
        return "today"
    if days == 1 and last == today:
        return "yesterday"
    if days >= 1 and span <= 6:
        return "on " + WEEKDAYS[published.weekday()]
    if (published.year, published.month) == (last.year, last.month):
        return "this month"
    if published.year == last.year:
        return "in " + month
    return "recently" if span <= 30 else f"in {month} {published.year}"


@given(
    today=st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 11, 30)),
    age=st.integers(min_value=0, max_value=400),
    window=st.integers(min_value=1, max_value=120),
)
def test_the_independent_reading_agrees_with_the_composer_s_rule(today: date, age: int, window: int) -> None:
    published = today - timedelta(days=age)
    window = max(window, age + 1)  # a fact still in its window on `today`
    needed = needed_until(today, expires=[published + timedelta(days=window)])
    assert choose_date_phrase(published, today, needed).text == expected_phrase(published, today, window)


def reads_true(text: str, published: date, today: date) -> bool:
    """An independent reading of the phrase, as a visitor on `today` would understand it."""
    days = (today - published).days
    words = text.split()
    if text == "today":
        return days == 0
    if text == "yesterday":
        return days == 1
    if text == "this month":
        return (published.year, published.month) == (today.year, today.month)
    if text == "recently":
        return 0 <= days <= 30
    if words[0] == "on":  # "on Thursday": the most recent past Thursday, not today
        return 1 <= days <= 6 and WEEKDAYS[published.weekday()] == words[1]
    month = MONTHS[published.month - 1] == words[1]
    year = int(words[2]) if len(words) == 3 else today.year  # "in November": this year's
    return month and published.year == year and days >= 0


@given(
    as_of=st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 11, 30)),
    age=st.integers(min_value=0, max_value=400),
    window=st.none() | st.integers(min_value=1, max_value=120),
    in_home=st.none() | st.integers(min_value=-30, max_value=60),
)
@example(as_of=SUNDAY, age=3, window=None, in_home=None)
@example(as_of=date(2026, 12, 22), age=5, window=None, in_home=None)
@example(as_of=date(2027, 1, 1), age=1, window=None, in_home=9)
@example(as_of=date(2028, 2, 29), age=0, window=1, in_home=None)
def test_the_chosen_phrase_is_true_on_every_day_the_zone_may_be_served(
    as_of: date, age: int, window: int | None, in_home: int | None
) -> None:
    published = as_of - timedelta(days=age)
    expires = [] if window is None else [published + timedelta(days=max(window, age + 1))]
    mail = None if in_home is None else as_of + timedelta(days=in_home)
    needed = needed_until(as_of, mail_in_home=mail, expires=expires)
    chosen = choose_date_phrase(published, as_of, needed)
    # Never below the need: the page (and a mail piece) lives its whole life, or the fact's.
    assert needed >= min([as_of + timedelta(days=PAGE_LIFE_DAYS), *expires])
    assert chosen.true_until is None or chosen.true_until >= needed
    day = as_of
    while day < needed:
        assert reads_true(chosen.text, published, day), (chosen.text, day)
        if chosen.kind != DATED:  # as the checks judge time words
            assert true_until(chosen.kind, published, day) is not None, (chosen.kind, day)
        day += timedelta(days=1)
    # The cap is tight: on `true_until` the phrase is false.
    if chosen.true_until is not None:
        assert not reads_true(chosen.text, published, chosen.true_until)
