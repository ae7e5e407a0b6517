"""The trust policy: which of an account's facts may be built on, each with a reason code.

A personal line must cite a fact that is sourced, dated, recent, allowed on the web and
about this account (DESIGN.md, invariant 3). Research gets each of those wrong in its own
way, so every fact goes through the same checks in a fixed order and the first failure is
its reason; a fact that passes them all is trusted. Hide when uncertain: a missing or
unreadable value fails its check, it is never guessed.

The checks, in order (reason code on failure):

1. identity allows account-specific claims (IDENTITY_UNCERTAIN, for every fact);
2. ``source_url`` present (NO_SOURCE) and, parsed as a browser would (WHATWG, via
   ``welcomemat.security.urlgate``), ``https`` with a real domain: no userinfo, no IP literal, no
   port, a registrable domain, and no backslash or control character that makes the
   written form point somewhere other than the browser goes (BAD_SOURCE_URL). Any host
   is acceptable for a *source*; the link allowlist is for links we render. The gate's
   normalised href is kept;
3. ``published_at`` present (NO_DATE), an ISO date ``YYYY-MM-DD`` or ISO datetime (its date
   as written) and nothing else (BAD_DATE), not after ``as_of`` (FUTURE_DATE);
4. the policy has a window for the fact's type (NO_WINDOW_FOR_TYPE) and ``as_of`` is before
   ``expires_at = published_at + window`` (STALE; expiry is exclusive);
5. confidence ``low|medium|high`` at or above the policy minimum; missing or unknown is
   below it (LOW_CONFIDENCE);
6. ``surfaces`` includes ``web`` (NOT_FOR_WEB): page zones are written only from facts
   allowed on the web. The other known surfaces it lists (``email``, ``seller``,
   ``print``; `welcomemat.surfaces`) are kept on the trusted fact and recorded with every
   zone that cites it, so each other channel shows that zone only where its facts allow;
7. the statement is plain text (the one scanner, `welcomemat.security.markup_scan`): no tag, entity,
   script call, link or markdown (MARKUP_IN_STATEMENT) and no template syntax (`{{`, `{%`,
   `${`, `<%`, `{slot}` ...: TEMPLATE_IN_STATEMENT). A statement reaches the seller, the
   rep's `fact` column and, through a draft, every channel; a sequencer or mail merge
   would run `{{7*7}}`, and a draft repeating a link would fail its checks anyway;
8. the fact is about this account and no other (WRONG_SUBJECT, OTHER_COMPANY): one
   decision, `precompute.facts.subject.judge_fact_subject`, by its subject or the company its
   statement names, the account's names and aliases, and the source's registrable domain.
   A longer name holding the account's ("Apex Cold Storage Solutions Inc" for "Apex Cold
   Storage Ltd") is another company; the account's brand counts on its own site. Each
   refusal says what would pass;
9. not a duplicate of an earlier trusted fact (DUPLICATE): same type and source URL
   (fragment aside), or same type, statement and date. Four job ads with the same wording
   but their own URLs and dates are four facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from precompute.company_names import plain
from precompute.context import EffectivePolicy, FactDecision, FactReason, Identity, TrustedFact
from precompute.facts.subject import AccountNames, account_names, judge_fact_subject
from welcomemat.bounded_time import MAX_YEAR, MIN_YEAR
from welcomemat.campaign.sections import Confidence
from welcomemat.errors import ContractError
from welcomemat.records.accounts import Account, Fact
from welcomemat.security.domains import registrable_domain
from welcomemat.security.markup_scan import find_markup, find_template_marker
from welcomemat.security.urlgate import LinkAllowlist, browser_view, gate_link, normalise_host
from welcomemat.surfaces import Surface, allowed_surfaces

__all__ = ["decide_facts"]

_HOST_CACHE_SIZE = 16_384  # source hosts recur across an account's facts

# ISO 8601 as research tools write it; ASCII digits only ([0-9], not \d, which takes any
# script's digits). Anything else ("last week", "Q3", "26/11/2026") is BAD_DATE.
_ISO_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_ISO_DATETIME_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?"
)

# Characters a browser reads differently from the text as written: it turns "\\" into "/"
# (so "https://evil.example\\@us.com/" goes to evil.example) and silently drops tabs and
# newlines. A source whose written form misleads the reader is refused, whatever its host.
_AMBIGUOUS_URL_RE = re.compile(r"[\\\x00-\x1f\x7f]")

_NON_WORD_RE = re.compile(r"[\W_]+")
_MAX_FIELD_CHARS = 200  # a structured field longer than this is prose, not a slot value
_KNOWN_FACT_KEYS = frozenset(Fact.model_fields)
_SHOWN_CHARS = 80  # how much of a bad value a decision's detail quotes


def _words(text: str) -> str:
    """Words separated by single spaces: punctuation and markup characters become spaces."""
    return _NON_WORD_RE.sub(" ", text).strip()


@dataclass(frozen=True, slots=True)
class _Fail:
    """A check's failure: the reason code and the specifics for `explain`."""

    reason: FactReason
    detail: str


