"""The sections of `campaign.yaml` other than the campaign itself: CTAs, copy, proof points,
pages, the review policy, seller alerts, the snippet's options and the QA thresholds.

Each is a strict, frozen model that checks what it can alone (types, lengths, ranges); what
needs more than one section (a CTA's link against the allowlist, copy against the pages and
zone contracts) is `welcomemat.campaign.checks`, run by `Campaign`.
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
    StrictBool,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from welcomemat.ids import OpaqueId
from welcomemat.security.urlgate import webhook_href

__all__ = [
    "MAX_ALERT_OWNERS",
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
    "SnippetOptions",
    "ZoneCopy",
]

MAX_SIGNAL_WINDOW_DAYS = 730  # two years: older than that is history, not a signal
# Sellers a campaign may route alerts to: a sales team, not a directory.
MAX_ALERT_OWNERS = 500


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


def _owner_url(raw: str) -> str:
    # The chat-webhook rule (`urlgate.webhook_href`), as `WELCOMEMAT_ALERT_WEBHOOK_URL`. The
    # message never quotes the value: an incoming webhook's path is its secret.
    href = webhook_href(raw)
    if href is None:
        raise ValueError(
            "must be an https URL with a host name (http only to 127.0.0.1, localhost or [::1]), "
            "without a user name or password"
        )
    return href


_OwnerName = Annotated[str, Field(min_length=1, max_length=254)]
_OwnerUrl = Annotated[str, AfterValidator(_owner_url)]


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
    owners: dict[_OwnerName, _OwnerUrl] = Field(
        default_factory=dict,
        max_length=MAX_ALERT_OWNERS,
        description="The account's owner (its `crm_owner`, matched without regard to case) -> the chat "
        "webhook that owner's alerts are posted to instead of the campaign's channel "
        "(`WELCOMEMAT_ALERT_WEBHOOK_URL`): https with a host name (http only to a loopback host), no "
        "user name or password, as that variable. An account without an owner here goes to the "
        "campaign's channel. The URL is a credential: it is never printed, only its host. Changes no "
        "published zone set.",
        examples=[{"sam@acmerevenue.example": "https://chat.acmerevenue.example/hooks/sam-deals"}],
    )

    @field_validator("owners")
    @classmethod
    def _owners_distinct(cls, owners: dict[str, str]) -> dict[str, str]:
        """Each owner is named once: two spellings that differ only in case are one owner twice."""
        folded = [owner.strip().casefold() for owner in owners]
        repeated = sorted({o for o in folded if folded.count(o) > 1})
        if repeated:
            raise ValueError(f"names the owner {repeated[0]!r} twice (owners match without regard to case)")
        return owners

    def owner_destination(self, owner: str | None) -> str | None:
        """The chat webhook of the account's owner, or None: the campaign's channel."""
        if not owner:
            return None
        wanted = owner.strip().casefold()
        return next((url for name, url in self.owners.items() if name.strip().casefold() == wanted), None)


class SnippetOptions(BaseModel):
    """What the snippet may do to the customer's own page (docs/renderer.md: The snippet)."""

    model_config = STRICT
    # Strict: YAML's `"yes"` or `1` is a mistake to report, not a switch to guess at.
    replace_default: StrictBool = Field(
        default=False,
        description="Whether the snippet overwrites the site's own copy with the campaign's `default_copy`. "
        "`false` (the default): for an anonymous visitor, and in any zone whose rung would be the default, "
        "the page keeps its own words; only segment and personal copy replace them. `true`: the default "
        "copy replaces the site's, as on the renderer's own pages. Changes no published zone set.",
        examples=[True],
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
