"""Policy precedence: hard rules ▸ tenant ▸ campaign; a campaign may tighten, never loosen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precompute.policy import (
    HARD_BANNED_PHRASES,
    HARD_MAX_SIGNAL_WINDOW_DAYS,
    HARD_PROHIBITED_CLAIMS,
    HARD_RULE,
    TenantPolicy,
    build_policy,
    load_tenant_policy,
)
from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.openers import DEFAULT_BANNED_OPENERS
from welcomemat.campaign.sections import MAX_SIGNAL_WINDOW_DAYS, Confidence
from welcomemat.errors import ContractError

EXAMPLE_CAMPAIGN = REPO_ROOT / "examples" / "campaign.yaml"

TENANT_YAML = """\
tenant: acme
banned_phrases: ["Unlock your potential", "GAME-CHANGER"]
banned_openers: ["Hey there"]
prohibited_claims: [partnership]
max_signal_windows_days:
  funding: 150
  hiring: 60
min_confidence: medium
"""


def write_campaign(tmp_path: Path, *, replace: tuple[str, str] | None = None) -> tuple[Campaign, str]:
    """The example campaign, optionally with one regex substitution, loaded from a file."""
    text = EXAMPLE_CAMPAIGN.read_text(encoding="utf-8")
    if replace is not None:
        text, count = re.subn(replace[0], replace[1], text, count=1, flags=re.MULTILINE)
        assert count == 1, replace
    path = tmp_path / "campaign.yaml"
    path.write_text(text, encoding="utf-8")
    return load_campaign(path), str(path)


def write_tenant(tmp_path: Path, text: str = TENANT_YAML) -> tuple[TenantPolicy, str]:
    path = tmp_path / "tenant.yaml"
    path.write_text(text, encoding="utf-8")
    return load_tenant_policy(path), str(path)


def line_of(path: str, needle: str) -> int:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_hard_rules_reuse_the_campaign_maximum() -> None:
    assert HARD_MAX_SIGNAL_WINDOW_DAYS == MAX_SIGNAL_WINDOW_DAYS
    assert "customer_status" in HARD_PROHIBITED_CLAIMS


def test_without_a_tenant_the_campaign_adds_to_the_hard_rules() -> None:
    campaign = load_campaign(EXAMPLE_CAMPAIGN)
    policy = build_policy(campaign, None)
    assert policy.signal_windows_days == campaign.signal_windows_days
    assert policy.min_confidence is campaign.min_confidence
    assert set(HARD_BANNED_PHRASES) | set(campaign.banned_phrases) == set(policy.banned_phrases)
    assert policy.prohibited_claims[0] == "customer_status"
    assert policy.sources["prohibited_claims:customer_status"] == HARD_RULE
    assert policy.sources["signal_windows_days.hiring"] == "campaign.yaml"


def test_the_shipped_banned_openers_come_first_credited_to_the_hard_rule(tmp_path: Path) -> None:
    tenant, tenant_file = write_tenant(
        tmp_path, TENANT_YAML.replace('["Hey there"]', '["Hey there", "QUICK question"]')
    )
    campaign, campaign_file = write_campaign(tmp_path)
    policy = build_policy(campaign, tenant, campaign_file=campaign_file, tenant_file=tenant_file)
    assert policy.banned_openers[: len(DEFAULT_BANNED_OPENERS)] == DEFAULT_BANNED_OPENERS
    assert {"Hey there", "Did you know"} <= set(policy.banned_openers)
    assert "QUICK question" not in policy.banned_openers  # the shipped one, already there
    assert policy.sources["banned_openers:Quick question"] == HARD_RULE
    assert policy.sources["banned_openers:Hey there"] == tenant_file


def test_an_unknown_claim_class_in_the_tenant_policy_is_refused_with_its_line(tmp_path: Path) -> None:
    tenant_path = tmp_path / "tenant.yaml"
    tenant_path.write_text(TENANT_YAML.replace("[partnership]", "[partnership, pricing]"))
    campaign, campaign_file = write_campaign(tmp_path)
    with pytest.raises(ContractError) as refused:
        build_policy(
            campaign,
            load_tenant_policy(tenant_path),
            campaign_file=campaign_file,
            tenant_file=str(tenant_path),
        )
    assert (refused.value.file, refused.value.line, refused.value.field) == (
        str(tenant_path),
        4,
        "prohibited_claims.1",
    )
    assert "prohibited claim class 'pricing' is unknown" in refused.value.message


def test_tenant_rules_are_kept_even_when_the_campaign_omits_them(tmp_path: Path) -> None:
    tenant, tenant_file = write_tenant(tmp_path)
    campaign, campaign_file = write_campaign(tmp_path, replace=(r"^  - partnership .*\n", ""))
    assert "partnership" not in campaign.prohibited_claims
    policy = build_policy(campaign, tenant, campaign_file=campaign_file, tenant_file=tenant_file)
    assert "Unlock your potential" in policy.banned_phrases
    assert "Hey there" in policy.banned_openers
    assert "partnership" in policy.prohibited_claims
    # Named by tenant and campaign in different case: listed once, credited to the tenant.
    assert [p for p in policy.banned_phrases if p.casefold() == "game-changer"] == ["GAME-CHANGER"]
    assert policy.sources["banned_phrases:GAME-CHANGER"] == tenant_file
    assert policy.sources["banned_phrases:synergy"] == campaign_file


def test_campaign_window_over_the_tenant_maximum_is_refused(tmp_path: Path) -> None:
    tenant, tenant_file = write_tenant(tmp_path, TENANT_YAML.replace("funding: 150", "funding: 90"))
    campaign, campaign_file = write_campaign(tmp_path, replace=(r"^  funding: \d+$", "  funding: 120"))
    with pytest.raises(ContractError) as caught:
        build_policy(campaign, tenant, campaign_file=campaign_file, tenant_file="tenant.yaml")
    err = caught.value
    assert err.message == (
        "funding window of 120 days exceeds the tenant's maximum of 90 days "
        "(tenant.yaml max_signal_windows_days.funding): a campaign may tighten tenant policy, never loosen it"
    )
    assert (err.file, err.field) == (campaign_file, "signal_windows_days.funding")
    assert err.line == line_of(campaign_file, "  funding: 120")


def test_campaign_window_within_the_tenant_maximum_is_kept(tmp_path: Path) -> None:
    tenant, _ = write_tenant(tmp_path)
    campaign, _ = write_campaign(tmp_path, replace=(r"^  hiring: \d+$", "  hiring: 30"))
    assert build_policy(campaign, tenant).signal_windows_days["hiring"] == 30


def test_campaign_window_over_the_hard_maximum_is_refused() -> None:
    # The loader refuses this too; build_policy does not rely on it.
    campaign = load_campaign(EXAMPLE_CAMPAIGN)
    loose = campaign.model_copy(update={"signal_windows_days": {"funding": HARD_MAX_SIGNAL_WINDOW_DAYS + 1}})
    with pytest.raises(ContractError, match="exceeds the hard maximum of 730 days") as caught:
        build_policy(loose, None)
    assert caught.value.field == "signal_windows_days.funding"


def test_campaign_min_confidence_below_the_tenant_is_refused(tmp_path: Path) -> None:
    tenant, _ = write_tenant(tmp_path, TENANT_YAML.replace("min_confidence: medium", "min_confidence: high"))
    campaign, campaign_file = write_campaign(tmp_path)  # states "min_confidence: medium"
    with pytest.raises(ContractError) as caught:
        build_policy(campaign, tenant, campaign_file=campaign_file)
    err = caught.value
    assert "min_confidence medium is below the tenant's minimum of high" in err.message
    assert "never loosen" in err.message
    assert (err.field, err.line) == ("min_confidence", line_of(campaign_file, "min_confidence:"))


def test_campaign_silent_on_min_confidence_inherits_the_tenant(tmp_path: Path) -> None:
    tenant, tenant_file = write_tenant(
        tmp_path, TENANT_YAML.replace("min_confidence: medium", "min_confidence: high")
    )
    campaign, _ = write_campaign(tmp_path, replace=(r"^min_confidence: \w+\n", ""))
    policy = build_policy(campaign, tenant, tenant_file=tenant_file)
    assert policy.min_confidence is Confidence.HIGH
    assert policy.sources["min_confidence"] == tenant_file


def test_campaign_may_raise_min_confidence(tmp_path: Path) -> None:
    tenant, _ = write_tenant(tmp_path)
    campaign, _ = write_campaign(tmp_path, replace=(r"^min_confidence: \w+$", "min_confidence: high"))
    assert build_policy(campaign, tenant).min_confidence is Confidence.HIGH


def test_another_tenants_policy_is_refused(tmp_path: Path) -> None:
    tenant, _ = write_tenant(tmp_path, TENANT_YAML.replace("tenant: acme", "tenant: globex"))
    campaign, campaign_file = write_campaign(tmp_path)
    with pytest.raises(ContractError, match="campaign tenant 'acme' does not match") as caught:
        build_policy(campaign, tenant, campaign_file=campaign_file)
    assert (caught.value.field, caught.value.line) == ("tenant", line_of(campaign_file, "tenant:"))


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        ("tenant: acme\nbanned_phrase: [x]\n", "banned_phrase", 2),
        ("tenant: acme\nmax_signal_windows_days:\n  funding: 0\n", "max_signal_windows_days.funding", 3),
        ("tenant: acme\nmax_signal_windows_days:\n  funding: 9000\n", "max_signal_windows_days.funding", 3),
        ("tenant: acme\nmin_confidence: sure\n", "min_confidence", 2),
        ("tenant: acme\nbanned_phrases: ['  ']\n", "banned_phrases", 2),
        ("tenant: 'a b'\n", "tenant", 1),
    ],
)
def test_bad_tenant_file_names_file_line_and_field(tmp_path: Path, text: str, field: str, line: int) -> None:
    path = tmp_path / "tenant.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContractError) as caught:
        load_tenant_policy(path)
    assert (caught.value.file, caught.value.field, caught.value.line) == (str(path), field, line)


def test_tenant_policy_is_frozen(tmp_path: Path) -> None:
    tenant, _ = write_tenant(tmp_path)
    with pytest.raises(ValueError):
        tenant.banned_phrases = ()  # type: ignore[misc]
