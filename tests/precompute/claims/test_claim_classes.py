"""The claim classes: each a deterministic check with its own reason code, that refuses the
fabrications a model writes (an invented quote, recency, achievement, relationship or plan,
being watched, flattery, a cold-mail opener) and lets true and general lines through.

The reference context is claim_corpus.CONTEXT: Dymaxa on Sunday 29 November 2026 with a
Series A of Thursday the 26th, four SDR roles, a new CRO, a LinkedIn post by Joram, his
webinar attendance and demo request in the CRM, and a few more. The corpora
(claim_lines/good.txt, bad.txt) and everything the example campaign can publish are measured
by `python -m tests.precompute.claims.claim_corpus`; here they must all come out at zero.
"""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precompute.checks import ALWAYS_RUN, CHECKS, CLAIM_CHECKS, CheckInput, run_checks
from precompute.claims.catalog import CLAIM_PATTERNS, find_claims
from precompute.claims.patterns import DAY, JUST, LAST_WEEK, NEW_ROLE, RECENT, THIS_WEEK, YESTERDAY
from precompute.claims.support import recency_valid_until
from precompute.claims.text import claim_sentences, opening_positions
from precompute.facts.recency import JUST_DAYS, NEW_ROLE_DAYS, RECENCY_KINDS, RECENT_DAYS, true_until
from precompute.providers.base import ZoneDraft
from tests.precompute.claims.claim_corpus import (
    AS_OF,
    CAMPAIGN,
    CONTEXT,
    CONTRACT,
    FACTS,
    OTHERS,
    POLICY,
    VOCABULARY,
    ClaimLine,
    check_line,
    claim_reasons,
    example_campaign_lines,
    read_lines,
)
from welcomemat.campaign.openers import DEFAULT_BANNED_OPENERS
from welcomemat.reasons import ClaimReason
from welcomemat.zones.contract import KNOWN_CHECKS

SERIES_A = ("dymaxa-series-a",)
ALL_FACTS = tuple(f.id for f in FACTS)
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def refused(text: str, *facts: str) -> set[str]:
    """The claim classes that refuse `text` citing `facts` (none: segment copy)."""
    return claim_reasons(check_line(ClaimLine(text, facts)))


def refused_with(text: str, facts: tuple[str, ...], valid_until: date | None) -> set[str]:
    """As `refused`, with the draft's own `valid_until` (a provider that did not cap it: None)."""
    draft = ZoneDraft(zone_id=CONTRACT.id, text=text, fact_ids=facts, confidence=0.9, valid_until=valid_until)
    data = CheckInput(
        draft=draft,
        contract=CONTRACT,
        context=CONTEXT,
        campaign=CAMPAIGN,
        policy=POLICY,
        vocabulary=VOCABULARY,
        other_companies=OTHERS,
    )
    return claim_reasons(run_checks(data))


# -- the registry -----------------------------------------------------------------------------


def test_every_class_is_a_check_of_its_own_that_no_zone_can_switch_off() -> None:
    assert set(CLAIM_CHECKS.values()) == set(ClaimReason) - {ClaimReason.BANNED_OPENER}
    assert set(CLAIM_CHECKS) <= KNOWN_CHECKS & set(CHECKS) & ALWAYS_RUN
    assert "banned_phrases" in ALWAYS_RUN  # class 8: banned openers, shipped and added
    assert set(CLAIM_PATTERNS) == set(CLAIM_CHECKS.values())
    for name, reason in CLAIM_CHECKS.items():
        failure = CHECKS[name](
            CheckInput(
                draft=ZoneDraft(zone_id=CONTRACT.id, text="Amazing, award-winning work!", confidence=0.9),
                contract=CONTRACT,
                context=CONTEXT,
                campaign=CAMPAIGN,
                policy=POLICY,
                vocabulary=VOCABULARY,
            )
        )
        if reason in (ClaimReason.FLATTERY, ClaimReason.UNSUPPORTED_ACHIEVEMENT):
            assert failure is not None and (failure.check, failure.reason) == (name, reason.value)


