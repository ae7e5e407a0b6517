"""The trust policy: one test per reason code, each showing the faulty fact kept out."""

from __future__ import annotations

import json
import sys
from datetime import date, timedelta
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precompute.company_names import names_match, short_name
from precompute.context import (
    EffectivePolicy,
    FactDecision,
    FactReason,
    Identity,
    IdentityConfidence,
    IdentityReason,
    TrustedFact,
)
from precompute.facts.trust import decide_facts
from precompute.identity import resolve_identity
from precompute.policy import build_policy
from tests.corpora import REPO_ROOT, corpus_lines
from tests.example_accounts import committed_today
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.sections import Confidence
from welcomemat.records.accounts import Account, parse_account_line, read_accounts
from welcomemat.surfaces import Surface

EXAMPLES = REPO_ROOT / "examples"
AS_OF = date(2026, 11, 29)
CONFIRMED = Identity("dymaxa.com", IdentityConfidence.HIGH, True, IdentityReason.DOMAIN_CONFIRMED)


@cache
def campaign() -> Campaign:
    return load_campaign(EXAMPLES / "campaign.yaml")


@cache
def example_policy() -> EffectivePolicy:
    return build_policy(campaign(), None)


# The unit tests' own policy, so they do not move when the example campaign is retuned.
POLICY = EffectivePolicy(
    signal_windows_days={"funding": 120, "hiring": 45},
    min_confidence=Confidence.MEDIUM,
    banned_phrases=(),
    banned_openers=(),
    prohibited_claims=(),
)


def dymaxa_record() -> dict[str, Any]:
    first = (EXAMPLES / "accounts.jsonl").read_text(encoding="utf-8").split("\n", 1)[0]
    record: dict[str, Any] = json.loads(first)
    return record


def dymaxa_as_of(record: dict[str, Any]) -> date:
    """The day the example data was made for."""
    return committed_today(record)


