"""Promotion changes only the guideline bundle; regression cases change only when named.

Real campaign folders in tmp_path, the `welcomemat` console script, a real Redis.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import redis
import yaml

from tests.cli.test_guidelines import cli
from tests.corpora import REPO_ROOT
from welcomemat.campaign.guidelines import GuidelineStore

TENANT, CAMPAIGN = "acme", "q4-pipeline"
REPORT = Path("guidelines") / "2026-12-01.report.json"
SELLER_ALERTS = re.compile(r"^seller_alerts:.*?\n(?=\S)", re.M | re.S)
# Dymaxa (regression set) has a Series A and a hiring fact: its headline is the funding one.
DYMAXA_BEFORE = "Congrats on the Series A in November, Dymaxa"
DYMAXA_AFTER = "Hiring four SDRs in Amsterdam?"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "campaign"
    shutil.copytree(REPO_ROOT / "examples", target, ignore=shutil.ignore_patterns("accounts.jsonl", "*.py"))
    shutil.copytree(REPO_ROOT / "zones", target / "zones")
    return target


def write_candidate(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def without_seller_alerts(text: str) -> str:
    """The example candidate as a team copies it from an older campaign.yaml: no seller_alerts."""
    stripped = SELLER_ALERTS.sub("", text, count=1)
    assert "seller_alerts" not in stripped
    return stripped


def without_funding(text: str) -> str:
    """The example candidate with every funding pattern (and the funding window) deleted."""
    text = text.replace("  funding: 30\n", "", 1)
    stripped = re.sub(r"(?m)^patterns:\n  funding:\n(?:    .*\n)+", "patterns:\n", text, count=1)
    assert "{round}" not in stripped
    return stripped


def test_a_candidate_that_drops_a_field_outside_the_bundle_is_listed_and_refused_until_applied(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign = folder / "campaign.yaml"
    candidate = write_candidate(
        folder, "old.yaml", without_seller_alerts((folder / "campaign.candidate.yaml").read_text())
    )
    proposed = cli(
        "propose", str(campaign), str(candidate), "--reason", "launches", "--json",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert proposed.returncode == 0, proposed.stderr
    report = json.loads(proposed.stdout)
    assert [(d["field"], d["change"]) for d in report["outside_bundle"]] == [("seller_alerts", "removed")]
    assert {d["field"] for d in report["bundle_changes"]} == {"patterns", "signal_windows_days"}
    printed = cli(
        "propose",
        str(campaign),
        str(candidate),
        "--reason",
        "launches",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert "outside the guideline bundle" in printed.stdout and "seller_alerts (removed)" in printed.stdout

    before = campaign.read_bytes()
    refused = cli("promote", str(campaign), str(folder / REPORT), redis_url=redis_url, tmp_path=tmp_path)
    assert refused.returncode == 2
    assert "field 'seller_alerts'" in refused.stderr and "apply these to" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert campaign.read_bytes() == before
    assert GuidelineStore(redis_client).active_version(TENANT, CAMPAIGN) == "2026-11-01"

    # Applied separately: a settings edit of campaign.yaml that removes the alerts on purpose.
    campaign.write_text(SELLER_ALERTS.sub("", campaign.read_text(), count=1))
    promoted = cli("promote", str(campaign), str(folder / REPORT), redis_url=redis_url, tmp_path=tmp_path)
    assert promoted.returncode == 0, promoted.stderr
    assert GuidelineStore(redis_client).active_version(TENANT, CAMPAIGN) == "2026-12-01"


def test_promotion_writes_only_the_bundle_and_keeps_every_other_field_and_line(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign = folder / "campaign.yaml"
    proposed = cli(
        "propose", str(campaign), str(folder / "campaign.candidate.yaml"), "--reason", "launches",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert proposed.returncode == 0, proposed.stderr
    # After the proposal, operations edit settings the candidate (copied earlier) does not have.
    edited = campaign.read_text().replace(
        "  - http://127.0.0.1:8001",
        "  - https://shop.acmerevenue.example  # the shop embeds the snippet too\n  - http://127.0.0.1:8001",
        1,
    )
    edited = edited.replace("  tiers: [1]\n", "  tiers: [1, 2]\n", 1)  # seller alerts for tier 2 too
    campaign.write_text(edited)

    promoted = cli("promote", str(campaign), str(folder / REPORT), redis_url=redis_url, tmp_path=tmp_path)
    assert promoted.returncode == 0, promoted.stderr
    assert "every other field and line kept" in promoted.stdout
    after = campaign.read_text()
    data = yaml.safe_load(after)
    assert data["guideline_version"] == "2026-12-01"
    assert "product_launch" in data["patterns"] and data["signal_windows_days"]["product_launch"] == 60
    assert data["seller_alerts"]["tiers"] == [1, 2]
    assert "https://shop.acmerevenue.example" in data["snippet_origins"]
    # Line for line: the edited file with only the candidate's guideline lines in it.
    expected = (
        (folder / "campaign.candidate.yaml")
        .read_text()
        .replace(
            "  - http://127.0.0.1:8001",
            "  - https://shop.acmerevenue.example  # the shop embeds the snippet too\n"
            "  - http://127.0.0.1:8001",
            1,
        )
        .replace("  tiers: [1]\n", "  tiers: [1, 2]\n", 1)
    )
    assert after == expected
    assert (folder / "guidelines" / "2026-12-01.yaml").read_text() == after
    assert (folder / "guidelines" / "2026-11-01.yaml").read_text() == edited


def test_a_candidate_that_changes_a_regression_case_without_naming_it_is_not_ready(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign = str(folder / "campaign.yaml")
    candidate = write_candidate(
        folder, "no-funding.yaml", without_funding((folder / "campaign.candidate.yaml").read_text())
    )
    result = cli(
        "propose", campaign, str(candidate), "--reason", "funding lines read stale", "--json",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["recommendation"] == "NOT READY"
    [reason] = [r for r in report["reasons"] if r.startswith("regression:")]
    assert "acct_dymaxa" in reason and "--intended-change acct_dymaxa" in reason
    assert f"hero_headline personal {DYMAXA_BEFORE!r} -> personal {DYMAXA_AFTER!r}" in reason
    refused = cli("promote", campaign, str(folder / REPORT), redis_url=redis_url, tmp_path=tmp_path)
    assert refused.returncode == 2 and "NOT READY" in refused.stderr and "acct_dymaxa" in refused.stderr

    named = cli(
        "propose", campaign, str(candidate), "--reason", "funding lines read stale",
        "--intended-change", "acct_dymaxa", redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert named.returncode == 0, named.stderr + named.stdout
    assert "READY FOR PROMOTION" in named.stdout
    assert "acct_dymaxa hero_headline: personal -> personal (intended)" in named.stdout
    assert "intended regression changes: acct_dymaxa" in named.stdout
    stored = json.loads((folder / REPORT).read_text())
    assert stored["intended_changes"] == ["acct_dymaxa"] and stored["reasons"] == []
    record = GuidelineStore(redis_client).get(TENANT, CAMPAIGN, "2026-12-01")
    assert record is not None and "intended regression change: acct_dymaxa" in record.evidence


def test_an_intended_change_must_name_a_regression_case(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # acct_00015 is a case of the replay set, not of the regression set.
    result = cli(
        "propose", str(folder / "campaign.yaml"), str(folder / "campaign.candidate.yaml"), "--reason", "x",
        "--intended-change", "acct_00015", redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert "regression.jsonl, field '--intended-change'" in result.stderr
    assert "'acct_00015' is not a case of the regression set" in result.stderr
    assert not (folder / REPORT).exists()


def test_a_file_the_text_merge_cannot_rewrite_keeps_its_fields_without_its_comments(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # campaign.yaml's name is an alias of an anchor inside a guideline field the candidate
    # rewrites: lifting the candidate's block in would leave the alias dangling.
    name = 'name: "Q4 pipeline: ramp new sales hires faster"\n'
    campaign, candidate = folder / "campaign.yaml", folder / "campaign.candidate.yaml"
    text = (
        campaign.read_text().replace(name, "", 1).replace("vocabulary: [Acme,", "vocabulary: [&brand Acme,")
    )
    campaign.write_text(text.replace("approval:\n", "name: *brand\napproval:\n", 1))
    candidate.write_text(
        candidate.read_text().replace(name, "", 1).replace("approval:\n", "name: Acme\napproval:\n")
    )
    assert (
        cli(
            "propose",
            str(campaign),
            str(candidate),
            "--reason",
            "launches",
            redis_url=redis_url,
            tmp_path=tmp_path,
        ).returncode
        == 0
    )
    promoted = cli("promote", str(campaign), str(folder / REPORT), redis_url=redis_url, tmp_path=tmp_path)
    assert promoted.returncode == 0, promoted.stderr
    assert "every other field kept, its comments not" in promoted.stdout
    data = yaml.safe_load(campaign.read_text())
    assert data["name"] == "Acme" and data["seller_alerts"]["tiers"] == [1]
    assert data["guideline_version"] == "2026-12-01" and "product_launch" in data["patterns"]