def test_every_phrasing_of_the_catalog_is_refused_by_a_line_of_the_bad_corpus() -> None:
    lines = read_lines("bad.txt")
    used = {id(hit.pattern) for line in lines for hit in find_claims(line.text, ("dymaxa",))}
    unused = [
        f"{reason.value}/{p.kind}: {p.regex.pattern[:80]}"
        for reason, patterns in CLAIM_PATTERNS.items()
        for p in patterns
        if id(p) not in used
    ]
    assert unused == [], "add a line to claim_lines/bad.txt for each"


# -- the corpora and the example campaign -----------------------------------------------------

GOOD = read_lines("good.txt")
BAD = read_lines("bad.txt")


def test_the_corpora_are_big_enough() -> None:
    assert len(GOOD) >= 60
    per_class = {c.value: sum(1 for line in BAD if line.claim_class == c.value) for c in ClaimReason}
    assert min(per_class.values()) >= 15, per_class


@pytest.mark.parametrize("line", GOOD, ids=lambda line: line.where)
def test_no_good_line_is_refused_by_a_claim_class(line: ClaimLine) -> None:
    assert refused(line.text, *line.facts) == set(), line.text


@pytest.mark.parametrize("line", BAD, ids=lambda line: line.where)
def test_every_bad_line_is_refused_by_its_class(line: ClaimLine) -> None:
    assert line.claim_class in refused(line.text, *line.facts), line.text


def test_nothing_the_example_campaign_can_publish_is_refused_by_a_claim_class() -> None:
    checked, refusals = example_campaign_lines()
    assert checked > 5_000  # every zone of every example account, every pattern alone, every copy
    assert refusals == ()


# -- 1. invented quotes -----------------------------------------------------------------------


def test_a_quote_needs_a_cited_quote_fact_naming_its_medium() -> None:
    line = "Loved your LinkedIn post about ramping new SDRs, Joram."
    assert refused(line, *SERIES_A) == {"invented_quote"}
    assert refused(line, "joram-post") == set()
    assert refused("Loved your podcast about ramping new SDRs, Joram.", "joram-post") == {"invented_quote"}
    failure = next(
        f for f in check_line(ClaimLine("You wrote that ramp is slow.", SERIES_A)) if f.check == "quotes"
    )
    assert failure.reason == "invented_quote" and "no cited quote fact" in failure.detail


@pytest.mark.parametrize(
    "text",
    [
        "We'd love your take on what slows new reps down.",
        "Share your post with the team.",
        "Dymaxa recently posted four SDR roles in Amsterdam.",
        "Your talk tracks, your call library, your book of business.",
        "If you've written about ramp, send it our way.",
    ],
)
def test_asking_for_words_or_posting_jobs_is_no_quote(text: str) -> None:
    assert "invented_quote" not in refused(text, *SERIES_A)


# -- 2. recency -------------------------------------------------------------------------------

THURSDAY, SUNDAY, MONDAY = date(2026, 11, 26), date(2026, 11, 29), date(2026, 11, 30)


@pytest.mark.parametrize(
    ("kind", "published", "as_of", "until"),
    [
        (DAY, SUNDAY, SUNDAY, MONDAY),
        (DAY, THURSDAY, SUNDAY, None),
        (YESTERDAY, date(2026, 11, 28), SUNDAY, MONDAY),
        (YESTERDAY, THURSDAY, SUNDAY, None),
        (THIS_WEEK, THURSDAY, SUNDAY, MONDAY),  # same ISO week, true until it ends
        (THIS_WEEK, THURSDAY, MONDAY, None),  # Monday starts another week
        (THIS_WEEK, date(2026, 12, 28), date(2027, 1, 3), date(2027, 1, 4)),  # ISO week 53 of 2026
        (LAST_WEEK, THURSDAY, date(2026, 12, 2), date(2026, 12, 7)),
        (LAST_WEEK, THURSDAY, SUNDAY, None),
        (JUST, THURSDAY, SUNDAY, THURSDAY + timedelta(days=JUST_DAYS + 1)),
        (JUST, THURSDAY, THURSDAY + timedelta(days=JUST_DAYS + 1), None),
        (
            RECENT,
            THURSDAY,
            THURSDAY + timedelta(days=RECENT_DAYS),
            THURSDAY + timedelta(days=RECENT_DAYS + 1),
        ),
        (RECENT, THURSDAY, THURSDAY + timedelta(days=RECENT_DAYS + 1), None),
        (
            NEW_ROLE,
            THURSDAY,
            THURSDAY + timedelta(days=NEW_ROLE_DAYS),
            THURSDAY + timedelta(NEW_ROLE_DAYS + 1),
        ),
        (RECENT, MONDAY, SUNDAY, None),  # a fact from after as_of makes nothing recent
    ],
)
def test_each_recency_word_has_its_window_seen_from_as_of(
    kind: str, published: date, as_of: date, until: date | None
) -> None:
    assert true_until(kind, published, as_of) == until
    with pytest.raises(KeyError):
        true_until("soonish", published, as_of)
    assert kind in RECENCY_KINDS