def fact(**overrides: Any) -> dict[str, Any]:
    """A fact that passes every check on AS_OF; each test breaks one thing."""
    base: dict[str, Any] = {
        "id": "f1",
        "type": "funding",
        "statement": "Dymaxa raised a Series A",
        "subject": "Dymaxa",
        "round": "Series A",
        "source_url": "https://dymaxa.com/press/series-a",
        "published_at": "2026-11-26",
        "confidence": "high",
        "surfaces": ["web", "email"],
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def account(*facts: dict[str, Any], name: str = "Dymaxa B.V.") -> Account:
    return Account.model_validate(
        {
            "account_id": "acct_dymaxa",
            "name": name,
            "domain": "dymaxa.com",
            "segment": "saas-mid",
            "contacts": [{"contact_id": "c_joram", "email": "joram@dymaxa.com"}],
            "facts": list(facts),
        }
    )


def decide(
    *facts: dict[str, Any], as_of: date = AS_OF, name: str = "Dymaxa B.V."
) -> tuple[tuple[TrustedFact, ...], tuple[FactDecision, ...]]:
    return decide_facts(account(*facts, name=name), CONFIRMED, POLICY, as_of)


def only_decision(*facts: dict[str, Any], as_of: date = AS_OF, name: str = "Dymaxa B.V.") -> FactDecision:
    """Decide the facts; the last one's decision, after checking it was kept out."""
    trusted, decisions = decide(*facts, as_of=as_of, name=name)
    last = decisions[-1]
    assert last.fact_id not in {t.id for t in trusted}
    assert not last.trusted
    return last


# --- the reference record -----------------------------------------------------------------


def test_dymaxa_yields_the_series_a_and_four_sdr_roles() -> None:
    record = dymaxa_record()
    dymaxa = Account.model_validate(record)
    trusted, decisions = decide_facts(
        dymaxa, resolve_identity(dymaxa), example_policy(), dymaxa_as_of(record)
    )
    assert [t.id for t in trusted] == [
        "dymaxa-series-a",
        "dymaxa-sdr-1",
        "dymaxa-sdr-2",
        "dymaxa-sdr-3",
        "dymaxa-sdr-4",
    ]
    assert all(d.reason is FactReason.TRUSTED for d in decisions)
    # Identical statements, distinct URLs and dates: four openings, not one.
    assert len({t.source_url for t in trusted if t.type == "hiring"}) == 4
    series_a = trusted[0]
    assert series_a.fields["round"] == "Series A"
    window = campaign().signal_windows_days["funding"]
    assert series_a.expires_at == series_a.published_at + timedelta(days=window)
    assert trusted[1].fields == {
        "role": "Sales Development Representative",
        "role_short": "SDR",
        "role_plural": "SDRs",
        "location": "Amsterdam",
    }


def test_dymaxa_with_a_125_day_old_funding_fact_keeps_only_the_roles() -> None:
    record = dymaxa_record()
    as_of = dymaxa_as_of(record)
    record["facts"][0]["published_at"] = (as_of - timedelta(days=125)).isoformat()
    dymaxa = Account.model_validate(record)
    trusted, decisions = decide_facts(dymaxa, resolve_identity(dymaxa), example_policy(), as_of)
    assert [t.type for t in trusted] == ["hiring"] * 4
    assert decisions[0].reason is FactReason.STALE
    window = campaign().signal_windows_days["funding"]
    assert f"125 days ago; funding window is {window} days" in decisions[0].detail


# --- one test per reason code -------------------------------------------------------------


def test_reason_trusted() -> None:
    trusted, decisions = decide(fact())
    assert [t.id for t in trusted] == ["f1"]
    assert decisions[0].trusted and decisions[0].reason is FactReason.TRUSTED
    assert trusted[0].source_url == "https://dymaxa.com/press/series-a"
    assert trusted[0].confidence is Confidence.HIGH


def test_reason_identity_uncertain() -> None:
    unsure = Identity("dymaxa.com", IdentityConfidence.LOW, False, IdentityReason.CONTACTS_DISAGREE)
    trusted, decisions = decide_facts(account(fact(), fact(id="f2")), unsure, POLICY, AS_OF)
    assert trusted == ()
    assert [d.reason for d in decisions] == [FactReason.IDENTITY_UNCERTAIN] * 2
    assert "contacts_disagree" in decisions[0].detail


def test_reason_no_source() -> None:
    decision = only_decision(fact(source_url=None))
    assert decision.reason is FactReason.NO_SOURCE


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("javascript:alert(1)", "javascript:, not https:"),
        ("http://dymaxa.com/press", "http:, not https:"),
        ("not a url", "does not parse"),
        ("https://evil.example\\@dymaxa.com/", "ambiguous"),  # a browser goes to evil.example
        ("https://dymaxa.com/a\tb", "ambiguous"),
        ("https://joram@dymaxa.com/press", "userinfo"),
        ("https://dymaxa.com:8443/press", "port"),
        ("https://0x7f.1/press", "'127.0.0.1' is not a public domain"),
        ("https://[::1]/press", "not a public domain"),
        ("https://localhost/press", "not a public domain"),
        ("https://co.uk/press", "not a public domain"),
    ],
)
def test_reason_bad_source_url(url: str, says: str) -> None:
    decision = only_decision(fact(source_url=url))
    assert decision.reason is FactReason.BAD_SOURCE_URL
    assert says in decision.detail


def test_reason_no_date() -> None:
    assert only_decision(fact(published_at=None)).reason is FactReason.NO_DATE


@pytest.mark.parametrize(
    "raw", ["last week", "Q3", "2026-13-45", "26/11/2026", "20261126", "2026-W48-4", "2026"]
)
def test_reason_bad_date(raw: str) -> None:
    decision = only_decision(fact(published_at=raw))
    assert decision.reason is FactReason.BAD_DATE
    assert repr(raw) in decision.detail


def test_reason_future_date() -> None:
    decision = only_decision(fact(published_at="2026-12-01"))
    assert decision.reason is FactReason.FUTURE_DATE
    assert decision.detail == "published 2026-12-01, 2 days after 2026-11-29"


def test_reason_no_window_for_type() -> None:
    decision = only_decision(fact(type="rumour"))
    assert decision.reason is FactReason.NO_WINDOW_FOR_TYPE
    assert "'rumour'" in decision.detail and "hiring" in decision.detail


def test_reason_stale() -> None:
    decision = only_decision(fact(type="hiring", published_at="2026-05-01"))
    assert decision.reason is FactReason.STALE
    assert decision.detail.startswith("published 2026-05-01, 212 days ago; hiring window is 45 days")


def test_reason_low_confidence() -> None:
    for raw, says in [("low", "below the minimum medium"), (None, "no confidence"), ("sure", "not low")]:
        decision = only_decision(fact(confidence=raw))
        assert decision.reason is FactReason.LOW_CONFIDENCE
        assert says in decision.detail


