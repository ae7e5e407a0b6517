"""The `welcomemat` command as a user runs it: output, exit codes, no Redis left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.corpora import REPO_ROOT
from welcomemat.embedded_redis import EmbeddedRedis
from welcomemat.tokens import TokenKind, TokenSigner

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
SECRET = "s" * 40


def run(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "WELCOMEMAT_SECRET")}
    full_env.update({"WELCOMEMAT_HOME": str(home), **(env or {})})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=120
    )


def test_help_lists_the_commands(tmp_path: Path) -> None:
    result = run("--help", home=tmp_path)
    assert result.returncode == 0
    for command in ("demo", "validate", "redis"):
        assert command in result.stdout


def test_no_command_is_bad_usage(tmp_path: Path) -> None:
    assert run(home=tmp_path).returncode == 2


def test_demo_validates_the_examples_prints_a_working_link_and_stops_its_redis(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run("demo", home=home, env={"WELCOMEMAT_SECRET": SECRET})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "AOF yes" in out and "embedded Redis" in out
    assert "1200 read" in out and "0 lines skipped" in out
    assert "Dymaxa B.V." in out and "Joram, Head of Sales" in out and "Series A" in out
    link = next(line.split()[-1] for line in out.splitlines() if line.strip().startswith("Link"))
    parts = urlsplit(link)
    assert parts.path == "/c/q4-pipeline"
    token = parse_qs(parts.query)["wm"][0]
    claims = TokenSigner([SECRET]).verify(TokenKind.LINK, token, tenant="acme", campaign="q4-pipeline")
    assert (claims.account, claims.contact) == ("acct_dymaxa", "c_joram")
    assert not EmbeddedRedis().status(home).running, "the demo stops the Redis it started"


def test_validate_exit_codes(tmp_path: Path) -> None:
    ok = run("validate", "examples/campaign.yaml", "examples/accounts.jsonl", home=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "1200 read, 0 lines skipped" in ok.stdout

    accounts = tmp_path / "a.jsonl"
    accounts.write_text(
        '{"account_id": "a1", "name": "A", "domain": "a.com", "segment": "saas-mid"}\n{oops\n'
    )
    some_bad = run("validate", "examples/campaign.yaml", str(accounts), home=tmp_path)
    assert some_bad.returncode == 1
    assert f"{accounts}:2" in some_bad.stderr and "not valid JSON" in some_bad.stderr

    campaign = tmp_path / "campaign.yaml"
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    campaign.write_text(text.replace("https://meet.acmerevenue.example/ramp-review", "https://evil.example/"))
    refused = run("validate", str(campaign), "--zones", "zones", home=tmp_path)
    assert refused.returncode == 2
    assert f"{campaign}:" in refused.stderr and "ctas.0.href" in refused.stderr


@pytest.mark.parametrize("missing", ["nope.yaml"])
def test_missing_campaign_file_is_bad_input(tmp_path: Path, missing: str) -> None:
    result = run("validate", missing, "--zones", "zones", home=tmp_path)
    assert result.returncode == 2 and "not found" in result.stderr


def test_redis_start_status_stop(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert run("redis", "status", home=home).returncode == 1
    assert run("redis", "start", home=home).returncode == 0
    status = run("redis", "status", home=home)
    assert status.returncode == 0 and "running" in status.stdout
    assert "stopped" in run("redis", "stop", home=home).stdout
    assert run("redis", "status", home=home).returncode == 1
