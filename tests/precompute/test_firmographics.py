"""Firmographics: plausible values pass, each doubtful one is hidden with its reason."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precompute.firmographics import (
    EMPLOYEE_BUCKETS,
    MAX_PLAUSIBLE_EMPLOYEES,
    employee_bucket,
    plausible_firmographics,
)
from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.records.accounts import Account


@cache
def campaign() -> Campaign:
    return load_campaign(REPO_ROOT / "examples" / "campaign.yaml")


def account(**overrides: Any) -> Account:
    record: dict[str, Any] = {
        "account_id": "acct_dymaxa",
        "name": "Dymaxa B.V.",
        "domain": "dymaxa.com",
        "segment": "saas-mid",
        "industry": "software",
        "country": "NL",
        "city": "Amsterdam",
        "employee_count": 60,
    }
    record.update(overrides)
    return Account.model_validate({k: v for k, v in record.items() if v is not None})


def test_dymaxa_is_plausible_throughout() -> None:
    firmo = plausible_firmographics(account(), campaign())
    assert (firmo.employee_bucket, firmo.industry, firmo.country, firmo.city) == (
        "51-200",
        "software",
        "NL",
        "Amsterdam",
    )
    assert firmo.hidden == ()


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"employee_count": None}, "employee_count_missing"),
        ({"employee_count": 0}, "employee_count_zero"),
        ({"employee_count": MAX_PLAUSIBLE_EMPLOYEES + 1}, "employee_count_absurd"),
        ({"segment": "saas-smb", "employee_count": 5000}, "employee_count_contradicts_segment"),
        ({"segment": "saas-mid", "employee_count": 20}, "employee_count_contradicts_segment"),
        ({"segment": "saas-mid", "employee_count": 1200}, "employee_count_contradicts_segment"),
        ({"segment": "saas-enterprise", "employee_count": 40}, "employee_count_contradicts_segment"),
    ],
)
def test_doubtful_employee_counts_are_hidden(overrides: dict[str, Any], reason: str) -> None:
    firmo = plausible_firmographics(account(**overrides), campaign())
    assert firmo.employee_bucket is None
    assert firmo.hidden == (reason,)


@pytest.mark.parametrize(
    ("segment", "count", "bucket"),
    [
        ("saas-smb", 80, "51-200"),  # within the 2x tolerance of "under 50"
        ("saas-mid", 30, "11-50"),
        ("saas-mid", 900, "501-1000"),
        ("saas-enterprise", 300, "201-500"),
        ("fintech", 12_000, "5001+"),  # no size in the segment's name: nothing to contradict
    ],
)
def test_counts_within_tolerance_keep_their_bucket(segment: str, count: int, bucket: str) -> None:
    assert (
        plausible_firmographics(account(segment=segment, employee_count=count), campaign()).employee_bucket
        == bucket
    )


@pytest.mark.parametrize(
    ("overrides", "field", "reason"),
    [
        ({"industry": "<script>alert(1)</script>"}, "industry", "industry_markup"),
        ({"industry": "software " * 10}, "industry", "industry_too_long"),
        ({"industry": "   "}, "industry", "industry_missing"),
        ({"city": "Amster\ndam"}, "city", "city_markup"),
        ({"city": 42}, "city", "city_not_text"),
        ({"city": None}, "city", "city_missing"),
        ({"country": "Netherlands"}, "country", "country_not_iso2"),
        ({"country": "N1"}, "country", "country_not_iso2"),
        ({"country": None}, "country", "country_missing"),
    ],
)
def test_doubtful_text_values_are_hidden(overrides: dict[str, Any], field: str, reason: str) -> None:
    firmo = plausible_firmographics(account(**overrides), campaign())
    assert getattr(firmo, field) is None
    assert firmo.hidden == (reason,)


def test_country_code_is_upper_cased() -> None:
    assert plausible_firmographics(account(country="nl"), campaign()).country == "NL"


@pytest.mark.parametrize(
    ("count", "bucket"),
    [(1, "1-10"), (10, "1-10"), (11, "11-50"), (50, "11-50"), (51, "51-200"), (200, "51-200")]
    + [(201, "201-500"), (500, "201-500"), (501, "501-1000"), (1000, "501-1000"), (1001, "1001-5000")]
    + [(5000, "1001-5000"), (5001, "5001+"), (0, None)],
)
def test_bucket_boundaries(count: int, bucket: str | None) -> None:
    assert employee_bucket(count) == bucket


@given(st.integers(min_value=1, max_value=MAX_PLAUSIBLE_EMPLOYEES))
def test_every_positive_count_has_exactly_one_bucket_whose_floor_it_reaches(count: int) -> None:
    label = employee_bucket(count)
    floors = [floor for floor, ceiling, name in EMPLOYEE_BUCKETS if name == label]
    assert len(floors) == 1 and floors[0] <= count