def test_reason_not_for_web() -> None:
    decision = only_decision(fact(surfaces=["seller", "email"]))
    assert decision.reason is FactReason.NOT_FOR_WEB


def test_a_trusted_fact_keeps_the_surfaces_it_allows() -> None:
    trusted, _ = decide(fact(surfaces=["Web", "print", "linkedin", "email"]))
    assert trusted[0].surfaces == (Surface.WEB, Surface.EMAIL, Surface.PRINT)


@pytest.mark.parametrize(
    ("statement", "marker"),
    [
        ("Dymaxa raised {{7*7}} million", "'{{'"),
        ("Dymaxa raised a Series A {% if x %}", "'{%'"),
        ("Dymaxa raised ${7*7}", "'${'"),
        ("Dymaxa raised <%= 7*7 %>", "'<%'"),
        ("Dymaxa raised a {round}", "'{round}'"),
    ],
)
def test_reason_template_in_statement(statement: str, marker: str) -> None:
    decision = only_decision(fact(statement=statement))
    assert decision.reason is FactReason.TEMPLATE_IN_STATEMENT
    assert marker in decision.detail


@pytest.mark.parametrize(
    "statement",
    [
        "Dymaxa raised a Series A<script>alert(1)</script>",
        "Dymaxa raised a Series A &lt;b&gt;",
        "Dymaxa raised a [Series A](https://evil.example)",
        "Dymaxa raised a Series A';alert(1)//",
        "Dymaxa raised a **Series A**",
    ],
)
def test_reason_markup_in_statement(statement: str) -> None:
    assert only_decision(fact(statement=statement)).reason is FactReason.MARKUP_IN_STATEMENT


def test_a_statement_with_a_link_is_refused_and_plain_words_pass() -> None:
    for linked in ("Dymaxa (dymaxa.com) raised a Series A", "Dymaxa raised, see https://x.example"):
        decision = only_decision(fact(statement=linked))
        assert (decision.reason, decision.detail[:25]) == (
            FactReason.MARKUP_IN_STATEMENT,
            "statement holds url_in_te",
        )
    trusted, _ = decide(fact(statement="Dymaxa raised a €12.5m Series A (50% more than planned)"))
    assert [t.id for t in trusted] == ["f1"]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(corpus_lines("xss/IntrudersXSS.txt") + corpus_lines("xss/XSS_Polyglots.txt")))
def test_no_xss_payload_is_trusted_in_a_statement(payload: str) -> None:
    trusted, decisions = decide(fact(statement=f"Dymaxa raised a Series A {payload}"[:2000]))
    assert not trusted, payload
    assert decisions[0].reason in {FactReason.MARKUP_IN_STATEMENT, FactReason.TEMPLATE_IN_STATEMENT}


def test_reason_wrong_subject() -> None:
    # Another company as subject, even though the statement names us.
    decision = only_decision(fact(subject="Globex", statement="Globex and Dymaxa raised a Series A"))
    assert decision.reason is FactReason.WRONG_SUBJECT
    assert "'Globex'" in decision.detail
    # No subject, a news site, the statement names the account by its brand only.
    decision = only_decision(
        fact(subject=None, statement="Dymaxa raised a Series A", source_url="https://news.example.com/a"),
        name="Dymaxa Software B.V.",
    )
    assert decision.reason is FactReason.WRONG_SUBJECT
    assert decision.detail == (
        "no subject, and the statement names 'Dymaxa', not 'Dymaxa Software B.V.'; name it in full, give a "
        "subject, add 'Dymaxa' to its aliases, or source it from dymaxa.com"
    )


def test_reason_other_company() -> None:
    # "Dymaxanet" is not "Dymaxa", even on Dymaxa's own site.
    decision = only_decision(fact(subject=None, statement="Dymaxanet raised a Series A"))
    assert decision.reason is FactReason.OTHER_COMPANY
    assert decision.detail.startswith("the statement names 'Dymaxanet', another company than 'Dymaxa B.V.'")


