"""`welcomemat precompute | qa | explain | review` as a user runs them, against a real Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from welcomemat import keys
from welcomemat.records.audit import AuditAction, Via, read_entries

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


@pytest.fixture
def accounts(tmp_path: Path) -> Path:
    """The example accounts, dated from today so their signals are fresh whenever tests run."""
    return write_example_accounts(tmp_path / "accounts.jsonl", 400)


def cli(*args: str, redis_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_precompute_then_qa_explain_and_review(
    tmp_path: Path, accounts: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    first = cli(
        "precompute",
        "examples/campaign.yaml",
        str(accounts),
        "--json",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["accounts"] == 400 and report["published"] == 400 and report["malformed"] == []
    assert report["zones_by_rung"]["personal"] > 0 and report["verdict"] in ("GO", "GO WITH FIXES")
    assert report["model_calls"] == 0 and report["seconds"] > 0

    again = json.loads(
        cli(
            "precompute",
            "examples/campaign.yaml",
            str(accounts),
            "--json",
            redis_url=redis_url,
            tmp_path=tmp_path,
        ).stdout
    )
    assert again["published"] == 0 and again["unchanged"] == 400

    qa = cli("qa", "q4-pipeline", redis_url=redis_url, tmp_path=tmp_path)
    assert qa.returncode == 0 and "QA acme/q4-pipeline: GO" in qa.stdout and "sample to read" in qa.stdout
    qa_json = json.loads(
        cli("qa", "acme/q4-pipeline", "--json", redis_url=redis_url, tmp_path=tmp_path).stdout
    )
    assert qa_json["accounts"] == 400 and qa_json["findings_by_code"].get("pending_review", 0) >= 1

    explain = cli("explain", "q4-pipeline", "acct_dymaxa", redis_url=redis_url, tmp_path=tmp_path)
    assert explain.returncode == 0
    assert "trusted  dymaxa-series-a" in explain.stdout and "hero_headline: personal" in explain.stdout
    assert "Series A" in explain.stdout
    as_json = json.loads(
        cli("explain", "q4-pipeline", "acct_dymaxa", "--json", redis_url=redis_url, tmp_path=tmp_path).stdout
    )
    assert as_json["identity"]["claims_allowed"] is True and as_json["status"] == "pending_review"

    listed = cli("review", "list", "q4-pipeline", redis_url=redis_url, tmp_path=tmp_path)
    assert "approval acct_dymaxa" in " ".join(listed.stdout.split())
    stale = cli(
        "review",
        "approve",
        "q4-pipeline",
        "acct_dymaxa",
        "--version",
        "7",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert stale.returncode == 1 and "no longer current" in stale.stdout
    ok = cli(
        "review",
        "approve",
        "q4-pipeline",
        "acct_dymaxa",
        "--version",
        "1",
        "--by",
        "Rita Reviewer",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert ok.returncode == 0 and "published" in ok.stdout
    shown = cli("review", "show", "q4-pipeline", "acct_dymaxa", redis_url=redis_url, tmp_path=tmp_path)
    assert "v2: published" in shown.stdout
    for action in ("reject", "rollback"):  # a reason is required before anything is done
        unreasoned = cli(
            "review", action, "q4-pipeline", "acct_dymaxa", redis_url=redis_url, tmp_path=tmp_path
        )
        assert unreasoned.returncode == 2 and f"'--reason': {action} needs a reason" in unreasoned.stderr
    rollback = cli(
        "review",
        "rollback",
        "q4-pipeline",
        "acct_dymaxa",
        "--reason",
        "v2 is wrong",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert rollback.returncode == 1 and "no previous version" in rollback.stdout
    [approval] = [e for e in read_entries(redis_client, "acme", account="acct_dymaxa") if e.via is Via.CLI]
    assert (approval.action, approval.actor, approval.version) == (AuditAction.APPROVE, "Rita Reviewer", 2)


def test_bad_input_exits_2_and_names_the_problem(
    tmp_path: Path, accounts: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    tenant = tmp_path / "tenant.yaml"
    tenant.write_text("tenant: acme\nmax_signal_windows_days:\n  funding: 14\n")
    loosened = cli(
        "precompute",
        "examples/campaign.yaml",
        str(accounts),
        "--tenant-policy",
        str(tenant),
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert loosened.returncode == 2
    assert "examples/campaign.yaml" in loosened.stderr and "signal_windows_days.funding" in loosened.stderr
    assert "14" in loosened.stderr and "never loosen" in loosened.stderr

    missing = cli(
        "precompute",
        "examples/campaign.yaml",
        str(tmp_path / "nope.jsonl"),
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr

    unknown = cli("qa", "no-such-campaign", redis_url=redis_url, tmp_path=tmp_path)
    assert unknown.returncode == 2 and "no published campaign" in unknown.stderr

    rows = accounts.read_text().splitlines()[:5] + ["{broken", '{"account_id": "x y"}']
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    partial = cli("precompute", "examples/campaign.yaml", str(bad), redis_url=redis_url, tmp_path=tmp_path)
    assert partial.returncode in (0, 1)
    assert f"{bad}:6" in partial.stderr and f"{bad}:7, field 'account_id'" in partial.stderr
    assert "5 accounts from 7 rows" in partial.stdout


def test_a_5000_digit_number_in_an_accounts_line_costs_that_line_only(
    tmp_path: Path, accounts: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    """Python refuses to parse an int past 4,300 digits with a ValueError of its own: one such
    line in an export once stopped the whole run with a traceback."""
    rows = [json.loads(line) for line in accounts.read_text().splitlines()[:5]]
    lines = [json.dumps(row) for row in rows]
    lines[2] = json.dumps(dict(rows[2], tier=0)).replace('"tier": 0', '"tier": ' + "9" * 5000)
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(lines) + "\n")

    checked = cli("validate", "examples/campaign.yaml", str(hostile), redis_url=redis_url, tmp_path=tmp_path)
    assert checked.returncode == 2, checked.stderr
    assert f"{hostile}:3: tier: number 999" in checked.stderr and "5000 digits" in checked.stderr

    ran = cli("precompute", "examples/campaign.yaml", str(hostile), redis_url=redis_url, tmp_path=tmp_path)
    assert ran.returncode in (0, 1) and "Traceback" not in ran.stderr, ran.stderr
    assert f"{hostile}:3, field 'tier'" in ran.stderr and "5000 digits" in ran.stderr
    assert "4 accounts from 5 rows" in ran.stdout
    published = {rows[i]["account_id"] for i in (0, 1, 3, 4)}
    for account in published:
        assert redis_client.exists(keys.zone_set_key("acme", "q4-pipeline", account)), account
    assert not redis_client.exists(keys.zone_set_key("acme", "q4-pipeline", rows[2]["account_id"]))