@given(
    published=st.dates(date(2020, 1, 1), date(2030, 12, 31)),
    age=st.integers(0, 400),
    kind=st.sampled_from(sorted(RECENCY_KINDS)),
)
def test_a_recency_word_true_today_stays_true_until_its_end_and_not_a_day_more(
    published: date, age: int, kind: str
) -> None:
    as_of = published + timedelta(days=age)
    until = true_until(kind, published, as_of)
    if until is None:
        return
    assert until > as_of
    last = until - timedelta(days=1)
    assert true_until(kind, published, last) is not None  # still true on the last day served
    assert true_until(kind, published, until) in (None, until) or kind in (THIS_WEEK, LAST_WEEK)


def test_as_of_is_the_context_s_day_never_the_clock() -> None:
    line = "Dymaxa opened its Rotterdam office today."
    assert refused(line, "dymaxa-rotterdam") == set()  # published on AS_OF
    later = dataclasses.replace(CONTEXT, as_of=AS_OF + timedelta(days=1))
    assert "unsupported_recency" in claim_reasons(check_line(ClaimLine(line, ("dymaxa-rotterdam",)), later))


def test_a_recency_word_must_stay_true_every_day_the_zone_may_be_served() -> None:
    line = "Dymaxa recently posted four SDR roles in Amsterdam."
    sdrs = tuple(f"dymaxa-sdr-{n}" for n in range(1, 5))
    # The roles expire after 45 days; "recently" is over after 30: only a capped draft passes.
    assert refused_with(line, sdrs, None) == {"unsupported_recency"}
    capped = recency_valid_until(line, ("dymaxa",), [f for f in FACTS if f.id in sdrs], AS_OF)
    assert capped == date(2026, 11, 25) + timedelta(days=RECENT_DAYS + 1)
    assert refused_with(line, sdrs, capped) == set()
    assert refused_with(line, sdrs, capped + timedelta(days=1)) == {"unsupported_recency"}


def test_a_new_role_needs_a_recent_role_change_fact() -> None:
    line = "Congrats on the new role, Ana Lopes."
    assert refused(line, "dymaxa-cro") == set()
    assert refused(line, *SERIES_A) == {"unsupported_recency"}
    old = dataclasses.replace(CONTEXT, as_of=date(2026, 11, 20) + timedelta(days=NEW_ROLE_DAYS + 1))
    assert "unsupported_recency" in claim_reasons(check_line(ClaimLine(line, ("dymaxa-cro",)), old))


@pytest.mark.parametrize(
    "text",
    [
        "Book a 20-minute ramp review with our team today.",
        "Start ramping your next hire this week.",
        "Teams that recently raised a round use Acme Revenue to ramp new sellers.",
        "Recently hired SDRs ramp faster with real calls.",
        "Reps who just started need real calls, not slides.",
        "Today's buyers expect new reps to know the product cold.",
        "Help new managers step into leadership faster.",
        "Your new SDRs deserve a plan for their first month.",
    ],
)
def test_calls_to_action_and_generic_lines_are_no_recency_claims(text: str) -> None:
    assert "unsupported_recency" not in refused(text)


# -- 3. achievements --------------------------------------------------------------------------