def test_reason_duplicate() -> None:
    same_url = fact(id="f2", statement="Dymaxa closes its Series A", published_at="2026-11-27")
    same_statement = fact(
        id="f3", source_url="https://news.example.com/dymaxa", statement="DYMAXA raised a series A!"
    )
    trusted, decisions = decide(fact(), same_url, same_statement)
    assert [t.id for t in trusted] == ["f1"]
    assert [d.reason for d in decisions] == [FactReason.TRUSTED, FactReason.DUPLICATE, FactReason.DUPLICATE]
    assert "'f1'" in decisions[1].detail


def test_every_reason_code_has_its_test() -> None:
    tested = {name.removeprefix("test_reason_") for name in globals() if name.startswith("test_reason_")}
    assert tested == {reason.value for reason in FactReason}


# --- rules in detail ------------------------------------------------------------------------


def test_window_expiry_is_exclusive() -> None:
    hiring = fact(type="hiring", published_at="2026-10-15")  # hiring window: 45 days
    expires = date(2026, 11, 29)
    assert decide(hiring, as_of=expires - timedelta(days=1))[0][0].expires_at == expires
    assert decide(hiring, as_of=expires)[1][0].reason is FactReason.STALE


def test_published_today_is_not_future_but_tomorrow_is() -> None:
    assert decide(fact(published_at=AS_OF.isoformat()))[1][0].trusted
    tomorrow = (AS_OF + timedelta(days=1)).isoformat()
    assert decide(fact(published_at=tomorrow))[1][0].reason is FactReason.FUTURE_DATE


@pytest.mark.parametrize("raw", ["2026-11-26T09:30:00Z", "2026-11-26T23:30:00-08:00", "2026-11-26 09:30"])
def test_iso_datetimes_count_by_the_date_written(raw: str) -> None:
    trusted, _ = decide(fact(published_at=raw))
    assert trusted[0].published_at == date(2026, 11, 26)


def test_same_statement_on_another_date_is_another_fact() -> None:
    second = fact(id="f2", source_url="https://dymaxa.com/press/series-a-2", published_at="2026-11-20")
    assert len(decide(fact(), second)[0]) == 2


def test_subject_matching_ignores_legal_form_case_and_accents() -> None:
    for subject in ["Dymaxa B.V.", "DYMAXA", "Dymaxá", "dymaxa bv"]:
        assert decide(fact(subject=subject))[1][0].trusted, subject


def test_statement_names_the_account_when_there_is_no_subject() -> None:
    assert decide(fact(subject=None, statement="Today Dymaxa's team raised a Series A"))[1][0].trusted


def test_trusted_fields_are_short_plain_strings() -> None:
    messy = fact(round="  Series A  ", amount=12, notes="x" * 201, person="<b>Eve</b>", blank="  ")
    fields = decide(messy)[0][0].fields
    assert fields == {"round": "Series A"}


def test_hostile_facts_are_kept_out() -> None:
    hostile = account(
        fact(id="js", source_url="javascript:alert(document.cookie)"),
        fact(id="data", source_url="data:text/html,<script>alert(1)</script>"),
        fact(id="future", published_at="2027-01-01"),
        fact(id="markup", statement="<b>Dymaxa</b> raised a Series A"),
        fact(id="slot", source_url="https://dymaxa.com/a", round="<img src=x onerror=alert(1)>"),
    )
    trusted, decisions = decide_facts(hostile, CONFIRMED, POLICY, AS_OF)
    reasons = {d.fact_id: d.reason for d in decisions}
    assert reasons == {
        "js": FactReason.BAD_SOURCE_URL,
        "data": FactReason.BAD_SOURCE_URL,
        "future": FactReason.FUTURE_DATE,
        # A statement reaches the seller and the export as it is: markup in it is refused.
        "markup": FactReason.MARKUP_IN_STATEMENT,
        "slot": FactReason.TRUSTED,
    }
    assert trusted[0].fields == {}  # a markup-laden slot value is never offered to a pattern


def test_markup_in_the_account_name_makes_no_subject_match() -> None:
    hostile = account(fact(), name="<script>alert(1)</script> Dymaxa B.V.")
    trusted, decisions = decide_facts(hostile, CONFIRMED, POLICY, AS_OF)
    assert trusted == ()
    assert decisions[0].reason is FactReason.WRONG_SUBJECT


