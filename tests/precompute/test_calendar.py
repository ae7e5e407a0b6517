"""Any day of any year: the example's promise holds, and what a page says stays true until `valid_until`.

The demo's account is generated for the day precompute runs (`examples/make_accounts.py`),
so its page must be the same kind of page on every weekday, at month and year ends and on
leap days: the Series A opens it, dated by a phrase that is true on the day it is
composed and on every day up to the zone set's `valid_until`, and on none after it that
would make it false. The whole pipeline from the account record is exercised (trust policy,
the offline composer, the checks, the ladder), in process: no Redis, no clock.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from precompute.assemble import Assembler
from precompute.company_names import short_name
from precompute.context_builder import build_context
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.specifics import build_vocabulary
from tests.corpora import REPO_ROOT
from tests.example_accounts import generator
from tests.precompute.test_date_phrases import expected_phrase, reads_true
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.zoneset import Rung, ZoneSet

ZONES = load_zone_contracts(REPO_ROOT / "zones")
CAMPAIGN = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones=ZONES)
POLICY = build_policy(CAMPAIGN, None)

INSTANTS = st.datetimes(
    min_value=datetime(2001, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
)


def zone_set_at(now: datetime, account: Account) -> ZoneSet:
    assembler = Assembler(
        campaign=CAMPAIGN,
        zones=ZONES,
        policy=POLICY,
        provider=OfflineComposer(),
        vocabulary=build_vocabulary(CAMPAIGN),
        other_companies=frozenset({short_name(account.name).casefold()}),
        now=now,
    )
    neutral = Account(account_id="segment-copy", name="acme", domain="example.com", segment="saas-mid")
    assembler.prepare_fallbacks(build_context(neutral, CAMPAIGN, POLICY, assembler.as_of))
    return assembler.assemble(account, "input-hash").zone_set


def dymaxa_for(day: date) -> Account:
    return Account.model_validate(generator().dymaxa(day))


FUNDING_WINDOW = timedelta(days=CAMPAIGN.signal_windows_days["funding"])


def expected_when(announced: date, today: date) -> str:
    """How the page dates the round (an independent reading of precompute.date_phrases)."""
    return expected_phrase(announced, today, FUNDING_WINDOW.days)


def headline(zone_set: ZoneSet) -> tuple[str, Rung]:
    zone = next(z for z in zone_set.zones if z.zone_id == "hero_headline")
    return zone.text, zone.rung


@settings(max_examples=150, deadline=None)
@given(now=INSTANTS)
@example(now=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))  # a Tuesday: the hiring fact used to win
@example(now=datetime(2026, 12, 3, 9, 0, tzinfo=UTC))  # a Thursday: the round is a week old
@example(now=datetime(2028, 2, 29, 12, 0, tzinfo=UTC))  # a leap day
@example(now=datetime(2026, 12, 31, 23, 30, tzinfo=UTC))  # the last half hour of a year
@example(now=datetime(2027, 1, 7, 0, 0, tzinfo=UTC))  # a Thursday: last week's is last year's
def test_dymaxa_opens_with_its_series_a_on_every_day(now: datetime) -> None:
    today = now.date()
    account = dymaxa_for(today)
    announced = date.fromisoformat(next(f.published_at for f in account.facts if f.type == "funding") or "")
    zone_set = zone_set_at(now, account)
    assert headline(zone_set) == (
        f"Congrats on the Series A {expected_when(announced, today)}, Dymaxa",
        Rung.PERSONAL,
    )
    # Every zone that can cite a fact is personal; the hiring facts still support the rest. The
    # CTA's approved label names no fact's specific: segment copy (`not_specific`).
    assert {z.zone_id: z.rung for z in zone_set.zones} == {
        **dict.fromkeys(CAMPAIGN.page_zone_ids(), Rung.PERSONAL),
        "cta": Rung.SEGMENT,
    }


@settings(max_examples=150, deadline=None)
@given(now=INSTANTS, later=st.integers(min_value=0, max_value=400))
def test_what_a_zone_set_says_stays_true_until_valid_until(now: datetime, later: int) -> None:
    """The page's date phrase reads true on every later day before `valid_until`, which is two
    weeks away at least (or the round's window ends first)."""
    account = dymaxa_for(now.date())
    announced = date.fromisoformat(next(f.published_at for f in account.facts if f.type == "funding") or "")
    zone_set = zone_set_at(now, account)
    assert zone_set.valid_until is not None and zone_set.valid_until > now
    assert zone_set.valid_until.tzinfo is not None and zone_set.valid_until.utcoffset() == timedelta(0)
    need = min(now.date() + timedelta(days=14), announced + FUNDING_WINDOW)
    assert zone_set.valid_until.date() >= need  # its own words never end the page sooner
    moment = datetime.combine(now.date() + timedelta(days=later), time(12), tzinfo=UTC)
    text, _rung = headline(zone_set)
    when = text.removeprefix("Congrats on the Series A ").removesuffix(", Dymaxa")
    if moment < zone_set.valid_until:
        assert reads_true(when, announced, moment.date())
    # And the cap is tight: on `valid_until` a phrase would change or a cited fact has expired.
    assert said(zone_set_at(zone_set.valid_until, account)) != said(zone_set)


def said(zone_set: ZoneSet) -> list[tuple[str, str, Rung, tuple[str, ...]]]:
    return [(z.zone_id, z.text, z.rung, tuple(f.fact_id for f in z.facts)) for z in zone_set.zones]