def test_an_achievement_must_be_what_a_cited_statement_says() -> None:
    assert refused("Award-winning analytics, Dymaxa.", "dymaxa-award") == set()
    assert refused("Award-winning analytics, Dymaxa.", "dymaxa-revenue") == {"unsupported_achievement"}
    assert refused("Dymaxa doubled its annual recurring revenue.", "dymaxa-revenue") == set()
    assert refused("Dymaxa tripled its annual recurring revenue.", "dymaxa-revenue") == {
        "unsupported_achievement"
    }


@pytest.mark.parametrize(
    "text",
    [
        "Doubling the team is hard without a ramp plan.",
        "Tips for doubling your SDR team without doubling ramp time.",
        "The fastest way to get new reps to quota.",
        "Your top performers' habits, in everyone's playbook.",
        "See what your best reps do differently.",
    ],
)
def test_the_topic_of_growth_is_no_achievement(text: str) -> None:
    assert "unsupported_achievement" not in refused(text)


# -- 4. relationships -------------------------------------------------------------------------


def test_a_relationship_needs_a_crm_fact_that_states_that_relationship() -> None:
    assert refused("Thanks for joining our webinar on SDR onboarding, Joram.", "joram-webinar") == set()
    assert refused("Thanks for joining our webinar on SDR onboarding, Joram.", *SERIES_A) == {
        "unsupported_relationship"
    }
    assert refused("Great meeting you last week, Joram.", "joram-demo") >= {"unsupported_relationship"}
    assert refused("Following up on your demo request.", "joram-demo") == set()
    # A research fact never backs one, whatever it says.
    assert refused("Great meeting you at the summit.", "dymaxa-series-a", "dymaxa-cro") == {
        "unsupported_relationship"
    }


@pytest.mark.parametrize(
    "text",
    [
        "Book your demo",
        "Join us at our webinar on SDR ramp.",
        "Our conversation intelligence captures every call.",
        "Our call library gives new reps real examples.",
        "Treat new reps as partners in their own ramp.",
        "If you requested a demo, we will be in touch.",
        "Our team will follow up with a ramp plan.",
    ],
)
def test_invitations_and_product_words_are_no_relationship(text: str) -> None:
    assert "unsupported_relationship" not in refused(text)


# -- 5. intent --------------------------------------------------------------------------------


def test_a_plan_must_be_stated_by_a_cited_fact() -> None:
    assert refused("Dymaxa plans to open an office in Munich.", "dymaxa-munich") == set()
    assert refused("Dymaxa is looking to open an office in Munich.", "dymaxa-munich") == set()
    assert refused("Dymaxa plans to open an office in Munich.", *SERIES_A) >= {"unsupported_intent"}
    sdrs = tuple(f"dymaxa-sdr-{n}" for n in range(1, 5))
    assert refused("Dymaxa is looking to hire four SDRs in Amsterdam.", *sdrs) == set()  # a job post says so
    assert refused("Dymaxa is looking to double its sales team.", *sdrs) == {"unsupported_intent"}


@pytest.mark.parametrize(
    "text",
    [
        "If you plan to double the sales team, plan the ramp first.",
        "Planning to double the sales team? Plan the ramp first.",
        "Slow ramp? That is about to change.",
        "Everyone who wants to ramp faster starts here.",
        "We're looking to hear from sales leaders like you.",
    ],
)
def test_conditions_questions_and_our_own_plans_are_no_claim_about_the_account(text: str) -> None:
    assert "unsupported_intent" not in refused(text)


# -- 6, 7. tracking and flattery: never backed ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("We saw you checking out our pricing page.", "tracking_disclosure"),
        ("Someone at Dymaxa has been comparing our pricing.", "tracking_disclosure"),
        ("Amazing work on the Series A!", "flattery"),
        ("You're clearly crushing it, Dymaxa.", "flattery"),
    ],
)
def test_being_watched_and_flattery_are_refused_whatever_the_facts(text: str, reason: str) -> None:
    assert reason in refused(text, *ALL_FACTS)


@pytest.mark.parametrize(
    "text",
    [
        "Once you've read our playbook, book a ramp review.",
        "While you're on our site, take the product tour.",
        "Thanks for scanning: the rest of the story is below.",
        "Our data shows new SDRs ramp faster with a call library.",
    ],
)
def test_advice_about_our_site_is_no_tracking(text: str) -> None:
    assert "tracking_disclosure" not in refused(text)


