"""The sections of `campaign.yaml` other than the campaign itself: CTAs, copy, proof points,
pages, the review policy, seller alerts and the QA thresholds.

Each is a strict, frozen model that checks what it can alone (types, lengths, ranges); what
needs more than one section (a CTA's link against the allowlist, copy against the pages and
zone contracts) is `welcomemat.campaign_checks`, run by `Campaign`.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from welcomemat.ids import OpaqueId

__all__ = [
    "MAX_SIGNAL_WINDOW_DAYS",
    "STRICT",
    "ApprovalPolicy",
    "Confidence",
    "Cta",
    "PageSpec",
    "ProofItem",
    "QaThresholds",
    "RiskTier",
    "SegmentCopy",
    "SellerAlerts",
    "SignalWindowDays",
    "ZoneCopy",
]

MAX_SIGNAL_WINDOW_DAYS = 730  # two years: older than that is history, not a signal


def _window_in_range(days: int) -> int:
    if not 1 <= days <= MAX_SIGNAL_WINDOW_DAYS:
        raise ValueError(f"window {days} days is outside 1..{MAX_SIGNAL_WINDOW_DAYS}")
    return days


SignalWindowDays = Annotated[int, AfterValidator(_window_in_range)]
# `high`: a guideline promotion needs a second, different approver.
RiskTier = Literal["standard", "high"]


class Confidence(enum.StrEnum):
    """How sure the research is of a fact: `low`, `medium` or `high`."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 0, "medium": 1, "high": 2}[self.value]


STRICT = ConfigDict(frozen=True, extra="forbid")


class Cta(BaseModel):
    """A call to action the campaign approves. Models choose one by id; they never write URLs."""

    model_config = STRICT
    id: OpaqueId = Field(description="The id copy and models name the CTA by.", examples=["book_ramp_review"])
    label: str = Field(
        min_length=1,
        max_length=80,
        description="What a personal CTA zone shows (never a model's own words); segment and default copy "
        "bring their own `text`.",
        examples=["Book a 20-minute ramp review"],
    )
    href: str = Field(
        description="Where the CTA goes: https, its host on `link_allowlist`.",
        examples=["https://meet.acmerevenue.example/ramp-review"],
    )


class ZoneCopy(BaseModel):
    """Human-written copy for one zone: a plain string, or `{text, cta}` where a link zone names its CTA."""

    model_config = STRICT
    text: str = Field(
        min_length=1,
        description="The copy, within the zone's word and character limits.",
        examples=["New sellers, productive in weeks, not quarters"],
    )
    cta: OpaqueId | None = Field(
        default=None,
        description="Id of one of the campaign's `ctas`; required in a zone whose contract has `link: true`.",
        examples=["talk_to_sales"],
    )

    @model_validator(mode="before")
    @classmethod
    def _from_plain_string(cls, value: Any) -> Any:
        """A plain string is short for `{text: ...}` with no CTA."""
        return {"text": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The schema says what the loader accepts: the plain-string shorthand too.
        mapping = handler.resolve_ref_schema(handler(core_schema))
        head: dict[str, Any] = {key: mapping[key] for key in ("title", "description") if key in mapping}
        return {**head, "anyOf": [{"type": "string", "minLength": 1}, mapping]}


class SegmentCopy(BaseModel):
    """A segment's copy for every zone a page shows."""

    model_config = STRICT
    label: str = Field(
        min_length=1,
        description="What the segment is, in words; given to a model provider as the account's segment.",
        examples=["SaaS, 50 to 500 people"],
    )
    zones: dict[OpaqueId, ZoneCopy] = Field(
        description="Copy per zone id; every zone a page shows needs one.",
        examples=[{"hero_headline": "Scaling the sales team? Ramp every hire faster"}],
    )


class ProofItem(BaseModel):
    """An approved proof point (customer story, figure) and the segments it suits."""

    model_config = STRICT
    id: OpaqueId = Field(description="Unique within the library.", examples=["proof_ramp_half"])
    text: str = Field(
        min_length=1,
        description="The proof point as it may appear on a page; its numbers and names count as approved.",
        examples=["Mid-size SaaS teams cut SDR ramp time from 90 to 45 days with Acme Revenue."],
    )
    segments: tuple[str, ...] = Field(
        default=(),
        description="Segments it suits, preferred for their accounts; empty: it suits every segment.",
        examples=[["saas-mid", "saas-enterprise"]],
    )


class PageSpec(BaseModel):
    """One page: the template that lays it out and the zones it shows."""

    model_config = STRICT
    template: str = Field(
        pattern=r"^[a-z0-9_]+\.html$",
        description="A file in `templates/`.",
        examples=["landing.html"],
    )
    zones: tuple[OpaqueId, ...] = Field(
        min_length=1,
        description="Zone ids in page order; each needs a zone contract and copy in `default_copy` and "
        "every segment.",
        examples=[["hero_headline", "hero_support", "proof", "cta"]],
    )


class ApprovalPolicy(BaseModel):
    """Which account tiers a person must approve before their pages go live."""

    model_config = STRICT
    review_tiers: tuple[int, ...] = Field(
        default=(),
        description="Account tiers whose personal zone sets wait as `pending_review` until a person "
        "approves them (`welcomemat review`); accounts served only fallback copy never wait.",
        examples=[[1]],
    )
    sample_rate: float = Field(
        default=0.02,
        ge=0.0,
        le=1.0,
        description="Fraction of the published (live) accounts queued for a person to read afterwards: "
        "per segment and mode, at least one each.",
        examples=[0.02],
    )


class SellerAlerts(BaseModel):
    """Tell the account's seller when an account of a named tier engages (`welcomemat sync`)."""

    model_config = STRICT
    next_step: str = Field(
        min_length=1,
        max_length=300,
        description="What the seller should do next, in plain words; every alert of the campaign ends "
        "with it.",
        examples=["Call within 24 hours and offer the ramp review; mention the line they saw."],
    )
    next_step_url: str | None = Field(
        default=None,
        description="A link for that step (a booking page, a playbook): https, its host on `link_allowlist`.",
        examples=["https://www.acmerevenue.example/playbooks/ramp-review"],
    )
    tiers: tuple[int, ...] = Field(
        default=(1,),
        min_length=1,
        description="Account tiers whose visits, QR scans and CTA clicks alert the seller, once per account "
        "and day (UTC).",
        examples=[[1]],
    )


class QaThresholds(BaseModel):
    """Population QA verdict thresholds (fractions of published accounts)."""

    model_config = STRICT
    max_check_failure_rate: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="QA says NO GO above this share of personal attempts (zones written for an account) "
        "that failed a check.",
        examples=[0.05],
    )
    max_fallback_rate: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description="QA says NO GO above this share of accounts with no personal zone at all.",
        examples=[0.85],
    )
    fixes_margin: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="A rate within this margin of its maximum makes the verdict GO WITH FIXES.",
        examples=[0.05],
    )