@dataclass(frozen=True, slots=True)
class _Rules:
    """What every fact of one account is checked against, normalised once per call."""

    names: AccountNames
    windows: Mapping[str, int]
    min_confidence: Confidence
    as_of: date


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…")


@lru_cache(maxsize=_HOST_CACHE_SIZE)
def _only_host(host: str) -> LinkAllowlist | None:
    """An allowlist of just ``host`` when it is a public domain name, else None.

    Lets the one URL gate judge a source, for which any real domain is acceptable.
    """
    if registrable_domain(host) is None:
        return None
    try:
        return LinkAllowlist(frozenset((host,)))  # ada's hostname is already normalised (checked)
    except ContractError:
        return None


def _check_source(raw: str | None) -> str | _Fail:
    """The source's normalised href, if it is an https URL of a real domain."""
    if not raw:
        return _Fail(FactReason.NO_SOURCE, "no source_url")
    if _AMBIGUOUS_URL_RE.search(raw):
        return _Fail(
            FactReason.BAD_SOURCE_URL, f"source_url {_shown(raw)} is ambiguous (backslash or control)"
        )
    view = browser_view(raw)
    if view is None:
        return _Fail(FactReason.BAD_SOURCE_URL, f"source_url {_shown(raw)} does not parse as a URL")
    scheme, host = view
    if scheme != "https":
        return _Fail(FactReason.BAD_SOURCE_URL, f"source_url {_shown(raw)} is {scheme}:, not https:")
    allow = _only_host(host)
    if allow is None:
        return _Fail(FactReason.BAD_SOURCE_URL, f"source_url host {_shown(host)} is not a public domain name")
    decision = gate_link(raw, allow)
    if decision.href is None:
        return _Fail(FactReason.BAD_SOURCE_URL, f"source_url {_shown(raw)} refused ({decision.reason})")
    return decision.href


def _parse_published(raw: str | None) -> date | _Fail:
    """The publish date: an ISO date, or the date part of an ISO datetime as written, in the
    years every stored date keeps (`welcomemat.bounded_time`)."""
    if not raw:
        return _Fail(FactReason.NO_DATE, "no published_at")
    day: date | None = None
    try:
        if _ISO_DATE_RE.fullmatch(raw):
            day = date.fromisoformat(raw)
        elif _ISO_DATETIME_RE.fullmatch(raw):
            day = datetime.fromisoformat(raw).date()
    except ValueError:
        pass  # the right shape but no such day ("2026-13-45"): as bad as any other shape
    if day is None:
        return _Fail(
            FactReason.BAD_DATE, f"published_at {_shown(raw)} is not an ISO date (YYYY-MM-DD) or datetime"
        )
    if not MIN_YEAR <= day.year <= MAX_YEAR:
        return _Fail(
            FactReason.BAD_DATE, f"published_at {_shown(raw)} is not in the years {MIN_YEAR} to {MAX_YEAR}"
        )
    return day


