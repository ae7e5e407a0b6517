"""Typed zone contracts (`zones/*.yaml`): what each page zone may say and how it falls back."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic.config import JsonDict

from welcomemat.errors import ContractError, ContractProblems
from welcomemat.ids import OpaqueId
from welcomemat.markup import INLINE_TAGS_MAX, validate_markup_allowed
from welcomemat.yamlfile import check_yaml_model, line_of_field

__all__ = [
    "KNOWN_CHECKS",
    "ZoneContract",
    "ZoneContractsCheck",
    "ZoneFallback",
    "check_zone_contract",
    "check_zone_contracts",
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
        # The claim classes (welcomemat.reasons.ClaimReason): they run whether listed or not.
        "quotes",
        "recency",
        "achievements",
        "relationships",
        "intent",
        "tracking",
        "flattery",
        # Personal drafts against the campaign's voice profile (welcomemat.voice).
        "voice",
    }
)


# The schema lists the check names, so an editor completes them and flags a misspelt one.
_CHECK_NAMES_SCHEMA: JsonDict = {"items": {"type": "string", "enum": list[JsonValue](sorted(KNOWN_CHECKS))}}


class ZoneFallback(enum.StrEnum):
    """Where the ladder starts when the personal version is not used."""

    SEGMENT = "segment"
    DEFAULT = "default"


class ZoneContract(BaseModel):
    """One zone: its job, limits, allowed markup, usable facts, checks and fallback."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: OpaqueId = Field(
        description="The zone's id, the file's name without `.yaml`; pages, copy and templates "
        "(`data-wm-zone`) name the zone by it.",
        examples=["hero_headline"],
    )
    purpose: str = Field(
        min_length=1,
        description="The zone's job in one sentence; given to the model provider.",
        examples=["Open with the single most recent, sourced fact about the account and why it matters now."],
    )
    max_words: int = Field(
        ge=1, le=200, description="Most words any copy for the zone may have.", examples=[12]
    )
    max_chars: int = Field(
        ge=1, le=2_000, description="Most characters any copy for the zone may have.", examples=[80]
    )
    markup: frozenset[str] = Field(
        default=frozenset(),
        description="Inline tags the zone's text may keep, cleaned when the zone set is written: at most "
        f"{', '.join(f'`{tag}`' for tag in sorted(INLINE_TAGS_MAX))} (any case), never an attribute. "
        "Empty: plain text.",
        examples=[["em", "strong"]],
    )
    link: bool = Field(
        default=False,
        description="The zone is a call to action: its copy names a `cta`, and it renders that CTA's link.",
        examples=[True],
    )
    fact_types: frozenset[str] = Field(
        default=frozenset(),
        description="Fact types a personal version may cite; citing another type fails the "
        "`cited_facts_trusted` check.",
        examples=[["funding", "hiring"]],
    )
    requires_fact: bool = Field(
        default=True,
        description="A personal version must cite a trusted fact; false lets one go without a citation "
        "(a proof point or CTA chosen for the account).",
        examples=[False],
    )
    checks: tuple[str, ...] = Field(
        default=(),
        description="Deterministic checks every draft for the zone must pass. `empty`, `banned_phrases`, "
        "`no_markup_or_links`, `cited_facts_trusted`, `prohibited_claims`, the claim classes (`quotes`, "
        "`recency`, `achievements`, `relationships`, `intent`, `tracking`, `flattery`), `voice` (personal "
        "drafts against the campaign's `voice_profile`, when it has one) and, in a link zone, "
        "`cta_allowed` run whether listed or not.",
        examples=[["empty", "length", "banned_phrases", "one_question"]],
        json_schema_extra=_CHECK_NAMES_SCHEMA,
    )
    fallback: ZoneFallback = Field(
        default=ZoneFallback.SEGMENT,
        description="Where the ladder starts when the personal version is not used: `segment` (the "
        "account's segment copy, else the campaign default) or `default` (straight to the default).",
        examples=["segment"],
    )

    @field_validator("markup", mode="before")
    @classmethod
    def _markup_within_ceiling(cls, value: object) -> frozenset[str]:
        """`markup` is a list, and every tag in it is one of the inline ceiling's."""
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError("markup must be a list of tag names")
        try:
            return validate_markup_allowed(str(v) for v in value)
        except ContractError as exc:
            raise ValueError(exc.message) from None

    @field_validator("checks")
    @classmethod
    def _checks_known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """Every entry of `checks` is a check the precompute job implements."""
        unknown = sorted(set(value) - KNOWN_CHECKS)
        if unknown:
            raise ValueError(f"unknown checks {unknown}; known: {sorted(KNOWN_CHECKS)}")
        return value

    @model_validator(mode="after")
    def _personal_needs_facts(self) -> ZoneContract:
        """`requires_fact: true` needs at least one of `fact_types`."""
        if self.requires_fact and not self.fact_types:
            raise ValueError("requires_fact is true but fact_types is empty")
        return self

    def fits(self, text: str) -> bool:
        """Within the word and character limits."""
        return len(text) <= self.max_chars and len(text.split()) <= self.max_words


def check_zone_contract(path: str | Path) -> tuple[ZoneContract | None, list[ContractError]]:
    """The contract (None if refused) and every problem with it (file, line, field)."""
    path = Path(path)
    contract, problems = check_yaml_model(path, ZoneContract)
    if contract is not None and contract.id != path.stem:
        problem = ContractError(
            f"zone id {contract.id!r} differs from the file name",
            file=path,
            line=line_of_field(path, ("id",)),
            field="id",
        )
        return None, [problem]
    return contract, problems


def load_zone_contract(path: str | Path) -> ZoneContract:
    contract, problems = check_zone_contract(path)
    if problems or contract is None:
        raise ContractProblems(problems)
    return contract


@dataclass(frozen=True)
class ZoneContractsCheck:
    """Every zone contract of a folder: those that load, every problem, and the ids refused."""

    contracts: Mapping[str, ZoneContract]
    problems: tuple[ContractError, ...]
    unreadable: frozenset[str]  # file stems (zone ids) whose contract is refused


def check_zone_contracts(folder: str | Path) -> ZoneContractsCheck:
    """Every `*.yaml` in the folder, checked; a bad file costs its own zone only."""
    folder = Path(folder)
    if not folder.is_dir():
        return ZoneContractsCheck(
            {}, (ContractError("zone contract folder not found", file=folder),), frozenset()
        )
    contracts: dict[str, ZoneContract] = {}
    problems: list[ContractError] = []
    unreadable: set[str] = set()
    files = sorted(folder.glob("*.yaml"))
    for path in files:
        contract, found = check_zone_contract(path)
        problems += found
        if contract is None:
            unreadable.add(path.stem)
        else:
            contracts[contract.id] = contract
    if not files:
        problems.append(ContractError("no zone contracts (*.yaml) in folder", file=folder))
    return ZoneContractsCheck(contracts, tuple(problems), frozenset(unreadable))


def load_zone_contracts(folder: str | Path) -> Mapping[str, ZoneContract]:
    """Every `*.yaml` in the folder, keyed by zone id. ContractProblems lists every problem."""
    checked = check_zone_contracts(folder)
    if checked.problems:
        raise ContractProblems(checked.problems)
    return checked.contracts
