"""The offline composer's patterns, refused at load when no fact of their type could ever let them through.

A pattern is filled per account and its output checked like any draft, so a pattern that
makes a claim its fact type can never back ("Loved your recent post about the {round}": a
funding fact is no quote; "We saw you on our pricing page") would quietly give every
account its segment's copy. `welcomemat validate` and `precompute` refuse it instead, at its
line, like a bad line of segment copy:

* a banned opener or phrase (shipped, `tenant.yaml`'s, the campaign's);
* being watched, or flattery: never backed, whatever the facts;
* a quote, a prior relationship or a new role when the pattern's fact type cannot back it
  (`welcomemat.campaign.fact_types`: only `quote`, `crm_activity`, `leadership` facts can).

Claims that depend on what a fact says or when it was published (an achievement, a plan,
"recently") are left to the checks of each filled draft.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from precompute.checks import ApprovedVocabulary, CheckInput, check_banned_phrases
from precompute.claims.catalog import find_claims
from precompute.claims.patterns import NEW_ROLE
from precompute.context import EffectivePolicy, GovernedContext
from precompute.providers.base import ZoneDraft
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.fact_types import QUOTE, RELATIONSHIP, ROLE_CHANGE, types_backing
from welcomemat.reasons import ClaimReason
from welcomemat.zones.contract import ZoneContract

__all__ = ["pattern_claim_problems"]

_SLOT_RE = re.compile(r"\{[^{}]*\}")
_SLOT_WORD = "slot"  # what a slot reads as: a word no claim phrasing names
_NEVER_BACKED = frozenset({ClaimReason.TRACKING_DISCLOSURE, ClaimReason.FLATTERY})


def _needs_type(reason: ClaimReason, kind: str) -> frozenset[str] | None:
    """The fact types that could back a claim of this class and kind; None: depends on the fact."""
    if reason is ClaimReason.INVENTED_QUOTE:
        return types_backing(QUOTE)
    if reason is ClaimReason.UNSUPPORTED_RELATIONSHIP:
        return types_backing(RELATIONSHIP)
    if reason is ClaimReason.UNSUPPORTED_RECENCY and kind == NEW_ROLE:
        return types_backing(ROLE_CHANGE)
    return None


def _why(
    fact_type: str,
    text: str,
    contract: ZoneContract,
    campaign: Campaign,
    policy: EffectivePolicy,
    vocabulary: ApprovedVocabulary,
    context: GovernedContext,
) -> str | None:
    draft = ZoneDraft(zone_id=contract.id, text=text, confidence=1.0)
    banned = check_banned_phrases(
        CheckInput(
            draft=draft,
            contract=contract,
            context=context,
            campaign=campaign,
            policy=policy,
            vocabulary=vocabulary,
        )
    )
    if banned is not None:
        return f"{banned.reason}: {banned.detail}"
    for hit in find_claims(text):
        if hit.reason in _NEVER_BACKED:
            return f"{hit.reason.value}: {hit.phrase} (never allowed)"
        types = _needs_type(hit.reason, hit.pattern.kind)
        if types is not None and fact_type not in types:
            backing = ", ".join(sorted(types))
            return (
                f"{hit.reason.value}: {hit.phrase} (only a {backing} fact backs it, not a {fact_type} fact)"
            )
    return None


def pattern_claim_problems(
    campaign: Campaign,
    zones: Mapping[str, ZoneContract],
    policy: EffectivePolicy,
    vocabulary: ApprovedVocabulary,
    context: GovernedContext,
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Each pattern no fact of its type could let through: (field path in campaign.yaml, message).

    `context`: a neutral one (no facts), as segment copy is checked in.
    """
    for fact_type, by_zone in campaign.patterns.items():
        for zone_id, patterns in by_zone.items():
            contract = zones.get(zone_id)
            if contract is None:  # the campaign's own check reports a pattern for an unknown zone
                continue
            for i, pattern in enumerate(patterns):
                text = _SLOT_RE.sub(_SLOT_WORD, pattern.replace("{{", "(").replace("}}", ")"))
                why = _why(fact_type, text, contract, campaign, policy, vocabulary, context)
                if why is not None:
                    yield (
                        ("patterns", fact_type, zone_id, i),
                        f"{fact_type} pattern for zone {zone_id!r} can never be published ({why}); "
                        "every account would get its segment's copy",
                    )
