"""The banned openers shipped with Welcomemat: a tenant or campaign file adds to them, never removes one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import check_campaign
from welcomemat.campaign.openers import DEFAULT_BANNED_OPENERS
from welcomemat.campaign.tenant_policy import check_tenant_policy, load_tenant_policy
from welcomemat.zones.contract import load_zone_contracts

EXAMPLE_CAMPAIGN = (REPO_ROOT / "examples" / "campaign.yaml").read_text(encoding="utf-8")
ZONES = load_zone_contracts(REPO_ROOT / "zones")


def test_the_shipped_list_holds_the_openers_sales_guides_ban() -> None:
    for opener in (
        "I noticed your work at",
        "Hope this email finds you well",
        "I hope you're doing well",
        "Quick question",
        "I came across your profile",
        "I wanted to reach out",
    ):
        assert opener in DEFAULT_BANNED_OPENERS
    assert len(set(DEFAULT_BANNED_OPENERS)) == len(DEFAULT_BANNED_OPENERS)


def test_a_tenant_may_add_openers(tmp_path: Path) -> None:
    path = tmp_path / "tenant.yaml"
    path.write_text('tenant: acme\nbanned_openers: ["Hey there", "Quick question"]\n')
    assert load_tenant_policy(path).banned_openers == ("Hey there", "Quick question")


@pytest.mark.parametrize(
    ("yaml", "line", "field", "words"),
    [
        ('allowed_openers: ["Quick question"]\n', 2, "allowed_openers", "'allowed_openers' cannot change"),
        ("default_banned_openers: false\n", 2, "default_banned_openers", "cannot change the banned openers"),
        ("Banned_Openers_Replace: true\n", 2, "Banned_Openers_Replace", "cannot change the banned openers"),
        ("banned_openers: ~\n", 2, "banned_openers", "null cannot switch banned openers off"),
        ('banned_openers: ["Hey there", "!Quick question"]\n', 2, "banned_openers.1", "reads as removing"),
    ],
)
def test_a_tenant_file_that_tries_to_drop_shipped_openers_is_refused_clearly(
    tmp_path: Path, yaml: str, line: int, field: str, words: str
) -> None:
    path = tmp_path / "tenant.yaml"
    path.write_text("tenant: acme\n" + yaml + "min_confidence: bogus\n")
    policy, problems = check_tenant_policy(path)
    assert policy is None
    first, other = problems  # the rest of the file is still checked
    assert (first.file, first.line, first.field) == (str(path), line, field)
    assert words in first.message and "always apply" in first.message
    assert other.field == "min_confidence"


def test_a_campaign_that_tries_to_drop_shipped_openers_is_refused_with_its_other_problems(
    tmp_path: Path,
) -> None:
    text = EXAMPLE_CAMPAIGN.replace(
        "banned_openers:\n",
        "allowed_openers: [Quick question]\nbanned_openers:\n  - '!I hope you are doing well'\n",
    ).replace("holdout_fraction: 0.10", "holdout_fraction: 0.9")
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    campaign, problems = check_campaign(path, ZONES)
    assert campaign is None
    fields = {p.field: p.message for p in problems}
    assert "cannot change the banned openers" in fields["allowed_openers"]
    assert "reads as removing an opener" in fields["banned_openers.0"]
    assert "holdout_fraction" in fields


def test_the_example_campaign_still_loads() -> None:
    path = REPO_ROOT / "examples" / "campaign.yaml"
    campaign, problems = check_campaign(path, ZONES)
    assert problems == [] and campaign is not None
    assert "Did you know" in campaign.banned_openers
