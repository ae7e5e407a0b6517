"""Why an account's facts will not be used as written, decided the way a run decides it.

`welcomemat validate CAMPAIGN ACCOUNTS` asks this for every account, so what it reports is
what `precompute` will do on the same day: the governed context is built by precompute's
own `build_context` (identity ▸ trust policy ▸ the campaign's own fact types), and each fact
that is not trusted is reported with its trust reason (`bad_date`, `stale`, `wrong_subject`,
`other_company` ...). Three more findings are about the fact against the campaign:

- `no_patterns_for_type`: the campaign writes no pattern for the fact's type (which also has
  no window, as the loader requires), so no zone can state it;
- `missing_field`: a field some pattern of its type uses as a slot is missing or empty, so
  those patterns skip the fact (it may still fill others);
- `unknown_field`: a field that is neither a standard fact field nor one its type carries
  (`welcomemat.campaign.fact_types`, or the campaign's `fact_types`): kept, but it fills no slot, and
  is usually a misspelt one.

A fact's trust reason is the first check it fails, as in a run; the field findings are
reported beside it, so fixing one never reveals another the next day.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date

from precompute.context import EffectivePolicy, FactDecision, FactReason
from precompute.context_builder import build_context
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.declared_fact_types import STANDARD_FACT_FIELDS
from welcomemat.campaign.fact_types import COMPUTED_SLOTS
from welcomemat.campaign.patterns import parse_pattern
from welcomemat.records.accounts import Account, Fact

__all__ = [
    "MISSING_FIELD",
    "NO_PATTERNS_FOR_TYPE",
    "UNKNOWN_FIELD",
    "FactProblem",
    "FactsChecked",
    "check_account_facts",
    "pattern_fields",
]

NO_PATTERNS_FOR_TYPE = "no_patterns_for_type"
MISSING_FIELD = "missing_field"
UNKNOWN_FIELD = "unknown_field"

# The fact field each trust reason is about; the rest are about the fact as a whole.
_REASON_FIELD: Mapping[str, str] = {
    FactReason.NO_SOURCE: "source_url",
    FactReason.BAD_SOURCE_URL: "source_url",
    FactReason.NO_DATE: "published_at",
    FactReason.BAD_DATE: "published_at",
    FactReason.FUTURE_DATE: "published_at",
    FactReason.STALE: "published_at",
    FactReason.NO_WINDOW_FOR_TYPE: "type",
    FactReason.LOW_CONFIDENCE: "confidence",
    FactReason.NOT_FOR_WEB: "surfaces",
    FactReason.MARKUP_IN_STATEMENT: "statement",
    FactReason.TEMPLATE_IN_STATEMENT: "statement",
    FactReason.DUPLICATE: "id",
}
_SUBJECT_REASONS = frozenset({"wrong_subject", "other_company"})


@dataclass(frozen=True)
class FactProblem:
    """One reason one fact of an account will not be used, or not fully, as written."""

    fact_index: int  # position in the account's `facts`
    fact_id: str
    field: str  # path within the account's record: "facts[2].published_at", "domain"
    reason: str  # a trust reason code, or NO_PATTERNS_FOR_TYPE, MISSING_FIELD, UNKNOWN_FIELD
    message: str
    fact_used: bool  # whether the fact is used all the same (a field finding on a trusted fact)


@dataclass(frozen=True)
class FactsChecked:
    """An account's facts as a run on `as_of` would take them."""

    facts: int
    used: int
    problems: tuple[FactProblem, ...]


def pattern_fields(campaign: Campaign) -> dict[str, frozenset[str]]:
    """Per fact type, the fact fields its patterns (the campaign's and its copy variants') use as slots."""
    out: dict[str, set[str]] = {}

    def add(fact_type: str, lines: Iterable[str]) -> None:
        found = out.setdefault(fact_type, set())
        for line in lines:
            try:
                found |= parse_pattern(line).slots - COMPUTED_SLOTS
            except ValueError:
                continue  # the campaign's own check reports the pattern

    for fact_type, by_zone in campaign.patterns.items():
        for lines in by_zone.values():
            add(fact_type, lines)
    if campaign.experiment is not None:
        for variant in campaign.experiment.variants:
            for fact_type, lines in variant.patterns.items():
                add(fact_type, lines)
    return {t: frozenset(fields) for t, fields in out.items() if _written(campaign, t)}


