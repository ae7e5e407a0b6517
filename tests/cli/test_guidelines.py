"""`welcomemat guidelines propose|promote|rollback`: replayed sets, two-person promotion, rollback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.corpora import REPO_ROOT
from welcomemat.campaign.guidelines import ActivationState, GuidelineStore
from welcomemat.records.audit import AuditAction, read_entries

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
TENANT, CAMPAIGN = "acme", "q4-pipeline"


def cli(*args: str, redis_url: str, tmp_path: Path, by: str = "ana") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    env.pop("WELCOMEMAT_OPERATOR", None)
    return subprocess.run(
        [WELCOMEMAT, "guidelines", *args, "--by", by],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The example campaign folder, its zone contracts beside it."""
    target = tmp_path / "campaign"
    shutil.copytree(REPO_ROOT / "examples", target, ignore=shutil.ignore_patterns("accounts.jsonl", "*.py"))
    shutil.copytree(REPO_ROOT / "zones", target / "zones")
    return target


def bad_candidate(folder: Path) -> Path:
    """Drops "synergy" (banned by this campaign only) and writes it into the funding headline."""
    text = (folder / "campaign.candidate.yaml").read_text()
    text = text.replace('  - "synergy"\n', "", 1)
    text = text.replace(
        '"Congrats on the {round} {when}, {account}"',
        '"Congrats on the {round} {when}: real synergy, {account}"',
    )
    path = folder / "campaign.bad.yaml"
    path.write_text(text)
    return path


