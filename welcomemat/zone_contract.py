"""Typed zone contracts (`zones/*.yaml`): what each page zone may say and how it falls back."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from welcomemat.errors import ContractError
from welcomemat.ids import OpaqueId
from welcomemat.markup import validate_markup_allowed
from welcomemat.yamlfile import load_yaml_model

__all__ = [
    "KNOWN_CHECKS",
    "ZoneContract",
    "ZoneFallback",
    "load_zone_contract",
    "load_zone_contracts",
]

# Every deterministic check a zone may name; the precompute job implements each one.
KNOWN_CHECKS: frozenset[str] = frozenset(
    {
        "empty",
        "length",
        "banned_phrases",
        "one_question",
        "no_markup_or_links",
        "unsupported_specifics",
        "cited_facts_trusted",
        "other_company",
        "cta_allowed",
        "confidence",
        "prohibited_claims",
    }
)


class ZoneFallback(enum.StrEnum):
    """Where the ladder starts when the personal version is not used."""

    SEGMENT = "segment"
    DEFAULT = "default"


class ZoneContract(BaseModel):
    """One zone: its job, limits, allowed markup, usable facts, checks and fallback."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: OpaqueId
    purpose: str = Field(min_length=1)
    max_words: int = Field(ge=1, le=200)
    max_chars: int = Field(ge=1, le=2_000)
    markup: frozenset[str] = frozenset()
    link: bool = Field(default=False, description="the zone carries a CTA link")
    fact_types: frozenset[str] = frozenset()
    requires_fact: bool = Field(default=True, description="a personal version must cite a fact")
    checks: tuple[str, ...] = ()
    fallback: ZoneFallback = ZoneFallback.SEGMENT

    @field_validator("markup", mode="before")
    @classmethod
    def _markup_within_ceiling(cls, value: object) -> frozenset[str]:
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError("markup must be a list of tag names")
        try:
            return validate_markup_allowed(str(v) for v in value)
        except ContractError as exc:
            raise ValueError(exc.message) from None

    @field_validator("checks")
    @classmethod
    def _checks_known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - KNOWN_CHECKS)
        if unknown:
            raise ValueError(f"unknown checks {unknown}; known: {sorted(KNOWN_CHECKS)}")
        return value

    @model_validator(mode="after")
    def _personal_needs_facts(self) -> ZoneContract:
        if self.requires_fact and not self.fact_types:
            raise ValueError("requires_fact is true but fact_types is empty")
        return self

    def fits(self, text: str) -> bool:
        """Within the word and character limits."""
        return len(text) <= self.max_chars and len(text.split()) <= self.max_words


def load_zone_contract(path: str | Path) -> ZoneContract:
    path = Path(path)
    contract = load_yaml_model(path, ZoneContract)
    if contract.id != path.stem:
        raise ContractError(f"zone id {contract.id!r} differs from the file name", file=path, field="id")
    return contract


def load_zone_contracts(folder: str | Path) -> Mapping[str, ZoneContract]:
    """Every `*.yaml` in the folder, keyed by zone id."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ContractError("zone contract folder not found", file=folder)
    contracts = {c.id: c for c in (load_zone_contract(p) for p in sorted(folder.glob("*.yaml")))}
    if not contracts:
        raise ContractError("no zone contracts (*.yaml) in folder", file=folder)
    return contracts
