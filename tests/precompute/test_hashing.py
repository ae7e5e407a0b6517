"""Input hashes are the same in every process: otherwise every rerun would publish anew."""

from __future__ import annotations

import os
import subprocess
import sys

from precompute.hashing import campaign_fingerprint
from precompute.policy import build_policy
from tests.corpora import REPO_ROOT
from welcomemat.campaign import Campaign
from welcomemat.experiments import CopyVariant, Experiment
from welcomemat.zone_contract import ZoneContract

SCRIPT = """
from precompute.hashing import account_input_hash, campaign_fingerprint
from precompute.policy import build_policy
from welcomemat.accounts import read_accounts
from welcomemat.campaign import load_campaign
from welcomemat.zone_contract import load_zone_contracts
zones = dict(load_zone_contracts("zones"))
campaign = load_campaign("examples/campaign.yaml", zones)
fp = campaign_fingerprint(campaign, zones, build_policy(campaign, None), "offline")
accounts = read_accounts("examples/accounts.jsonl").accounts[:50]
print(fp, *(account_input_hash(fp, a) for a in accounts))
"""


def test_hashes_do_not_depend_on_the_process_hash_seed() -> None:
    outputs = {
        subprocess.run(
            [sys.executable, "-c", SCRIPT],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3", "12345")
    }
    assert len(outputs) == 1


def test_declaring_a_copy_experiment_changes_every_input_hash(
    campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    """Without one the fingerprint is what it was before experiments existed (no key for it);
    with one, every account is written again, in its variant."""
    experiment = Experiment(
        id="headline-angle", zone="hero_headline", variants=(CopyVariant(id="a"), CopyVariant(id="b"))
    )
    policy = build_policy(campaign, None)
    plain = campaign_fingerprint(campaign, zones, policy, "offline")
    with_experiment = campaign.model_copy(update={"experiment": experiment})
    assert campaign_fingerprint(with_experiment, zones, policy, "offline") != plain
    assert campaign_fingerprint(campaign.model_copy(), zones, policy, "offline") == plain
