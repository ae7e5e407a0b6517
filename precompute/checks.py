"""Deterministic checks on every zone draft, whoever wrote it (offline composer or a model).

Why: the model only writes. Whether what it wrote may be published is decided here, by
pure functions that need no network and give the same answer every time, and a zone
that fails any of them takes the fallback (DESIGN.md, invariant 4). A specific but false
line is worse than a general one, so every heuristic below errs toward failing.

One function per check name a zone contract may list (`welcomemat.zones.contract.KNOWN_CHECKS`),
each `(CheckInput) -> CheckFailure | None`; `run_checks` runs the hard ones no file can
switch off (`ALWAYS_RUN` = `HARD_CHECKS`: every check but one_question and confidence, and
cta_allowed in link zones) plus what the tenant, campaign and zone add
(`precompute.check_precedence`). Reason codes:

    empty                  empty
    length                 too_many_words, too_many_chars
    banned_phrases         banned_phrase, banned_opener
    one_question           multiple_questions
    no_markup_or_links     url_in_text, html_in_text (tags, entities, attributes, script,
                           backslashes), markdown_in_text
    unsupported_specifics  unsupported_number, unsupported_date, unsupported_name,
                           uncited_fact (the specific is in a trusted fact the draft did not cite)
    cited_facts_trusted    untrusted_fact, personal_without_fact
    other_company          other_company
    cta_allowed            cta_missing, cta_not_allowed
    confidence             low_confidence
    prohibited_claims      prohibited_claim (catalog: `precompute.claims.classes`)
    quotes                 invented_quote             the claim classes (`CLAIM_CHECKS`):
    recency                unsupported_recency        what each means is
    achievements           unsupported_achievement    `welcomemat.reasons.CLAIM_REASON_DOCS`;
    relationships          unsupported_relationship   how each is found, `precompute.claims.catalog`;
    intent                 unsupported_intent         what backs each, `precompute.claims.support`
    tracking               tracking_disclosure
    flattery               flattery
    lifespan               short_lived: a personal draft whose time words end it before its surfaces
                           need (14 days for a page, in-home date + 30 for mail; `date_phrases`)
    grounding              ungrounded: a personal draft with words no cited fact, account field or
                           approved copy supports (`precompute.claims.grounding`); doubt, held for a person
    voice                  off_voice:<dimension>: a personal draft past the campaign's voice
                           profile (`welcomemat.campaign.voice`) on sentence_length, person, opener,
                           hedging, exclamation, question, dash, colon, comma or reading_level
    (any check)            check_error: the check itself raised; fail closed

Unsupported specifics: what counts as a number, date or name in a draft, and which facts,
account details or vocabulary terms support one, is `precompute.specifics`. It also builds
the campaign's `ApprovedVocabulary`, re-exported here with `build_vocabulary` because
every `CheckInput` carries one.

Another company: any of the run's other accounts named as whole words (unless the name is
made only of the campaign's own words, e.g. an account called "Ramp"), or capitalised
words before a legal form ("Globex GmbH") that are not the account or a vocabulary term
(`precompute.companies`; `company_key` is re-exported here).

Cost: the checks run on every draft of every account, so regexes are compiled at import,
the vocabulary is built once, and each text, fact and account is analysed once and cached;
most of the rest is finding names and numbers (`precompute.specifics`). What a check costs
per draft is in bench/README.md ("Figures behind choices in the code").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from precompute.check_precedence import effective_checks
from precompute.claims.classes import KNOWN_CLAIM_CLASSES, could_claim, find_claim
from precompute.claims.grounding import grounding_note, grounding_sources, ungrounded_words
from precompute.claims.support import account_keys, first_unsupported_claim, makes_claim
from precompute.claims.text import opening_positions
from precompute.companies import company_key, find_other_company
from precompute.context import EffectivePolicy, GovernedContext, TrustedFact
from precompute.date_phrases import needed_until
from precompute.providers.base import ZoneDraft
from precompute.specifics import (
    ApprovedVocabulary,
    analyse,
    build_vocabulary,
    find_specifics,
    first_unsupported,
    fold,
    spaced_words,
    uncited_source,
)
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.openers import DEFAULT_BANNED_OPENERS
from welcomemat.campaign.voice import voice_failures
from welcomemat.reasons import OFF_VOICE, ClaimReason
from welcomemat.security.markup_scan import find_markup
from welcomemat.surfaces import Surface
from welcomemat.zones.contract import CHECK_ORDER, HARD_CHECKS, KNOWN_CHECKS, ZoneContract
from welcomemat.zones.held import one_line

__all__ = [
    "ALWAYS_RUN",
    "CHECKS",
    "CLAIM_CHECKS",
    "ApprovedVocabulary",
    "CheckFailure",
    "CheckInput",
    "build_vocabulary",
    "check_banned_phrases",
    "check_cited_facts_trusted",
    "check_confidence",
    "check_cta_allowed",
    "check_empty",
    "check_grounding",
    "check_length",
    "check_lifespan",
    "check_no_markup_or_links",
    "check_one_question",
    "check_other_company",
    "check_prohibited_claims",
    "check_unsupported_specifics",
    "check_voice",
    "checks_for",
    "company_key",
    "run_checks",
]

_DETAIL_CHARS = 80  # a failure's detail quotes at most this much of the draft (it is shown in explain)


# -- public types --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckFailure:
    """One failed check: the check's name, a reason code and the offending token or phrase."""

    check: str
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class CheckInput:
    """Everything a check may look at for one zone draft."""

    draft: ZoneDraft
    contract: ZoneContract
    context: GovernedContext
    campaign: Campaign
    policy: EffectivePolicy
    vocabulary: ApprovedVocabulary
    # Names of the run's accounts; the account's own name may be among them (ignored), so
    # callers can pass one set for the whole run. Normalised here (`company_key`), once per set.
    other_companies: frozenset[str] = frozenset()
    # True for the personal rung; segment and default copy is checked with False.
    personal: bool = True


