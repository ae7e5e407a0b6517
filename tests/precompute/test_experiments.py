"""Copy experiments through a real precompute run: who gets which variant, and that no guard bends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from pydantic import ValidationError

from outbound.export import export_rows
from precompute.inputs import check_campaign_inputs
from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import provider_for
from tests.precompute.test_openai_provider import run as run_with_provider
from tests.precompute.test_pipeline import NOW, dymaxa, run, write
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.experiments import CopyVariant, Experiment, assign_variant
from welcomemat.campaign.view import load_campaign_view
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

DIRECT = "{account} closed a {round} {when}: ramp the sellers fast"
# Fit the slot rules, but filled they run past the headline's 80 characters: no draft can pass.
TOO_LONG = {
    "funding": (
        "{account}, congratulations on the {round} {when}; now ramp every new seller in weeks, not months",
    ),
    "hiring": (
        "{account} is hiring {role_count} {role_plural} in {location}; "
        "ramp each of them in weeks, not months",
    ),
}


def experiment(*variants: CopyVariant) -> Experiment:
    return Experiment(id="headline-angle", zone="hero_headline", variants=variants)


def accounts(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        row = dymaxa(tier=2)
        row["account_id"] = f"acct_dymaxa{i:03d}"
        rows.append(row)
    return rows


def test_personal_accounts_get_their_hashed_variant_and_the_holdout_none(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    exp = experiment(CopyVariant(id="control"), CopyVariant(id="direct", patterns={"funding": (DIRECT,)}))
    with_experiment = campaign.model_copy(update={"experiment": exp, "holdout_fraction": 0.3})
    run(redis_client, with_experiment, zones, write(tmp_path, accounts(40)))
    store = ZoneSetStore(redis_client)
    seen: dict[str | None, int] = {}
    supports: set[str] = set()
    for i in range(40):
        account = f"acct_dymaxa{i:03d}"
        zone_set = store.get(campaign.tenant, campaign.campaign, account)
        assert zone_set is not None
        headline = zone_set.zone("hero_headline")
        assert headline is not None and headline.rung is Rung.PERSONAL
        if assign_arm(campaign.tenant, campaign.campaign, account, 0.3) is Arm.HOLDOUT:
            assert (zone_set.experiment, zone_set.variant) == (None, None)
            assert headline.text.startswith("Congrats on the Series A")
            seen[None] = seen.get(None, 0) + 1
            continue
        variant = assign_variant(campaign.campaign, exp, account)
        assert (zone_set.experiment, zone_set.variant) == ("headline-angle", variant.id)
        if variant.id == "direct":
            assert headline.text.startswith("Dymaxa closed a Series A"), headline.text
        else:
            assert headline.text.startswith("Congrats on the Series A")
        support = zone_set.zone("hero_support")
        assert support is not None
        supports.add(support.text)
        seen[variant.id] = seen.get(variant.id, 0) + 1
    assert set(seen) == {None, "control", "direct"}
    # Only the experiment's zone differs between variants.
    assert len(supports) == 1
    # The sequencer export carries each contact's variant, the one its page serves.
    view = load_campaign_view(redis_client, campaign.tenant, campaign.campaign)
    _, rows = export_rows(redis_client, view, lambda a, c: f"https://wm.example.com/{a}/{c}", now=NOW)
    variants = {row["account_id"]: row["variant"] for row in rows}
    assert len(variants) == 40
    for account, variant_id in variants.items():
        zone_set = store.get(campaign.tenant, campaign.campaign, account)
        assert zone_set is not None and variant_id == (zone_set.variant or "")  # empty, never "none"


def test_a_variant_whose_drafts_fail_a_check_serves_the_fallback_not_the_draft(
    tmp_path: Path, redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    exp = experiment(CopyVariant(id="control"), CopyVariant(id="long", patterns=TOO_LONG))
    with_experiment = campaign.model_copy(update={"experiment": exp, "holdout_fraction": 0.0})
    run(redis_client, with_experiment, zones, write(tmp_path, accounts(12)))
    store = ZoneSetStore(redis_client)
    long_accounts = 0
    for i in range(12):
        account = f"acct_dymaxa{i:03d}"
        zone_set = store.get(campaign.tenant, campaign.campaign, account)
        assert zone_set is not None
        headline = zone_set.zone("hero_headline")
        assert headline is not None
        if zone_set.variant == "long":
            long_accounts += 1
            # The variant's line never reaches the page: the zone takes its segment copy.
            assert headline.rung is Rung.SEGMENT and "weeks, not months" not in headline.text
            assert headline.text == campaign.segments["saas-mid"].zones["hero_headline"].text
        else:
            assert headline.rung is Rung.PERSONAL
    assert long_accounts > 0


WARM = "Warm and brief. Thank them before anything else."


def test_a_voice_variant_is_the_voice_the_model_provider_is_given_for_that_account(
    tmp_path: Path,
    redis_client: redis.Redis,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    llm_server: LLMTestServer,
) -> None:
    llm_server.reset()
    exp = experiment(CopyVariant(id="control"), CopyVariant(id="warm", voice=WARM))
    with_experiment = campaign.model_copy(update={"experiment": exp, "holdout_fraction": 0.0})
    rows = accounts(8)
    for row in rows:  # each request then names its account through the funding fact's id
        row["facts"][0]["id"] = f"series-a-{row['account_id']}"
    provider = provider_for(llm_server, self_review=False)
    try:
        run_with_provider(redis_client, with_experiment, zones, tmp_path, provider, rows)
    finally:
        provider.close()
    sent = llm_server.requests("generate")
    assert len(sent) == 8
    voices = {}
    for request in sent:
        system = " ".join(
            str(m.get("content", "")) for m in request.body["messages"] if m.get("role") == "system"
        )
        account = next(
            r["account_id"] for r in rows if f'"series-a-{r["account_id"]}"' in request.last_user_message
        )
        voices[account] = WARM in system
    for account, warm in voices.items():
        assert warm == (assign_variant(campaign.campaign, exp, account).id == "warm")
    assert set(voices.values()) == {True, False}


def _campaign_yaml(tmp_path: Path, block: str) -> Path:
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text().replace("theme: ./theme", "")
    path = tmp_path / "campaign.yaml"
    path.write_text(text + "\n" + block)
    return path


VARIANTS = "experiment:\n  id: angle\n  zone: hero_headline\n  variants:\n    - id: control\n"


def test_a_variant_pattern_a_campaign_pattern_could_not_have_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _campaign_yaml(
        tmp_path,
        VARIANTS
        + '    - id: hype\n      patterns:\n        funding: ["A game-changer {round}, {account}"]\n',
    )
    checked = check_campaign_inputs(path, str(REPO_ROOT / "zones"), None)
    assert checked.inputs is None
    hype = [p for p in checked.problems if p.field == "experiment.variants.1.patterns.funding.0"]
    assert hype and hype[0].line is not None, checked.problems
    assert "game-changer" in path.read_text().splitlines()[hype[0].line - 1]


def test_duplicate_variants_and_unknown_slots_are_refused(tmp_path: Path) -> None:
    path = _campaign_yaml(
        tmp_path, VARIANTS + '    - id: control\n      patterns:\n        funding: ["{acount} raised"]\n'
    )
    checked = check_campaign_inputs(path, str(REPO_ROOT / "zones"), None)
    fields = {p.field for p in checked.problems}
    assert {"experiment.variants.1.id", "experiment.variants.1.patterns.funding.0"} <= fields


@pytest.mark.parametrize("count", [1, 4])
def test_an_experiment_has_two_or_three_variants(count: int) -> None:
    with pytest.raises(ValidationError):
        experiment(*(CopyVariant(id=f"v{i}") for i in range(count)))
