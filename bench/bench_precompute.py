#!/usr/bin/env python3
"""Offline precompute throughput, rerun speed-up, and Redis memory per published zone set.

    .venv/bin/python bench/bench_precompute.py [--sizes 1000 10000]

Starts its own embedded Redis in a temp folder (never touches yours). For each size N it
generates N example accounts, then measures, in the same run:

- baseline: reading and validating the accounts file alone (`read_accounts`);
- a first precompute run (offline provider): accounts/second, and its ratio to the baseline;
- a rerun of unchanged inputs: speed-up over the first run, and proof that nothing was
  regenerated (0 new versions, 0 model calls);
- Redis memory per account (used_memory delta / accounts: zone set, explain record,
  journal entry, version counter) and per zone set alone (MEMORY USAGE of 200 keys).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import tempfile
import time
from datetime import date
from pathlib import Path

import redis

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.accounts import read_accounts
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.contract import load_zone_contracts

ROOT = Path(__file__).resolve().parents[1]


def generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_accounts", ROOT / "examples" / "make_accounts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    policy = build_policy(campaign, None)
    gen = generator()
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        print(
            f"{'accounts':>8} {'parse/s':>9} {'run/s':>8} {'run:parse':>9} {'rerun/s':>9} "
            f"{'rerun speed-up':>14} {'new versions':>12} {'bytes/account':>13} {'bytes/zone set':>14}"
        )
        for size in args.sizes:
            client.flushdb()
            path = Path(tmp) / f"accounts-{size}.jsonl"
            gen.write(path, date.today(), size)
            t0 = time.perf_counter()
            read_accounts(path)
            parse_s = time.perf_counter() - t0
            before = int(client.info("memory")["used_memory"])

            def run(path: Path = path) -> tuple[float, int, int]:
                t = time.perf_counter()
                report = PrecomputeRun(
                    client=client, campaign=campaign, zones=zones, policy=policy, provider=OfflineComposer()
                ).run(path)
                return time.perf_counter() - t, report.published, report.model_calls

            first_s, first_published, _ = run()
            after = int(client.info("memory")["used_memory"])
            sample = list(itertools.islice(client.scan_iter(match="wm:1:*:zs:*", count=500), 200))
            zone_set_bytes = sum(int(client.memory_usage(k) or 0) for k in sample) / max(len(sample), 1)
            rerun_s, rerun_published, rerun_calls = run()
            print(
                f"{size:8d} {size / parse_s:9.0f} {size / first_s:8.0f} {first_s / parse_s:9.1f} "
                f"{size / rerun_s:9.0f} {first_s / rerun_s:13.1f}x {rerun_published:12d} "
                f"{(after - before) / max(first_published, 1):13.0f} {zone_set_bytes:14.0f}"
            )
            assert rerun_published == 0 and rerun_calls == 0, "a rerun of unchanged inputs regenerated"
        client.close()


if __name__ == "__main__":
    main()
