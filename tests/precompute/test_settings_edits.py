"""A settings-only edit of campaign.yaml: no model call, no new version, approvals kept.

Through the command line a team runs, the real `openai` client and the local model server
(which logs every request, so model calls are counted where they arrive), and a real Redis:
precompute, a person approves the tier-1 pages, then someone edits a field that cannot change
copy and runs precompute again. Only an edit that can change copy (a pattern) writes again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import ACCOUNT_IDS, WORKER, example_rows
from welcomemat.records.audit import Auditor, Via
from welcomemat.zones.review import decide
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSetStatus

TIER_ONE = ACCOUNT_IDS[:2]  # a person approves these accounts' pages before they go live


@dataclass(frozen=True)
class Rerun:
    """What a rerun did, as a user sees it: the run's report and the model server's log."""

    report: dict[str, Any]
    model_calls_seen: int  # requests the model server received during the run


@pytest.fixture
def server(llm_server: LLMTestServer) -> LLMTestServer:
    llm_server.reset()
    return llm_server


@pytest.fixture
def campaign_dir(tmp_path: Path) -> Path:
    """The example campaign in a folder of its own (with its theme), to edit as a team would."""
    folder = tmp_path / "campaign"
    folder.mkdir()
    shutil.copy(REPO_ROOT / "examples" / "campaign.yaml", folder / "campaign.yaml")
    shutil.copytree(REPO_ROOT / "examples" / "theme", folder / "theme")
    rows = example_rows(date.today())
    for row in rows:
        row["tier"] = 1 if row["account_id"] in TIER_ONE else 2
    (folder / "accounts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _precompute(folder: Path, server: LLMTestServer, redis_url: str, home: Path) -> Rerun:
    before = len(server.requests())
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WELCOMEMAT_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test-key",
        "WELCOMEMAT_MODEL": "test-model",
    }
    done = subprocess.run(
        [
            WORKER,
            "precompute",
            str(folder / "campaign.yaml"),
            str(folder / "accounts.jsonl"),
            "--provider",
            "openai",
            "--zones",
            str(REPO_ROOT / "zones"),
            "--deadline",
            "60",
            "--json",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode in (0, 1), done.stderr
    return Rerun(json.loads(done.stdout), len(server.requests()) - before)


def _edit(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "campaign.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _published(client: redis.Redis) -> dict[str, tuple[int, ZoneSetStatus]]:
    """Each account's current version and status."""
    sets = ZoneSetStore(client).get_many("acme", "q4-pipeline", list(ACCOUNT_IDS))
    return {a: (z.version, z.status) for a, z in sets.items() if z is not None}


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        here = data
        for name in parents:
            here = here.setdefault(name, {})
        here[last] = value(here.get(last)) if callable(value) else value

    return change


# Fields a team edits that cannot change copy, each edited on its own, one rerun each.
SETTINGS_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "snippet_origins": _set("snippet_origins", lambda old: [*old, "https://shop.acmerevenue.example"]),
    "qa.max_fallback_rate": _set("qa.max_fallback_rate", 0.95),
    "approval.sample_rate": _set("approval.sample_rate", 0.5),
    "seller_alerts.next_step": _set("seller_alerts.next_step", "Call today and offer the ramp review."),
    "snippet.replace_default": _set("snippet.replace_default", True),
    "holdout_fraction": _set("holdout_fraction", 0.2),
    "risk_tier": _set("risk_tier", "high"),
}


def test_a_settings_only_edit_makes_no_model_call_no_new_version_and_keeps_approvals(
    campaign_dir: Path, server: LLMTestServer, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    first = _precompute(campaign_dir, server, redis_url, tmp_path / "home")
    assert first.report["published"] == len(ACCOUNT_IDS) and first.model_calls_seen >= len(ACCOUNT_IDS)
    waiting = [
        a for a, (_, status) in _published(redis_client).items() if status is ZoneSetStatus.PENDING_REVIEW
    ]
    assert sorted(waiting) == sorted(TIER_ONE)
    reviewer = Auditor("alice", Via.CLI, lambda: datetime.now(UTC))
    for account in waiting:
        assert decide(redis_client, "acme", "q4-pipeline", account, approve=True, auditor=reviewer).applied
    approved = _published(redis_client)
    assert all(status is ZoneSetStatus.PUBLISHED for _, status in approved.values())

    figures: dict[str, tuple[int, int]] = {}
    for field, change in SETTINGS_EDITS.items():
        _edit(campaign_dir, change)
        rerun = _precompute(campaign_dir, server, redis_url, tmp_path / "home")
        figures[field] = (rerun.model_calls_seen, rerun.report["published"])
        assert rerun.report["model_calls"] == 0 and rerun.report["unchanged"] == len(ACCOUNT_IDS), field
        # Same versions, still approved: nobody has to review the tier-1 pages again.
        assert _published(redis_client) == approved, field
    assert figures == dict.fromkeys(SETTINGS_EDITS, (0, 0))


def test_a_copy_edit_still_writes_every_account_again_and_asks_for_review(
    campaign_dir: Path, server: LLMTestServer, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    first = _precompute(campaign_dir, server, redis_url, tmp_path / "home")
    reviewer = Auditor("alice", Via.CLI, lambda: datetime.now(UTC))
    for account in TIER_ONE:
        decide(redis_client, "acme", "q4-pipeline", account, approve=True, auditor=reviewer)
    approved = _published(redis_client)

    _edit(
        campaign_dir,
        _set(
            "patterns.funding.hero_headline",
            lambda old: [*old, "{account} closed its {round} {when}: ramp the new sellers fast"],
        ),
    )
    rerun = _precompute(campaign_dir, server, redis_url, tmp_path / "home")
    # Every account has a trusted fact, so every one is written again: as many calls as the first run.
    assert rerun.model_calls_seen == first.model_calls_seen == rerun.report["model_calls"]
    assert rerun.report["published"] == len(ACCOUNT_IDS)
    now = _published(redis_client)
    assert all(now[a][0] > approved[a][0] for a in ACCOUNT_IDS)
    assert {a for a, (_, s) in now.items() if s is ZoneSetStatus.PENDING_REVIEW} == set(TIER_ONE)