# -- the text as the classes read it ----------------------------------------------------------


def test_sentences_fold_words_name_the_account_and_mark_questions() -> None:
    sentences = claim_sentences(
        "Dymaxa’s #1? YOU'VE grown 300%… Hi — acme robotics", ("dymaxa", "acme robotics")
    )
    assert [s.words for s in sentences] == [
        " thisaccount s number 1 ",
        " you ve grown 300 percent ",
        " hi ",
        " thisaccount ",
    ]
    assert [s.question for s in sentences] == [True, False, False, False]
    assert claim_sentences("No. 1 in Benelux")[0].words == " number 1 in benelux "


def test_openers_may_stand_at_any_sentence_start_or_after_a_greeting() -> None:
    assert opening_positions("Hi Joram, hope you're well. Quick question") == (
        " hi joram hope you re well ",
        " joram hope you re well ",
        " hope you re well ",
        " you re well ",
        " re well ",
        " quick question ",
    )


# -- generated phrasings: templates x synonyms x casing x punctuation --------------------------

CASINGS = st.sampled_from([str, str.lower, str.upper, str.title, str.capitalize])
APOSTROPHES = st.sampled_from(["'", "\u2019"])
SEPARATORS = st.sampled_from([" ", "  ", " \u00a0", ", "])
ENDINGS = st.sampled_from(["", ".", "!", "!!", "...", " :)"])


@st.composite
def phrasing(draw: st.DrawFn, template: str, slots: dict[str, list[str]]) -> str:
    """`template` with each `{slot}` drawn from its synonyms, in a drawn casing, with drawn
    separators between words, apostrophes and ending."""
    text = template.format_map({k: draw(st.sampled_from(v)) for k, v in slots.items()})
    words = text.split(" ")
    joined = words[0] + "".join(draw(SEPARATORS) + w for w in words[1:])
    cased = draw(CASINGS)(joined)
    return cased.replace("'", draw(APOSTROPHES)).replace("\u2019", draw(APOSTROPHES)) + draw(ENDINGS)


