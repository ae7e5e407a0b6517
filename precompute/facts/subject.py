"""Which company a fact is about, and whether that company is the account (DESIGN.md, invariant 9).

A congratulation sent to the wrong company is the failure this product exists to prevent,
and research gets the company wrong in two opposite ways: it names a *namesake* ("Apex
Cold Storage Solutions Inc" on the page of "Apex Cold Storage Ltd") and it names the
account by its *brand* ("Frostline" for "Frostline Logistics B.V."). One function,
`judge_fact_subject`, decides both, by name words (`precompute.company_names`) and the
source's registrable domain:

* The account is named by its full name, its declared ``aliases`` (any source), and,
  on a source under the account's own registrable domain only, its *brand*: the name
  without legal form and without the trailing generic words in `GENERIC_NAME_WORDS`
  ("Frostline Logistics B.V." -> "Frostline"). A brand alone is too short to tell the
  account from a namesake anywhere else.
* A name with a different or an extra distinctive word is another company, even when it
  contains the account's name: "Solutions", "Capital", "Group", "Holding", a place, another
  brand. A holding, parent or subsidiary is another company unless the account lists it
  in ``aliases``.
* With a ``subject``, the subject decides; the fact is still refused when its statement
  names a namesake and never the account itself.
* Without one, the *first company the statement names* decides: a run of capitalised
  words holding one of the account's names, or ending in a legal form ("Globex Inc.").
  The statement naming no company at all is the account's only when the source is on the
  account's own domain.
* A source on a namesake's own site (its domain holds the account's whole name and more,
  `apexcoldstoragesolutions.com` for Apex Cold Storage) is another company's, unless the
  statement names the account in full.

Every refusal says what would pass: the account's name, an alias to add, or the source
that would make the brand enough.

Reading a statement: a run of capitalised words is a name. It does not start with a
sentence's first word when that word is an opener (`OPENER_WORDS`: "Today", "In", "The" ...),
and it stops at a lowercase word, a possessive ("Dymaxa's"), a job title or a calendar
word (`NAME_STOP_WORDS`: "CEO", "Monday" ...); `&` joins, and "and" / "of" / "de" join
only when the run then ends in a legal form ("Bank of Foo Ltd"). A statement written in
title case ("Frostline Logistics Opens New Hub") cannot show where a name ends: there only
legal forms extend a name, and a name followed by other capitalised words is ambiguous
(the account's only on its own domain).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from precompute.company_names import NameKey, is_legal_form, name_key, word_key

__all__ = [
    "GENERIC_NAME_WORDS",
    "HEADLINE_VERBS",
    "NAME_STOP_WORDS",
    "OPENER_WORDS",
    "AccountNames",
    "SubjectRefusal",
    "account_names",
    "judge_fact_subject",
]

# Trailing words that describe what a company does rather than which company it is. They
# are dropped from the account's name to find its brand ("Frostline Logistics" ->
# "Frostline"), and the brand counts only on the account's own site. Words that name
# another entity of a group ("Group", "Holding", "Capital", "Ventures", "Media",
# "Partners") are deliberately not here.
GENERIC_NAME_WORDS: frozenset[str] = frozenset(
    """
    ai analytics bio biosciences cloud cold consulting data digital energy engineering foods
    freight health industries international labs logistics networks pharma pharmaceuticals
    robotics security services software solutions storage supply systems tech technologies
    technology therapeutics transport warehousing
    """.split()
)

# A sentence's first word that starts a sentence, not a name ("Today Dymaxa raised").
OPENER_WORDS: frozenset[str] = frozenset(
    """
    a according after also an and as at before but by despite during earlier following for
    from here how in last late meanwhile now on once over per recently since so that the
    then there this through today under until when while with yesterday
    """.split()
)

# Capitalised words that end a name: job titles and calendar words ("Dymaxa CEO Ana",
# "Dymaxa Monday announced", "Dymaxa Series A").
NAME_STOP_WORDS: frozenset[str] = frozenset(
    """
    ceo cfo cto coo cro cmo cio cpo ciso vp svp evp founder cofounder president chairman chair
    director head chief series monday tuesday wednesday thursday friday saturday sunday
    january february march april may june july august september october november december
    """.split()
)

# Verbs that end a name in a headline, where every word is capitalised ("Frostline Opens New
# Hub"). Only plain verbs: "Holding", "United", "Partners" are words of names.
HEADLINE_VERBS: frozenset[str] = frozenset(
    """
    acquires acquired adds added announces announced appoints appointed are begins bets boosts
    brings buys bought closes closed completes completed cuts debuts doubles enters entered expands
    expanded eyes files filed gets goes got grows had has have hires hired hits inks introduces
    introduced is joins joined lands landed launches launched makes moves moved names named nabs
    opens opened picks picked plans posts raises raised reaches releases released reports reported
    said says scores secures secured sees selects selected sells set sets signs signed snaps sold
    starts taps tapped to unveils unveiled was will wins won
    """.split()
)

# Lowercase words inside a legal name ("Bank of Foo Ltd", "Banco de Chile S.A.").
_INNER_CONNECTORS = frozenset(
    {"and", "And", "of", "Of", "de", "del", "der", "den", "van", "von", "la", "le", "du", "da", "y"}
)
_MAX_LEGAL_TOKENS = 4  # "sp. z o.o." is the longest legal form in words
_MIN_DOMAIN_KEY_CHARS = 4  # shorter names are too common inside other domains to mean anything
_SHOWN_CHARS = 80

_TOKEN_RE = re.compile(r"&|[^\W_]+(?:[.'’/\-][^\W_]+)*[.'’]?")
_SENTENCE_END_RE = re.compile(r"[.!?;:\n]")
_POSSESSIVE_END_RE = re.compile(r"['’]s?$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class AccountNames:
    """The names one account goes by, as keys, and its registrable domain (worked out once per account)."""

    name: str  # as the record gives it, for messages
    full: NameKey
    brand: NameKey
    domain: str | None  # registrable domain, ASCII
    anywhere: frozenset[NameKey]  # the account from any source: its full name and its aliases
    every_key: frozenset[NameKey]  # those and the brand
    distinctive: frozenset[str]  # words of its names that tell it apart: a two-word name sharing one is kin

    def on_source(self, own_site: bool) -> frozenset[NameKey]:
        """Names that are the account on this source (the brand only on the account's own site)."""
        return self.every_key if own_site else self.anywhere


def _brand(full: NameKey) -> NameKey:
    words = list(full)
    while len(words) > 1 and words[-1] in GENERIC_NAME_WORDS:
        words.pop()
    return tuple(words)


def account_names(name: str, domain: str | None, aliases: Iterable[str] = ()) -> AccountNames:
    """The account's names as `judge_fact_subject` compares them. `domain`: registrable, ASCII."""
    full = name_key(name)
    brand = _brand(full)
    anywhere = frozenset({full, *(name_key(alias) for alias in aliases)}) - {()}
    every_key = (anywhere | {brand}) - {()}
    words = {w for key in every_key for w in key}
    return AccountNames(
        name=name,
        full=full,
        brand=brand,
        domain=domain,
        anywhere=anywhere,
        every_key=every_key,
        distinctive=frozenset(w for w in words if len(w) >= 3 and w not in GENERIC_NAME_WORDS),
    )


class SubjectRefusal(NamedTuple):
    """Why a fact is not the account's: `wrong_subject` or `other_company`, and what would pass."""

    reason: str
    detail: str


# -- reading a statement -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    key: str  # word_key: "" for "&" and "and"
    start: int
    capital: bool  # starts with an upper-case letter or a digit
    initial: bool  # a sentence's first word
    possessive: bool


class _Kind(Enum):
    ACCOUNT = "account"  # one of the account's names (which may still need its own site)
    NAMESAKE = "namesake"  # holds one of the account's names, and more
    OTHER = "other"  # another company: a name ending in a legal form


class _Mention(NamedTuple):
    kind: _Kind
    key: NameKey
    shown: str
    ambiguous: bool = False  # title case: more capitalised words follow; the name may be longer


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    previous_end = 0
    previous: _Token | None = None
    for m in _TOKEN_RE.finditer(text):
        raw = m.group(0)
        gap = text[previous_end : m.start()]
        initial = previous is None or bool(_SENTENCE_END_RE.search(gap)) or _ends_sentence(previous)
        out.append(
            _Token(
                text=raw,
                key=word_key(raw),
                start=m.start(),
                capital=raw[0].isupper() or raw[0].isdigit(),
                initial=initial,
                possessive=bool(_POSSESSIVE_END_RE.search(raw)) and raw.lower() not in {"s'"},
            )
        )
        previous, previous_end = out[-1], m.end()
    return out


def _ends_sentence(token: _Token) -> bool:
    """A word with a final dot ends a sentence unless it is a legal form or an initial ("A.")."""
    if not token.text.endswith("."):
        return False
    return not (is_legal_form(token.text) or len(token.key) <= 2 or token.text.count(".") > 1)


def _bare(token: _Token) -> str:
    """The word without a possessive ending ("Ltd's" -> "Ltd")."""
    return _POSSESSIVE_END_RE.sub("", token.text) if token.possessive else token.text


def _legal_run(tokens: Sequence[_Token], i: int) -> int:
    """How many tokens from `i` make one legal form (0: none). "sp. z o.o." is three."""
    for n in range(min(_MAX_LEGAL_TOKENS, len(tokens) - i), 0, -1):
        words = [t.text for t in tokens[i : i + n - 1]] + [_bare(tokens[i + n - 1])]
        if is_legal_form(" ".join(words)):
            return n
    return 0


def _name_word(token: _Token) -> bool:
    """Whether a word may be part of a name, its position aside."""
    if not token.capital or not token.key or token.key in NAME_STOP_WORDS:
        return False
    tail = token.text.rsplit("-", 1)[-1]
    return not (tail != token.text and tail[:1].islower())  # "Rotterdam-based" describes


def _starts_name(token: _Token) -> bool:
    opener = token.initial and token.key in OPENER_WORDS and not token.text.endswith(".")  # "A. P. Lindqvist"
    return _name_word(token) and not opener


def _is_title_case(tokens: Sequence[_Token]) -> bool:
    """No lowercase word of four letters or more: a headline, where any word may be capitalised."""
    if sum(t.capital for t in tokens) < 3:
        return False
    return not any(len(t.key) >= 4 and t.text[:1].islower() and not is_legal_form(t.text) for t in tokens)


def _key_of(tokens: Sequence[_Token]) -> NameKey:
    return name_key(" ".join(_bare(t) for t in tokens))


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…")


def _span(text: str, tokens: Sequence[_Token]) -> str:
    first, last = tokens[0], tokens[-1]
    shown = text[first.start : last.start + len(_bare(last))]
    return shown.rstrip(",;: ") if last.possessive or not is_legal_form(_bare(last)) else shown


def _contains(key: NameKey, part: NameKey) -> bool:
    n = len(part)
    return bool(part) and any(key[i : i + n] == part for i in range(len(key) - n + 1))


def _classify(key: NameKey, legal: bool, names: AccountNames) -> _Kind | None:
    if not key:
        return None
    if key in names.every_key:
        return _Kind.ACCOUNT
    if any(_contains(key, own) for own in names.every_key):
        return _Kind.NAMESAKE
    joined = "".join(key)  # "Dymaxanet", "ApexCold": the account's name run into a longer word
    if any(len(j) >= _MIN_DOMAIN_KEY_CHARS and j in joined for j in map("".join, names.every_key)):
        return _Kind.NAMESAKE
    if len(key) >= 2 and not names.distinctive.isdisjoint(key):  # "Smith Brothers" for "Smith & Sons"
        return _Kind.NAMESAKE
    return _Kind.OTHER if legal else None


def _name_words_from(tokens: Sequence[_Token], k: int) -> int:
    """The end of the capitalised words from `k` within one sentence, before any legal form."""
    while k < len(tokens) and _name_word(tokens[k]) and not tokens[k].initial and not _legal_run(tokens, k):
        k += 1
        if tokens[k - 1].possessive:
            break
    return k


def _join_connector(tokens: Sequence[_Token], i: int, j: int, names: AccountNames) -> tuple[int, bool] | None:
    """Past `&`, "and" or "of" at `j`: where the name from `i` ends if the connector is inside it.

    Inside when the longer name is one of the account's ("Smith and Sons"), or when it ends
    in a legal form ("Bank of Foo Ltd") or, for `&`, in a capitalised word ("Castle & Reed
    Capital") and the words before the connector are not already the account's whole name:
    "Frostline Logistics and Globex Inc" names two companies. None: the name ends at `j`.
    """
    k = _name_words_from(tokens, j + 1)
    if k == j + 1:
        return None
    own = next((e for e in range(k, j + 1, -1) if _key_of(tokens[i:e]) in names.every_key), None)
    if own is not None:
        return own, False
    if tokens[j].key == "" and _key_of(tokens[i:j]) in names.every_key:  # "&" or "and", not "of"
        return None
    n = _legal_run(tokens, k) if k < len(tokens) else 0
    if n:
        return k + n, True
    return (k, False) if tokens[j].text == "&" else None


class _Run(NamedTuple):
    end: int  # exclusive
    legal: bool  # ends in a legal form
    closed: bool  # something shows where the name ends (only unsure in a headline)


def _extend_run(tokens: Sequence[_Token], i: int, names: AccountNames, *, headline: bool) -> _Run:
    """The name starting at token `i`: where it ends, whether in a legal form, and whether that is sure.

    In a sentence a name ends at the first word that is not capitalised. In a headline every
    word is, so a name ends at a possessive, a legal form, a lowercase word or one of
    `HEADLINE_VERBS` ("Frostline Opens New Hub"); a headline name that none of them ends is
    not `closed`: nobody can tell where it stops.
    """
    j = i
    legal = False
    while j < len(tokens):
        token = tokens[j]
        if j > i and (token.initial or (headline and token.key in HEADLINE_VERBS)):
            return _Run(j, legal, True)
        n = _legal_run(tokens, j) if j > i else 0
        if n:
            j, legal = j + n, True
            if tokens[j - 1].possessive:
                return _Run(j, legal, True)
            continue
        if legal and not headline:
            return _Run(j, legal, True)
        if j > i and (token.text == "&" or token.text in _INNER_CONNECTORS):
            joined = _join_connector(tokens, i, j, names)
            if joined is None:
                return _Run(j, legal, True)
            j, legal = joined
            continue
        if not _name_word(token):
            return _Run(j, legal, True)
        j += 1
        if token.possessive:
            return _Run(j, legal, True)
    return _Run(j, legal, not headline)


def _statement_mentions(text: str, tokens: Sequence[_Token], names: AccountNames) -> list[_Mention]:
    headline = _is_title_case(tokens)
    out: list[_Mention] = []
    i = 0
    while i < len(tokens):
        if not _starts_name(tokens[i]):
            i += 1
            continue
        run = _extend_run(tokens, i, names, headline=headline)
        key = _key_of(tokens[i : run.end])
        kind = _classify(key, run.legal, names)
        if kind is not None:
            out.append(_Mention(kind, key, _span(text, tokens[i : run.end]), ambiguous=not run.closed))
        i = run.end
    return out


def _mentions(statement: str, names: AccountNames) -> list[_Mention]:
    """The companies the statement names, in order: the account's names, namesakes, legal names."""
    return _statement_mentions(statement, _tokens(statement), names)


# -- the decision ------------------------------------------------------------------------


def _namesake_domain(source_domain: str | None, names: AccountNames) -> bool:
    """A source on a site whose name holds the account's whole name and more (not the account's own)."""
    if source_domain is None or source_domain == names.domain:
        return False
    label = source_domain.split(".", 1)[0]
    joined = ("".join(key) for key in names.anywhere)
    return any(len(j) >= _MIN_DOMAIN_KEY_CHARS and j in label and j != label for j in joined)


def _fixes(name_written: str, names: AccountNames, *, brand_would_pass: bool) -> str:
    if brand_would_pass and names.domain:
        shown = _shown(name_written)
        return f"use the account's name, add {shown} to its aliases, or source it from {names.domain}"
    return f"use the account's name, or add {_shown(name_written)} to its aliases if it is the same company"


def _another_company(where: str, shown: str, names: AccountNames) -> SubjectRefusal:
    return SubjectRefusal(
        "other_company",
        f"{where} {_shown(shown)}, another company than {names.name!r}; "
        f"if it is the same company, add {_shown(shown)} to the account's aliases",
    )


def judge_fact_subject(
    subject: str | None, statement: str, source_domain: str | None, names: AccountNames
) -> SubjectRefusal | None:
    """None when the fact is about the account; else why not, and what would pass. Never raises.

    `source_domain`: the registrable domain (ASCII) of the fact's source, None if unknown.
    """
    own_site = names.domain is not None and source_domain == names.domain
    accepted = names.on_source(own_site)
    mentions = _mentions(statement, names)
    names_account = any(m.kind is _Kind.ACCOUNT and m.key in accepted and not m.ambiguous for m in mentions)
    namesake = next((m for m in mentions if m.kind is _Kind.NAMESAKE), None)
    if subject:
        key = name_key(subject)
        if key in accepted:
            if namesake is not None and not names_account:
                return _another_company("the statement names", namesake.shown, names)
            if _namesake_domain(source_domain, names) and not names_account:
                return _another_company("the source is the site of", source_domain or "", names)
            return None
        brand_would_pass = key == names.brand
        if not brand_would_pass and key and any(_contains(key, own) for own in names.every_key):
            return _another_company("the subject names", subject, names)
        return SubjectRefusal(
            "wrong_subject",
            f"{_shown(subject)} is not {names.name!r}; "
            + _fixes(subject, names, brand_would_pass=brand_would_pass),
        )
    first = mentions[0] if mentions else None
    if first is not None and first.kind is not _Kind.ACCOUNT:
        return _another_company("the statement names", first.shown, names)
    if first is not None and first.key in accepted and not first.ambiguous:
        if _namesake_domain(source_domain, names) and first.key not in names.anywhere:
            return _another_company("the source is the site of", source_domain or "", names)
        return None
    if own_site:
        return None  # the account's own site, naming no other company
    if _namesake_domain(source_domain, names):
        return _another_company("the source is the site of", source_domain or "", names)
    if first is not None:
        why = "is in title case: where its name ends cannot be told" if first.ambiguous else "names"
        shown = _shown(first.shown)
        return SubjectRefusal(
            "wrong_subject",
            f"no subject, and the statement {why} {shown}, not {names.name!r}; name it in "
            f"full, give a subject, add {shown} to its aliases, or source it from {names.domain}",
        )
    return SubjectRefusal(
        "wrong_subject",
        f"no subject, and the statement does not name {names.name!r}; name it in full, give a subject, "
        f"or source it from {names.domain}",
    )
