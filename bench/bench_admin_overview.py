#!/usr/bin/env python3
"""The admin's campaign overview at scale: one page of 100,000 accounts, from the index and by SCAN.

    .venv/bin/python bench/bench_admin_overview.py [--accounts 100000] [--repeat 20]

Starts its own embedded Redis in a temp folder (never touches yours), publishes the accounts
through the store's batch publish (which writes the overview's index in the same script), then
times, as the median of `--repeat` reads (`welcomemat.zones.overview.read_overview`, 50 rows):

- the first page; a filtered page (status `pending_review`, 1% of accounts; and the arm
  `holdout`, computed per row); a page of two filters (`rung=default` and `variant=v2`);
  a deep page (after the 90,000th account); a prefix search;
- baseline: one SCAN of the campaign's zone sets (`ZoneSetStore.iter_account_ids`), what the
  overview would cost per page view without its index;
- the one-time rebuild of the index from a SCAN (a campaign published before it existed);
- publishing itself: accounts/second through `publish_many` with the index, and Redis memory
  the index takes per account.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import redis

from welcomemat import keys
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.overview import OverviewQuery, read_overview, rebuild_overview
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

TENANT, CAMPAIGN = "acme", "q4-pipeline"
HOLDOUT = 0.1
BATCH = 256  # zone sets per publish_many, as a precompute chunk
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
_RUNGS = (Rung.PERSONAL, Rung.PERSONAL, Rung.SEGMENT, Rung.DEFAULT)
_REASONS = {Rung.PERSONAL: "personal:funding", Rung.SEGMENT: "no_fresh_fact", Rung.DEFAULT: "unknown_segment"}


def zone_set(i: int) -> ZoneSet:
    status = (
        ZoneSetStatus.PENDING_REVIEW
        if i % 100 == 7
        else ZoneSetStatus.REJECTED
        if i % 200 == 3
        else ZoneSetStatus.PUBLISHED
    )
    zones = tuple(
        ZoneContent(
            zone_id=zone,
            text=f"Copy for account {i} in {zone}",
            rung=(rung := _RUNGS[(i + n) % len(_RUNGS)]),
            reason=_REASONS[rung],
        )
        for n, zone in enumerate(("hero_headline", "hero_subhead", "proof"))
    )
    return ZoneSet(
        tenant=TENANT,
        campaign=CAMPAIGN,
        account_id=f"acct_{i:06d}",
        segment="saas-mid",
        input_hash=f"hash-{i:08d}",
        guideline_version="g-2026.1",
        created_at=NOW,
        status=status,
        mode=ZoneSetMode.DEGRADED,
        experiment="exp1",
        variant=("v1", "v2")[i % 2],
        zones=zones,
    )


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        store = ZoneSetStore(client)
        sets = [zone_set(i) for i in range(args.accounts)]
        before = int(client.info("memory")["used_memory"])
        start = time.perf_counter()
        for at in range(0, len(sets), BATCH):
            store.publish_many(sets[at : at + BATCH], current={})
        publish_s = time.perf_counter() - start
        index_keys = [
            keys.overview_ids_key(TENANT, CAMPAIGN),
            keys.overview_rows_key(TENANT, CAMPAIGN),
            keys.overview_tags_key(TENANT, CAMPAIGN),
            keys.overview_counts_key(TENANT, CAMPAIGN),
        ]
        index_bytes = sum(int(client.memory_usage(k, samples=0) or 0) for k in index_keys)
        used = int(client.info("memory")["used_memory"]) - before

        start = time.perf_counter()
        rebuild_overview(client, TENANT, CAMPAIGN)  # also marks it built: the reads below never rebuild
        rebuild_s = time.perf_counter() - start

        def page(**params: str) -> Callable[[], object]:
            query = OverviewQuery.from_params(params)
            return lambda: read_overview(client, TENANT, CAMPAIGN, query, holdout_fraction=HOLDOUT)

        deep = f"acct_{int(args.accounts * 0.9):06d}"
        scan_ms = median_ms(lambda: sum(1 for _ in store.iter_account_ids(TENANT, CAMPAIGN)), 3)
        cases = [
            ("first page", page()),
            ("filtered: status=pending_review (1%)", page(status="pending_review")),
            ("filtered: arm=holdout (10%, per row)", page(arm="holdout")),
            ("filtered: rung=default & variant=v2", page(rung="default", variant="v2")),
            (f"deep page: after {deep}", page(after=deep)),
            ("prefix search: q=acct_0424", page(q="acct_0424")),
            ("previous page: before acct_050000", page(before="acct_050000")),
        ]
        print(
            f"{args.accounts:,} accounts, published in {publish_s:.1f} s ({args.accounts / publish_s:,.0f}/s)"
        )
        per_account, per_row = used / args.accounts, index_bytes / args.accounts
        print(f"Redis: {per_account:,.0f} bytes/account in all, index {per_row:,.0f}")
        print(f"one-time rebuild of the index from a SCAN: {rebuild_s:.1f} s")
        print()
        print(f"{'read (50 rows)':<42} {'ms':>8} {'x SCAN':>8}")
        print(f"{'baseline: SCAN of the zone sets':<42} {scan_ms:>8.1f} {1.0:>8.1f}")
        for name, fn in cases:
            ms = median_ms(fn, args.repeat)
            print(f"{name:<42} {ms:>8.2f} {ms / scan_ms:>8.4f}")


if __name__ == "__main__":
    main()
