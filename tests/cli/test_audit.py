"""`welcomemat audit`: the log as a table or JSON Lines, filtered by tenant, campaign, account and time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import redis

from tests.corpora import REPO_ROOT
from welcomemat import keys
from welcomemat.records.audit import AuditAction, Auditor, Via, append_entry

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def cli(*args: str, redis_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def seed(client: redis.Redis) -> None:
    def at(day: int) -> Auditor:
        return Auditor("rita", Via.CLI, lambda: datetime(2026, 12, day, 9, 0, tzinfo=UTC))

    client.hset(keys.campaigns_index_key(), "acme/q4-pipeline", "q4-pipeline")
    append_entry(
        client,
        at(1).entry(AuditAction.PUBLISH, tenant="acme", campaign="q4-pipeline", account="a1", version=1),
    )
    append_entry(
        client,
        at(3).entry(
            AuditAction.REJECT,
            tenant="acme",
            campaign="q4-pipeline",
            account="a1",
            version=2,
            reason="a rumour",
        ),
    )
    append_entry(client, at(2).entry(AuditAction.ERASE, tenant="globex", account="g1", detail="7 keys"))
    append_entry(client, at(4).entry(AuditAction.SECRET_ROTATE, tenant=None, detail="the new key signs"))


def test_every_log_oldest_first_as_a_table(redis_url: str, redis_client: redis.Redis, tmp_path: Path) -> None:
    seed(redis_client)
    result = cli("audit", redis_url=redis_url, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split()[:4] == ["id", "at", "who", "action"]
    assert [row.split()[4] for row in rows] == ["publish", "erase", "reject", "secret_rotate"]
    assert "2026-12-03T09:00:00Z" in rows[2] and "acme/q4-pipeline" in rows[2] and "a rumour" in rows[2]
    assert "rita (cli)" in rows[0] and rows[0].split()[0].count("-") == 1  # the stream id


def test_filters_and_json_lines(redis_url: str, redis_client: redis.Redis, tmp_path: Path) -> None:
    seed(redis_client)
    as_json = cli("audit", "--tenant", "acme", "--json", redis_url=redis_url, tmp_path=tmp_path)
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(e["action"], e["version"], e["at"]) for e in lines] == [
        ("publish", 1, "2026-12-01T09:00:00Z"),
        ("reject", 2, "2026-12-03T09:00:00Z"),
    ]
    assert lines[1]["reason"] == "a rumour" and lines[1]["id"] and "contact" not in lines[1]
    since = cli("audit", "--since", "2026-12-02", "--json", redis_url=redis_url, tmp_path=tmp_path)
    assert [json.loads(line)["action"] for line in since.stdout.splitlines()] == [
        "erase",
        "reject",
        "secret_rotate",
    ]
    by_campaign = cli("audit", "--campaign", "q4-pipeline", "--json", redis_url=redis_url, tmp_path=tmp_path)
    assert len(by_campaign.stdout.splitlines()) == 2
    by_account = cli("audit", "--account", "g1", redis_url=redis_url, tmp_path=tmp_path)
    assert len(by_account.stdout.splitlines()) == 2 and "7 keys" in by_account.stdout
    nothing = cli("audit", "--tenant", "initech", redis_url=redis_url, tmp_path=tmp_path)
    assert nothing.returncode == 0 and nothing.stdout.strip() == "no audit entries match"


def test_bad_filters_are_exit_2_and_a_broken_entry_exit_1(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    bad = cli("audit", "--since", "last tuesday", redis_url=redis_url, tmp_path=tmp_path)
    assert bad.returncode == 2 and "'--since'" in bad.stderr and "ISO 8601" in bad.stderr
    worse = cli("audit", "--tenant", "a:b", redis_url=redis_url, tmp_path=tmp_path)
    assert worse.returncode == 2 and "'--tenant'" in worse.stderr
    seed(redis_client)
    redis_client.xadd(keys.audit_stream_key("acme"), {"action": "launch"})
    broken = cli("audit", "--tenant", "acme", redis_url=redis_url, tmp_path=tmp_path)
    assert broken.returncode == 1 and "unreadable audit entry" in broken.stderr
    assert len(broken.stdout.splitlines()) == 3  # the header and the two good entries