def _written(campaign: Campaign, fact_type: str) -> bool:
    if any(campaign.patterns.get(fact_type, {}).values()):
        return True
    experiment = campaign.experiment
    return experiment is not None and any(v.patterns.get(fact_type) for v in experiment.variants)


def check_account_facts(
    account: Account, campaign: Campaign, policy: EffectivePolicy, as_of: date
) -> FactsChecked:
    """Every problem with the account's facts on `as_of`, in fact order."""
    context = build_context(account, campaign, policy, as_of)
    slots = pattern_fields(campaign)
    problems: list[FactProblem] = []
    used = 0
    for i, (fact, decision) in enumerate(zip(account.facts, context.decisions, strict=True)):
        has_patterns = fact.type in slots
        fact_used = decision.trusted and has_patterns
        used += fact_used
        where = f"facts[{i}]"
        if not has_patterns and (decision.trusted or decision.reason == FactReason.NO_WINDOW_FOR_TYPE):
            message = _no_patterns_message(fact.type, sorted(slots))
            problems.append(FactProblem(i, fact.id, f"{where}.type", NO_PATTERNS_FOR_TYPE, message, False))
            continue  # nothing of the campaign reads its fields
        if not decision.trusted:
            problems.append(_refusal(i, fact, decision))
        if has_patterns:
            problems += _field_problems(i, fact, slots[fact.type], campaign, fact_used)
    return FactsChecked(facts=len(account.facts), used=used, problems=tuple(problems))


def _refusal(i: int, fact: Fact, decision: FactDecision) -> FactProblem:
    reason = str(decision.reason)
    if reason == FactReason.IDENTITY_UNCERTAIN:
        field = "domain"  # the account's, not the fact's: every fact of the account has it
    elif reason in _SUBJECT_REASONS:
        field = f"facts[{i}].{'subject' if fact.subject else 'statement'}"
    else:
        own = _REASON_FIELD.get(reason)
        field = f"facts[{i}].{own}" if own else f"facts[{i}]"
    return FactProblem(i, fact.id, field, reason, decision.detail or reason, False)


def _field_problems(
    i: int, fact: Fact, needed: frozenset[str], campaign: Campaign, fact_used: bool
) -> list[FactProblem]:
    known = (
        campaign.known_fact_types()[fact.type].fields if fact.type in campaign.known_fact_types() else None
    )
    extra = fact.model_extra or {}
    present = {k for k, v in extra.items() if isinstance(v, str) and v.strip()}
    out: list[FactProblem] = []
    for name in sorted(needed - present):
        message = f"no {name!r}: the {fact.type} patterns that use {{{name}}} skip this fact" + (
            f" (its value {extra[name]!r} is not text)" if name in extra and name not in present else ""
        )
        out.append(FactProblem(i, fact.id, f"facts[{i}].{name}", MISSING_FIELD, message, fact_used))
    if known is None:
        return out
    for name in sorted(set(extra) - STANDARD_FACT_FIELDS - known):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        fields = ", ".join(sorted(known)) or "none"
        message = (
            f"{fact.type} facts carry no {name!r}: {hint}it fills no slot ({fact.type} fields: {fields})"
        )
        out.append(FactProblem(i, fact.id, f"facts[{i}].{name}", UNKNOWN_FIELD, message, fact_used))
    return out


def _no_patterns_message(fact_type: str, written: list[str]) -> str:
    close = difflib.get_close_matches(fact_type, written, n=1, cutoff=0.8)
    hint = f"did you mean {close[0]!r}? " if close else ""
    listed = ", ".join(written) or "none"
    return (
        f"the campaign has no patterns for {fact_type} facts, so no zone states them: {hint}patterns are "
        f"written for {listed} (declare a type of your own under fact_types, with its patterns)"
    )