# --- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("Dymaxa B.V.", "Dymaxa"),
        ("Dymaxa BV", "Dymaxa"),
        ("Acme, Inc.", "Acme"),
        ("Foo GmbH & Co. KG", "Foo"),
        ("Kavex sp. z o.o.", "Kavex"),
        ("Kavex Sp. z o. o.", "Kavex"),
        ("Lumio Pty Ltd", "Lumio"),
        ("Nordvik A/S", "Nordvik"),
        ("Acme Revenue Corporation", "Acme Revenue"),
        ("AG", "AG"),  # only a legal form: kept, never emptied
        ("Dymaxa", "Dymaxa"),
    ],
)
def test_short_name(name: str, short: str) -> None:
    assert short_name(name) == short


LEGAL_FORMS = ["B.V.", "BV", "N.V.", "GmbH", "AG", "Ltd", "Limited", "LLC", "Inc.", "Inc", "Corp.", "S.A."]
LEGAL_FORMS += ["SAS", "S.L.", "AB", "ApS", "A/S", "Oy", "Lda", "sp. z o.o.", "plc", "Pty Ltd", "KG", "SE"]
LATIN = st.characters(min_codepoint=0x41, max_codepoint=0x17F, categories=("Lu", "Ll"))
WORDS = st.lists(st.text(LATIN, min_size=2, max_size=8), min_size=1, max_size=3).map(" ".join)


@given(st.text(), st.text())
def test_names_match_never_raises_and_is_symmetric(a: str, b: str) -> None:
    assert names_match(a, b) == names_match(b, a)
    assert isinstance(short_name(a), str)


@given(WORDS, st.sampled_from(LEGAL_FORMS), st.booleans())
def test_names_match_ignores_case_accents_and_legal_form(name: str, form: str, comma: bool) -> None:
    variant = f"{name.upper()}{',' if comma else ''} {form}"
    assert names_match(name, variant)
    assert names_match(name, name.casefold())
    assert not names_match(name, name + "x")


def test_names_match_accents() -> None:
    assert names_match("Dymaxá", "DYMAXA B.V.")
    assert names_match("Müller Consulting GmbH", "muller consulting")
    assert names_match("Ørsted A/S", "Orsted")
    assert names_match("IŞIK", "Işık Ltd")
    assert not names_match("", "")
    assert not names_match("Dymaxa", "Dymaxa Holding")


# --- properties over arbitrary facts --------------------------------------------------------

URLS = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda scheme, host, path: f"{scheme}://{host}/{path}",
        st.sampled_from(["https", "http", "HTTPS", "javascript", "ftp", "data"]),
        st.sampled_from(
            ["dymaxa.com", "127.0.0.1", "[::1]", "user@dymaxa.com", "localhost", "xn--bcher-kva.de"]
        ),
        st.text(max_size=10),
    ),
)
DATES = st.dates(min_value=date(1990, 1, 1), max_value=date(2100, 1, 1))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(URLS, DATES, st.sampled_from(["funding", "hiring", "rumour"])), max_size=6), DATES)
def test_decide_facts_never_trusts_unsafe_sources_or_future_dates(
    rows: list[tuple[str, date, str]], as_of: date
) -> None:
    facts = [
        fact(id=f"f{i}", source_url=u, published_at=d.isoformat(), type=t) for i, (u, d, t) in enumerate(rows)
    ]
    trusted, decisions = decide(*facts, as_of=as_of)
    assert [d.fact_id for d in decisions] == [f["id"] for f in facts]
    assert {t.id for t in trusted} == {d.fact_id for d in decisions if d.trusted}
    for item in trusted:
        assert item.source_url.startswith("https://")
        assert as_of >= item.published_at and as_of < item.expires_at


# --- the example population -----------------------------------------------------------------


def test_share_of_example_accounts_with_a_trusted_fact() -> None:
    report = read_accounts(EXAMPLES / "accounts.jsonl")
    as_of = dymaxa_as_of(dymaxa_record())
    with_fact = sum(
        bool(decide_facts(a, resolve_identity(a), example_policy(), as_of)[0]) for a in report.accounts
    )
    share = with_fact / len(report.accounts)
    print(
        f"{with_fact} of {len(report.accounts)} example accounts ({share:.1%}) have a trusted fact",
        file=sys.stderr,
    )
    assert len(report.accounts) == 1200
    assert 0.25 <= share <= 0.45


def test_example_first_line_parses_as_dymaxa() -> None:
    line = (EXAMPLES / "accounts.jsonl").read_text(encoding="utf-8").split("\n", 1)[0]
    assert parse_account_line(line, file="accounts.jsonl", line=1).account_id == "acct_dymaxa"
