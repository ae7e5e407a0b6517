"""The claim classes measured: false positives and false negatives per class, rerun with

    .venv/bin/python -m tests.precompute.claims.claim_corpus

False positives: a claim class refusing (a) anything the example campaign can publish (every
account of examples/accounts.jsonl through the offline composer on the day the file was made
for, every pattern filled on its own, every segment, default, CTA and proof line), or (b) a
good B2B line (claim_lines/good.txt). False negatives: a bad line (claim_lines/bad.txt) its
class does not refuse. tests/precompute/claims/test_claim_classes.py asserts all of them are zero.

Lines are checked as a provider would hand them over: a line citing facts is a personal draft
whose `valid_until` its time-relative words cap (`precompute.claims.support.recency_valid_until`),
a line citing none is segment copy, against Dymaxa on Sunday 29 November 2026 with the facts below.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from pathlib import Path

from precompute.assemble import Assembler, neutral_context
from precompute.checks import CheckFailure, CheckInput, build_vocabulary, run_checks
from precompute.claims.support import account_keys, recency_valid_until
from precompute.company_names import short_name
from precompute.context import GovernedContext, TrustedFact
from precompute.context_builder import build_context
from precompute.policy import build_policy
from precompute.providers.base import GenerationRequest, ZoneDraft
from precompute.providers.offline import OfflineComposer
from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today
from welcomemat.campaign.contract import load_campaign
from welcomemat.campaign.fact_types import FACT_TYPES
from welcomemat.campaign.sections import Confidence
from welcomemat.reasons import ClaimReason
from welcomemat.records.accounts import Account, read_accounts
from welcomemat.zones.contract import KNOWN_CHECKS, ZoneContract, load_zone_contracts

__all__ = [
    "AS_OF",
    "CLASSES",
    "CONTEXT",
    "FACTS",
    "ClaimLine",
    "Measured",
    "check_line",
    "claim_reasons",
    "every_pattern_alone",
    "example_assembler",
    "example_campaign_lines",
    "exit_for",
    "main",
    "measure",
    "read_lines",
]

LINES = Path(__file__).parent / "claim_lines"
AS_OF = date(2026, 11, 29)  # a Sunday: the Series A on Thursday the 26th is this ISO week's news
CLASSES = tuple(c.value for c in ClaimReason)
ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones=ZONES)
POLICY = build_policy(CAMPAIGN, None)
VOCABULARY = build_vocabulary(CAMPAIGN)
OTHERS = frozenset({"Globex", "Initech", "Kinkaquo B.V."})
# A zone that may cite any fact type, long enough for any line, with every check.
CONTRACT = ZoneContract(
    id="claim_lines",
    purpose="Any line of page copy.",
    max_words=60,
    max_chars=400,
    fact_types=frozenset(FACT_TYPES),
    requires_fact=False,
    checks=tuple(sorted(KNOWN_CHECKS - {"cta_allowed"})),
)


def _fact(
    fact_id: str, fact_type: str, published: date, statement: str, window: int = 90, **fields: str
) -> TrustedFact:
    return TrustedFact(
        id=fact_id,
        type=fact_type,
        statement=statement,
        source_url=f"https://dymaxa.com/news/{fact_id}",
        published_at=published,
        expires_at=published + timedelta(days=window),
        confidence=Confidence.HIGH,
        fields=fields,
    )


FACTS: tuple[TrustedFact, ...] = (
    _fact("dymaxa-series-a", "funding", date(2026, 11, 26), "Dymaxa raised a Series A", 30, round="Series A"),
    *(
        _fact(
            f"dymaxa-sdr-{n}",
            "hiring",
            date(2026, 11, 27) - timedelta(days=2 * n),
            "Dymaxa is hiring a Sales Development Representative in Amsterdam",
            45,
            role="Sales Development Representative",
            role_short="SDR",
            role_plural="SDRs",
            location="Amsterdam",
        )
        for n in range(1, 5)
    ),
    _fact(
        "dymaxa-berlin",
        "expansion",
        date(2026, 11, 10),
        "Dymaxa opened an office in Berlin",
        location="Berlin",
    ),
    _fact("dymaxa-munich", "expansion", date(2026, 11, 25), "Dymaxa plans to open an office in Munich"),
    _fact(
        "dymaxa-rotterdam", "expansion", AS_OF, "Dymaxa opened an office in Rotterdam", location="Rotterdam"
    ),
    _fact(
        "dymaxa-cro",
        "leadership",
        date(2026, 11, 20),
        "Dymaxa appointed Ana Lopes as Chief Revenue Officer",
        person="Ana Lopes",
        role="Chief Revenue Officer",
    ),
    _fact("dymaxa-insights", "product_launch", date(2026, 11, 28), "Dymaxa launched Dymaxa Insights", 60),
    _fact(
        "dymaxa-award", "product_launch", date(2026, 11, 24), "Dymaxa Insights won the Dutch SaaS Award", 60
    ),
    _fact("dymaxa-revenue", "expansion", date(2026, 11, 15), "Dymaxa doubled its annual recurring revenue"),
    _fact(
        "joram-post",
        "quote",
        date(2026, 11, 24),
        "Joram de Vries wrote a LinkedIn post about ramping new SDRs",
        30,
        person="Joram de Vries",
        medium="post",
        topic="ramping new SDRs",
    ),
    _fact(
        "joram-webinar",
        "crm_activity",
        date(2026, 11, 18),
        "Joram attended our webinar on SDR onboarding",
        activity="webinar attended",
        event="SDR onboarding webinar",
    ),
    _fact(
        "joram-demo", "crm_activity", date(2026, 11, 27), "Joram requested a demo", activity="demo request"
    ),
)

CONTEXT = build_context(
    Account.model_validate(
        {
            "account_id": "acct_dymaxa",
            "name": "Dymaxa B.V.",
            "domain": "dymaxa.com",
            "segment": "saas-mid",
            "country": "NL",
            "city": "Amsterdam",
            "contacts": [{"contact_id": "c_joram", "email": "joram@dymaxa.com", "first_name": "Joram"}],
        }
    ),
    CAMPAIGN,
    POLICY,
    AS_OF,
)
CONTEXT = GovernedContext(
    account=CONTEXT.account,
    short_name=CONTEXT.short_name,
    identity=CONTEXT.identity,
    facts=FACTS,
    decisions=(),
    firmographics=CONTEXT.firmographics,
    as_of=AS_OF,
)


@dataclass(frozen=True)
class ClaimLine:
    """One line of a corpus: its text, the facts it cites, and (bad lines) the class it makes."""

    text: str
    facts: tuple[str, ...]
    claim_class: str | None = None
    where: str = ""


def read_lines(name: str) -> list[ClaimLine]:
    """good.txt (`facts | text`) or bad.txt (`class | facts | text`); `#` lines are comments."""
    found = []
    for number, raw in enumerate((LINES / name).read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(" | ", 2 if name == "bad.txt" else 1)]
        claim_class = parts.pop(0) if name == "bad.txt" else None
        facts, text = parts
        cited = () if facts == "-" else tuple(facts.split(","))
        found.append(ClaimLine(text, cited, claim_class, f"{name}:{number}"))
    return found


def check_line(line: ClaimLine, context: GovernedContext = CONTEXT) -> tuple[CheckFailure, ...]:
    """Every check's failures for `line`, as a provider's draft (or, citing nothing, segment copy)."""
    cited = [f for f in context.facts if f.id in line.facts]
    personal = bool(line.facts)
    valid_until = recency_valid_until(line.text, account_keys(context), cited, context.as_of)
    draft = ZoneDraft(
        zone_id=CONTRACT.id, text=line.text, fact_ids=line.facts, confidence=0.9, valid_until=valid_until
    )
    data = CheckInput(
        draft=draft,
        contract=CONTRACT,
        context=context,
        campaign=CAMPAIGN,
        policy=POLICY,
        vocabulary=VOCABULARY,
        other_companies=OTHERS,
        personal=personal,
    )
    return run_checks(data)


def claim_reasons(failures: Sequence[CheckFailure]) -> set[str]:
    """The claim classes among `failures`."""
    return {f.reason for f in failures if f.reason in CLASSES}


# -- the example campaign ---------------------------------------------------------------------


def example_assembler(as_of: date, accounts: Sequence[Account]) -> Assembler:
    assembler = Assembler(
        campaign=CAMPAIGN,
        zones=ZONES,
        policy=POLICY,
        provider=OfflineComposer(),
        vocabulary=VOCABULARY,
        other_companies=frozenset(short_name(a.name) for a in accounts),
        now=datetime.combine(as_of, time(9), tzinfo=UTC),
    )
    assembler.prepare_fallbacks(neutral_context(CAMPAIGN, POLICY, assembler.as_of))
    return assembler


def every_pattern_alone(accounts: Sequence[Account], as_of: date) -> Iterator[tuple[str, ZoneDraft, Account]]:
    """Each of the campaign's patterns filled on its own, from the first account with a fact it can use."""
    for fact_type, by_zone in CAMPAIGN.patterns.items():
        for zone_id, patterns in by_zone.items():
            for pattern in patterns:
                campaign = CAMPAIGN.model_copy(update={"patterns": {fact_type: {zone_id: (pattern,)}}})
                for account in accounts:
                    context = build_context(account, campaign, POLICY, as_of)
                    if not context.facts_of_type(fact_type):
                        continue
                    request = GenerationRequest(
                        context=context,
                        campaign=campaign,
                        policy=POLICY,
                        page_id="landing",
                        zones=(ZONES[zone_id],),
                    )
                    draft = OfflineComposer().generate(request).drafts.get(zone_id)
                    if draft is not None:
                        yield f"patterns.{fact_type}.{zone_id}: {pattern}", draft, account
                        break


