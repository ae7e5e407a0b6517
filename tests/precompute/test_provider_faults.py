"""Provider faults are faults, not decisions: the account is deferred, and retried once fixed.

The real `openai` client against the local test server (`tests/llm_server.py`), a real Redis,
and the real console script where the exit code and the summary are what a user sees. A bad
key, a forbidden model, an unknown model (404, or 400 from a gateway), a wrong URL, a
timeout and a refused connection each defer every account with its cause; nothing good that
was published is replaced; the next run with the fault fixed regenerates every account.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import redis

from cli.run_output import print_run_report
from precompute.journal import JournalState
from precompute.providers.openai_provider import OpenAIProvider
from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import (
    ACCOUNT_IDS,
    WORKER,
    example_rows,
    journal_states,
    run,
)
from welcomemat import keys
from welcomemat.campaign.contract import Campaign
from welcomemat.settings import Settings
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet

GOOD_KEY = "sk-good"
CALLS_PER_ACCOUNT = 2  # generation + self-review


@pytest.fixture
def server(llm_server: LLMTestServer) -> Iterator[LLMTestServer]:
    llm_server.reset()
    yield llm_server
    llm_server.reset()  # the key requirement and the mode go with the test


def _closed_port_url() -> str:
    """A loopback URL nobody listens on: the connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _journal_reasons(client: redis.Redis, campaign: Campaign) -> dict[str, str]:
    raw: dict[bytes, bytes] = client.hgetall(keys.journal_key(campaign.tenant, campaign.campaign))  # type: ignore[assignment]
    return {k.decode(): json.loads(v)["reason"] for k, v in raw.items()}


def _zone_sets(client: redis.Redis, campaign: Campaign) -> dict[str, ZoneSet]:
    store = ZoneSetStore(client)
    found = {a: store.get(campaign.tenant, campaign.campaign, a) for a in ACCOUNT_IDS}
    return {a: z for a, z in found.items() if z is not None}


# (set up the server, provider options) -> the cause every account is deferred with.
FAULTS: dict[str, tuple[Callable[[LLMTestServer], dict[str, Any]], str, str]] = {
    "401 bad key": (
        lambda s: (setattr(s, "api_key", GOOD_KEY), {"api_key": "sk-bad"})[1],
        "http_401",
        "the provider answered 401; check OPENAI_API_KEY",
    ),
    "403 forbidden": (
        lambda s: (s.set_mode("forbidden"), {})[1],
        "http_403",
        "the provider answered 403; check that OPENAI_API_KEY may use WELCOMEMAT_MODEL",
    ),
    "404 model not found": (
        lambda s: (s.set_mode("model_not_found"), {})[1],
        "model_not_found",
        "the provider does not know the model; check WELCOMEMAT_MODEL",
    ),
    "400 model not found": (
        lambda s: (s.set_mode("model_not_found", status=400), {})[1],
        "model_not_found",
        "the provider does not know the model; check WELCOMEMAT_MODEL",
    ),
    "404 wrong base url": (
        lambda s: {"base_url": s.base_url.removesuffix("/v1") + "/wrong/v1"},
        "http_404",
        "the provider answered 404; check OPENAI_BASE_URL and WELCOMEMAT_MODEL",
    ),
    "timeout": (
        lambda s: (s.set_mode("slow", sleep_s=3.0), {"timeout_s": 0.3})[1],
        "timeout",
        "the provider did not answer in time; check the endpoint's health, or allow more time (--deadline)",
    ),
    "refused connection": (
        lambda s: {"base_url": _closed_port_url()},
        "connection",
        "the provider could not be reached; check OPENAI_BASE_URL",
    ),
}


