"""Zone reason codes: why a published zone shows the rung it shows, each with one line of docs.

Every zone of a zone set records a reason (`ZoneContent.reason`), written as

    <code>[:<detail>][;unknown_segment]

`detail` narrows the code: the fact types a personal zone cites (`personal:funding+hiring`,
and a draft published as segment copy because it uses none of their specifics:
`not_specific:funding`, `precompute.specific_use`),
the identity reason (`identity:freemail`), the failed check's reason (`check:low_confidence`).
`;unknown_segment` marks a fallback zone that took the campaign default because the
account's segment has no copy. The codes live here, in the core, because the renderer's
admin pages and the precompute job's QA and `explain` all read the same stored reasons.

A zone that failed a check records `check:<the check's reason code>`. The claim classes
(`ClaimReason`, `CLAIM_REASON_DOCS`) are the check reason codes for lines that claim what
no cited fact says (a quote, a recent event, an award, a meeting, a plan), that tell the
reader they were watched, that flatter, or that open like a cold e-mail; they live here
beside the zone reasons so `explain`, QA and the docs' tables read one list.

Zone sets and explain records written by older versions may hold a code this module no
longer knows (`declined`, before declines were told apart): `parse_reason` reads it as an
unknown code, shown as it is, never an error.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "CLAIM_REASON_DOCS",
    "OFF_VOICE",
    "OFF_VOICE_DOCS",
    "PROVIDER_DECLINES",
    "REASON_DOCS",
    "UNKNOWN_SEGMENT",
    "ClaimReason",
    "ParsedReason",
    "ZoneReason",
    "off_voice_doc",
    "parse_reason",
    "zone_reason",
]

UNKNOWN_SEGMENT = "unknown_segment"  # the suffix after `;`


class ZoneReason(enum.StrEnum):
    """Why a zone is on its rung (see `REASON_DOCS` for each one's meaning)."""

    PERSONAL = "personal"
    APPROVED = "approved"
    NOT_SPECIFIC = "not_specific"
    IDENTITY = "identity"
    NO_TRUSTED_FACT = "no_trusted_fact"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    NO_PATTERN_FILLED = "no_pattern_filled"
    NO_CTA_SUPPORT = "no_cta_support"
    ENDPOINT_ERROR = "endpoint_error"
    MALFORMED_OUTPUT = "malformed_output"
    MODEL_REFUSED = "model_refused"
    NO_ANSWER = "no_answer"
    MODEL_DECLINED = "model_declined"
    UNKNOWN_CTA = "unknown_cta"
    SELF_REVIEW_REJECTED = "self_review_rejected"
    SELF_REVIEW_NO_VERDICT = "self_review_no_verdict"
    SELF_REVIEW_UNUSABLE = "self_review_unusable"
    CHECK = "check"
    CTA_LINK_REFUSED = "cta_link_refused"

    @property
    def doc(self) -> str:
        return REASON_DOCS[self]


# One line each: docs/precompute.md's reason table repeats these word for word (a test compares them).
REASON_DOCS: Mapping[ZoneReason, str] = MappingProxyType(
    {
        ZoneReason.PERSONAL: (
            "personal copy that passed every check and uses a specific of a fact it cites "
            "(a field value, number, date or name other than the account's); the detail lists "
            "the cited fact types"
        ),
        ZoneReason.APPROVED: (
            "a held draft (judged not ok by the self-review, or below the confidence threshold) "
            "that a person approved from the review queue; it passed every deterministic check; "
            "the detail lists the cited fact types"
        ),
        ZoneReason.NOT_SPECIFIC: (
            "a draft that passed every check but uses no specific of a fact it cites (a generic line, "
            "a CTA label, a library proof point): published as segment copy, its cited facts kept; "
            "the detail lists the cited fact types (library: it cites none)"
        ),
        ZoneReason.IDENTITY: (
            "the account's identity allows no account-specific claims; the detail is the identity reason"
        ),
        ZoneReason.NO_TRUSTED_FACT: (
            "no fact of the account passed the trust policy, so no provider was asked"
        ),
        ZoneReason.PROVIDER_UNAVAILABLE: (
            "the provider could not write now (a fault: bad key, unknown model, timeout, refused connection, "
            "circuit open, deadline passed, retries used up); shown only for an account with no earlier "
            "version, generated again on the next run"
        ),
        ZoneReason.NO_PATTERN_FILLED: (
            "offline composer: no pattern for the zone could be filled from trusted facts within its limits"
        ),
        ZoneReason.NO_CTA_SUPPORT: (
            "offline composer: no trusted fact supports the link zone's CTA, "
            "or the CTA's label does not fit the zone"
        ),
        ZoneReason.ENDPOINT_ERROR: (
            "the model endpoint refused this request with an HTTP error not worth a retry (a 400 about the "
            "request; 401, 403, 404 and an unknown model are faults: `provider_unavailable`)"
        ),
        ZoneReason.MALFORMED_OUTPUT: (
            "the model's answer did not match the schema (unreadable, cut off, empty), even after one repair"
        ),
        ZoneReason.MODEL_REFUSED: (
            "the model refused the request, or a content filter stopped it, even after one repair"
        ),
        ZoneReason.NO_ANSWER: "the provider's answer had no entry for the zone",
        ZoneReason.MODEL_DECLINED: "the model answered the zone with no text (a link zone: with no cta_id)",
        ZoneReason.UNKNOWN_CTA: (
            "link zone: the model chose a cta_id that is not one of the campaign's CTAs"
        ),
        ZoneReason.SELF_REVIEW_REJECTED: (
            "the model's self-review judged the draft not ok; the draft is held with the reviewer's "
            "note for a person to approve"
        ),
        ZoneReason.SELF_REVIEW_NO_VERDICT: (
            "the self-review gave no verdict for the zone, so its draft was dropped"
        ),
        ZoneReason.SELF_REVIEW_UNUSABLE: (
            "the self-review's answer could not be used (malformed or refused), "
            "so every draft it was to judge was dropped"
        ),
        ZoneReason.CHECK: (
            "the draft failed a deterministic check; the detail is the check's reason code "
            "(low_confidence or ungrounded alone: the draft is held for a person to approve)"
        ),
        ZoneReason.CTA_LINK_REFUSED: (
            "the draft's CTA link failed the URL gate (not https, or its host not on the allowlist)"
        ),
    }
)


class ClaimReason(enum.StrEnum):
    """A claim class the checks refuse: the reason code of its failure (see `CLAIM_REASON_DOCS`)."""

    INVENTED_QUOTE = "invented_quote"
    UNSUPPORTED_RECENCY = "unsupported_recency"
    UNSUPPORTED_ACHIEVEMENT = "unsupported_achievement"
    UNSUPPORTED_RELATIONSHIP = "unsupported_relationship"
    UNSUPPORTED_INTENT = "unsupported_intent"
    TRACKING_DISCLOSURE = "tracking_disclosure"
    FLATTERY = "flattery"
    BANNED_OPENER = "banned_opener"

    @property
    def doc(self) -> str:
        return CLAIM_REASON_DOCS[self]


# One line each: docs/precompute.md's claim class table repeats these word for word (a test compares them).
CLAIM_REASON_DOCS: Mapping[ClaimReason, str] = MappingProxyType(
    {
        ClaimReason.INVENTED_QUOTE: (
            "quotes or paraphrases the reader (you said, you wrote, your post about, loved your ...) "
            "without citing a `quote` fact that records it, and names the medium (post, talk, podcast ...) "
            "only as that fact does"
        ),
        ClaimReason.UNSUPPORTED_RECENCY: (
            "a time-relative word (today, this week, just, recently, your new role ...) that no cited "
            "fact's date makes true on the run's day and on every day the zone may be served"
        ),
        ClaimReason.UNSUPPORTED_ACHIEVEMENT: (
            "an award, growth figure, record or ranking (award-winning, doubled revenue, fastest-growing, "
            "#1, market leader, grew 3x) that no cited fact's statement states"
        ),
        ClaimReason.UNSUPPORTED_RELATIONSHIP: (
            "a prior meeting or relationship (we met, our call, your demo request, the webinar you attended, "
            "working together again, as partners) that no cited `crm_activity` fact states"
        ),
        ClaimReason.UNSUPPORTED_INTENT: (
            "a plan or intent of the account (plans to, is looking to, aims to, will double, is about to) "
            "that no cited fact's statement states"
        ),
        ClaimReason.TRACKING_DISCLOSURE: (
            "tells the reader they were watched (saw you on our pricing page, noticed you visited, "
            "you've been reading): never allowed, whatever the facts"
        ),
        ClaimReason.FLATTERY: (
            "flattery or hype (impressive, amazing work, world-class, rockstar, game-changing, "
            "crushing it ...): never allowed"
        ),
        ClaimReason.BANNED_OPENER: (
            "the text or one of its sentences opens with a banned opener: one shipped with Welcomemat "
            "(Hope this email finds you well, Quick question ...) or one `tenant.yaml` or the campaign adds"
        ),
    }
)

# A personal draft past the campaign's voice profile fails `check:off_voice:<dimension>`
# (`welcomemat.campaign.voice`); each dimension's line, as docs/precompute.md's off_voice table repeats it.
OFF_VOICE = "off_voice"
OFF_VOICE_DOCS: Mapping[str, str] = MappingProxyType(
    {
        "sentence_length": (
            "a sentence longer than the longest example's, plus half of it (at least 6 words more)"
        ),
        "person": "writes as I, we or you where no example line does (a rep's I in a we/you voice)",
        "opener": (
            "opens a sentence with a kind of word no example opens with (I, we, you, a greeting, a hedge)"
        ),
        "hedging": (
            "more hedge words (maybe, might, perhaps, probably, I think ...) than any example line, plus one"
        ),
        "exclamation": "more exclamation marks than any example line",
        "question": "more question marks than any example line",
        "dash": "more dashes than any example line",
        "colon": "more colons than any example line",
        "comma": "more commas in one sentence than any example sentence, plus one",
        "reading_level": (
            "a line of 12 words or more whose Flesch-Kincaid grade is over 4 past the hardest example line's"
        ),
    }
)


def off_voice_doc(reason: str) -> str | None:
    """What an `off_voice:<dimension>` check reason means (None for any other reason)."""
    code, _, dimension = reason.partition(":")
    return OFF_VOICE_DOCS.get(dimension) if code == OFF_VOICE else None


# The codes a provider gives for a zone it wrote no draft for (`providers.base.Decline`);
# the others are decided around it (before the call, by the checks, by the URL gate).
PROVIDER_DECLINES: frozenset[ZoneReason] = frozenset(
    {
        ZoneReason.NO_PATTERN_FILLED,
        ZoneReason.NO_CTA_SUPPORT,
        ZoneReason.ENDPOINT_ERROR,
        ZoneReason.MALFORMED_OUTPUT,
        ZoneReason.MODEL_REFUSED,
        ZoneReason.NO_ANSWER,
        ZoneReason.MODEL_DECLINED,
        ZoneReason.UNKNOWN_CTA,
        ZoneReason.SELF_REVIEW_REJECTED,
        ZoneReason.SELF_REVIEW_NO_VERDICT,
        ZoneReason.SELF_REVIEW_UNUSABLE,
    }
)


def zone_reason(code: ZoneReason, detail: str | None = None) -> str:
    """The stored form: `code`, or `code:detail`."""
    return code.value if detail is None else f"{code.value}:{detail}"


@dataclass(frozen=True, slots=True)
class ParsedReason:
    """A stored reason taken apart. `code` is None for a code this version does not know."""

    raw: str
    code: ZoneReason | None
    name: str  # the code as written, known or not (`declined` from an older version)
    detail: str | None
    unknown_segment: bool

    @property
    def doc(self) -> str | None:
        return self.code.doc if self.code is not None else None


def parse_reason(raw: str) -> ParsedReason:
    """Any stored reason, read without failing (an unknown code is kept by name)."""
    head, _, suffix = raw.partition(";")
    name, colon, detail = head.partition(":")
    try:
        code: ZoneReason | None = ZoneReason(name)
    except ValueError:
        code = None
    return ParsedReason(
        raw=raw,
        code=code,
        name=name,
        detail=detail if colon else None,
        unknown_segment=suffix == UNKNOWN_SEGMENT,
    )