NAMES = ["Dymaxa", "the Dymaxa team", "Joram"]
GENERATED: dict[str, tuple[tuple[str, ...], st.SearchStrategy[str]]] = {
    "invented_quote": (
        SERIES_A,
        st.one_of(
            phrasing(
                "{praise} your {mod}{medium} about {topic}",
                {
                    "praise": ["Loved", "Enjoyed", "Really enjoyed", "Devoured", "Bookmarked", "I read"],
                    "mod": ["", "recent ", "latest ", "LinkedIn "],
                    "medium": ["post", "article", "podcast", "talk", "interview", "keynote", "newsletter"],
                    "topic": ["SDR ramp", "hiring", "onboarding"],
                },
            ),
            phrasing(
                "{who} {said} that ramp is {what}",
                {
                    "who": ["You", "Your team", "Dymaxa's founders", "You've", "Your CEO"],
                    "said": ["said", "wrote", "mentioned", "posted", "told us", "shared", "argued"],
                    "what": ["slow", "your biggest problem", "hard"],
                },
            ),
        ),
    ),
    "unsupported_recency": (
        SERIES_A,
        st.one_of(
            phrasing(
                "Congrats on {your} new {role}, {name}",
                {"your": ["your", "the"], "role": ["role", "position", "job"], "name": NAMES},
            ),
            phrasing(
                "{name} announced its Series A {when}",
                {
                    "name": ["Dymaxa", "The Dymaxa team"],
                    "when": ["this morning", "this afternoon", "tonight", "today", "last week", "yesterday"],
                },
            ),
        ),
    ),
    "unsupported_achievement": (
        SERIES_A,
        st.one_of(
            phrasing(
                "{name} is {claim} {noun}",
                {
                    "name": ["Dymaxa", "Your team"],
                    "claim": [
                        "an award-winning",
                        "the #1",
                        "the number one",
                        "the market-leading",
                        "a top-10",
                    ],
                    "noun": ["team", "SaaS company", "analytics platform"],
                },
            ),
            phrasing(
                "{name} {did} {what} {when}",
                {
                    "name": ["Dymaxa", "Your team"],
                    "did": ["doubled", "tripled", "grew 3x", "grew 300%", "is doubling"],
                    "what": ["its revenue", "its customer base", "ARR"],
                    "when": ["", "this year", "in a year"],
                },
            ),
        ),
    ),
    "unsupported_relationship": (
        SERIES_A,
        st.one_of(
            phrasing(
                "{great} {meeting} you {where}",
                {
                    "great": ["Great", "Good", "Lovely", "Nice", "A pleasure"],
                    "meeting": ["meeting", "speaking with", "chatting with", "talking to"],
                    "where": ["at the summit", "last week", "on Tuesday", "at SaaStr"],
                },
            ),
            phrasing(
                "{follow} {our} {call}",
                {
                    "follow": ["Following up on", "Circling back on", "As promised after"],
                    "our": ["our", "our recent", "our last"],
                    "call": ["call", "meeting", "chat", "conversation"],
                },
            ),
            phrasing(
                "Thanks for {joining} our {event}",
                {
                    "joining": ["attending", "joining"],
                    "event": ["webinar", "workshop", "event", "roundtable"],
                },
            ),
        ),
    ),
    "unsupported_intent": (
        SERIES_A,
        phrasing(
            "{name} {plans} {double} {what}",
            {
                "name": ["Dymaxa", "Your team", "You're"],
                "plans": [
                    "plans to",
                    "is planning to",
                    "aims to",
                    "is looking to",
                    "intends to",
                    "is about to",
                ],
                "double": ["double", "triple", "expand", "grow"],
                "what": ["its sales team", "into Germany", "headcount"],
            },
        ),
    ),
    "tracking_disclosure": (
        ALL_FACTS,
        phrasing(
            "{we} {saw} {you} {browsing} our {page}",
            {
                "we": ["We", "I", "Our team"],
                "saw": ["saw", "noticed", "spotted", "could see"],
                "you": ["you", "your team", "someone from Dymaxa", "a few of you"],
                "browsing": ["on", "visiting", "browsing", "checking out", "reading"],
                "page": ["pricing page", "website", "blog", "case studies", "integrations page"],
            },
        ),
    ),
    "flattery": (
        ALL_FACTS,
        st.one_of(
            phrasing(
                "{amazing} {work}, {name}",
                {
                    "amazing": [
                        "Amazing",
                        "Impressive",
                        "Incredible",
                        "Stellar",
                        "Phenomenal",
                        "Outstanding",
                    ],
                    "work": ["work", "job", "round", "progress", "team"],
                    "name": NAMES,
                },
            ),
            phrasing(
                "{you} {crushing}",
                {
                    "you": ["You're", "Dymaxa is", "Your team is"],
                    "crushing": ["crushing it", "killing it", "on fire", "world-class", "a rockstar team"],
                },
            ),
        ),
    ),
    "banned_opener": (
        SERIES_A,
        phrasing(
            "{greeting}{opener}{sep}congrats on the Series A",
            {
                "greeting": ["", "Hi Joram, ", "Hello! ", "Dear Joram, ", "Good morning team, "],
                "opener": list(DEFAULT_BANNED_OPENERS),
                "sep": [", ", ". ", ": ", " - "],
            },
        ),
    ),
}


@pytest.mark.parametrize("claim_class", sorted(GENERATED))
def test_generated_phrasings_are_refused_by_their_class(claim_class: str) -> None:
    facts, strategy = GENERATED[claim_class]

    @PROPERTY
    @given(text=strategy)
    def refused_by_its_class(text: str) -> None:
        assert claim_class in refused(text, *facts), text

    refused_by_its_class()


@PROPERTY
@given(
    line=st.sampled_from(GOOD),
    casing=st.sampled_from([str, str.lower, str.upper, str.capitalize]),
    apostrophe=APOSTROPHES,
    spaces=st.sampled_from([" ", "  ", "\u00a0"]),
)
def test_good_lines_stay_good_in_any_casing_spacing_and_apostrophe(
    line: ClaimLine, casing: object, apostrophe: str, spaces: str
) -> None:
    assert callable(casing)
    text = casing(line.text).replace("'", apostrophe).replace(" ", spaces)
    assert refused(text, *line.facts) == set(), text
