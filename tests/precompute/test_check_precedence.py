"""Hard checks cannot be switched off: built-in ▸ tenant ▸ campaign ▸ zone, each level only adds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from precompute.check_precedence import effective_checks, zone_check_problems
from precompute.checks import CheckInput, build_vocabulary, run_checks
from precompute.policy import build_policy
from precompute.providers.base import ZoneDraft
from precompute.providers.openai_provider import OpenAIProvider
from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import TODAY, example_rows, provider_for, run
from tests.server.conftest import example_inputs
from welcomemat.campaign.contract import load_campaign
from welcomemat.campaign.tenant_policy import load_tenant_policy
from welcomemat.errors import ContractProblems
from welcomemat.zones.contract import (
    CHECK_ORDER,
    HARD_CHECKS,
    KNOWN_CHECKS,
    OPTIONAL_CHECKS,
    ZoneContract,
    load_zone_contract,
    load_zone_contracts,
    omitted_hard_checks,
)
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
INVENTED = "Dymaxa raised $40 million from Sequoia Capital in 2019"


def contract(checks: tuple[str, ...] = (), link: bool = False) -> ZoneContract:
    return ZoneContract(
        id="z",
        purpose="p",
        max_words=30,
        max_chars=200,
        fact_types=frozenset({"funding"}),
        checks=checks,
        link=link,
    )


checks_st = st.lists(st.sampled_from(sorted(KNOWN_CHECKS)), max_size=8).map(tuple)


@settings(max_examples=300, deadline=None)
@given(checks_st, checks_st, checks_st, st.booleans())
def test_every_level_only_adds(
    zone: tuple[str, ...], tenant: tuple[str, ...], camp: tuple[str, ...], link: bool
) -> None:
    got = effective_checks(contract(zone, link), tenant=tenant, campaign=camp)
    assert HARD_CHECKS <= set(got)  # nothing any level writes removes a hard check
    assert ("cta_allowed" in got) is (link or "cta_allowed" in (*zone, *tenant, *camp))
    assert set(zone) | set(tenant) | set(camp) <= set(got)  # and what each level adds is kept
    assert list(got) == [c for c in CHECK_ORDER if c in got]  # in report order, each once
    # Adding a level's list never shrinks the result.
    assert set(effective_checks(contract(zone, link))) <= set(got)


def test_the_hard_checks_are_the_grounding_ones() -> None:
    for name in (
        "length",
        "unsupported_specifics",
        "other_company",
        "no_markup_or_links",
        "recency",
        "quotes",
    ):
        assert name in HARD_CHECKS
    assert OPTIONAL_CHECKS == {"one_question", "confidence"}


@pytest.mark.parametrize(
    ("checks", "omitted"),
    [
        ((), ()),
        (("one_question", "confidence"), ()),
        (tuple(sorted(HARD_CHECKS)), ()),
        (("empty",), tuple(sorted(HARD_CHECKS - {"empty"}))),
        (("empty", "length", "one_question"), tuple(sorted(HARD_CHECKS - {"empty", "length"}))),
    ],
)
def test_a_list_naming_some_hard_checks_reads_as_dropping_the_rest(
    checks: tuple[str, ...], omitted: tuple[str, ...]
) -> None:
    assert omitted_hard_checks(contract(checks)) == omitted


def _zone_file(tmp_path: Path, checks: str) -> Path:
    text = (REPO_ROOT / "zones" / "hero_headline.yaml").read_text()
    lines = [f"checks: {checks}" if line.startswith("checks:") else line for line in text.splitlines()]
    folder = tmp_path / "zones"
    folder.mkdir(exist_ok=True)
    for other in (REPO_ROOT / "zones").glob("*.yaml"):
        (folder / other.name).write_text(other.read_text())
    path = folder / "hero_headline.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_removing_a_check_is_refused_at_every_level_naming_its_line(tmp_path: Path) -> None:
    path = _zone_file(tmp_path, '[one_question, "!unsupported_specifics"]')
    with pytest.raises(ContractProblems) as raised:
        load_zone_contract(path)
    problem = raised.value.problems[0]
    assert (problem.field, problem.line) == ("checks", 11)
    assert "'!unsupported_specifics': a level may add checks, never remove one" in problem.message

    tenant = tmp_path / "tenant.yaml"
    tenant.write_text("tenant: acme\nchecks: [one_question, -length]\n")
    with pytest.raises(ContractProblems) as raised:
        load_tenant_policy(tenant)
    assert (raised.value.problems[0].field, raised.value.problems[0].line) == ("checks", 2)

    campaign = tmp_path / "campaign.yaml"
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    campaign.write_text(text.replace("\nvocabulary:", "\nchecks: [voice, ~other_company]\nvocabulary:", 1))
    with pytest.raises(ContractProblems) as raised:
        load_campaign(campaign, load_zone_contracts(REPO_ROOT / "zones"))
    assert any(p.field == "checks" and "never remove one" in p.message for p in raised.value.problems)


def test_validate_refuses_a_contract_that_drops_checks_naming_its_line(tmp_path: Path) -> None:
    path = _zone_file(tmp_path, "[empty]")
    problems = zone_check_problems(load_zone_contracts(path.parent), path.parent)
    assert [(p.file, p.line, p.field) for p in problems] == [(str(path), 11, "checks")]
    done = subprocess.run(
        [WELCOMEMAT, "validate", "examples/campaign.yaml", "--zones", str(path.parent)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}:11: checks: lists some hard checks but not " in done.stderr
    assert "unsupported_specifics" in done.stderr


def test_the_shipped_contracts_drop_nothing() -> None:
    for folder in (REPO_ROOT / "zones", REPO_ROOT / "cli" / "scaffold" / "zones"):
        assert zone_check_problems(load_zone_contracts(folder), folder) == []


def test_a_contract_listing_only_empty_still_refuses_an_invented_figure() -> None:
    campaign, zones = example_inputs()
    policy = build_policy(campaign, None)
    from tests.precompute.claims.claim_corpus import CONTEXT, FACTS

    bare = zones["hero_headline"].model_copy(update={"checks": ("empty",)})
    draft = ZoneDraft(zone_id="hero_headline", text=INVENTED, fact_ids=(FACTS[0].id,), confidence=1.0)
    failures = run_checks(
        CheckInput(
            draft=draft,
            contract=bare,
            context=CONTEXT,
            campaign=campaign,
            policy=policy,
            vocabulary=build_vocabulary(campaign),
        )
    )
    assert any(f.check == "unsupported_specifics" for f in failures), failures


@pytest.fixture
def server(llm_server: LLMTestServer) -> Iterator[LLMTestServer]:
    llm_server.reset()
    yield llm_server
    llm_server.reset()


def test_precompute_with_a_contract_that_drops_checks_publishes_no_invented_figure(
    tmp_path: Path, redis_client: redis.Redis, server: LLMTestServer
) -> None:
    campaign, zones = example_inputs()
    weakened = {zid: z.model_copy(update={"checks": ("empty",)}) for zid, z in zones.items()}
    server.set_mode("lines", lines={"hero_headline": INVENTED, "hero_support": "Sequoia must be thrilled."})
    provider: OpenAIProvider = provider_for(server)
    try:
        rows: list[dict[str, Any]] = [r for r in example_rows(TODAY) if r["account_id"] == "acct_dymaxa"]
        run(redis_client, campaign, weakened, tmp_path, provider, rows)
    finally:
        provider.close()
    published = ZoneSetStore(redis_client).get(campaign.tenant, campaign.campaign, "acct_dymaxa")
    assert published is not None
    for zone in published.zones:
        assert "$40 million" not in zone.text and "2019" not in zone.text, zone
    headline = next(z for z in published.zones if z.zone_id == "hero_headline")
    assert headline.rung is not Rung.PERSONAL
    assert json.dumps([z.reason for z in published.zones])  # every zone says why it fell back


def test_a_model_line_whose_weekday_would_end_the_page_within_two_weeks_is_refused() -> None:
    from datetime import date

    from precompute.checks import check_lifespan
    from tests.precompute.claims.claim_corpus import CONTEXT, FACTS

    campaign, zones = example_inputs()
    contract = zones["hero_headline"]
    series_a = next(f for f in FACTS if f.id == "dymaxa-series-a")

    def lifespan(text: str, valid_until: date) -> str | None:
        draft = ZoneDraft(
            zone_id="hero_headline",
            text=text,
            fact_ids=(series_a.id,),
            confidence=1.0,
            valid_until=valid_until,
        )
        failure = check_lifespan(
            CheckInput(
                draft=draft,
                contract=contract,
                context=CONTEXT,
                campaign=campaign,
                policy=build_policy(campaign, None),
                vocabulary=build_vocabulary(campaign),
            )
        )
        return None if failure is None else failure.detail

    # As of Sunday 29 November, "on Thursday" (the 26th) stops being true on 3 December: four days.
    detail = lifespan("Congrats on the Series A on Thursday, Dymaxa", date(2026, 12, 3))
    assert detail == "its time words end it on 2026-12-03, before 2026-12-13: name the month, or say recently"
    assert lifespan("Congrats on the Series A in November, Dymaxa", date(2027, 1, 1)) is None
