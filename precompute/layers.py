"""Which layer most likely causes a group of failures: the attribution rules of cohort findings.

A quality loop fixes a failure where it comes from, so each group of failures
(`precompute.findings`) names one layer:

- `data`: the facts (untrusted, stale, another company's) or the account's identity;
- `guard`: a deterministic check refused drafts (many of one kind: maybe a false positive);
- `guideline`: the campaign's patterns, voice, banned lines, prohibited claims, CTAs or
  windows produce the failures;
- `fallback`: the fallback copy itself fails, is missing for a segment, or carries most pages;
- `template`: what is published and the page or zone contract disagree (rendering problems);
- `provider`: the model endpoint failed; the next run writes it again, nothing to correct.

`attribute` applies the rules in order: a QA re-check failing on a fallback rung is the
fallback's; a check failing on more than `PATTERN_FAILURE_SHARE` of one pattern's drafts
(at least `MIN_PATTERN_DRAFTS`) is that pattern's, `guideline`; otherwise the reason's
default layer (`DEFAULT_LAYERS`), and a `guard` check refusing more than
`GUARD_SUSPECT_RATE` of its kind's drafts is flagged as a likely false positive. docs/precompute.md's
"Cohort findings" table repeats `DEFAULT_LAYERS`; a test keeps them equal. Pure: the same
counts give the same layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from welcomemat.campaign.voice import VOICE_DIMENSIONS
from welcomemat.reasons import OFF_VOICE, ZoneReason, parse_reason

__all__ = [
    "DEFAULT_LAYERS",
    "GUARD_SUSPECT_RATE",
    "LAYER_HINTS",
    "MIN_PATTERN_DRAFTS",
    "PATTERN_FAILURE_SHARE",
    "QA_ON_FALLBACK_CODES",
    "REASON_HINTS",
    "Attribution",
    "Layer",
    "PatternShare",
    "attribute",
    "default_layer",
    "shift_conditions",
]

Layer = Literal["data", "guard", "guideline", "fallback", "template", "provider"]

# A pattern is at fault when more than this share of its drafts fail one check ...
PATTERN_FAILURE_SHARE = 0.5
# ... out of at least this many drafts (fewer says nothing about the pattern).
MIN_PATTERN_DRAFTS = 3
# A `guard` check refusing more than this share of one fact type's drafts (two or more) is
# flagged as a likely false positive: the layer stays `guard`, the finding says so.
GUARD_SUSPECT_RATE = 0.25
FALLBACK_SUFFIX = "@fallback"  # a QA re-check's reason on a zone served from fallback copy
# QA re-checks that can fail on a zone served from fallback copy (the others are about
# personal zones, or the whole set): on such a zone, the fallback copy is at fault.
QA_ON_FALLBACK_CODES = frozenset(
    {
        "zone_unknown",
        "link_missing",
        "link_off_allowlist",
        "zone_limits",
        "markup_or_link_in_text",
        "markup_unverified",
    }
)

# Grouped reason -> default layer. A grouped reason is a zone reason code (`identity` covers
# `identity:<detail>`), `check:<check reason>`, `fact:<trust reason>`, `qa:<QA finding>`, or
# one of the two cohort-only reasons at the end.
DEFAULT_LAYERS: Mapping[str, Layer] = {
    "fact:identity_uncertain": "data",
    "fact:no_source": "data",
    "fact:bad_source_url": "data",
    "fact:no_date": "data",
    "fact:bad_date": "data",
    "fact:future_date": "data",
    "fact:stale": "data",
    "fact:low_confidence": "data",
    "fact:not_for_web": "data",
    "fact:markup_in_statement": "data",
    "fact:template_in_statement": "data",
    "fact:wrong_subject": "data",
    "fact:other_company": "data",
    "fact:duplicate": "data",
    "fact:no_window_for_type": "guideline",
    ZoneReason.IDENTITY.value: "data",
    ZoneReason.NO_TRUSTED_FACT.value: "data",
    ZoneReason.NO_PATTERN_FILLED.value: "guideline",
    ZoneReason.NO_CTA_SUPPORT.value: "guideline",
    ZoneReason.UNKNOWN_CTA.value: "guideline",
    ZoneReason.MODEL_DECLINED.value: "guideline",
    ZoneReason.SELF_REVIEW_REJECTED.value: "guideline",
    ZoneReason.SELF_REVIEW_NO_VERDICT.value: "provider",
    ZoneReason.SELF_REVIEW_UNUSABLE.value: "provider",
    ZoneReason.NO_ANSWER.value: "provider",
    ZoneReason.MALFORMED_OUTPUT.value: "provider",
    ZoneReason.MODEL_REFUSED.value: "provider",
    ZoneReason.ENDPOINT_ERROR.value: "provider",
    ZoneReason.PROVIDER_UNAVAILABLE.value: "provider",
    ZoneReason.CTA_LINK_REFUSED.value: "template",
    ZoneReason.NOT_SPECIFIC.value: "guideline",
    "check:empty": "guard",
    "check:too_many_words": "guard",
    "check:too_many_chars": "guard",
    "check:html_in_text": "guard",
    "check:url_in_text": "guard",
    "check:markdown_in_text": "guard",
    "check:uncited_fact": "guard",
    "check:unsupported_number": "guard",
    "check:unsupported_date": "guard",
    "check:unsupported_name": "guard",
    "check:low_confidence": "guard",
    "check:check_error": "guard",
    "check:banned_phrase": "guideline",
    "check:banned_opener": "guideline",
    "check:multiple_questions": "guideline",
    "check:prohibited_claim": "guideline",
    "check:untrusted_fact": "data",
    "check:personal_without_fact": "data",
    "check:other_company": "data",
    "check:ungrounded": "guard",
    "check:short_lived": "guard",
    "check:cta_missing": "template",
    "check:cta_not_allowed": "template",
    # A draft off the voice the campaign's own example lines set: the patterns or the examples.
    **{f"check:{OFF_VOICE}:{dimension}": "guideline" for dimension in VOICE_DIMENSIONS},
    "qa:zone_missing": "template",
    "qa:zone_unknown": "template",
    "qa:link_missing": "template",
    "qa:link_off_allowlist": "template",
    "qa:zone_limits": "template",
    "qa:markup_unverified": "template",
    "qa:undecodable": "template",
    "qa:markup_or_link_in_text": "guard",
    "qa:personal_without_fact": "guard",
    "qa:fact_source_not_https": "guard",
    "qa:fact_from_future": "guard",
    "qa:expired": "data",
    "unknown_segment": "fallback",
    "fallback_overused": "fallback",
}
UNKNOWN_CHECK_LAYER: Layer = "guard"  # a check reason this table does not name
UNKNOWN_LAYER: Layer = "provider"  # a code this version does not know (`declined`, from older sets)

LAYER_HINTS: Mapping[Layer, str] = {
    "data": "fix the research or the CRM record, then rerun",
    "guard": "a deterministic check refused these drafts",
    "guideline": "change the campaign's patterns, voice, banned lines, claims, CTAs or windows",
    "fallback": "fix the segment or default copy",
    "template": "the published zones and the page or zone contract disagree",
    "provider": "the model endpoint failed; the next run writes these again",
}

# What to change, where one reason says more than its layer's hint (campaign.yaml fields).
REASON_HINTS: Mapping[str, str] = {
    ZoneReason.NO_PATTERN_FILLED.value: (
        "write `patterns` for these fact types and zones, or patterns that fit the zone's limits"
    ),
    ZoneReason.NO_CTA_SUPPORT.value: "check the `ctas` and the link zone's limits",
    ZoneReason.NOT_SPECIFIC.value: (
        "write `patterns` that state a specific of the fact (a slot such as {round}, {role_plural}, "
        "{location}), or keep these lines as segment copy"
    ),
    "fact:no_window_for_type": (
        "give the fact type a window in `signal_windows_days` and `patterns` that use it, or declare it "
        "under `fact_types`"
    ),
    "fact:wrong_subject": "name the account as research names it: add the name to the account's `aliases`, "
    "or source the fact from the account's own domain",
    "fact:other_company": "the research is about another company: correct the research, or list that name "
    "in the account's `aliases` if it is the same company",
    "fact:stale": "refresh the research (a longer `signal_windows_days` is a guideline change)",
    "fact:low_confidence": "confirm the research (`min_confidence` is a guideline change)",
    "check:banned_phrase": "rewrite the drafts' source (patterns, voice) or review `banned_phrases`",
    "check:banned_opener": "rewrite the drafts' source (patterns, voice) or review `banned_openers`",
    "unknown_segment": "give the segment copy under `segments`",
    **{
        f"check:{OFF_VOICE}:{dimension}": (
            "rewrite the drafts' source (patterns) or, if they sound right, add such lines to "
            "`voice_examples` and run `welcomemat voice build`"
        )
        for dimension in VOICE_DIMENSIONS
    },
}


@dataclass(frozen=True)
class PatternShare:
    """The pattern with the largest share of its drafts failing a check group."""

    label: str  # `<fact type>/<zone id>#<n>`, n counted from 1 in campaign.yaml
    text: str
    failed: int
    drafts: int


@dataclass(frozen=True)
class Attribution:
    layer: Layer
    rule: Literal["default", "pattern_concentration", "guard_suspect", "qa_on_fallback"]
    because: str


def default_layer(reason: str) -> Layer:
    """The table's layer for a grouped reason (`identity:freemail_domain` is `identity`'s)."""
    for name in (reason, reason.partition(":")[0]):
        if name in DEFAULT_LAYERS:
            return DEFAULT_LAYERS[name]
    return UNKNOWN_CHECK_LAYER if reason.startswith("check:") else UNKNOWN_LAYER


def shift_conditions(reason: str) -> str:
    """When a group of this reason leaves its default layer, as the docs table words it (docs/precompute.md).

    "one pattern": over `PATTERN_FAILURE_SHARE` of one pattern's drafts (at least
    `MIN_PATTERN_DRAFTS`) fail it; "common": over `GUARD_SUSPECT_RATE` of its fact type's
    drafts fail it; "on fallback copy": the zone is served from segment or default copy.
    """
    kind, _, detail = reason.partition(":")
    if kind == "qa" and detail in QA_ON_FALLBACK_CODES:
        return "on fallback copy → fallback"
    if kind != "check":
        return "—"
    layer = DEFAULT_LAYERS[reason]
    if layer == "guard":
        return "one pattern → guideline; common → flagged a likely false positive"
    return "one pattern → guideline, naming it" if layer == "guideline" else "one pattern → guideline"


def _meaning(reason: str, fact_type: str) -> str:
    kind, _, detail = reason.partition(":")
    if kind == "fact":
        return f"the trust policy rejected these {fact_type} facts ({detail})"
    if kind == "check":
        return f"the deterministic check refused these drafts ({detail})"
    if kind == "qa":
        return f"QA's re-check of what is published found {detail.removesuffix(FALLBACK_SUFFIX)}"
    if reason == "unknown_segment":
        return "the account's segment has no copy, so the campaign default was served"
    if reason == "fallback_overused":
        return "most of the segment's accounts see no personal zone: its copy carries these pages"
    doc = parse_reason(reason).doc
    return doc if doc is not None else f"{reason}, a code this version does not know"


def attribute(
    reason: str, fact_type: str, *, failures: int, rate: float, worst: PatternShare | None
) -> Attribution:
    """The layer of one group, by the first rule that applies (the module docstring's order)."""
    meaning = _meaning(reason, fact_type)
    if reason.startswith("qa:") and reason.endswith(FALLBACK_SUFFIX):
        return Attribution("fallback", "qa_on_fallback", f"{meaning} on zones served from fallback copy")
    if reason.startswith("check:") and worst is not None:
        return Attribution(
            "guideline",
            "pattern_concentration",
            f"{meaning}; pattern {worst.label} (“{worst.text}”) fails in {worst.failed} of its "
            f"{worst.drafts} drafts (over {PATTERN_FAILURE_SHARE:.0%}): fix the pattern",
        )
    layer = default_layer(reason)
    if reason.startswith("check:") and layer == "guard" and rate > GUARD_SUSPECT_RATE and failures >= 2:
        return Attribution(
            "guard",
            "guard_suspect",
            f"{meaning} in {rate:.0%} of {fact_type} drafts, not one pattern's: "
            "read a few, a false positive is likely",
        )
    hint = REASON_HINTS.get(reason) or LAYER_HINTS[layer]
    return Attribution(layer, "default", f"{meaning}; {hint}")
