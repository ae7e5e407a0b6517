"""The export tells a rep the truth: which line is personal, and which variant the lift report counts.

Accounts are published by a real precompute run (offline composer) with a copy experiment on the
headline whose `long` variant can never pass its checks: those accounts' headline takes the
segment copy while their other zones stay personal. The export and the lift report then read
the same Redis.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from outbound.export import export_rows, write_export
from tests.corpora import REPO_ROOT
from tests.precompute.test_experiments import TOO_LONG, accounts
from tests.precompute.test_pipeline import NOW, dymaxa, run, write
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.experiments import CopyVariant, Experiment
from welcomemat.campaign.view import load_campaign_view
from welcomemat.lift.groups import LiftDimension, campaign_grouped_report
from welcomemat.lift.outcomes import collect_outcomes
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.store import ZoneSetStore

TENANT, CAMPAIGN = "acme", "q4-pipeline"
ZONES = ("hero_headline", "hero_support", "proof", "cta", "continuation_headline")
VARIANTS = ("control", "long")
# Past every fact's window: personal zone sets have expired, the report still counts them.
LATER = NOW + timedelta(days=120)


def link_for(account_id: str, contact_id: str) -> str:
    return f"https://wm.example.com/c/{CAMPAIGN}?a={account_id}&c={contact_id}"


@pytest.fixture
def published(tmp_path: Path, redis_client: redis.Redis) -> redis.Redis:
    """40 tier-2 accounts in the experiment (holdout 30%), and 3 tier-1 ones waiting for review."""
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign: Campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    experiment = Experiment(
        id="headline-angle",
        zone="hero_headline",
        variants=(CopyVariant(id="control"), CopyVariant(id="long", patterns=TOO_LONG)),
    )
    rows = accounts(40)
    for i in range(3):
        waiting = dymaxa(tier=1)
        waiting["account_id"] = f"acct_review{i}"
        rows.append(waiting)
    updated = {"experiment": experiment, "holdout_fraction": 0.3}
    run(redis_client, campaign.model_copy(update=updated), zones, write(tmp_path, rows))
    return redis_client


def exported(client: redis.Redis, now: object = NOW) -> list[dict[str, str]]:
    view = load_campaign_view(client, TENANT, CAMPAIGN)
    header, rows = export_rows(client, view, link_for, now=now)  # type: ignore[arg-type]
    out = io.StringIO()
    write_export(header, rows, out, "csv")  # through the CSV writer, as a rep gets the file
    return list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))


def test_rung_is_the_headlines_and_every_zone_says_its_own(published: redis.Redis) -> None:
    rows = exported(published)
    store = ZoneSetStore(published)
    only_proof_personal = 0
    for row in rows:
        assert row["rung"] == row["rung_hero_headline"], row
        rungs = {z: row[f"rung_{z}"] for z in ZONES}
        assert set(rungs.values()) <= {"personal", "segment", "default"}
        zone_set = store.get(TENANT, CAMPAIGN, row["account_id"])
        assert zone_set is not None
        if row["arm"] == "holdout" or row["status"] != "ok":
            assert "personal" not in rungs.values(), row  # the holdout and fallbacks: no personal line
            continue
        for zone_id, rung in rungs.items():
            stored = zone_set.zone(zone_id)
            assert stored is not None
            assert rung == stored.rung.value, (row["account_id"], zone_id)
        if zone_set.variant == "long":
            # The defect: `rung=personal` although the headline a rep quotes is segment copy.
            assert rungs["hero_headline"] == "segment" and row["rung"] == "segment", row
            assert "personal" in rungs.values(), row  # another zone (the proof point) is personal
            only_proof_personal += 1
    assert only_proof_personal > 0
    assert {row["rung"] for row in rows} >= {"personal", "segment"}


@pytest.mark.parametrize("now", [NOW, LATER], ids=["fresh", "expired"])
def test_variant_is_exactly_the_lift_reports_assignment_on_every_row(
    published: redis.Redis, now: object
) -> None:
    rows = exported(published, now)
    view = load_campaign_view(published, TENANT, CAMPAIGN)
    # The report's membership, as `report lift --by variant` counts it: personal accounts of
    # the population whose zone set carries one of the experiment's variants.
    outcomes = collect_outcomes(published, view)
    assigned = {o.account_id: o.variant for o in outcomes if o.arm is Arm.PERSONAL and o.variant in VARIANTS}
    assert set(assigned.values()) == set(VARIANTS)
    for row in rows:
        assert row["variant"] == assigned.get(row["account_id"], ""), row
    report = campaign_grouped_report(published, view, LiftDimension.VARIANT, now=now)  # type: ignore[arg-type]
    for name in VARIANTS:
        in_file = {r["account_id"] for r in rows if r["variant"] == name}
        assert report.group(name).arm(Arm.PERSONAL).accounts == len(in_file) > 0
    waiting = [r for r in rows if r["account_id"].startswith("acct_review")]
    assert waiting and all(r["status"] == "pending_review" and r["variant"] == "" for r in waiting)
    assert all(r["variant"] == "" for r in rows if r["arm"] == "holdout")
    if now == LATER:
        # The defect: expired personal rows had an empty `variant` the report still counted.
        expired = [r for r in rows if r["status"] == "expired"]
        assert expired and all(r["variant"] in VARIANTS for r in expired)
        assert all(r["rung"] == "segment" for r in expired)
