"""The provider interface: one generation call per account, structured output per zone.

A provider only writes. It receives the governed context (trusted facts only) and the
zones it should write personal versions of; it returns, per zone, `text`, the `fact_ids`
it relies on, the `cta_id` chosen from the campaign's CTAs (never a URL) and a
self-reported `confidence`. Everything it returns goes through the same deterministic
checks, whichever provider wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from precompute.context import EffectivePolicy, GovernedContext
from welcomemat.accounts import Account
from welcomemat.campaign import Campaign
from welcomemat.zone_contract import ZoneContract

__all__ = [
    "FactExtractor",
    "GenerationRequest",
    "GenerationResult",
    "Provider",
    "ProviderUnavailable",
    "ProviderUsage",
    "ZoneDraft",
]


class ProviderUnavailable(Exception):
    """The provider cannot write now (circuit open, job deadline passed, retries used up).

    The account gets the fallback for every zone and is journalled `deferred`, so the next
    run (or `--resume`) generates it again.
    """


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
    """Drafts by zone id (a zone the provider declined is simply absent) and what it cost."""

    drafts: Mapping[str, ZoneDraft]
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
