"""Input hashes are the same in every process, and cover exactly what can change copy: otherwise a
rerun, or a settings edit, would publish anew (model calls, new versions, approvals reset)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from precompute.hashing import account_input_hash, account_variant, campaign_fingerprint
from precompute.policy import TenantPolicy, build_policy
from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.copy_inputs import CAMPAIGN_INPUTS, InputRole
from welcomemat.campaign.experiments import CopyVariant, Experiment, ExperimentStop
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import ZoneContract

SCRIPT = """
from precompute.hashing import account_input_hash, campaign_fingerprint
from precompute.policy import build_policy
from welcomemat.records.accounts import read_accounts
from welcomemat.campaign.contract import load_campaign
from welcomemat.zones.contract import load_zone_contracts
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


def _stopped(campaign: Campaign, keep: str) -> Campaign:
    running = Experiment(
        id="headline-angle", zone="hero_headline", variants=(CopyVariant(id="a"), CopyVariant(id="b"))
    )
    stop = ExperimentStop(keep=keep, ran_under=campaign.guideline_version)
    return campaign.model_copy(update={"experiment": running.model_copy(update={"stopped": stop})})


def _section(campaign: Campaign, name: str, **update: object) -> Campaign:
    section = getattr(campaign, name)
    return campaign.model_copy(update={name: section.model_copy(update=update)})


# One edit per field the table says changes no copy (`setting` and `variant` rows): each is
# shown to leave the campaign fingerprint as it was.
NON_COPY_EDITS: dict[str, Callable[[Campaign], Campaign]] = {
    "risk_tier": lambda c: c.model_copy(update={"risk_tier": "high"}),
    "site_base_url": lambda c: c.model_copy(update={"site_base_url": "https://meet.acmerevenue.example/"}),
    "snippet_origins": lambda c: c.model_copy(update={"snippet_origins": ("https://shop.example",)}),
    "snippet.replace_default": lambda c: _section(c, "snippet", replace_default=True),
    "holdout_fraction": lambda c: c.model_copy(update={"holdout_fraction": 0.3}),
    "approval.review_tiers": lambda c: _section(c, "approval", review_tiers=(1, 2)),
    "approval.sample_rate": lambda c: _section(c, "approval", sample_rate=0.5),
    "seller_alerts.next_step": lambda c: _section(c, "seller_alerts", next_step="Call today."),
    "seller_alerts.next_step_url": lambda c: _section(c, "seller_alerts", next_step_url=None),
    "seller_alerts.tiers": lambda c: _section(c, "seller_alerts", tiers=(1, 2)),
    "seller_alerts.owners": lambda c: _section(c, "seller_alerts", owners={"sam": "https://chat.example/h"}),
    "qa.max_check_failure_rate": lambda c: _section(c, "qa", max_check_failure_rate=0.2),
    "qa.max_fallback_rate": lambda c: _section(c, "qa", max_fallback_rate=0.95),
    "qa.fixes_margin": lambda c: _section(c, "qa", fixes_margin=0.01),
    "pages.*.template": lambda c: c.model_copy(
        update={"pages": {k: p.model_copy(update={"template": "other.html"}) for k, p in c.pages.items()}}
    ),
    "experiment.stopped.keep": lambda c: _stopped(c, "b"),
    "theme": lambda c: c.model_copy(update={"theme": None}),
}


def test_no_setting_changes_the_fingerprint(campaign: Campaign, zones: dict[str, ZoneContract]) -> None:
    non_copy = {row.path for row in CAMPAIGN_INPUTS if row.role is not InputRole.COPY}
    assert set(NON_COPY_EDITS) == non_copy  # a new setting comes with its edit here
    policy = build_policy(campaign, None)
    for path, edit in NON_COPY_EDITS.items():
        before = _stopped(campaign, "a") if path == "experiment.stopped.keep" else campaign
        edited = edit(campaign)
        assert edited != before, path
        fingerprints = {campaign_fingerprint(c, zones, policy, "offline") for c in (before, edited)}
        assert len(fingerprints) == 1, path
    # Removing seller alerts altogether (or adding them) changes nothing either.
    unset = campaign.model_copy(update={"seller_alerts": None})
    assert campaign_fingerprint(unset, zones, policy, "offline") == campaign_fingerprint(
        campaign, zones, policy, "offline"
    )


