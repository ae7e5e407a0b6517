"""Typed zone contracts (`zones/*.yaml`): what each page zone may say and how it falls back."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic.config import JsonDict

from welcomemat.errors import ContractError, ContractProblems
from welcomemat.ids import OpaqueId
from welcomemat.security.markup import INLINE_TAGS_MAX, validate_markup_allowed
from welcomemat.yamlfile import check_yaml_model, line_of_field

__all__ = [
    "CHECK_NAMES_SCHEMA",
    "HARD_CHECKS",
    "KNOWN_CHECKS",
    "OPTIONAL_CHECKS",
    "AddedChecks",
    "ZoneContract",
    "ZoneContractsCheck",
    "ZoneFallback",
    "added_checks_problem",
    "check_zone_contract",
    "check_zone_contracts",
    "load_zone_contract",
    "load_zone_contracts",
    "omitted_hard_checks",
]

# Every deterministic check a zone may name, in the order failures are reported (the precompute
# job implements each one; `precompute.checks.CHECKS` follows this order).
CHECK_ORDER: tuple[str, ...] = (
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
    # The claim classes (welcomemat.reasons.ClaimReason).
    "quotes",
    "recency",
    "achievements",
    "relationships",
    "intent",
    "tracking",
    "flattery",
    # A personal draft's time words keep it true as long as its surfaces need.
    "lifespan",
    # Personal drafts against the campaign's voice profile (welcomemat.campaign.voice).
    "voice",
    # Every word of a personal draft from its cited facts, the account or approved copy. Doubt,
    # not a rule (a person may approve past it): last, so a rule a draft breaks is its reason.
    "grounding",
)
KNOWN_CHECKS: frozenset[str] = frozenset(CHECK_ORDER)


# The checks that always run, whatever a zone contract, campaign or tenant lists: what keeps a
# line true (numbers, names, dates and time words, other companies, the claim classes), short
# enough (length), plain (markup, links) and allowed (banned phrases, prohibited claims, the
# voice). A lower level may add checks, never remove one (DESIGN.md, invariant 10); in a link
# zone `cta_allowed` is hard too.
OPTIONAL_CHECKS: frozenset[str] = frozenset({"one_question", "confidence"})
HARD_CHECKS: frozenset[str] = KNOWN_CHECKS - OPTIONAL_CHECKS - {"cta_allowed"}


def added_checks_problem(checks: tuple[str, ...]) -> str | None:
    """Why a tenant's or campaign's `checks` list is refused, or None: each entry must be a check
    Welcomemat has, and none may try to remove one ("!length", "-voice": a level only adds)."""
    removing = [c for c in checks if c[:1] in {"!", "-", "~"}]
    if removing:
        return f"{removing[0]!r}: a level may add checks, never remove one (hard rule)"
    unknown = sorted(set(checks) - KNOWN_CHECKS)
    if unknown:
        return f"unknown checks {unknown}; a level may add {sorted(OPTIONAL_CHECKS)} (the others always run)"
    return None


def _only_added(value: tuple[str, ...]) -> tuple[str, ...]:
    problem = added_checks_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# A level's `checks`: names Welcomemat has, each one added (zone contracts, campaign, tenant).
AddedChecks = Annotated[tuple[str, ...], AfterValidator(_only_added)]

# The schema lists the check names, so an editor completes them and flags a misspelt one.
CHECK_NAMES_SCHEMA: JsonDict = {"items": {"type": "string", "enum": list[JsonValue](sorted(KNOWN_CHECKS))}}


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
    checks: AddedChecks = Field(
        default=(),
        description="Checks the zone adds to the hard ones: `one_question` (at most one question mark) and "
        "`confidence` (the writer's own confidence at least the policy's minimum). Every other check is "
        "hard and runs whether listed or not: `empty`, `length`, `banned_phrases`, `no_markup_or_links`, "
        "`unsupported_specifics`, `cited_facts_trusted`, `other_company`, `prohibited_claims`, the claim "
        "classes (`quotes`, `recency`, `achievements`, `relationships`, `intent`, `tracking`, `flattery`), "
        "`lifespan`, `grounding`, `voice` and, in a link zone, `cta_allowed`. A list naming some hard "
        "checks but not all reads as one meant to drop the others: `welcomemat validate` refuses it (a run "
        "still runs them all).",
        examples=[["one_question", "confidence"]],
        json_schema_extra=CHECK_NAMES_SCHEMA,
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

    @model_validator(mode="after")
    def _personal_needs_facts(self) -> ZoneContract:
        """`requires_fact: true` needs at least one of `fact_types`."""
        if self.requires_fact and not self.fact_types:
            raise ValueError("requires_fact is true but fact_types is empty")
        return self

    def hard_checks(self) -> frozenset[str]:
        """The checks this zone runs whatever any level lists (`cta_allowed` too in a link zone)."""
        return HARD_CHECKS | {"cta_allowed"} if self.link else HARD_CHECKS

    def fits(self, text: str) -> bool:
        """Within the word and character limits."""
        return len(text) <= self.max_chars and len(text.split()) <= self.max_words


def omitted_hard_checks(contract: ZoneContract) -> tuple[str, ...]:
    """The hard checks a contract's `checks` leaves out when it names some of them, sorted.

    A list of only optional checks adds them; one naming `empty` and `length` but not
    `unsupported_specifics` reads as meant to be complete, i.e. to drop the rest. They run all
    the same; `welcomemat validate` refuses the contract so its author learns it.
    """
    hard = contract.hard_checks()
    listed = set(contract.checks)
    return tuple(sorted(hard - listed)) if listed & hard else ()


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
