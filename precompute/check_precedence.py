"""Which checks a zone's drafts go through: built-in ▸ tenant ▸ campaign ▸ zone, add-only.

DESIGN.md, invariant 10: the hard checks (`welcomemat.zones.contract.HARD_CHECKS`: numbers,
names, dates and time words, other companies, the claim classes, grounding, length, links,
markup, banned phrases, prohibited claims, voice; `cta_allowed` in a link zone) run for every zone
whatever any file says. Each lower level may add checks (`one_question`, `confidence`),
never remove one: a list is a list of additions, so nothing a tenant, campaign or zone
contract writes can switch a hard check off. A zone contract whose `checks` names some hard
checks but not the others reads as an attempt to drop them; `welcomemat validate` refuses it,
naming its line (`zone_check_problems`), while a run still runs them all.

Limits combine the same way: each level may only tighten. Zone word and character limits
are capped by the model's hard ceilings (`ZoneContract`), signal windows and confidence by
`precompute.policy`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from welcomemat.errors import ContractError
from welcomemat.yamlfile import line_of_field
from welcomemat.zones.contract import CHECK_ORDER, ZoneContract, omitted_hard_checks

__all__ = ["added_checks", "effective_checks", "zone_check_problems"]


def added_checks(*levels: Iterable[str]) -> tuple[str, ...]:
    """The checks the levels add (tenant, then campaign), each once, in report order."""
    wanted = {c for level in levels for c in level}
    return tuple(c for c in CHECK_ORDER if c in wanted)


def effective_checks(
    contract: ZoneContract, *, tenant: Iterable[str] = (), campaign: Iterable[str] = ()
) -> tuple[str, ...]:
    """Every check a draft for this zone goes through, in report order.

    The hard checks, then whatever the tenant, the campaign and the zone add: a union, so a
    lower level can add but never remove.
    """
    wanted = set(contract.hard_checks()) | set(tenant) | set(campaign) | set(contract.checks)
    return tuple(c for c in CHECK_ORDER if c in wanted)


def zone_check_problems(contracts: Mapping[str, ZoneContract], folder: Path) -> list[ContractError]:
    """A zone contract whose `checks` reads as dropping hard checks, with file and line."""
    problems: list[ContractError] = []
    for zone_id, contract in sorted(contracts.items()):
        omitted = omitted_hard_checks(contract)
        if not omitted:
            continue
        path = folder / f"{zone_id}.yaml"
        problems.append(
            ContractError(
                f"lists some hard checks but not {', '.join(omitted)}: hard checks always run and no "
                "file can remove one; list only the checks the zone adds (one_question, confidence), or "
                "leave `checks` out",
                file=path,
                line=line_of_field(path, ("checks",)),
                field="checks",
            )
        )
    return problems
