"""The provider interface: one generation call per account, structured output per zone.

A provider only writes. It receives the governed context (trusted facts only) and the
zones it should write personal versions of; it returns, per zone, `text`, the `fact_ids`
it relies on, the `cta_id` chosen from the campaign's CTAs (never a URL) and a
self-reported `confidence`, or a `Decline` saying why it wrote none (a reason code from
`welcomemat.reasons` and, for a person, a note). Everything it returns goes through the
same deterministic checks, whichever provider wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from precompute.context import EffectivePolicy, GovernedContext
from precompute.pattern_choice import PatternChoice
from welcomemat.campaign.contract import Campaign
from welcomemat.reasons import PROVIDER_DECLINES, ZoneReason
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "NOTE_CHARS",
    "Decline",
    "FactExtractor",
    "GenerationRequest",
    "GenerationResult",
    "Provider",
    "ProviderUsage",
    "ZoneDraft",
]


NOTE_CHARS = 300  # a decline's note is one line for a terminal or an admin page, not a transcript


class ZoneDraft(BaseModel):
    """What a provider wrote for one zone (the structured output a model must match)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    zone_id: str
    text: str
    fact_ids: tuple[str, ...] = ()
    cta_id: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    # First day on which the text is no longer true, when it says something time-relative
    # ("yesterday"): the pipeline caps the zone set's valid_until with it. None: timeless.
    valid_until: date | None = None
    # The offline composer's pattern and why it won over the others (`explain`); None for a model.
    composed: PatternChoice | None = None


class Decline(BaseModel):
    """Why a provider wrote no draft for a zone: a reason code, and the specifics for a person.

    The note may quote the model (the self-review's own words): it is made one printable
    line here, so no control character reaches a terminal through `welcomemat explain`.
    `draft`: the draft a self-review judged not ok, kept so a person may approve it
    (`welcomemat.zones.held`); it still faces every deterministic check.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: ZoneReason
    note: str = ""
    draft: ZoneDraft | None = None

    @field_validator("reason")
    @classmethod
    def _a_provider_code(cls, value: ZoneReason) -> ZoneReason:
        if value not in PROVIDER_DECLINES:
            raise ValueError(f"{value.value!r} is not a reason a provider gives for a missing draft")
        return value

    @field_validator("note")
    @classmethod
    def _one_printable_line(cls, value: str) -> str:
        line = "".join(c for c in " ".join(value.split()) if c.isprintable())
        return line if len(line) <= NOTE_CHARS else line[: NOTE_CHARS - 1] + "…"


@dataclass(frozen=True)
class GenerationRequest:
    """One account: the zones its pages show, and everything they may be built from.

    `page_id` names the page or pages the zones belong to (`landing+continuation`).
    """

    context: GovernedContext
    campaign: Campaign
    policy: EffectivePolicy
    page_id: str
    zones: tuple[ZoneContract, ...]


@dataclass(frozen=True)
class GenerationResult:
    """Drafts by zone id, why each requested zone without one has none, and what it cost.

    A zone in neither mapping is counted as `no_answer`. `notes` are for a person reading
    a log (a repair call and why); nothing decides on them.
    """

    drafts: Mapping[str, ZoneDraft]
    declined: Mapping[str, Decline] = field(default_factory=dict)
    model_calls: int = 0
    tokens: int = 0
    retries: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ProviderUsage:
    """What a provider has spent so far in this process (for the run report)."""

    model_calls: int = 0
    retries: int = 0
    breaker_openings: int = 0
    tokens: int = 0
    input_tokens: int = 0  # of `tokens`: the prompts (the answers' `usage`), priced apart from output
    output_tokens: int = 0
    model: str | None = None  # the model the tokens were spent on (None: no model, nothing to price)


class Provider(Protocol):
    """A zone writer. Must be deterministic for the same request and fingerprint."""

    name: str

    def fingerprint(self) -> str:
        """Identifies the provider configuration (model, prompts, version) for the input hash."""
        ...

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Drafts for the request's zones; raises ProviderUnavailable when it cannot write now."""
        ...

    def usage(self) -> ProviderUsage:
        """Totals so far: model calls, retries, circuit-breaker openings, tokens."""
        ...


@runtime_checkable
class FactExtractor(Protocol):
    """A provider that can also read an account's raw `sources` for further dated facts."""

    def extract_facts(self, account: Account, fact_types: Sequence[str]) -> list[dict[str, Any]]:
        """Fact records (accounts.jsonl shape), evidence verified verbatim; may raise ProviderUnavailable."""
        ...
