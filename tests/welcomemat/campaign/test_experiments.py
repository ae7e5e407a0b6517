"""Copy-variant assignment: stable per account, equal shares, the personal arm only."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.corpora import REPO_ROOT
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.experiment_assignment import variant_campaign, variant_for
from welcomemat.campaign.experiments import (
    CopyVariant,
    Experiment,
    assign_variant,
    stop_recommendation,
    stopped_in,
)
from welcomemat.ids import is_valid_id
from welcomemat.zones.contract import load_zone_contracts

EXPERIMENT = Experiment(
    id="headline-angle",
    zone="hero_headline",
    variants=(
        CopyVariant(id="control"),
        CopyVariant(id="direct", patterns={"funding": ("{account} closed a {round} {when}",)}),
        CopyVariant(id="warm", voice="Warm and brief."),
    ),
)
account_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,40}", fullmatch=True)


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    loaded = load_campaign(
        REPO_ROOT / "examples" / "campaign.yaml", dict(load_zone_contracts(REPO_ROOT / "zones"))
    )
    return loaded.model_copy(update={"experiment": EXPERIMENT, "holdout_fraction": 0.2})


@given(account=account_ids)
def test_only_the_personal_arm_gets_a_variant_and_always_the_same_one(
    campaign: Campaign, account: str
) -> None:
    arm = assign_arm(campaign.tenant, campaign.campaign, account, 0.2)
    variant = variant_for(campaign, account)
    if arm is Arm.HOLDOUT:
        assert variant is None
    else:
        assert variant is not None and variant == assign_variant(campaign.campaign, EXPERIMENT, account)
        assert variant_for(campaign, account) == variant


def test_variants_get_equal_shares_and_a_new_experiment_id_reshuffles() -> None:
    accounts = [f"acct_{i}" for i in range(6000)]
    shares = Counter(assign_variant("q4-pipeline", EXPERIMENT, a).id for a in accounts)
    assert set(shares) == {"control", "direct", "warm"}
    assert all(1800 <= n <= 2200 for n in shares.values()), shares
    renamed = EXPERIMENT.model_copy(update={"id": "headline-angle-2"})
    moved = sum(
        assign_variant("q4-pipeline", EXPERIMENT, a) != assign_variant("q4-pipeline", renamed, a)
        for a in accounts
    )
    assert 3600 <= moved <= 4400  # about two in three change under an independent draw


def test_a_variant_changes_only_its_zone_patterns_and_the_voice(campaign: Campaign) -> None:
    direct = variant_campaign(campaign, EXPERIMENT.variants[1])
    assert direct.patterns["funding"]["hero_headline"] == ("{account} closed a {round} {when}",)
    assert direct.patterns["funding"]["hero_support"] == campaign.patterns["funding"]["hero_support"]
    assert direct.patterns["hiring"] == campaign.patterns["hiring"]
    assert direct.voice == campaign.voice and direct.banned_phrases == campaign.banned_phrases
    warm = variant_campaign(campaign, EXPERIMENT.variants[2])
    assert warm.voice == "Warm and brief." and warm.patterns == campaign.patterns
    assert variant_campaign(campaign, EXPERIMENT.variants[0]) is campaign


ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", fullmatch=True)


@given(experiment=ids, keep=ids)
def test_a_stops_change_record_reads_back_as_the_experiment_and_the_variant_kept(
    experiment: str, keep: str
) -> None:
    assert stopped_in(stop_recommendation(experiment, keep)) == (experiment, keep)


@given(text=st.text(max_size=120) | st.sampled_from(["READY FOR PROMOTION", "NOT READY", ""]))
def test_any_other_recommendation_is_no_stop(text: str) -> None:
    found = stopped_in(text)
    # Only the stop's own words name a stop, and they name ids only.
    assert found is None or (text == stop_recommendation(*found) and all(map(is_valid_id, found)))


def test_a_recommendation_around_a_stop_is_no_stop() -> None:
    said = stop_recommendation("headline-angle", "direct")
    for text in (f"{said}.", f" {said}", said.replace("direct", "dir ect"), said + "\n"):
        assert stopped_in(text) is None