# -- draft text ----------------------------------------------------------------------------

# Invisible format characters (Unicode category Cf) a writer might put inside words.
_FORMAT_CHAR_RE = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in range(0x10000) if unicodedata.category(chr(c)) == "Cf") + "]"
)

# Exactly `<tag>` or `</tag>`: the only shape the cleaner keeps (welcomemat.security.markup).
_INLINE_TAG_RE = re.compile(r"</?([A-Za-z]+)>")


def _visible(d: CheckInput) -> str:
    """The draft text with the contract's allowed inline tags removed (what a reader sees)."""
    text = d.draft.text
    allowed = d.contract.markup
    if not allowed or "<" not in text:
        return text
    return _INLINE_TAG_RE.sub(lambda m: " " if m.group(1).lower() in allowed else m.group(0), text)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


# -- the checks ----------------------------------------------------------------------------


def check_empty(d: CheckInput) -> CheckFailure | None:
    """No letter or digit at all (whitespace, punctuation, invisible characters only)."""
    if not analyse(d.draft.text).words:
        return CheckFailure("empty", "empty", "no words")
    return None


def check_length(d: CheckInput) -> CheckFailure | None:
    """Over the zone's word or character limit (counted as `ZoneContract.fits` counts them)."""
    text = d.draft.text
    words = len(text.split())
    if words > d.contract.max_words:
        return CheckFailure("length", "too_many_words", f"{words} words > {d.contract.max_words}")
    if len(text) > d.contract.max_chars:
        return CheckFailure("length", "too_many_chars", f"{len(text)} characters > {d.contract.max_chars}")
    return None