def _check_not_future(published: date, as_of: date) -> _Fail | None:
    if published <= as_of:
        return None
    days = (published - as_of).days
    return _Fail(FactReason.FUTURE_DATE, f"published {published}, {days} days after {as_of}")


def _check_window(fact_type: str, published: date, rules: _Rules) -> date | _Fail:
    """The fact's expiry (exclusive), if the fact is still inside its type's window."""
    window = rules.windows.get(fact_type)
    if window is None:
        known = ", ".join(sorted(rules.windows)) or "none"
        return _Fail(
            FactReason.NO_WINDOW_FOR_TYPE, f"no signal window for type {fact_type!r} (windows: {known})"
        )
    expires = published + timedelta(days=window)
    if rules.as_of < expires:
        return expires
    age = (rules.as_of - published).days
    return _Fail(
        FactReason.STALE,
        f"published {published}, {age} days ago; {fact_type} window is {window} days (expired {expires})",
    )


def _check_confidence(raw: str | None, minimum: Confidence) -> Confidence | _Fail:
    if raw is None:
        return _Fail(FactReason.LOW_CONFIDENCE, f"no confidence; the minimum is {minimum}")
    try:
        confidence = Confidence(raw.strip().lower())
    except ValueError:
        return _Fail(FactReason.LOW_CONFIDENCE, f"confidence {_shown(raw)} is not low, medium or high")
    if confidence.rank < minimum.rank:
        return _Fail(FactReason.LOW_CONFIDENCE, f"confidence {confidence} is below the minimum {minimum}")
    return confidence


def _check_surfaces(declared: Sequence[str]) -> tuple[Surface, ...] | _Fail:
    """The known surfaces the fact is allowed on, if the web is one of them."""
    surfaces = allowed_surfaces(declared)
    if Surface.WEB in surfaces:
        return surfaces
    listed = ", ".join(declared) or "none"
    return _Fail(FactReason.NOT_FOR_WEB, f"surfaces ({listed}) do not include web")


def _check_statement(statement: str) -> _Fail | None:
    """The statement is plain text: nothing a page, a mail merge or a sequencer would run."""
    marker = find_template_marker(statement)
    if marker is not None:
        return _Fail(
            FactReason.TEMPLATE_IN_STATEMENT, f"statement holds the template marker {_shown(marker)}"
        )
    found = find_markup(statement)
    if found is not None:
        code, at = found
        return _Fail(
            FactReason.MARKUP_IN_STATEMENT, f"statement holds {code} at {_shown(statement[at : at + 20])}"
        )
    return None


@lru_cache(maxsize=_HOST_CACHE_SIZE)
def _source_domain(href: str) -> str | None:
    """The registrable domain (ASCII) of a source the URL gate accepted."""
    view = browser_view(href)
    return None if view is None else registrable_domain(view[1])


def _check_subject(fact: Fact, href: str, rules: _Rules) -> _Fail | None:
    """The fact must be about this account (`precompute.facts.subject`, the one decision)."""
    refusal = judge_fact_subject(fact.subject, fact.statement, _source_domain(href), rules.names)
    if refusal is None:
        return None
    return _Fail(FactReason(refusal.reason), refusal.detail)


def _extra_fields(fact: Fact) -> dict[str, str]:
    """The research's structured string fields (round, role, location ...), for pattern slots.

    Only non-empty strings of at most 200 characters without markup characters are kept:
    a truncated or markup-laden slot value would put words on the page nobody researched.
    """
    out: dict[str, str] = {}
    for key, value in (fact.model_extra or {}).items():
        if key in _KNOWN_FACT_KEYS or not isinstance(value, str):
            continue
        value = value.strip()
        if value and len(value) <= _MAX_FIELD_CHARS and "<" not in value and ">" not in value:
            out[key] = value
    return out