def _provider(server: LLMTestServer, options: dict[str, Any]) -> OpenAIProvider:
    """A provider for the test server (or `base_url`), with `api_key` (default: the good one)."""
    settings = Settings.from_env(
        {},
        openai_base_url=options.pop("base_url", server.base_url),
        model="test-model",
        openai_api_key=options.pop("api_key", GOOD_KEY),
    )
    chosen: dict[str, Any] = {
        "deadline_s": 30.0,
        "timeout_s": 2.0,
        "backoff_base_s": 0.02,
        "backoff_cap_s": 0.1,
        "breaker_threshold": 3,
        "breaker_reset_s": 60.0,
    }
    chosen.update(options)
    return OpenAIProvider.from_settings(settings, **chosen)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_defers_every_account_with_its_cause_and_says_what_to_fix(
    fault: str,
    tmp_path: Path,
    redis_client: redis.Redis,
    server: LLMTestServer,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup, cause, line = FAULTS[fault]
    provider = _provider(server, setup(server))
    try:
        report = run(redis_client, campaign, zones, tmp_path, provider, example_rows()).report
    finally:
        provider.close()
    assert report.deferred == len(ACCOUNT_IDS) and report.deferred_causes == {cause: len(ACCOUNT_IDS)}
    assert report.provider_answered == 0 and not report.failed
    assert set(journal_states(redis_client, campaign).values()) == {JournalState.DEFERRED}
    assert set(_journal_reasons(redis_client, campaign).values()) == {cause}
    # New accounts show the fallback meanwhile, marked so that no later run takes it as decided.
    for zone_set in _zone_sets(redis_client, campaign).values():
        assert zone_set.input_hash.endswith("-deferred")
        assert {z.reason for z in zone_set.zones} == {"provider_unavailable"}

    print_run_report(report)
    out = capsys.readouterr().out
    assert f"  {len(ACCOUNT_IDS)} accounts deferred: {line}\n" in out
    assert "every model call failed" in out


def test_a_bad_output_is_a_decision_a_fault_is_not(
    tmp_path: Path,
    redis_client: redis.Redis,
    server: LLMTestServer,
    campaign: Campaign,
    zones: dict[str, ZoneContract],
) -> None:
    """A model that answered, badly, gets the fallback for good: the rerun asks nothing."""
    server.set_mode("hallucinate")
    provider = _provider(server, {})
    try:
        first = run(redis_client, campaign, zones, tmp_path, provider, example_rows()).report
        again = run(redis_client, campaign, zones, tmp_path, provider, example_rows()).report
    finally:
        provider.close()
    assert first.deferred == 0 and first.provider_answered == len(ACCOUNT_IDS)
    assert again.model_calls == 0 and again.published == 0 and again.unchanged == len(ACCOUNT_IDS)


# -- as a user runs it -----------------------------------------------------------------------


def _precompute(
    tmp_path: Path,
    redis_url: str,
    server: LLMTestServer,
    *,
    key: str,
    model: str = "test-model",
    json_out: bool,
) -> subprocess.CompletedProcess[str]:
    accounts = tmp_path / "accounts.jsonl"
    if not accounts.exists():
        accounts.write_text("".join(json.dumps(r) + "\n" for r in example_rows(date.today())))
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": key,
        "WELCOMEMAT_MODEL": model,
    }
    args = ["precompute", "examples/campaign.yaml", str(accounts), "--provider", "openai"]
    return subprocess.run(
        [WORKER, *args, "--concurrency", "2", "--deadline", "30", *(["--json"] if json_out else [])],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_bad_key_then_the_key_fixed_regenerates_every_account(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, server: LLMTestServer, campaign: Campaign
) -> None:
    server.api_key = GOOD_KEY
    bad = _precompute(tmp_path, redis_url, server, key="sk-bad", json_out=False)
    assert bad.returncode == 1, bad.stderr  # every model call failed
    assert (
        f"{len(ACCOUNT_IDS)} accounts deferred: the provider answered 401; check OPENAI_API_KEY" in bad.stdout
    )
    assert "every model call failed" in bad.stdout
    assert len(server.requests()) == len(ACCOUNT_IDS)  # one refused call each, never retried
    assert not any(
        z.rung is Rung.PERSONAL for zs in _zone_sets(redis_client, campaign).values() for z in zs.zones
    )

    calls_before = len(server.requests())
    fixed = _precompute(tmp_path, redis_url, server, key=GOOD_KEY, json_out=True)
    assert fixed.returncode in (0, 1), fixed.stderr  # 1 only for a QA verdict, never for the provider
    report = json.loads(fixed.stdout)
    assert report["published"] == len(ACCOUNT_IDS) and report["deferred"] == 0
    assert report["model_calls"] == CALLS_PER_ACCOUNT * len(ACCOUNT_IDS)
    assert len(server.requests()) - calls_before == report["model_calls"]
    regenerated = _zone_sets(redis_client, campaign)
    assert {a for a, zs in regenerated.items() if any(z.rung is Rung.PERSONAL for z in zs.zones)} == set(
        ACCOUNT_IDS
    )
    assert all(zs.version == 2 and not zs.input_hash.endswith("-deferred") for zs in regenerated.values())
    assert set(journal_states(redis_client, campaign).values()) == {JournalState.PUBLISHED}

    # And then it is decided: the same inputs again make no call and no version.
    again = json.loads(_precompute(tmp_path, redis_url, server, key=GOOD_KEY, json_out=True).stdout)
    assert again["published"] == 0 and again["model_calls"] == 0 and again["unchanged"] == len(ACCOUNT_IDS)


def test_a_run_where_every_call_fails_exits_1_and_keeps_the_good_versions(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, server: LLMTestServer, campaign: Campaign
) -> None:
    good = _precompute(tmp_path, redis_url, server, key=GOOD_KEY, json_out=True)
    assert good.returncode in (0, 1) and json.loads(good.stdout)["published"] == len(ACCOUNT_IDS)
    before = _zone_sets(redis_client, campaign)
    assert all(any(z.rung is Rung.PERSONAL for z in zs.zones) for zs in before.values())

    # A typo in WELCOMEMAT_MODEL: a new fingerprint, so every account is asked again, and refused.
    server.set_mode("model_not_found")
    typo = _precompute(tmp_path, redis_url, server, key=GOOD_KEY, model="test-modle", json_out=False)
    assert typo.returncode == 1, typo.stderr
    assert (
        f"{len(ACCOUNT_IDS)} accounts deferred: the provider does not know the model; check WELCOMEMAT_MODEL"
        in typo.stdout
    )
    assert "published 0 new versions" in typo.stdout
    assert _zone_sets(redis_client, campaign) == before  # not a fallback over good copy: untouched
    assert set(journal_states(redis_client, campaign).values()) == {JournalState.DEFERRED}

    # The model name fixed: the versions published before are still the inputs' decision.
    server.reset()
    fixed = json.loads(_precompute(tmp_path, redis_url, server, key=GOOD_KEY, json_out=True).stdout)
    assert fixed["published"] == 0 and fixed["model_calls"] == 0 and fixed["deferred"] == 0


def test_workers_defer_the_same_way_and_the_status_says_what_to_fix(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, server: LLMTestServer, campaign: Campaign
) -> None:
    """`--enqueue` and `welcomemat worker` share the publishing: the same deferral, summary and exit."""
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text("".join(json.dumps(r) + "\n" for r in example_rows(date.today())))
    server.api_key = GOOD_KEY
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "OPENAI_BASE_URL": server.base_url,
        "WELCOMEMAT_MODEL": "test-model",
    }
    ref = f"{campaign.tenant}/{campaign.campaign}"

    def cli(*args: str, key: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [WORKER, *args],
            cwd=REPO_ROOT,
            env={**env, "OPENAI_API_KEY": key},
            capture_output=True,
            text=True,
            timeout=180,
        )

    def enqueue_and_work(key: str) -> subprocess.CompletedProcess[str]:
        queued = cli(
            "precompute",
            "examples/campaign.yaml",
            str(accounts),
            "--provider",
            "openai",
            "--enqueue",
            key=key,
        )
        assert queued.returncode == 0, queued.stderr
        worked = cli("worker", "--campaign", ref, "--once", key=key)
        assert worked.returncode == 0, worked.stderr
        return cli("precompute-status", ref, key=key)

    bad = enqueue_and_work("sk-bad")
    assert bad.returncode == 1, bad.stderr
    assert (
        f"{len(ACCOUNT_IDS)} accounts deferred: the provider answered 401; check OPENAI_API_KEY" in bad.stdout
    )

    fixed = enqueue_and_work(GOOD_KEY)
    assert fixed.returncode in (0, 1) and "every model call failed" not in fixed.stdout
    assert f"published {len(ACCOUNT_IDS)}, unchanged 0, deferred 0" in fixed.stdout
    assert {
        a
        for a, zs in _zone_sets(redis_client, campaign).items()
        if any(z.rung is Rung.PERSONAL for z in zs.zones)
    } == set(ACCOUNT_IDS)