@lru_cache(maxsize=64)
def _phrase_keys(*lists: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(spaced key, as written) for each listed phrase, duplicates and empties dropped."""
    keys: dict[str, str] = {}
    for phrase in (p for lst in lists for p in lst):
        key = spaced_words(fold(phrase))
        if key.strip():
            keys.setdefault(key, phrase)
    return tuple(keys.items())


def check_banned_phrases(d: CheckInput) -> CheckFailure | None:
    """A banned opener opening the text or a sentence (a greeting before it aside), or a banned
    phrase anywhere; case, spacing and punctuation aside. The openers shipped with Welcomemat
    are banned whatever the policy says (`welcomemat.campaign.openers`)."""
    text = _visible(d)
    forms = [text]
    if not text.isascii() and _FORMAT_CHAR_RE.search(text):
        # An invisible character may hide a word break ("game\u00adchanger") or sit inside a
        # word ("syn\u200bergy"): try it as a space too, not only removed.
        forms.append(_FORMAT_CHAR_RE.sub(" ", text))
    openers = _phrase_keys(DEFAULT_BANNED_OPENERS, d.policy.banned_openers, d.campaign.banned_openers)
    phrases = _phrase_keys(d.policy.banned_phrases, d.campaign.banned_phrases)
    for form in forms:
        for position in opening_positions(form):
            for key, phrase in openers:
                if position.startswith(key):
                    return CheckFailure("banned_phrases", ClaimReason.BANNED_OPENER.value, phrase)
        spaced = analyse(form).spaced if form is text else spaced_words(fold(form))
        for key, phrase in phrases:
            if key in spaced:
                return CheckFailure("banned_phrases", "banned_phrase", phrase)
    return None


def check_one_question(d: CheckInput) -> CheckFailure | None:
    """More than one question mark (fullwidth and small forms fold to "?")."""
    count = analyse(d.draft.text).folded.count("?")
    if count > 1:
        return CheckFailure("one_question", "multiple_questions", f"{count} questions")
    return None


def _markup_failure(reason: str, text: str, at: int) -> CheckFailure:
    start = max(0, at - 8)  # a little context before: "evil.com" is found at "l.co"
    return CheckFailure("no_markup_or_links", reason, _clip(text[start : at + 24]))


def _first_markup(text: str) -> CheckFailure | None:
    found = find_markup(text)
    return None if found is None else _markup_failure(found[0], text, found[1])


def check_no_markup_or_links(d: CheckInput) -> CheckFailure | None:
    """Any URL, HTML or markdown; in a zone that allows inline tags, only exactly those tags pass."""
    text = _visible(d)
    found = _first_markup(text)
    if found is None and not text.isascii():
        # Again in compatibility form: fullwidth "ｈｔｔｐｓ://" and "＜" count too.
        found = _first_markup(unicodedata.normalize("NFKC", text))
    return found


def check_unsupported_specifics(d: CheckInput) -> CheckFailure | None:
    """A number, date or proper name not supported by cited facts, the account or the vocabulary."""
    specifics = find_specifics(_visible(d), d.personal)
    if not specifics:
        return None
    cited = _cited(d)
    spec = first_unsupported(
        specifics,
        context=d.context,
        cited=cited,
        valid_until=d.draft.valid_until,
        vocabulary=d.vocabulary,
        personal=d.personal,
    )
    if spec is None:
        return None
    # Said better: if a trusted fact the draft did not cite supports it, the draft forgot a citation.
    source = uncited_source(spec, d.context.facts, cited, d.personal)
    if source is not None:
        return CheckFailure("unsupported_specifics", "uncited_fact", _clip(f"{spec.text} ({source})"))
    return CheckFailure("unsupported_specifics", f"unsupported_{spec.kind}", _clip(spec.text))


def _cited(d: CheckInput) -> tuple[TrustedFact, ...]:
    """The draft's cited facts that are trusted for this account (unknown ids are another check's)."""
    cited = d.draft.fact_ids
    return tuple(f for f in d.context.facts if f.id in cited) if cited else ()


def check_cited_facts_trusted(d: CheckInput) -> CheckFailure | None:
    """Every cited fact is trusted and of a type this zone may use; a personal zone cites one if it must."""
    usable = False
    trusted = {f.id: f for f in d.context.facts} if d.draft.fact_ids else {}
    for fact_id in d.draft.fact_ids:
        fact = trusted.get(fact_id)
        if fact is None:
            decision = next((x for x in d.context.decisions if x.fact_id == fact_id), None)
            why = f"not trusted ({decision.reason})" if decision is not None else "not a fact of this account"
            return CheckFailure("cited_facts_trusted", "untrusted_fact", _clip(f"{fact_id}: {why}"))
        if fact.type not in d.contract.fact_types:
            return CheckFailure(
                "cited_facts_trusted",
                "untrusted_fact",
                _clip(f"{fact_id}: type {fact.type} not allowed in this zone"),
            )
        usable = True
    if d.personal and d.contract.requires_fact and not usable:
        return CheckFailure("cited_facts_trusted", "personal_without_fact", "no cited fact")
    return None


def check_other_company(d: CheckInput) -> CheckFailure | None:
    """Names another account of the run, or any company with a legal form that is not the account."""
    own = (d.context.account.name, d.context.short_name, *d.context.account.aliases)
    found = find_other_company(_visible(d), own, d.other_companies, d.vocabulary)
    return None if found is None else CheckFailure("other_company", "other_company", _clip(found))


def check_cta_allowed(d: CheckInput) -> CheckFailure | None:
    """A link zone names one of the campaign's CTAs (never a URL); other zones' cta_id is ignored."""
    if not d.contract.link:
        return None
    cta_id = d.draft.cta_id
    if not cta_id:
        return CheckFailure("cta_allowed", "cta_missing", "no cta_id")
    if d.campaign.cta(cta_id) is None:
        return CheckFailure("cta_allowed", "cta_not_allowed", _clip(cta_id))
    return None


def check_confidence(d: CheckInput) -> CheckFailure | None:
    """The writer's own confidence is below the policy's minimum."""
    if not d.draft.confidence >= d.policy.min_model_confidence:  # written so that NaN fails
        return CheckFailure(
            "confidence", "low_confidence", f"{d.draft.confidence:g} < {d.policy.min_model_confidence:g}"
        )
    return None


@lru_cache(maxsize=64)
def _claim_classes(*lists: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c for lst in lists for c in lst))


def check_prohibited_claims(d: CheckInput) -> CheckFailure | None:
    """A claim of a class the policy or campaign prohibits; an unknown class fails closed."""
    folded = analyse(_visible(d)).folded
    possible = could_claim(folded)  # one search rules out every class for most drafts
    for claim_class in _claim_classes(d.policy.prohibited_claims, d.campaign.prohibited_claims):
        if claim_class not in KNOWN_CLAIM_CLASSES:
            return CheckFailure(
                "prohibited_claims", "prohibited_claim", f"unknown claim class {claim_class!r}"
            )
        phrase = find_claim(folded, claim_class) if possible else None
        if phrase is not None:
            return CheckFailure("prohibited_claims", "prohibited_claim", _clip(f"{claim_class}: {phrase}"))
    return None


def check_lifespan(d: CheckInput) -> CheckFailure | None:
    """A personal draft whose own time words end it before its surfaces need it to end
    (`precompute.date_phrases.needed_until`): "on Thursday" written on Sunday would end a page
    in four days. A fact that itself expires sooner is the zone set's end anyway."""
    if not d.personal or d.draft.valid_until is None:
        return None
    cited = _cited(d)
    printed = any(Surface.PRINT in f.surfaces for f in cited)
    in_home = d.campaign.mail_in_home_date if printed else None
    needed = needed_until(d.context.as_of, mail_in_home=in_home, expires=(f.expires_at for f in cited))
    if d.draft.valid_until >= needed:
        return None
    return CheckFailure(
        "lifespan",
        "short_lived",
        f"its time words end it on {d.draft.valid_until}, before {needed}: name the month, or say recently",
    )