@cache
def example_campaign_lines() -> tuple[int, tuple[tuple[str, str, str], ...]]:
    """How many lines of the example campaign were checked, and each claim class refusal among them
    as (class, where, text)."""
    as_of = committed_today()
    accounts = read_accounts(REPO_ROOT / "examples" / "accounts.jsonl").accounts
    assembler = example_assembler(as_of, accounts)
    refused: list[tuple[str, str, str]] = []
    checked = 0
    for account in accounts:
        outcome = assembler.assemble(account, "input-hash")
        for zone in outcome.zones:
            checked += 1
            for reason in claim_reasons(zone.failures):
                text = zone.draft.text if zone.draft is not None else zone.content.text
                refused.append((reason, f"{account.account_id} {zone.content.zone_id}", text))
    for where, draft, account in every_pattern_alone(accounts, as_of):
        checked += 1
        context = build_context(account, CAMPAIGN, POLICY, as_of)
        line = ClaimLine(draft.text, draft.fact_ids)
        for reason in claim_reasons(check_line(line, context)):
            refused.append((reason, where, draft.text))
    copies = [c.text for c in CAMPAIGN.default_copy.values()]
    copies += [c.text for s in CAMPAIGN.segments.values() for c in s.zones.values()]
    copies += [c.label for c in CAMPAIGN.ctas] + [p.text for p in CAMPAIGN.proof_library]
    neutral = neutral_context(CAMPAIGN, POLICY, as_of)
    for text in copies:
        checked += 1
        for reason in claim_reasons(check_line(ClaimLine(text, ()), neutral)):
            refused.append((reason, "copy", text))
    return checked, tuple(refused)


