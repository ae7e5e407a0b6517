"""What a run cost, and `--budget`: the real `openai` client against the local model server.

The server (`tests/llm_server.py`) bills every answer 100 prompt tokens and 50 completion
tokens (`usage`), so every figure here is exact: with self-review an account of these four is
two calls, 200 tokens in and 100 out. The test model is priced $1 in / $2 out per 1M tokens
(`WELCOMEMAT_MODEL_PRICES`), so an account costs $0.0004.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import html5lib
import pytest
import redis
from starlette.testclient import TestClient

from precompute.journal import JournalState
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from server.app import create_app
from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import NOW, example_rows, provider_for
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.model_cost import PRICES_ENV_VAR, parse_price_table
from welcomemat.settings import Settings
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
PRICES = "test-model=1/2"
CALLS_PER_ACCOUNT = 2  # generation + self-review
IN_PER_CALL, OUT_PER_CALL = 100, 50  # the server's `usage` for every answer
ADMIN = "admin-token-for-run-cost-0123456789"


@pytest.fixture
def server(llm_server: LLMTestServer) -> LLMTestServer:
    llm_server.reset()
    return llm_server


def write_accounts(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def cli_env(tmp_path: Path, redis_url: str, server: LLMTestServer, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL", "OPENAI_"))}
    env.update(
        {
            "REDIS_URL": redis_url,
            "WELCOMEMAT_HOME": str(tmp_path / "home"),
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "test-key",
            "WELCOMEMAT_MODEL": "test-model",
            PRICES_ENV_VAR: PRICES,
        }
    )
    env.update(more)
    return env


def precompute(env: dict[str, str], accounts: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["precompute", "examples/campaign.yaml", str(accounts), "--provider", "openai", "--deadline", "60"]
    return subprocess.run(
        [WELCOMEMAT, *args, *extra], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180
    )


def results_json(client: redis.Redis, campaign: Campaign) -> dict[str, Any]:
    settings = Settings.from_env(
        {},
        secret="s" * 40,
        admin_token=ADMIN,
        public_url="https://wm.example.com",
        allowed_hosts=("testserver",),
    )
    with TestClient(create_app(settings, redis_client=client), base_url="https://testserver") as http:
        auth = {"authorization": f"Bearer {ADMIN}"}
        answer = http.get(f"/admin/results/{campaign.campaign}", params={"format": "json"}, headers=auth)
        page = http.get(f"/admin/results/{campaign.campaign}", headers=auth)
    assert answer.status_code == page.status_code == 200, answer.text
    document = html5lib.parse(page.text, namespaceHTMLElements=False)
    rows = document.findall(".//table[@data-admin='run-cost']/tbody/tr")
    shown = {row.get("data-admin-cost"): "".join(row.find("td").itertext()) for row in rows}
    return {"json": answer.json()["last_run_cost"], "page": shown}


def test_a_run_reports_its_calls_tokens_and_cost_and_the_results_page_divides_it(
    redis_client: redis.Redis,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    tmp_path: Path,
    server: LLMTestServer,
) -> None:
    rows = example_rows()
    provider = provider_for(server)
    try:
        report = PrecomputeRun(
            client=redis_client,
            campaign=campaign,
            zones=zones,
            policy=build_policy(campaign, None),
            provider=provider,
            concurrency=2,
            now=NOW,
            prices=parse_price_table(PRICES),
        ).run(write_accounts(tmp_path, rows))
    finally:
        provider.close()
    calls = len(rows) * CALLS_PER_ACCOUNT
    assert len(server.requests()) == calls == 8
    assert (report.model_calls, report.input_tokens, report.output_tokens) == (8, 800, 400)
    assert report.tokens == 1_200
    # 800 × $1 + 400 × $2, per 1M tokens
    assert report.cost.cost_usd == Decimal("0.0016") and report.cost.model == "test-model"
    assert report.personal_published == 4
    stored = json.loads(redis_client.get(keys.run_report_key(campaign.tenant, campaign.campaign)))  # type: ignore[arg-type]
    assert stored["cost"] == {
        "model": "test-model",
        "model_calls": 8,
        "input_tokens": 800,
        "output_tokens": 400,
        "price": {"input_per_million": 1.0, "output_per_million": 2.0},
        "cost_usd": 0.0016,
    }
    shown = results_json(redis_client, campaign)
    assert shown["json"]["cost_per_personal_account_usd"] == 0.0004  # $0.0016 / 4 personal accounts
    assert shown["json"]["personal_published"] == 4
    assert shown["page"]["per-personal-account"] == "$0.0004"
    assert shown["page"]["run"] == (
        "model calls 8, tokens 800 in / 400 out, cost $0.0016 (test-model at $1.00/$2.00 per 1M)"
    )


def test_an_unpriced_model_reports_its_tokens_and_an_unknown_cost(
    redis_client: redis.Redis,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    tmp_path: Path,
    server: LLMTestServer,
) -> None:
    rows = example_rows()[:2]
    provider = provider_for(server)
    try:
        report = PrecomputeRun(
            client=redis_client,
            campaign=campaign,
            zones=zones,
            policy=build_policy(campaign, None),
            provider=provider,
            now=NOW,
        ).run(write_accounts(tmp_path, rows))
    finally:
        provider.close()
    assert (report.model_calls, report.input_tokens, report.output_tokens) == (4, 400, 200)
    assert report.cost.cost_usd is None and report.cost.price is None
    shown = results_json(redis_client, campaign)
    assert (
        shown["json"]["cost_per_personal_account_usd"] is None and shown["json"]["cost"]["cost_usd"] is None
    )
    assert shown["page"]["per-personal-account"] == "unknown"


def test_the_offline_composer_makes_no_call_and_costs_nothing(
    redis_client: redis.Redis, campaign: Campaign, zones: dict[str, ZoneContract], tmp_path: Path
) -> None:
    report = PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
    ).run(write_accounts(tmp_path, example_rows()))
    assert (report.model_calls, report.input_tokens, report.output_tokens) == (0, 0, 0)
    assert report.cost.cost_usd == 0 and report.cost.model is None
    shown = results_json(redis_client, campaign)
    assert shown["page"]["per-personal-account"] == "$0.00"


def test_the_budget_stops_the_run_after_two_accounts_and_the_next_run_does_the_rest(
    redis_client: redis.Redis, redis_url: str, campaign: Campaign, tmp_path: Path, server: LLMTestServer
) -> None:
    rows = example_rows()
    accounts = write_accounts(tmp_path, rows)
    env = cli_env(tmp_path, redis_url, server)
    # An account is 300 tokens: the first leaves 300 < 500 spent, so the second starts; after it,
    # 600 ≥ 500: the last two are not started.
    done = precompute(env, accounts, "--budget", "500tokens", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["budget"], report["budget_reached"], report["budget_deferred"]) == ("500 tokens", True, 2)
    assert report["published"] == 2 and report["model_calls"] == 4 == len(server.requests())
    assert (report["input_tokens"], report["output_tokens"], report["cost"]["cost_usd"]) == (400, 200, 0.0008)
    store = ZoneSetStore(redis_client)
    first, rest = [r["account_id"] for r in rows[:2]], [r["account_id"] for r in rows[2:]]
    assert all(store.get(campaign.tenant, campaign.campaign, a) is not None for a in first)
    assert all(store.get(campaign.tenant, campaign.campaign, a) is None for a in rest)  # no fallback
    journal = keys.journal_key(campaign.tenant, campaign.campaign)
    for account in rest:
        entry = json.loads(redis_client.hget(journal, account))  # type: ignore[arg-type]
        assert (entry["state"], entry["reason"]) == (JournalState.DEFERRED, "budget")

    server.reset()
    again = precompute(env, accounts, "--budget", "$5")
    assert again.returncode == 0, again.stderr
    assert (
        "model calls 4, tokens 400 in / 200 out, cost $0.0008 (test-model at $1.00/$2.00 per 1M)"
        in again.stdout
    )
    assert "budget" not in again.stdout.replace("--budget", "")  # $5 was not reached
    assert len(server.requests()) == 4  # only the two left: the first two are unchanged
    assert all(store.get(campaign.tenant, campaign.campaign, a) is not None for a in rest)


def test_the_summary_says_the_budget_stopped_the_run(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path, server: LLMTestServer
) -> None:
    accounts = write_accounts(tmp_path, example_rows())
    done = precompute(cli_env(tmp_path, redis_url, server), accounts, "--budget", "$0.0004")
    assert done.returncode == 0, done.stderr
    assert (
        "model calls 2, tokens 200 in / 100 out, cost $0.0004 (test-model at $1.00/$2.00 per 1M)"
        in done.stdout
    )
    assert (
        "budget $0.0004 reached: 3 accounts deferred, not started and not published (no fallback written); "
        "the next run does them"
    ) in done.stdout


@pytest.mark.parametrize(
    ("extra", "env", "says"),
    [
        (("--budget", "lots"), {}, "argument --budget: 'lots': expected a number of tokens"),
        (("--budget", "5"), {}, "argument --budget: '5': expected a number of tokens"),
        (("--budget", "$0"), {}, "argument --budget: '$0': a money budget is more than $0"),
        (("--budget", "$5"), {PRICES_ENV_VAR: ""}, "--budget"),
        (("--budget", "100tokens", "--enqueue"), {}, "--budget applies to a local run"),
    ],
)
def test_a_bad_budget_is_exit_2_naming_the_flag(
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    server: LLMTestServer,
    extra: tuple[str, ...],
    env: dict[str, str],
    says: str,
) -> None:
    accounts = write_accounts(tmp_path, example_rows()[:1])
    done = precompute(cli_env(tmp_path, redis_url, server, **env), accounts, *extra)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says in done.stderr and "Traceback" not in done.stderr
    assert not server.requests()


def test_a_distributed_run_adds_up_every_workers_tokens_and_stores_the_cost(
    redis_client: redis.Redis, redis_url: str, campaign: Campaign, tmp_path: Path, server: LLMTestServer
) -> None:
    accounts = write_accounts(tmp_path, example_rows())
    env = cli_env(tmp_path, redis_url, server)
    enqueued = precompute(env, accounts, "--enqueue", "--json")
    assert enqueued.returncode == 0, enqueued.stderr
    ref = f"{campaign.tenant}/{campaign.campaign}"
    worker = subprocess.run(
        [WELCOMEMAT, "worker", "--campaign", ref, "--once", "--block-ms", "100"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert worker.returncode == 0, worker.stderr
    assert len(server.requests()) == 8
    stored = json.loads(redis_client.get(keys.run_report_key(campaign.tenant, campaign.campaign)))  # type: ignore[arg-type]
    assert (stored["input_tokens"], stored["output_tokens"], stored["personal_published"]) == (800, 400, 4)
    assert stored["cost"]["cost_usd"] == 0.0016 and stored["cost"]["model"] == "test-model"
    status = subprocess.run(
        [WELCOMEMAT, "precompute-status", ref],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    assert (
        "model calls 8, tokens 800 in / 400 out, cost $0.0016 (test-model at $1.00/$2.00 per 1M)"
        in status.stdout
    )
    shown = results_json(redis_client, campaign)
    assert shown["page"]["per-personal-account"] == "$0.0004"
