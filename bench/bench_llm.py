#!/usr/bin/env python3
"""The `openai` provider against a local OpenAI-compatible server with a fixed latency.

    .venv/bin/python bench/bench_llm.py [--latency 0.1] [--concurrency 8 32 128] [--accounts 400]

The test server (tests/llm_server.py) runs in its own process, answering every call after
`--latency` seconds; Redis is a temporary embedded one. Every account in the sample has a
trusted fact, so every account calls the model (generation + self-review). For each
concurrency C the script reports accounts/second and its ratio to the concurrency-bound
ideal, C / (calls per account × latency), measured in the same run; and model calls per
account.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime
from pathlib import Path

import redis

from precompute.context_builder import build_context
from precompute.policy import build_policy
from precompute.providers.openai_provider import OpenAIProvider
from precompute.run import PrecomputeRun
from welcomemat.accounts import read_accounts
from welcomemat.campaign import load_campaign
from welcomemat.embedded_redis import temporary_redis
from welcomemat.settings import Settings
from welcomemat.zone_contract import load_zone_contracts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.example_accounts import write_example_accounts  # noqa: E402


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--accounts", type=int, default=400)
    parser.add_argument("--worker-concurrency", type=int, default=32, help="per worker, for 1 vs 2 workers")
    args = parser.parse_args()
    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    policy = build_policy(campaign, None)
    now = datetime.now(UTC)
    proc, base_url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
            pool = write_example_accounts(Path(tmp) / "pool.jsonl", args.accounts * 6, date.today())
            trusted = [
                a
                for a in read_accounts(pool).accounts
                if build_context(a, campaign, policy, now.date()).facts
            ][: args.accounts]
            path = Path(tmp) / "accounts.jsonl"
            path.write_text("".join(a.model_dump_json() + "\n" for a in trusted))
            client = redis.Redis.from_url(url)
            settings = Settings.from_env(
                {}, openai_base_url=base_url, model="bench-model", openai_api_key="k"
            )
            print(f"{len(trusted)} accounts with a trusted fact; server latency {args.latency * 1000:.0f} ms")
            print(f"{'concurrency':>11} {'accounts/s':>10} {'ideal/s':>8} {'ratio':>6} {'calls/account':>13}")
            for concurrency in args.concurrency:
                client.flushdb()
                provider = OpenAIProvider.from_settings(settings, concurrency=concurrency, deadline_s=600)
                started = time.perf_counter()
                report = PrecomputeRun(
                    client=client,
                    campaign=campaign,
                    zones=zones,
                    policy=policy,
                    provider=provider,
                    concurrency=concurrency,
                    now=now,
                ).run(path)
                seconds = time.perf_counter() - started
                provider.close()
                calls = report.model_calls / max(report.accounts, 1)
                rate = report.accounts / seconds
                ideal = concurrency / (calls * args.latency)
                print(f"{concurrency:11d} {rate:10.1f} {ideal:8.1f} {rate / ideal:6.2f} {calls:13.2f}")
            print(f"\nworkers (welcomemat worker --once, concurrency {args.worker_concurrency} each):")
            print(f"{'workers':>7} {'accounts/s':>10} {'ratio':>6}")
            env = {
                **os.environ,
                "REDIS_URL": url,
                "OPENAI_BASE_URL": base_url,
                "OPENAI_API_KEY": "k",
                "WELCOMEMAT_MODEL": "bench-model",
                "WELCOMEMAT_HOME": str(Path(tmp) / "home"),
            }
            welcomemat = str(Path(sys.executable).parent / "welcomemat")
            rates = []
            for workers in (1, 2):
                client.flushdb()
                subprocess.run(
                    [
                        welcomemat,
                        "precompute",
                        str(ROOT / "examples" / "campaign.yaml"),
                        str(path),
                        "--enqueue",
                        "--provider",
                        "openai",
                        "--concurrency",
                        str(args.worker_concurrency),
                        "--deadline",
                        "600",
                    ],
                    env=env,
                    check=True,
                    capture_output=True,
                )
                started = time.perf_counter()
                procs = [
                    subprocess.Popen(
                        [welcomemat, "worker", "--once"],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    for _ in range(workers)
                ]
                for worker in procs:
                    worker.wait(timeout=600)
                rates.append(len(trusted) / (time.perf_counter() - started))
                print(f"{workers:7d} {rates[-1]:10.1f} {rates[-1] / rates[0]:6.2f}")
            client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