def check_grounding(d: CheckInput) -> CheckFailure | None:
    """A personal draft with words no cited fact, account field or approved copy supports
    (`precompute.claims.grounding`): doubt, not a broken rule, so the draft is held for a person."""
    if not d.personal or d.contract.link:
        return None
    found = ungrounded_words(_visible(d), d.context, _cited(d), grounding_sources(d.campaign))
    if not found:
        return None
    return CheckFailure("grounding", "ungrounded", one_line(grounding_note(found)))


def check_voice(d: CheckInput) -> CheckFailure | None:
    """A written draft past the campaign's voice profile on some dimension (`off_voice:<dimension>`).

    Only what a writer wrote for the account is held to it: segment and default copy are
    the campaign's own approved lines, and a link zone shows the CTA's approved label.
    """
    profile = d.campaign.voice_profile
    if profile is None or not d.personal or d.contract.link:
        return None
    failures = voice_failures(_visible(d), profile)
    if not failures:
        return None
    return CheckFailure("voice", f"{OFF_VOICE}:{failures[0].dimension}", _clip(failures[0].detail))


# The claim classes (`precompute.claims.catalog`): check name -> the reason code it fails with.
CLAIM_CHECKS: Mapping[str, ClaimReason] = MappingProxyType(
    {
        "quotes": ClaimReason.INVENTED_QUOTE,
        "recency": ClaimReason.UNSUPPORTED_RECENCY,
        "achievements": ClaimReason.UNSUPPORTED_ACHIEVEMENT,
        "relationships": ClaimReason.UNSUPPORTED_RELATIONSHIP,
        "intent": ClaimReason.UNSUPPORTED_INTENT,
        "tracking": ClaimReason.TRACKING_DISCLOSURE,
        "flattery": ClaimReason.FLATTERY,
    }
)


