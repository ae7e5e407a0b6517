"""Which company a fact is about: the account's own facts are used, a namesake's never are."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from precompute.company_names import LEGAL_SUFFIXES, name_key, names_match
from precompute.context import EffectivePolicy, FactReason, Identity, IdentityConfidence, IdentityReason
from precompute.facts.subject import GENERIC_NAME_WORDS, account_names, judge_fact_subject
from precompute.facts.trust import decide_facts
from tests.corpora import REPO_ROOT
from tests.precompute.company_corpus import CASES, CorpusCase
from welcomemat.campaign.sections import Confidence
from welcomemat.records.accounts import Account

AS_OF = date(2026, 11, 29)
POLICY = EffectivePolicy(
    signal_windows_days={"expansion": 90},
    min_confidence=Confidence.MEDIUM,
    banned_phrases=(),
    banned_openers=(),
    prohibited_claims=(),
)
HAND_WRITTEN = REPO_ROOT / "tests" / "precompute" / "subject_cases" / "hand_written.jsonl"


def _used(record: dict[str, Any]) -> tuple[bool, str, str]:
    """Whether the record's one fact is trusted, with the decision's reason and detail."""
    account = Account.model_validate(record)
    identity = Identity(account.domain, IdentityConfidence.HIGH, True, IdentityReason.DOMAIN_CONFIRMED)
    trusted, decisions = decide_facts(account, identity, POLICY, AS_OF)
    return bool(trusted), decisions[0].reason.value, decisions[0].detail


def _fact(statement: str, source: str, subject: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "f1",
        "type": "expansion",
        "statement": statement,
        "source_url": source,
        "published_at": "2026-11-20",
        "confidence": "high",
        "surfaces": ["web"],
    }
    if subject is not None:
        out["subject"] = subject
    return out


def _record(name: str, domain: str, fact: dict[str, Any], aliases: list[str] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "account_id": "acct_x",
        "name": name,
        "domain": domain,
        "segment": "s",
        "contacts": [{"contact_id": "c1", "email": f"ops@{domain}"}],
        "facts": [fact],
    }
    if aliases:
        record["aliases"] = aliases
    return record


# --- the corpus -------------------------------------------------------------------------------


def _corpus_outcomes() -> tuple[Counter[str], list[CorpusCase], list[CorpusCase]]:
    counts: Counter[str] = Counter()
    leaked: list[CorpusCase] = []
    lost: list[CorpusCase] = []
    for case in CASES:
        used, _, _ = _used(case.account())
        counts[f"{'ours' if case.ours else 'theirs'}_{'used' if used else 'refused'}"] += 1
        if used and not case.ours:
            leaked.append(case)
        if case.ours and not used:
            lost.append(case)
    return counts, leaked, lost


def test_no_fact_about_another_company_is_used_and_the_accounts_own_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    counts, leaked, lost = _corpus_outcomes()
    ours = counts["ours_used"] + counts["ours_refused"]
    theirs = counts["theirs_used"] + counts["theirs_refused"]
    assert ours >= 1000 and theirs >= 1000, counts  # the corpus is real work, not a handful
    with capsys.disabled():
        print(
            f"\n  subject corpus: {counts['theirs_used']} of {theirs} facts about another company used; "
            f"{counts['ours_used']} of {ours} facts about the account used ({counts['ours_used'] / ours:.1%})"
        )
    assert not leaked, [(c.family.name, c.shape, c.fact) for c in leaked[:5]]
    assert counts["ours_used"] / ours >= 0.95, [(c.family.name, c.shape, c.fact) for c in lost[:5]]


def test_every_shape_of_the_corpus_is_decided_as_a_reader_would() -> None:
    shapes: dict[str, Counter[bool]] = {}
    for case in CASES:
        used, _, _ = _used(case.account())
        shapes.setdefault(case.shape, Counter())[used == case.ours] += 1
    wrong = {shape: c[False] for shape, c in shapes.items() if c[False]}
    assert not wrong
    assert len(shapes) >= 15


def _hand_written() -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in HAND_WRITTEN.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


@pytest.mark.parametrize("case", _hand_written(), ids=lambda c: str(c["why"]))
def test_hand_written_cases(case: dict[str, Any]) -> None:
    fact = _fact(case["statement"], case["source"], case.get("subject"))
    used, reason, detail = _used(_record(case["account"], case["domain"], fact, case.get("aliases")))
    assert used is case["ours"], detail
    if not case["ours"]:
        assert reason == case["reason"], detail


# --- what a refusal says ----------------------------------------------------------------------


def test_a_brand_off_its_own_site_says_what_would_pass() -> None:
    fact = _fact("Frostline opened a hub", "https://news.example.com/f", subject="Frostline")
    used, reason, detail = _used(_record("Frostline Logistics B.V.", "frostlinelogistics.com", fact))
    assert (used, reason) == (False, "wrong_subject")
    assert detail == (
        "'Frostline' is not 'Frostline Logistics B.V.'; use the account's name, add 'Frostline' to its "
        "aliases, or source it from frostlinelogistics.com"
    )
    # Each of the three fixes it names makes it pass.
    for fixed in (
        _record(
            "Frostline Logistics B.V.", "frostlinelogistics.com", {**fact, "subject": "Frostline Logistics"}
        ),
        _record("Frostline Logistics B.V.", "frostlinelogistics.com", fact, aliases=["Frostline"]),
        _record(
            "Frostline Logistics B.V.",
            "frostlinelogistics.com",
            {**fact, "source_url": "https://www.frostlinelogistics.com/news/hub"},
        ),
    ):
        assert _used(fixed)[0], fixed


def test_a_longer_name_holding_the_accounts_is_another_company() -> None:
    fact = _fact(
        "Apex Cold Storage Solutions Inc opened a new hub in Dallas, Texas",
        "https://apexcoldstoragesolutions.com/news/dallas",
    )
    used, reason, detail = _used(_record("Apex Cold Storage Ltd", "apexcoldstorage.com", fact))
    assert (used, reason) == (False, "other_company")
    assert detail.startswith(
        "the statement names 'Apex Cold Storage Solutions Inc', another company than 'Apex Cold Storage Ltd'"
    )


def test_a_namesake_listed_as_an_alias_is_the_account() -> None:
    fact = _fact("Frostline Group reported record revenue", "https://news.example.com/g")
    assert not _used(_record("Frostline Logistics B.V.", "frostlinelogistics.com", fact))[0]
    assert _used(_record("Frostline Logistics B.V.", "frostlinelogistics.com", fact, ["Frostline Group"]))[0]


def test_reason_codes_are_the_trust_policys() -> None:
    assert {FactReason.WRONG_SUBJECT.value, FactReason.OTHER_COMPANY.value} <= {r.value for r in FactReason}


# --- aliases are checked like the rest of the record -----------------------------------------


@pytest.mark.parametrize("bad", [[""], ["   "], ["a" * 301], ["Frost\nline"], ["x"] * 21])
def test_bad_aliases_are_refused_with_their_field(bad: list[str]) -> None:
    with pytest.raises(ValidationError) as raised:
        Account.model_validate(_record("Frostline", "frostline.com", _fact("x", "https://x.com"), bad))
    assert raised.value.errors()[0]["loc"][0] == "aliases"


# --- properties over generated names ----------------------------------------------------------

# Distinctive words of the shape company names take (invented, so no real company's).
_WORDS = (
    "Apex Frostline Nordvik Kavex Pelto Lumio Dymaxa Zeta Orion Summit Castle Reed Harbor Blue "
    "Greenfield Tidewater Redwood Hartwell Lindqvist Brimo Kinrel Relbri Quillmate Joltra Vantor "
    "Meridian Copperleaf Ironbark Silverline Northgate Brightwater Oakridge Falcon Granite Cedar"
).split()
_EXTRA = (
    "Solutions",
    "Capital",
    "Media",
    "Ventures",
    "Group",
    "Holding",
    "Partners",
    "International",
    "Labs",
)
_SUFFIXES = ("", *LEGAL_SUFFIXES)
_SENTENCES = (
    "{name} opened a new office in Leeds",
    "Today, {name} announced a second warehouse",
    "The new site was opened by {name} on Monday",
    "{name}'s board approved a second site",
)

names_st = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3, unique=True)


def _with_suffix(words: list[str], suffix: str) -> str:
    return " ".join(words) + (f" {suffix}" if suffix else "")


def _respell(words: list[str], suffix: str, case: str) -> str:
    text = _with_suffix(words, suffix)
    return {"upper": text.upper(), "lower": text.lower(), "as is": text}[case]


@settings(max_examples=300, deadline=None)
@given(
    names_st,
    st.sampled_from(_SUFFIXES),
    st.sampled_from(_SUFFIXES),
    st.sampled_from(("upper", "lower", "as is")),
    st.sampled_from(_SENTENCES),
)
def test_the_same_company_in_another_spelling_is_the_account(
    words: list[str], suffix: str, other_suffix: str, case: str, sentence: str
) -> None:
    account = _with_suffix(words, suffix)
    spelled = _respell(words, other_suffix, case)
    assert names_match(account, spelled)
    names = account_names(account, "example-account.com")
    # As the subject, from a news site.
    assert judge_fact_subject(spelled, "It opened a new office", "news.example.com", names) is None
    # Named in the statement (written as research writes, capitalised), from a news site.
    written = _respell(words, other_suffix, "upper" if case == "upper" else "as is")
    assert judge_fact_subject(None, sentence.format(name=written), "news.example.com", names) is None


@settings(max_examples=300, deadline=None)
@given(
    names_st,
    st.sampled_from(_EXTRA + tuple(_WORDS)),
    st.booleans(),
    st.sampled_from(_SUFFIXES),
    st.sampled_from(_SENTENCES),
    st.sampled_from(("own", "news", "theirs")),
)
def test_a_company_with_an_extra_word_is_never_the_account(
    words: list[str], extra: str, before: bool, suffix: str, sentence: str, where: str
) -> None:
    assume(extra not in words)
    account = " ".join(words) + " Ltd"
    other_words = [extra, *words] if before else [*words, extra]
    other = _with_suffix(other_words, suffix)
    assume(name_key(other) != name_key(account))
    names = account_names(account, "example-account.com")
    source = {"own": "example-account.com", "news": "news.example.com", "theirs": "other-company.com"}[where]
    assert judge_fact_subject(other, "It opened a new office", source, names) is not None
    refusal = judge_fact_subject(None, sentence.format(name=other), source, names)
    assert refusal is not None
    # Its own name as the subject does not launder a statement that names the other company.
    assert judge_fact_subject(account, sentence.format(name=other), source, names) is not None


@settings(max_examples=200, deadline=None)
@given(names_st, names_st, st.sampled_from(_SENTENCES), st.sampled_from(("news", "theirs")))
def test_a_different_name_is_never_the_account_off_its_site(
    words: list[str], other_words: list[str], sentence: str, where: str
) -> None:
    account, other = " ".join(words), " ".join(other_words)
    assume(name_key(account) != name_key(other))
    names = account_names(account + " B.V.", "example-account.com")
    assume(name_key(other) != names.brand)
    source = {"news": "news.example.com", "theirs": "other-company.com"}[where]
    assert judge_fact_subject(other, "It opened a new office", source, names) is not None
    assert judge_fact_subject(None, sentence.format(name=other), source, names) is not None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.one_of(st.none(), st.text(max_size=60)), names_st)
def test_any_text_gets_a_decision_and_never_an_exception(
    statement: str, subject: str | None, words: list[str]
) -> None:
    names = account_names(" ".join(words) + " Inc.", "example-account.com", ["Brand X"])
    refusal = judge_fact_subject(subject, statement, "news.example.com", names)
    assert refusal is None or refusal.reason in {"wrong_subject", "other_company"}


def test_generic_words_make_a_brand_only_at_the_end() -> None:
    assert account_names("Frostline Logistics B.V.", None).brand == ("frostline",)
    assert account_names("Apex Cold Storage Ltd", None).brand == ("apex",)
    assert account_names("Logistics Partners Ltd", None).brand == ("logistics", "partners")
    assert account_names("Software", None).brand == ("software",)  # never emptied
    assert "group" not in GENERIC_NAME_WORDS and "holding" not in GENERIC_NAME_WORDS
