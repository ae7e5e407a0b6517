"""One comparison of two rates for the lift report and the variant contrasts: the numbers, the JSON names.

The lift report's metrics and a copy experiment's contrasts are the same model
(`welcomemat.lift.rate_comparison.RateComparison`); each keeps the JSON field names it has always
printed, its download reads back, and the OpenAPI schema describes exactly what is printed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st
from pydantic.json_schema import models_json_schema

from welcomemat.arms import Arm
from welcomemat.lift.comparison import AccountOutcome, Metric
from welcomemat.lift.groups import GroupedLiftReport, LiftDimension, build_grouped_report
from welcomemat.lift.rate_comparison import (
    MIN_ACCOUNTS_PER_ARM,
    MIN_EVENTS_PER_ARM,
    Compared,
    RateComparison,
    compare_rates,
    metric_label,
)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
# The names `welcomemat report lift --json` and `--by variant --json` have always printed, in order.
METRIC_FIELDS = [
    "metric",
    "base",
    "label",
    "personal",
    "holdout",
    "difference",
    "difference_low",
    "difference_high",
    "sequential_low",
    "sequential_high",
    "minimum_detectable_effect",
    "enough_data",
    "conclusion",
]
CONTRAST_FIELDS = [
    "metric",
    "base",
    "variant",
    "reference",
    "variant_rate",
    "reference_rate",
    "difference",
    "difference_low",
    "difference_high",
    "sequential_low",
    "sequential_high",
    "minimum_detectable_effect",
    "relative_lift",
    "enough_data",
    "conclusion",
]


def accounts(arm: Arm, variant: str | None, count: int, clicked: int, prefix: str) -> list[AccountOutcome]:
    return [
        AccountOutcome(f"{prefix}{i}", arm, views=1, cta_clicks=int(i < clicked), variant=variant)
        for i in range(count)
    ]


def variant_report() -> GroupedLiftReport:
    outcomes = (
        accounts(Arm.PERSONAL, "control", 200, 20, "c")
        + accounts(Arm.PERSONAL, "direct", 200, 40, "d")
        + accounts(Arm.HOLDOUT, None, 100, 8, "h")
    )
    return build_grouped_report(
        outcomes,
        LiftDimension.VARIANT,
        variants=["control", "direct"],
        tenant="acme",
        campaign="q4-outbound",
        holdout_fraction=0.2,
        generated_at=NOW,
    )


def test_the_lift_report_and_the_contrasts_print_the_names_they_always_have() -> None:
    printed = json.loads(variant_report().model_dump_json())
    metric = printed["groups"][1]["report"]["metrics"][1]
    assert list(metric) == METRIC_FIELDS
    assert list(printed["groups"][1]["report"]["reached_only"]["metrics"][0]) == METRIC_FIELDS
    contrast = printed["contrasts"][1]
    assert list(contrast) == CONTRAST_FIELDS
    # The direct variant's click rate, against the holdout in its group and against control in the contrast.
    assert (metric["personal"]["successes"], metric["holdout"]["successes"]) == (40, 8)
    assert (contrast["variant"], contrast["reference"], contrast["metric"]) == (
        "direct",
        "control",
        "cta_click_rate",
    )
    assert (contrast["variant_rate"]["successes"], contrast["reference_rate"]["successes"]) == (40, 20)
    assert contrast["relative_lift"] == 1.0  # 20% against 10%


def test_a_printed_report_reads_back_as_the_same_report() -> None:
    report = variant_report()
    assert GroupedLiftReport.model_validate_json(report.model_dump_json()) == report
    assert GroupedLiftReport.model_validate(report.model_dump(mode="json")) == report


def test_the_openapi_schema_accepts_each_printed_shape_and_nothing_else() -> None:
    _, found = models_json_schema([(GroupedLiftReport, "serialization")])

    def validator(model: str) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator({"$defs": found["$defs"], "$ref": f"#/$defs/{model}"})

    printed = json.loads(variant_report().model_dump_json())
    assert [e.message for e in validator("GroupedLiftReport").iter_errors(printed)] == []
    shape = validator("RateComparison")
    metric, contrast = printed["groups"][0]["report"]["metrics"][0], printed["contrasts"][0]
    assert shape.is_valid(metric) and shape.is_valid(contrast)
    # A metric's rates under a contrast's names (or the reverse) is neither shape.
    mixed: dict[str, Any] = {**metric, "variant_rate": metric["personal"]}
    del mixed["personal"]
    assert not shape.is_valid(mixed)
    assert not shape.is_valid({k: v for k, v in contrast.items() if k != "relative_lift"})


COUNTS = st.integers(min_value=0, max_value=400).flatmap(
    lambda trials: st.tuples(st.integers(min_value=0, max_value=trials), st.just(trials))
)


@given(COUNTS, COUNTS, st.sampled_from(Compared), st.sampled_from(Metric))
def test_any_comparison_reads_back_from_its_json(
    a: tuple[int, int], b: tuple[int, int], compared: Compared, metric: Metric
) -> None:
    names = ("personal", "holdout") if compared is Compared.ARMS else ("direct", "control")
    comparison = compare_rates(
        metric,
        metric_label(metric),
        ((names[0], *a), (names[1], *b)),
        compared=compared,
        conclude=lambda c: f"{c.variant} against {c.reference}",
    )
    assert RateComparison.model_validate_json(comparison.model_dump_json()) == comparison
    assert comparison.conclusion == f"{names[0]} against {names[1]}"


@given(COUNTS, COUNTS)
def test_enough_data_needs_the_floor_of_accounts_and_events_on_both_sides(
    a: tuple[int, int], b: tuple[int, int]
) -> None:
    comparison = compare_rates(
        Metric.CTA_CLICK_RATE,
        metric_label(Metric.CTA_CLICK_RATE),
        (("personal", *a), ("holdout", *b)),
        compared=Compared.ARMS,
        conclude=lambda c: "",
    )
    sides = (a, b)
    enough = all(n >= MIN_ACCOUNTS_PER_ARM and x >= MIN_EVENTS_PER_ARM for x, n in sides)
    assert comparison.enough_data is enough
    assert (comparison.difference is None) is (a[1] == 0 or b[1] == 0)
