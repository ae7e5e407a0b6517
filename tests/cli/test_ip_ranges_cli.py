"""`validate` and `precompute` on hostile `ip_ranges`, with and without the tenant's `allow_private`."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
import redis

from tests.cli.test_validate import EXAMPLE_ACCOUNTS, run_cli, write_inputs
from tests.example_accounts import committed_today
from tests.precompute.test_cli_precompute import cli
from welcomemat import keys

INTRANET = "tenant: acme\nip_ranges:\n  allow_private: true\n"


def with_ranges(line: str, ranges: list[str]) -> str:
    record = json.loads(line)
    record["ip_ranges"] = ranges
    return json.dumps(record)


def test_validate_names_the_line_and_entry_of_a_hostile_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path)
    rows = [
        with_ranges(EXAMPLE_ACCOUNTS[0], ["203.0.113.0/24", "0.0.0.0/0"]),
        with_ranges(EXAMPLE_ACCOUNTS[1], ["::1"]),
        with_ranges(EXAMPLE_ACCOUNTS[2], ["10.30.0.0/16"]),
    ]
    inputs.accounts.write_text("\n".join(rows) + "\n")
    code, _, err = run_cli(capsys, str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones))
    assert code == 2
    assert f"{inputs.accounts}:1: ip_ranges.1: '0.0.0.0/0' spans /0, wider than the /8 (IPv4)" in err
    assert f"{inputs.accounts}:2: ip_ranges.0: '::1' is loopback" in err
    assert f"{inputs.accounts}:3: ip_ranges.0: '10.30.0.0/16' is private address space" in err
    assert "`ip_ranges: {allow_private: true}` in tenant.yaml" in err


def test_validate_reads_allow_private_from_tenant_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path, tenant=INTRANET)
    inputs.accounts.write_text(with_ranges(EXAMPLE_ACCOUNTS[0], ["10.30.0.0/16", "fd00:30::/48"]) + "\n")
    day = ["--as-of", committed_today().isoformat()]
    code, _, err = run_cli(
        capsys, str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones), *day
    )
    assert code == 0, err
    # A year on the facts are stale: each finding is placed at the account's line, read as a run reads it.
    later = ["--as-of", (committed_today() + timedelta(days=400)).isoformat()]
    code, _, err = run_cli(
        capsys, str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones), *later
    )
    assert code == 1 and f"{inputs.accounts}:1: facts[0].published_at: stale" in err
    inputs.accounts.write_text(with_ranges(EXAMPLE_ACCOUNTS[0], ["127.0.0.0/8"]) + "\n")
    code, _, err = run_cli(
        capsys, str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones), *day
    )
    assert code == 2 and "ip_ranges.0: '127.0.0.0/8' is loopback" in err  # no setting lifts it


def test_precompute_skips_the_row_and_publishes_the_rest(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    accounts = tmp_path / "accounts.jsonl"
    rows = [
        with_ranges(EXAMPLE_ACCOUNTS[0], ["0.0.0.0/0"]),
        with_ranges(EXAMPLE_ACCOUNTS[3], ["192.0.2.48/28"]),
    ]
    accounts.write_text("\n".join(rows) + "\n")
    done = cli(
        "precompute",
        "examples/campaign.yaml",
        str(accounts),
        "--json",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: a NO GO verdict on two accounts, not bad input
    report = json.loads(done.stdout)
    assert [(m["line"], m["field"]) for m in report["malformed"]] == [(1, "ip_ranges.0")]
    assert report["accounts"] == 1
    stored = redis_client.hgetall(keys.ip_ranges_key("acme", "q4-pipeline"))
    assert {k: json.loads(v) for k, v in stored.items()} == {b"acct_00003": ["192.0.2.48/28"]}  # type: ignore[union-attr]


def test_precompute_honours_the_tenant_policys_allow_private(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    tenant = tmp_path / "tenant.yaml"
    tenant.write_text(INTRANET)
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text(with_ranges(EXAMPLE_ACCOUNTS[0], ["10.30.0.0/16"]) + "\n")
    args = ("precompute", "examples/campaign.yaml", str(accounts), "--json", "--tenant-policy", str(tenant))
    done = cli(*args, redis_url=redis_url, tmp_path=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["malformed"] == []
    stored = redis_client.hget(keys.ip_ranges_key("acme", "q4-pipeline"), "acct_dymaxa")
    assert stored is not None and json.loads(stored) == ["10.30.0.0/16"]