def _claim_check(name: str, reason: ClaimReason) -> Callable[[CheckInput], CheckFailure | None]:
    def check(d: CheckInput) -> CheckFailure | None:
        text, keys = _visible(d), account_keys(d.context)
        if not makes_claim(reason, text, keys):  # most drafts: no claim of the class at all
            return None
        found = first_unsupported_claim(
            reason, text, keys=keys, cited=_cited(d), as_of=d.context.as_of, valid_until=d.draft.valid_until
        )
        return None if found is None else CheckFailure(name, reason.value, _clip(found))

    check.__name__ = check.__qualname__ = f"check_{name}"
    check.__doc__ = f"A claim of class {reason.value} that no cited fact backs: {reason.doc}."
    return check


# -- running them --------------------------------------------------------------------------

# In the order failures are reported.
CHECKS: Mapping[str, Callable[[CheckInput], CheckFailure | None]] = MappingProxyType(
    {
        "empty": check_empty,
        "length": check_length,
        "banned_phrases": check_banned_phrases,
        "one_question": check_one_question,
        "no_markup_or_links": check_no_markup_or_links,
        "unsupported_specifics": check_unsupported_specifics,
        "cited_facts_trusted": check_cited_facts_trusted,
        "other_company": check_other_company,
        "cta_allowed": check_cta_allowed,
        "confidence": check_confidence,
        "prohibited_claims": check_prohibited_claims,
        **{name: _claim_check(name, reason) for name, reason in CLAIM_CHECKS.items()},
        "lifespan": check_lifespan,
        "voice": check_voice,
        "grounding": check_grounding,
    }
)
if set(CHECKS) != KNOWN_CHECKS:  # a contract could name a check nothing implements
    raise RuntimeError(f"checks out of step with KNOWN_CHECKS: {sorted(set(CHECKS) ^ KNOWN_CHECKS)}")

if tuple(CHECKS) != CHECK_ORDER:  # reported in the order the precedence function lists them
    raise RuntimeError("CHECKS out of CHECK_ORDER's order")

# Hard rules: they run whatever a zone contract, campaign or tenant lists
# (`welcomemat.zones.contract.HARD_CHECKS`; `cta_allowed` too in link zones).
ALWAYS_RUN: frozenset[str] = HARD_CHECKS


def checks_for(contract: ZoneContract, policy: EffectivePolicy | None = None) -> tuple[str, ...]:
    """The checks `run_checks` runs for a zone: the hard ones, then the tenant's, campaign's and
    zone's additions (`precompute.check_precedence.effective_checks`), in report order."""
    added = policy.checks if policy is not None else ()
    return effective_checks(contract, campaign=added)


def run_checks(inp: CheckInput) -> tuple[CheckFailure, ...]:
    """Every failure of the zone's checks, in `CHECKS` order; empty means publishable. Never raises."""
    failures: list[CheckFailure] = []
    for name in checks_for(inp.contract, inp.policy):
        try:
            failure = CHECKS[name](inp)
        except Exception as exc:  # a bug in a check must not publish an unchecked zone
            failure = CheckFailure(name, "check_error", type(exc).__name__)
        if failure is not None:
            failures.append(failure)
    return tuple(failures)
