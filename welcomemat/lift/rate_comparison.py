"""Two rates compared: one group's rate against a reference group's, their difference and what it means.

The one comparison of the lift maths. The lift report (`welcomemat.lift.comparison`) sets the
personal arm against the holdout, for the whole campaign and for each group of `--by`; a copy
experiment (`welcomemat.lift.groups`) sets each variant's personal accounts against the reference
variant's. Either way the group measured is the `variant` (the personal arm, or a copy variant)
and the group it is measured against the `reference` (the holdout, or the reference variant);
`compare_rates` measures, from (successes, trials) per side:

- each side's rate with its Wilson interval (`welcomemat.lift.intervals`);
- the difference (variant − reference) with Newcombe's interval, valid for one look at a fixed
  sample, and the always-valid (sequential) interval, valid however often the report is read;
- the minimum detectable effect at the current sample and the relative lift;
- whether there is enough data to conclude: at least `min_trials` trials (accounts assigned,
  `MIN_ACCOUNTS_PER_ARM`, or visitors, `MIN_REACHED_PER_ARM`) and `MIN_EVENTS_PER_ARM`
  successes on each side. Below that an interval that happens to exclude zero is mostly noise.

The report words the conclusion (it alone knows which interval decides). In JSON each report keeps
its names (`Compared`): the lift report keys the two rates by arm (`personal`, `holdout`) beside
the metric's label; a contrast names its two variants (`variant`, `reference`), keys their rates
by role (`variant_rate`, `reference_rate`) and adds the relative lift.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.annotated_handlers import GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from welcomemat.arms import Arm
from welcomemat.lift.intervals import CONFIDENCE, RateEstimate, newcombe_difference, rate_estimate
from welcomemat.lift.stats import minimum_detectable_effect, sequential_difference

__all__ = [
    "MIN_ACCOUNTS_PER_ARM",
    "MIN_EVENTS_PER_ARM",
    "MIN_REACHED_PER_ARM",
    "Compared",
    "Metric",
    "RateBase",
    "RateComparison",
    "compare_rates",
    "metric_label",
]

# Fewer accounts assigned to a side than this: the report says it cannot conclude.
MIN_ACCOUNTS_PER_ARM = 30
# The same floor for the reached-only view's visitors (descriptive; it warns of nothing).
MIN_REACHED_PER_ARM = 30
# Fewer accounts with the event (click, conversion, visit) than this on a side: same.
MIN_EVENTS_PER_ARM = 5


class Metric(enum.StrEnum):
    REACH = "reach"
    CTA_CLICK_RATE = "cta_click_rate"
    CONVERSION_RATE = "conversion_rate"


class RateBase(enum.StrEnum):
    """Whom a rate divides by."""

    # Every account assigned to the arm, visited or not (intent to treat): the default.
    ASSIGNED = "assigned"
    # Only accounts that visited: descriptive, biased by who visits.
    REACHED = "reached"


_METRIC_LABELS = {
    (Metric.REACH, RateBase.ASSIGNED): "Reach (accounts with a visit / accounts assigned)",
    (Metric.CTA_CLICK_RATE, RateBase.ASSIGNED): (
        "CTA click rate (accounts that clicked a CTA / accounts assigned)"
    ),
    (Metric.CONVERSION_RATE, RateBase.ASSIGNED): (
        "Conversion rate (accounts that converted / accounts assigned)"
    ),
    (Metric.CTA_CLICK_RATE, RateBase.REACHED): (
        "CTA click rate among accounts that visited (clicked / visited)"
    ),
    (Metric.CONVERSION_RATE, RateBase.REACHED): (
        "Conversion rate among accounts that visited (converted / visited)"
    ),
}


def metric_label(metric: Metric, base: RateBase = RateBase.ASSIGNED) -> str:
    """What a metric divides by what, in words (reach has no reached-only version)."""
    return _METRIC_LABELS[(metric, base)]


class Compared(enum.StrEnum):
    """What a comparison sets against each other, which also names its fields in JSON."""

    # The personal arm against the holdout: the rates under `personal` and `holdout`, with `label`.
    ARMS = "arms"
    # A copy variant against the reference variant (personal accounts both): `variant` and
    # `reference` name them, `variant_rate` and `reference_rate` hold the rates, with `relative_lift`.
    VARIANTS = "variants"


# Each shape's JSON: the fields it leaves out, and the names it gives the two rates.
_LEFT_OUT = {
    Compared.ARMS: frozenset({"compared", "variant", "reference", "relative_lift"}),
    Compared.VARIANTS: frozenset({"compared", "label"}),
}
_RATE_NAMES = {
    Compared.ARMS: {"variant_rate": "personal", "reference_rate": "holdout"},
    Compared.VARIANTS: {},
}


class RateComparison(BaseModel):
    """One metric, a group's rate against a reference group's: both rates, the difference, what it means."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: Metric
    # Whom the rates divide by: accounts assigned (default) or accounts that visited.
    base: RateBase
    label: str
    compared: Compared = Field(exclude=True)
    # The two sides by name: `personal` and `holdout` for the arms, variant ids for a contrast.
    variant: str
    reference: str
    variant_rate: RateEstimate
    reference_rate: RateEstimate
    # variant − reference; None while either side has no trials.
    difference: float | None
    difference_low: float
    difference_high: float
    # The always-valid interval: still 95% however often the report has been read.
    sequential_low: float
    sequential_high: float
    # The smallest true difference this sample would detect with 80% power (None: no variance yet).
    minimum_detectable_effect: float | None
    # The difference relative to the reference's rate (None without a reference success).
    relative_lift: float | None
    enough_data: bool
    conclusion: str

    @model_validator(mode="before")
    @classmethod
    def _read_as_compared(cls, data: Any) -> Any:
        """Either JSON shape reads back (a results download is read again as the report it is)."""
        if not isinstance(data, dict) or "compared" in data:
            return data
        if "personal" in data:
            compared = Compared.ARMS
            known: dict[str, Any] = {"variant": Arm.PERSONAL.value, "reference": Arm.HOLDOUT.value}
        else:
            compared = Compared.VARIANTS
            known = {"label": metric_label(Metric(data["metric"]), RateBase(data["base"]))}
        names = {shown: name for name, shown in _RATE_NAMES[compared].items()}
        read = {names.get(k, k): v for k, v in data.items()}
        if compared is Compared.ARMS:  # left out of the lift report's JSON: it follows from the rates
            reference = RateEstimate.model_validate(read["reference_rate"]).rate
            difference = read["difference"]
            known["relative_lift"] = difference / reference if difference is not None and reference else None
        return {**known, **read, "compared": compared}

    @model_serializer(mode="wrap")
    def _named_as_compared(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Each report's JSON keeps the names it has always had (`Compared`)."""
        dumped: dict[str, Any] = handler(self)
        names = _RATE_NAMES[self.compared]
        return {names.get(k, k): v for k, v in dumped.items() if k not in _LEFT_OUT[self.compared]}

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """As dumped, a comparison has one of the two shapes (`Compared`), and the schema says so."""
        if handler.mode != "serialization":
            return handler(core_schema)
        # The fields as declared (not the serializer's plain dict), reshaped as each report names them.
        declared = cast(CoreSchema, {k: v for k, v in core_schema.items() if k != "serialization"})
        schema = handler(declared)
        fields = handler.resolve_ref_schema(schema)
        if "anyOf" not in fields:  # a model met twice is shaped once
            shapes = [_shape(fields, compared) for compared in Compared]
            fields.clear()
            fields.update({"title": cls.__name__, "description": cls.__doc__, "anyOf": shapes})
        return schema


def _shape(fields: JsonSchemaValue, compared: Compared) -> JsonSchemaValue:
    names, left_out = _RATE_NAMES[compared], _LEFT_OUT[compared]
    return {
        "title": f"{RateComparison.__name__} ({compared.value})",
        "type": "object",
        "additionalProperties": False,
        "properties": {names.get(k, k): v for k, v in fields["properties"].items() if k not in left_out},
        "required": [names.get(k, k) for k in fields.get("required", []) if k not in left_out],
    }


def compare_rates(
    metric: Metric,
    label: str,
    sides: tuple[tuple[str, int, int], tuple[str, int, int]],
    *,
    compared: Compared,
    conclude: Callable[[RateComparison], str],
    base: RateBase = RateBase.ASSIGNED,
    min_trials: int = MIN_ACCOUNTS_PER_ARM,
    confidence: float = CONFIDENCE,
) -> RateComparison:
    """`sides`: (name, successes, trials) of the group, then of its reference; `conclude` words the
    verdict from the numbers (each report decides on its own interval)."""
    (variant, xa, na), (reference, xb, nb) = sides
    a, b = rate_estimate(xa, na, confidence), rate_estimate(xb, nb, confidence)
    fixed = newcombe_difference(xa, na, xb, nb, confidence)
    seq_low, seq_high = sequential_difference(xa, na, xb, nb, 1.0 - confidence)
    pooled = (xa + xb) / (na + nb) if na + nb else 0.0
    difference = a.rate - b.rate if a.rate is not None and b.rate is not None else None
    measured = RateComparison(
        metric=metric,
        base=base,
        label=label,
        compared=compared,
        variant=variant,
        reference=reference,
        variant_rate=a,
        reference_rate=b,
        difference=difference,
        difference_low=fixed.low,
        difference_high=fixed.high,
        sequential_low=seq_low,
        sequential_high=seq_high,
        minimum_detectable_effect=minimum_detectable_effect(pooled, na, nb, 1.0 - confidence),
        relative_lift=difference / b.rate if difference is not None and b.rate else None,
        enough_data=min(na, nb) >= min_trials and min(xa, xb) >= MIN_EVENTS_PER_ARM,
        conclusion="",
    )
    return measured.model_copy(update={"conclusion": conclude(measured)})