def test_a_good_change_is_ready_and_promotable_and_rolls_back(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign, candidate = str(folder / "campaign.yaml"), str(folder / "campaign.candidate.yaml")
    original = (folder / "campaign.yaml").read_bytes()
    proposed = cli(
        "propose", campaign, candidate, "--reason", "product launches got segment copy",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert proposed.returncode == 0, proposed.stderr + proposed.stdout
    assert "READY FOR PROMOTION" in proposed.stdout
    report_path = folder / "guidelines" / "2026-12-01.report.json"
    report = json.loads(report_path.read_text())
    by_set = {s["name"]: s for s in report["sets"]}
    assert list(by_set) == ["replay", "held_out", "regression"]
    replay = by_set["replay"]
    assert {c["account_id"] for c in replay["changes"]} == {"acct_00015", "acct_00072", "acct_00079"}
    # The new headline pattern dates the launch: personal. The other lines the new patterns let
    # the composer write name no specific of the fact: they change, but stay segment copy.
    moved = {(c["account_id"], c["zone_id"]): (c["rung_before"], c["rung_after"]) for c in replay["changes"]}
    assert {k for k, v in moved.items() if v == ("segment", "personal")} == {
        (a, "hero_headline") for a in ("acct_00015", "acct_00072", "acct_00079")
    }
    assert set(moved.values()) == {("segment", "personal"), ("segment", "segment")}
    assert by_set["regression"]["changes"] == [] and by_set["regression"]["new_blockers"] == []
    assert (folder / "campaign.yaml").read_bytes() == original  # propose publishes and changes nothing
    store = GuidelineStore(redis_client)
    record = store.get(TENANT, CAMPAIGN, "2026-12-01")
    assert record is not None and record.state is ActivationState.CANDIDATE
    assert record.previous_version == "2026-11-01" and record.rollback_target == "2026-11-01"
    assert [v.set for v in record.validation] == ["replay", "held_out", "regression"]

    promoted = cli("promote", campaign, str(report_path), redis_url=redis_url, tmp_path=tmp_path, by="ben")
    assert promoted.returncode == 0, promoted.stderr
    assert (folder / "campaign.yaml").read_bytes() == (folder / "campaign.candidate.yaml").read_bytes()
    assert (folder / "guidelines" / "2026-11-01.yaml").read_bytes() == original
    assert store.active_version(TENANT, CAMPAIGN) == "2026-12-01"
    active = store.get(TENANT, CAMPAIGN, "2026-12-01")
    assert active is not None and active.approvers == ("ben",) and active.state is ActivationState.ACTIVE

    no_reason = cli("rollback", campaign, redis_url=redis_url, tmp_path=tmp_path)
    assert no_reason.returncode == 2 and "reason" in no_reason.stderr
    rolled = cli(
        "rollback", campaign, "--reason", "launch copy reads odd", redis_url=redis_url, tmp_path=tmp_path
    )
    assert rolled.returncode == 0, rolled.stderr
    assert (folder / "campaign.yaml").read_bytes() == original
    assert store.active_version(TENANT, CAMPAIGN) == "2026-11-01"
    gone = store.get(TENANT, CAMPAIGN, "2026-12-01")
    assert gone is not None and gone.state is ActivationState.ROLLED_BACK
    actions = [e.action for e in read_entries(redis_client, TENANT)]
    assert actions == [
        AuditAction.GUIDELINES_PROPOSE,
        AuditAction.GUIDELINES_PROMOTE,
        AuditAction.GUIDELINES_ROLLBACK,
    ]


def test_a_change_that_lets_a_banned_line_through_is_not_ready_and_names_the_accounts(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign = str(folder / "campaign.yaml")
    result = cli(
        "propose", campaign, str(bad_candidate(folder)), "--reason", "livelier funding headline", "--json",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["recommendation"] == "NOT READY"
    regression = next(s for s in report["sets"] if s["name"] == "regression")
    assert regression["broken_accounts"] == ["acct_dymaxa"]
    [blocker] = regression["new_blockers"]
    assert blocker["account_id"] == "acct_dymaxa" and blocker["code"] == "banned_line:banned_phrase"
    assert "synergy" in blocker["detail"]
    assert any("regression" in r and "acct_dymaxa" in r for r in report["reasons"])

    refused = cli(
        "promote", campaign, str(folder / "guidelines" / "2026-12-01.report.json"),
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2 and "NOT READY" in refused.stderr
    assert "recommendation" in refused.stderr


def test_a_high_risk_change_is_a_sign_off_then_a_promotion_by_someone_else(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    for name in ("campaign.yaml", "campaign.candidate.yaml"):
        path = folder / name
        path.write_text(
            path.read_text().replace("holdout_fraction:", "risk_tier: high\nholdout_fraction:", 1)
        )
    campaign, candidate = str(folder / "campaign.yaml"), str(folder / "campaign.candidate.yaml")
    proposed = cli(
        "propose", campaign, candidate, "--reason", "launches", redis_url=redis_url, tmp_path=tmp_path
    )
    assert proposed.returncode == 0, proposed.stderr
    report = str(folder / "guidelines" / "2026-12-01.report.json")
    unsigned = cli("promote", campaign, report, redis_url=redis_url, tmp_path=tmp_path, by="ben")
    assert unsigned.returncode == 2 and "guidelines signoff" in unsigned.stderr
    assert "2026-11-01" in (folder / "campaign.yaml").read_text()  # not active
    signed = cli("signoff", campaign, report, redis_url=redis_url, tmp_path=tmp_path, by="ana")
    assert signed.returncode == 0, signed.stderr
    assert "ana signed off" in signed.stdout and "2026-11-01" in (folder / "campaign.yaml").read_text()
    record = GuidelineStore(redis_client).get(TENANT, CAMPAIGN, "2026-12-01")
    assert record is not None and record.signed_off_by == "ana" and record.signed_off_at is not None
    assert record.state is ActivationState.CANDIDATE
    twice = cli("signoff", campaign, report, redis_url=redis_url, tmp_path=tmp_path, by="carl")
    assert twice.returncode == 2 and "signed off by ana" in twice.stderr
    same_person = cli("promote", campaign, report, redis_url=redis_url, tmp_path=tmp_path, by="ana")
    assert same_person.returncode == 2 and "someone else" in same_person.stderr
    second = cli("promote", campaign, report, redis_url=redis_url, tmp_path=tmp_path, by="ben")
    assert second.returncode == 0, second.stderr
    assert "signed off by ana, promoted by ben" in second.stdout
    active = GuidelineStore(redis_client).get(TENANT, CAMPAIGN, "2026-12-01")
    assert (
        active is not None and active.approvers == ("ana", "ben") and active.state is ActivationState.ACTIVE
    )
    entries = [(e.action, e.actor) for e in read_entries(redis_client, TENANT)]
    assert entries == [
        (AuditAction.GUIDELINES_PROPOSE, "ana"),
        (AuditAction.GUIDELINES_SIGNOFF, "ana"),
        (AuditAction.GUIDELINES_PROMOTE, "ben"),
    ]


def test_bad_input_is_exit_2_with_file_line_and_field(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign = str(folder / "campaign.yaml")
    same = cli("propose", campaign, campaign, "--reason", "x", redis_url=redis_url, tmp_path=tmp_path)
    assert same.returncode == 2 and "campaign.yaml:5, field 'guideline_version'" in same.stderr
    (folder / "guideline_sets" / "held_out.jsonl").write_text('{"account_id": "a b"}\n')
    candidate = str(folder / "campaign.candidate.yaml")
    bad_set = cli("propose", campaign, candidate, "--reason", "x", redis_url=redis_url, tmp_path=tmp_path)
    assert bad_set.returncode == 2 and "held_out.jsonl:1, field" in bad_set.stderr


def precompute(folder: Path, redis_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    accounts = str(folder / "guideline_sets" / "regression.jsonl")
    return subprocess.run(
        [WELCOMEMAT, "precompute", str(folder / "campaign.yaml"), accounts, "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_once_versioned_precompute_publishes_only_the_active_guidelines_as_approved(
    folder: Path, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    campaign, candidate = folder / "campaign.yaml", folder / "campaign.candidate.yaml"
    assert (
        cli(
            "propose", str(campaign), str(candidate), "--reason", "x", redis_url=redis_url, tmp_path=tmp_path
        ).returncode
        == 0
    )
    original = campaign.read_bytes()
    campaign.write_bytes(candidate.read_bytes())  # the candidate, not promoted
    refused = precompute(folder, redis_url, tmp_path)
    assert refused.returncode == 2 and "'2026-12-01' is candidate" in refused.stderr
    assert "campaign.yaml:5, field 'guideline_version'" in refused.stderr
    campaign.write_bytes(original.replace(b'  - "synergy"\n', b""))  # an edit under the same label
    edited = precompute(folder, redis_url, tmp_path)
    assert edited.returncode == 2 and "differ from version '2026-11-01' as approved" in edited.stderr
    campaign.write_bytes(original)
    assert precompute(folder, redis_url, tmp_path).returncode != 2
