"""`specific_used`: a line is personal only when it uses one of its cited facts' specifics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precompute.context import TrustedFact
from precompute.specific_use import SpecificUse, specific_used
from welcomemat.campaign.sections import Confidence

AS_OF = date(2026, 11, 30)  # a Monday
NAMES = ("Dymaxa B.V.", "Dymaxa", "Dymaxa Labs")


def fact(
    statement: str,
    fact_type: str = "funding",
    published: date = date(2026, 11, 26),  # a Thursday
    fact_id: str = "f1",
    **fields: str,
) -> TrustedFact:
    return TrustedFact(
        id=fact_id,
        type=fact_type,
        statement=statement,
        source_url="https://dymaxa.com/press/news",
        published_at=published,
        expires_at=published + timedelta(days=30),
        confidence=Confidence.HIGH,
        fields=fields,
    )


SERIES_A = fact("Dymaxa raised a Series A led by Northzone", round="Series A")
SDRS = fact(
    "Dymaxa is hiring four SDRs in Amsterdam",
    "hiring",
    fact_id="h1",
    role="Sales Development Representative",
    role_plural="SDRs",
    location="Amsterdam",
)
LEADER = fact(
    "Dymaxa appointed Ines de Vries as Chief Revenue Officer",
    "leadership",
    fact_id="l1",
    person="Ines de Vries",
)


def used(text: str, *facts: TrustedFact) -> SpecificUse | None:
    return specific_used(text, facts, account_names=NAMES, as_of=AS_OF)


@pytest.mark.parametrize(
    ("text", "facts", "kind"),
    [
        ("Congrats on the Series A, Dymaxa", (SERIES_A,), "field"),  # a field value
        ("congrats on the series a", (SERIES_A,), "field"),  # folded
        ("Hiring SDRs? We ramp every one.", (SDRS,), "field"),  # a {role_plural} value
        ("Your new Sales Development Representatives, ramped fast", (SDRS,), "field"),  # its plural
        ("Growing the team in Amsterdam?", (SDRS,), "field"),  # a location
        ("Onboarding 4 new reps is a lot of work.", (SDRS,), "number"),  # a number of the statement
        ("Congrats on the round on Thursday", (SERIES_A,), "date"),  # the publish date's weekday
        ("Congrats on the round in November", (SERIES_A,), "date"),  # its month
        ("Northzone backed a good team", (SERIES_A,), "name"),  # a name of the statement
        ("Welcome aboard, Ines", (LEADER,), "name"),
        ("A new Chief Revenue Officer usually means new sellers", (LEADER,), "name"),
        ("Nothing to see. Congrats on the Series A", (LEADER, SERIES_A), "field"),  # any cited fact
    ],
)
def test_a_specific_of_a_cited_fact_makes_a_line_personal(
    text: str, facts: tuple[TrustedFact, ...], kind: str
) -> None:
    found = used(text, *facts)
    assert found is not None and found.kind == kind, found


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("New funding usually means new sellers. Acme Revenue gets each one productive.", (SERIES_A,)),
        ("Congrats on the funding, Dymaxa", (SERIES_A,)),  # the type's keyword and the account's name
        ("Dymaxa B.V., Dymaxa Labs: congrats", (SERIES_A,)),  # the account's names and aliases
        ("Congrats on the Series B", (SERIES_A,)),  # a round, but not this one
        ("A series of good news", (SERIES_A,)),  # the round's word alone
        ("Book a 20-minute ramp review", (SERIES_A, SDRS)),  # a CTA label
        ("Teams cut ramp time from 90 to 45 days with Acme Revenue.", (SDRS,)),  # library proof
        ("A new revenue leader usually means new sellers.", (LEADER,)),
        ("Congrats on the round this month", (SERIES_A,)),  # vague dates fit every fact of a season
        ("Congrats on the round on Friday", (SERIES_A,)),  # not its weekday
        ("Congrats on the round in 2026", (SERIES_A,)),  # a bare year of the publish date
        ("Congrats on the Series A", ()),  # cites nothing: library copy
    ],
)
def test_generic_lines_and_the_account_name_are_not_specific(
    text: str, facts: tuple[TrustedFact, ...]
) -> None:
    assert used(text, *facts) is None


def test_today_and_yesterday_count_only_on_their_day() -> None:
    today = fact("Dymaxa raised a round", published=AS_OF)
    assert used("Congrats on the round today", today) == SpecificUse("f1", "date", "today")
    assert used("Congrats on the round yesterday", today) is None
    assert used("Congrats on the round yesterday", fact("x", published=AS_OF - timedelta(days=1))) is not None
    # Without the day the text is for, a relative word is never a specific.
    assert specific_used("Congrats on the round today", (today,)) is None


def test_a_field_holding_only_the_account_name_is_not_a_specific() -> None:
    assert used("Congrats, Dymaxa", fact("Dymaxa raised a round", company="Dymaxa B.V.")) is None


def test_the_first_specific_found_names_its_fact() -> None:
    assert used("Congrats on the Series A in Amsterdam", SDRS, SERIES_A) == SpecificUse(
        "h1", "field", "location: Amsterdam"
    )


# -- properties ---------------------------------------------------------------------------------

GENERIC = (
    "congrats on the funding new sellers hiring team growth round office launch leader welcome "
    "usually means ramp weeks not quarters your best rep playbook every hire productive"
).split()
ACCOUNT_WORDS = ("Dymaxa", "Dymaxa B.V.", "DYMAXA", "dymaxa's")
SPECIFIC_VALUES = ("Series A", "Series B", "Seed", "Northzone", "Amsterdam", "Ines de Vries", "SDRs", "Oslo")

facts_strategy = st.builds(
    fact,
    statement=st.builds(
        lambda value, tail: f"Dymaxa {tail} {value}",
        st.sampled_from(SPECIFIC_VALUES),
        st.sampled_from(("raised a", "is hiring in", "appointed", "opened an office in")),
    ),
    fact_type=st.sampled_from(("funding", "hiring", "expansion", "leadership")),
    published=st.dates(min_value=date(2026, 1, 1), max_value=AS_OF),
    round=st.sampled_from(SPECIFIC_VALUES),
)


@given(
    facts=st.lists(facts_strategy, min_size=1, max_size=3),
    words=st.lists(st.sampled_from((*GENERIC, *ACCOUNT_WORDS)), min_size=1, max_size=20),
    punctuation=st.sampled_from((" ", ", ", ". ", "! ", "? ")),
)
def test_the_account_name_and_generic_words_are_never_specific(
    facts: list[TrustedFact], words: list[str], punctuation: str
) -> None:
    text = punctuation.join(words)
    assert specific_used(text, facts, account_names=NAMES, as_of=AS_OF) is None


@given(
    facts=st.lists(facts_strategy, min_size=1, max_size=3),
    before=st.lists(st.sampled_from((*GENERIC, *ACCOUNT_WORDS)), max_size=8),
    after=st.lists(st.sampled_from(GENERIC), max_size=8),
    pick=st.integers(min_value=0),
    case=st.sampled_from((str, str.upper, str.lower, str.title)),
)
def test_a_field_value_of_a_cited_fact_is_always_specific(
    facts: list[TrustedFact],
    before: list[str],
    after: list[str],
    pick: int,
    case: Callable[[str], str],
) -> None:
    chosen = facts[pick % len(facts)]
    value = chosen.fields["round"]
    text = " ".join([*before, case(value), *after])
    found = specific_used(text, facts, account_names=NAMES, as_of=AS_OF)
    assert found is not None