# -- the counts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """Per class: refusals of good lines and of the example campaign (false positives), and bad
    lines of the class and those it let through (false negatives)."""

    good_refused: dict[str, list[str]]
    example_refused: dict[str, list[str]]
    bad: dict[str, int]
    bad_missed: dict[str, list[str]]
    good_lines: int
    example_lines: int


def measure() -> Measured:
    good = read_lines("good.txt")
    bad = read_lines("bad.txt")
    good_refused: dict[str, list[str]] = {c: [] for c in CLASSES}
    for line in good:
        for reason in claim_reasons(check_line(line)):
            good_refused[reason].append(f"{line.where}: {line.text}")
    example_lines, example = example_campaign_lines()
    example_refused: dict[str, list[str]] = {c: [] for c in CLASSES}
    for reason, where, text in example:
        example_refused[reason].append(f"{where}: {text}")
    counts = {c: 0 for c in CLASSES}
    missed: dict[str, list[str]] = {c: [] for c in CLASSES}
    for line in bad:
        assert line.claim_class in counts, line
        counts[line.claim_class] += 1
        if line.claim_class not in claim_reasons(check_line(line)):
            missed[line.claim_class].append(f"{line.where}: {line.text}")
    return Measured(good_refused, example_refused, counts, missed, len(good), example_lines)


def main(argv: Sequence[str] = ()) -> int:
    """Print the table; `-v` also prints every miss. Exit 1 when any count is not zero."""
    m = measure()
    print(f"{'class':<26}{'FP good':>9}{'FP example':>12}{'FN bad':>10}")
    for c in CLASSES:
        fn = f"{len(m.bad_missed[c])}/{m.bad[c]}"
        print(f"{c:<26}{len(m.good_refused[c]):>9}{len(m.example_refused[c]):>12}{fn:>10}")
    bad = sum(m.bad.values())
    print(f"({m.good_lines} good lines, {m.example_lines} example campaign lines, {bad} bad lines)")
    problems = [
        *(x for v in m.good_refused.values() for x in v),
        *(x for v in m.example_refused.values() for x in v),
    ]
    problems += [x for v in m.bad_missed.values() for x in v]
    return exit_for(problems, argv)


def exit_for(problems: Sequence[str], argv: Sequence[str]) -> int:
    """A measuring script's exit: 1 when anything is wrong (each printed with `-v`), else 0."""
    if "-v" in argv:
        for problem in problems:
            print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