COPY_EDITS: dict[str, Callable[[Campaign], Campaign]] = {
    "guideline_version": lambda c: c.model_copy(update={"guideline_version": "2026-12-01"}),
    "name": lambda c: c.model_copy(update={"name": "Q1 pipeline"}),
    "link_allowlist": lambda c: c.model_copy(update={"link_allowlist": ("www.acmerevenue.example",)}),
    "voice": lambda c: c.model_copy(update={"voice": "Curt."}),
    "banned_phrases": lambda c: c.model_copy(update={"banned_phrases": ("ramp",)}),
    "patterns": lambda c: c.model_copy(update={"patterns": {**c.patterns, "funding": {}}}),
    "pages.*.zones": lambda c: c.model_copy(
        update={"pages": {k: p.model_copy(update={"zones": p.zones[:1]}) for k, p in c.pages.items()}}
    ),
    "ctas.*.label": lambda c: c.model_copy(
        update={"ctas": tuple(x.model_copy(update={"label": "Talk to us"}) for x in c.ctas)}
    ),
    "default_copy": lambda c: c.model_copy(update={"default_copy": {}}),
    "experiment": lambda c: _stopped(c, "a").model_copy(update={"guideline_version": "2026-12-01"}),
}


def test_what_can_change_copy_changes_the_fingerprint(
    campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    policy = build_policy(campaign, None)
    plain = campaign_fingerprint(campaign, zones, policy, "offline")
    for path, edit in COPY_EDITS.items():
        assert campaign_fingerprint(edit(campaign), zones, policy, "offline") != plain, path
    # The provider and model, the zone contracts and the policy are inputs too.
    assert campaign_fingerprint(campaign, zones, policy, "openai:other-model") != plain
    fewer = {k: v for k, v in zones.items() if k != "proof"}
    assert campaign_fingerprint(campaign, fewer, policy, "offline") != plain
    tighter = TenantPolicy(tenant=campaign.tenant, banned_phrases=("onboarding",))
    assert campaign_fingerprint(campaign, zones, build_policy(campaign, tighter), "offline") != plain


def test_where_the_files_are_and_the_tenant_s_ceilings_change_no_hash(
    campaign: Campaign, zones: dict[str, ZoneContract]
) -> None:
    """Moving campaign.yaml or tenant.yaml (the policy names them for `explain`), or a tenant
    ceiling the campaign is within, writes nothing again."""
    here = build_policy(campaign, None, campaign_file="a/campaign.yaml")
    moved = build_policy(campaign, None, campaign_file="b/campaign.yaml")
    assert here.sources != moved.sources
    assert campaign_fingerprint(campaign, zones, here, "offline") == campaign_fingerprint(
        campaign, zones, moved, "offline"
    )
    loose = TenantPolicy(tenant=campaign.tenant, max_signal_windows_days={"funding": 700})
    tight = TenantPolicy(tenant=campaign.tenant, max_signal_windows_days={"funding": 400})
    prints = {
        campaign_fingerprint(campaign, zones, build_policy(campaign, t, tenant_file=f), "offline")
        for t, f in ((loose, "x/tenant.yaml"), (tight, "y/tenant.yaml"))
    }
    assert len(prints) == 1


def test_an_account_s_ip_ranges_are_no_input() -> None:
    """They recognise the account's visitors; no page says them."""
    account = Account(account_id="acct_1", name="Dymaxa", domain="dymaxa.com", segment="saas-mid")
    ranged = account.model_copy(update={"ip_ranges": ["203.0.113.0/24"]})
    assert account_input_hash("fp", account) == account_input_hash("fp", ranged)
    assert account_input_hash("fp", account) != account_input_hash(
        "fp", account.model_copy(update={"name": "Dymaxa B.V."})
    )


def test_moving_the_holdout_rewrites_only_the_accounts_whose_variant_moves(campaign: Campaign) -> None:
    running = Experiment(
        id="headline-angle", zone="hero_headline", variants=(CopyVariant(id="a"), CopyVariant(id="b"))
    )
    small = campaign.model_copy(update={"experiment": running, "holdout_fraction": 0.1})
    large = small.model_copy(update={"holdout_fraction": 0.3})
    ids = [f"acct_{i:04d}" for i in range(400)]
    moved = {a for a in ids if account_variant(small, a) != account_variant(large, a)}
    rehashed = {
        a
        for a in ids
        if account_input_hash("fp", _account(a), account_variant(small, a))
        != account_input_hash("fp", _account(a), account_variant(large, a))
    }
    assert rehashed == moved and 0 < len(moved) < len(ids) // 2
    assert all(account_variant(large, a) is None for a in moved)  # into the holdout


def _account(account_id: str) -> Account:
    return Account(account_id=account_id, name="Dymaxa", domain="dymaxa.com", segment="saas-mid")