def _judge(fact: Fact, rules: _Rules) -> TrustedFact | _Fail:
    """Every check but duplicates, in order; the first failure decides."""
    href = _check_source(fact.source_url)
    if isinstance(href, _Fail):
        return href
    published = _parse_published(fact.published_at)
    if isinstance(published, _Fail):
        return published
    failure = _check_not_future(published, rules.as_of)
    if failure is not None:
        return failure
    expires = _check_window(fact.type, published, rules)
    if isinstance(expires, _Fail):
        return expires
    confidence = _check_confidence(fact.confidence, rules.min_confidence)
    if isinstance(confidence, _Fail):
        return confidence
    surfaces = _check_surfaces(fact.surfaces)
    if isinstance(surfaces, _Fail):
        return surfaces
    failure = _check_statement(fact.statement) or _check_subject(fact, href, rules)
    if failure is not None:
        return failure
    return TrustedFact(
        id=fact.id,
        type=fact.type,
        statement=fact.statement,
        source_url=href,
        published_at=published,
        expires_at=expires,
        confidence=confidence,
        fields=_extra_fields(fact),
        evidence=fact.evidence,
        surfaces=surfaces,
    )


def _trusted_detail(fact: TrustedFact, as_of: date) -> str:
    age = (as_of - fact.published_at).days
    window = (fact.expires_at - fact.published_at).days
    return (
        f"published {fact.published_at}, {age} days ago; "
        f"{fact.type} window is {window} days (expires {fact.expires_at})"
    )


def _duplicate_keys(fact: TrustedFact) -> tuple[tuple[str, str], tuple[str, str, str]]:
    """Two facts are one when they share type and URL, or type, statement and date."""
    url = fact.source_url.partition("#")[0]  # a fragment points into the same document
    return (fact.type, url), (fact.type, _words(plain(fact.statement)), fact.published_at.isoformat())


def _rules_for(account: Account, policy: EffectivePolicy, as_of: date) -> _Rules:
    domain = registrable_domain(account.domain)
    return _Rules(
        names=account_names(account.name, normalise_host(domain) if domain else None, account.aliases),
        windows=policy.signal_windows_days,
        min_confidence=policy.min_confidence,
        as_of=as_of,
    )


def _uncertain(facts: Iterable[Fact], identity: Identity) -> tuple[FactDecision, ...]:
    detail = f"identity {identity.reason} ({identity.confidence}): no account-specific claims"
    return tuple(FactDecision(f.id, f.type, False, FactReason.IDENTITY_UNCERTAIN, detail) for f in facts)


def decide_facts(
    account: Account, identity: Identity, policy: EffectivePolicy, as_of: date
) -> tuple[tuple[TrustedFact, ...], tuple[FactDecision, ...]]:
    """The trusted facts (input order) and one decision per input fact (input order). Never raises."""
    if not identity.claims_allowed:
        return (), _uncertain(account.facts, identity)
    rules = _rules_for(account, policy, as_of)
    trusted: list[TrustedFact] = []
    decisions: list[FactDecision] = []
    first_with: dict[tuple[str, ...], str] = {}  # duplicate key -> id of the trusted fact that has it
    for fact in account.facts:
        verdict = _judge(fact, rules)
        if isinstance(verdict, _Fail):
            decisions.append(FactDecision(fact.id, fact.type, False, verdict.reason, verdict.detail))
            continue
        keys = _duplicate_keys(verdict)
        original = next((first_with[k] for k in keys if k in first_with), None)
        if original is not None:
            detail = f"same {fact.type} source or statement and date as {original!r}"
            decisions.append(FactDecision(fact.id, fact.type, False, FactReason.DUPLICATE, detail))
            continue
        first_with.update(dict.fromkeys(keys, fact.id))
        trusted.append(verdict)
        detail = _trusted_detail(verdict, as_of)
        decisions.append(FactDecision(fact.id, fact.type, True, FactReason.TRUSTED, detail))
    return tuple(trusted), tuple(decisions)
