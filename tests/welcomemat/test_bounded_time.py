"""The bounded date and time: only years 2000–2100 in UTC, normalised, refused with the bound named."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tests.hostile_dates import HOSTILE_DAYS, HOSTILE_INSTANTS
from welcomemat.bounded_time import (
    EARLIEST,
    EARLIEST_MS,
    LATEST,
    LATEST_MS,
    BoundedDay,
    BoundedInstant,
    instant_from_ms,
    ms_text,
    parse_day,
    parse_instant,
)


class _At(BaseModel):
    at: BoundedInstant


class _On(BaseModel):
    on: BoundedDay


def test_the_corpus_is_large_enough() -> None:
    assert len(HOSTILE_INSTANTS) >= 40 and len(HOSTILE_DAYS) >= 20


@pytest.mark.parametrize(
    ("value", "expected"), HOSTILE_INSTANTS, ids=[repr(v)[:40] for v, _ in HOSTILE_INSTANTS]
)
def test_each_hostile_instant_is_refused_or_normalised(value: object, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            parse_instant(value)
        with pytest.raises(ValidationError) as caught:
            _At.model_validate({"at": value})
        assert caught.value.errors()[0]["loc"] == ("at",)
    else:
        assert parse_instant(value).isoformat() == expected
        assert _At.model_validate({"at": value}).at.isoformat() == expected
        assert (
            _At.model_validate_json(_At(at=parse_instant(value)).model_dump_json()).at.isoformat() == expected
        )


@pytest.mark.parametrize(("value", "expected"), HOSTILE_DAYS, ids=[repr(v)[:40] for v, _ in HOSTILE_DAYS])
def test_each_hostile_day_is_refused_or_kept(value: object, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            parse_day(value)
        with pytest.raises(ValidationError):
            _On.model_validate({"on": value})
    else:
        assert parse_day(value).isoformat() == expected == _On.model_validate({"on": value}).on.isoformat()


def test_the_message_names_the_bound() -> None:
    with pytest.raises(ValueError, match=r"between 2000-01-01T00:00:00Z and 2100-12-31T23:59:59Z"):
        parse_instant("9999-12-31T23:00:00-14:00")
    with pytest.raises(ValueError, match="years 2000 to 2100"):
        parse_day("9999-12-31")
    with pytest.raises(ValueError, match="no UTC offset"):
        _At(at=datetime(2026, 1, 1))  # noqa: DTZ001  (naive on purpose)


def test_a_yaml_date_is_a_day_and_a_datetime_is_not() -> None:
    assert _On.model_validate({"on": date(2026, 12, 8)}).on == date(2026, 12, 8)
    with pytest.raises(ValidationError, match="is a time"):
        _On.model_validate({"on": datetime(2026, 12, 8, tzinfo=UTC)})
    with pytest.raises(ValidationError, match="years 2000 to 2100"):
        _On.model_validate({"on": date(9999, 12, 31)})


offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
instants = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=offsets)


@given(instants)
def test_anything_accepted_is_inside_the_bound_in_utc_and_round_trips(value: datetime) -> None:
    text = value.isoformat()
    try:
        accepted = parse_instant(text)
    except ValueError as exc:
        assert not EARLIEST <= value <= LATEST, (text, exc)
        return
    assert EARLIEST <= accepted <= LATEST and accepted == value
    assert accepted.utcoffset() == timedelta(0)
    assert parse_instant(accepted.isoformat()) == accepted
    assert _At.model_validate_json(_At(at=accepted).model_dump_json()).at == accepted


@given(st.text(max_size=60) | st.binary(max_size=60) | st.integers() | st.floats() | st.none())
def test_any_other_value_is_refused_with_a_value_error_or_accepted_inside_the_bound(value: object) -> None:
    try:
        accepted = parse_instant(value)
    except ValueError:
        return
    assert EARLIEST <= accepted <= LATEST and accepted.tzinfo is UTC


@given(st.dates())
def test_days_are_kept_only_inside_the_years(value: date) -> None:
    try:
        kept = parse_day(value.isoformat())
    except ValueError:
        assert not 2000 <= value.year <= 2100
        return
    assert kept == value and 2000 <= kept.year <= 2100


@given(st.integers(min_value=-(10**30), max_value=10**30) | st.floats() | st.none() | st.text(max_size=5))
def test_a_stored_time_is_read_or_shown_unreadable_never_a_crash(ms: object) -> None:
    at = instant_from_ms(ms)
    text = ms_text(ms)
    if at is None:
        assert text.startswith("unreadable time")
    else:
        assert EARLIEST_MS <= ms <= LATEST_MS and text == at.isoformat(timespec="seconds")  # type: ignore[operator]
