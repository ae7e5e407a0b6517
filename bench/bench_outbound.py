#!/usr/bin/env python3
"""Outbound benchmarks, one subcommand per part.

    .venv/bin/python bench/bench_outbound.py sync [--events 100000] [--accounts 2000] [--repeat 3]
    .venv/bin/python bench/bench_outbound.py export [--contacts 10000 100000] [--repeat 3]
    .venv/bin/python bench/bench_outbound.py alerts [--events 50000] [--accounts 300] [--repeat 3]

`sync`: events folded into the account records per second by `welcomemat sync --once`,
with one consumer process and with two sharing the consumer group. Starts its own
embedded Redis in a temp folder (never touches yours). For each measurement the database
is emptied and the same events are written through the renderer's `EventWriter` (not
timed). Measured in the same run:

- baseline: reading the same events with XRANGE in batches of 200 in this process (what
  any consumer pays before folding anything);
- one `welcomemat sync --once` process;
- two processes on the same group (each folds in Redis through Lua, so on a 2-core
  machine Redis itself is the shared bottleneck: the ideal is not 2.0).

`alerts`: what seller alerts add to the fold. The example campaign (with `seller_alerts`) is
published for the first `--accounts` example accounts; the same events (views, clicks, QR
scans of those accounts, today) are folded by one in-process consumer without and with the
alert producer, interleaved; the alerts it queues are counted (one per tier-1 account).

`wall/s` counts from starting the processes to the last exit (interpreter start-up
included, what cron sees); `steady/s` subtracts the start-up of a `sync --once` on an
empty stream, measured in the same run. Ratios use the steady rates. Setups run
interleaved, `--repeat` times each; the best is kept (slower repeats measure neighbours).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import redis

from server.engagement.events import EngagementEvent, EventType, EventWriter
from server.metrics import RendererMetrics
from welcomemat import keys
from welcomemat.records.event_entries import entry_events
from welcomemat.storage.embedded_redis import temporary_redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' example helpers (`tests.example_accounts`)
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
TENANT = "acme"

# -- sync ------------------------------------------------------------------------------------------


def event_writer(client: redis.Redis, count: int) -> EventWriter:
    """The renderer's event writer, sized for `count` events, flushed by hand."""
    return EventWriter(
        client,
        RendererMetrics(),
        queue_max=count + 1,
        batch_max=1000,
        flush_interval_s=0.01,
        stream_maxlen=count * 2,
        autostart=False,
    )


def write_events(
    client: redis.Redis,
    count: int,
    account_ids: Sequence[str],
    *,
    start_ms: int,
    holdout_every: int = 0,
    with_contacts: bool = False,
) -> None:
    """`count` page views, CTA clicks and QR scans (2:1:1), one a millisecond from `start_ms`,
    over `account_ids`; every `holdout_every`-th in the holdout arm, and (`with_contacts`)
    every other one naming a contact."""
    writer = event_writer(client, count)
    kinds = (EventType.VIEW, EventType.VIEW, EventType.CLICK, EventType.QR_SCAN)
    for n in range(count):
        kind = kinds[n % 4]
        writer.emit(
            EngagementEvent(
                type=kind,
                tenant=TENANT,
                campaign="q4-pipeline",
                view_id=f"v{n}",
                ts_ms=start_ms + n,
                arm="holdout" if holdout_every and n % holdout_every == 0 else "personal",
                account=account_ids[n % len(account_ids)],
                contact=f"c_{n % 3}" if with_contacts and n % 2 else None,
                zone="cta" if kind is EventType.CLICK else None,
            )
        )
    while writer.queued:
        writer.flush_once()


def xrange_read(client: redis.Redis) -> float:
    """Seconds to read the whole stream in pages of 200 entries and decode its events (the
    baseline: entries of one event, or batches, `welcomemat.records.event_entries`)."""
    key = keys.events_stream_key(TENANT)
    started = time.perf_counter()
    start = "-"
    while True:
        batch = client.xrange(key, min=start, count=200)
        if not batch:
            break
        for entry_id, fields in batch:
            entry_events(entry_id.decode(), fields)
        last = batch[-1][0].decode()
        ms, seq = last.split("-")
        start = f"{ms}-{int(seq) + 1}"
    return time.perf_counter() - started


def sync_processes(url: str, home: Path, consumers: int) -> float:
    """Seconds for `consumers` concurrent `welcomemat sync --once` processes to drain the stream."""
    env = {**os.environ, "REDIS_URL": url, "WELCOMEMAT_HOME": str(home)}
    env.pop("WELCOMEMAT_CRM_WEBHOOK_URL", None)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [WELCOMEMAT, "sync", "--once", "--tenant", TENANT, "--consumer", f"c{i}", "--block-ms", "50"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(consumers)
    ]
    for proc in procs:
        if proc.wait() != 0:
            raise SystemExit(f"welcomemat sync exited {proc.returncode}")
    return time.perf_counter() - started


def folded_views(client: redis.Redis) -> int:
    total = 0
    for key in client.scan_iter(match=keys.account_record_scan_pattern(TENANT), count=1000):
        total += int(client.hget(key, "e:q4-pipeline:views") or 0)  # type: ignore[arg-type]
    return total


def bench_sync(events: int, accounts: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        home = Path(tmp) / "home"

        def fresh() -> None:
            client.flushdb()
            ids = [f"acct_{n}" for n in range(accounts)]
            write_events(client, events, ids, start_ms=1_764_000_000_000, holdout_every=5, with_contacts=True)

        client.flushdb()
        startup = min(sync_processes(url, home, 1) for _ in range(repeat))  # empty stream: start-up only
        best: dict[str, float] = {}
        setups: dict[str, Callable[[], float]] = {
            "XRANGE read (baseline)": lambda: xrange_read(client),
            "sync, 1 process": lambda: sync_processes(url, home, 1),
            "sync, 2 processes": lambda: sync_processes(url, home, 2),
        }
        expected_views = sum(1 for n in range(events) if n % 4 in (0, 1))
        for _ in range(repeat):
            for name, run in setups.items():
                fresh()
                seconds = run()
                if name.startswith("sync"):
                    assert folded_views(client) == expected_views, f"{name}: counts are off"
                best[name] = min(best.get(name, float("inf")), seconds)
        client.close()

    print(f"{events} events over {accounts} accounts; sync start-up {startup:.2f} s; best of {repeat}")
    print(f"{'setup':<26}{'wall/s':>12}{'steady/s':>12}{'vs baseline':>13}{'vs 1 process':>14}")
    base = events / best["XRANGE read (baseline)"]
    one = events / max(1e-9, best["sync, 1 process"] - startup)
    for name, seconds in best.items():
        steady_s = seconds if name.startswith("XRANGE") else max(1e-9, seconds - startup)
        wall, steady = events / seconds, events / steady_s
        vs_one = f"{steady / one:.2f}" if name.startswith("sync") else "-"
        print(f"{name:<26}{wall:>12,.0f}{steady:>12,.0f}{steady / base:>13.2f}{vs_one:>14}")


# -- alerts ----------------------------------------------------------------------------------------


def bench_alerts(events: int, accounts: int, repeat: int) -> None:
    from datetime import UTC, datetime

    from outbound.seller_alerts import SellerAlertProducer
    from outbound.sync import Syncer, SyncOptions
    from tests.example_accounts import precompute_offline

    now = datetime.now(UTC)
    lines = (ROOT / "examples" / "accounts.jsonl").read_text().splitlines()[:accounts]
    tiers = [int(line.split('"tier": ')[1].split(",")[0]) for line in lines]
    ids = [line.split('"account_id": "')[1].split('"')[0] for line in lines]
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis.Redis.from_url(url)
        path = Path(tmp) / "accounts.jsonl"
        path.write_text("\n".join(lines) + "\n")
        precompute_offline(client, path, now=now)
        start_ms = int(now.timestamp() * 1000) - events  # one event a millisecond, up to now

        def fresh() -> None:
            for pattern in ("seen:*", "alerted:*", "alert_outbox", "events"):
                doomed = list(client.scan_iter(match=f"{keys.tenant_prefix(TENANT)}:{pattern}", count=5000))
                for start in range(0, len(doomed), 1000):
                    client.delete(*doomed[start : start + 1000])
            write_events(client, events, ids, start_ms=start_ms)

        def fold(with_alerts: bool) -> tuple[float, int]:
            producer = (
                SellerAlertProducer(
                    client,
                    destinations=("slack", "crm"),
                    public_url="https://go.example",
                    clock=lambda: now,
                    log=lambda _: None,
                )
                if with_alerts
                else None
            )
            syncer = Syncer(
                client,
                SyncOptions(name="bench", tenants=(TENANT,), once=True, block_ms=50),
                log=lambda _: None,
                alerts=producer,
            )
            started = time.perf_counter()
            syncer.run()
            seconds = time.perf_counter() - started
            assert syncer.stats.folded == events, syncer.stats
            return seconds, producer.stats.queued if producer is not None else 0

        best: dict[bool, float] = {}
        queued = 0
        for i in range(repeat):
            # Alternate which goes first: the second fold after a fresh stream ran slower either way.
            for with_alerts in (False, True) if i % 2 else (True, False):
                fresh()
                seconds, count = fold(with_alerts)
                best[with_alerts] = min(best.get(with_alerts, float("inf")), seconds)
                queued = max(queued, count)
        client.close()
    tier_1 = sum(1 for t in tiers if t == 1)
    assert queued == tier_1, f"{queued} alerts for {tier_1} tier-1 accounts"
    off, on = events / best[False], events / best[True]
    print(f"{events} events over {len(ids)} accounts ({tier_1} tier 1); best of {repeat}")
    print(f"{'fold':<22}{'events/s':>12}")
    print(f"{'without alerts':<22}{off:>12,.0f}")
    print(f"{'with alerts':<22}{on:>12,.0f}   ({on / off:.2f} of without; {queued} alerts queued)")


# -- export ----------------------------------------------------------------------------------------

EXPORT_SECRET = "bench-export-secret-0123456789abcdef"


def publish_export_campaign(client: redis.Redis, contacts: int) -> None:
    """The example campaign and `contacts // 2` accounts of two contacts each, published directly.

    Nine in ten zone sets are personal (a headline citing a fact, the CTA), one in ten has only
    segment copy; the hash puts about 10% of accounts in the holdout. Profiles go through
    `records.write_profile` as precompute writes them.
    """
    from datetime import UTC, date, datetime, timedelta

    from precompute.policy import build_policy
    from precompute.published_config import publish_campaign_config
    from welcomemat.campaign.contract import load_campaign
    from welcomemat.records.account_records import write_profile
    from welcomemat.records.accounts import Account
    from welcomemat.surfaces import ALL_SURFACES
    from welcomemat.zones.contract import load_zone_contracts
    from welcomemat.zones.store import ZoneSetStore
    from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

    zones = dict(load_zone_contracts(ROOT / "zones"))
    campaign = load_campaign(ROOT / "examples" / "campaign.yaml", zones)
    publish_campaign_config(client, campaign, zones, build_policy(campaign, None))
    store = ZoneSetStore(client)
    now = datetime.now(UTC)
    fact = CitedFact(
        fact_id="f1",
        source_url="https://example.com/press/series-a",
        published_at=date.today(),
        surfaces=ALL_SURFACES,  # allowed in e-mail: the export writes the personal copy
    )
    batch: list[ZoneSet] = []
    pipe = client.pipeline(transaction=False)
    for n in range(contacts // 2):
        account_id = f"acct_{n}"
        personal = n % 10 != 0
        zone_list = (
            (
                ZoneContent(
                    zone_id="hero_headline",
                    text=f"Congrats on the Series A last Thursday, Company {n}",
                    rung=Rung.PERSONAL,
                    reason="personal:funding",
                    facts=(fact,),
                ),
                ZoneContent(
                    zone_id="cta",
                    text="Book a 20-minute ramp review",
                    href="https://meet.acmerevenue.example/ramp-review",
                    cta_id="book_ramp_review",
                    rung=Rung.PERSONAL,
                    reason="personal:funding",
                ),
            )
            if personal
            else ()
        )
        batch.append(
            ZoneSet(
                tenant=campaign.tenant,
                campaign=campaign.campaign,
                account_id=account_id,
                segment="saas-mid",
                input_hash=f"bench-{n:08d}",
                guideline_version=campaign.guideline_version,
                created_at=now,
                valid_until=now + timedelta(days=7),
                mode=ZoneSetMode.DEGRADED if personal else ZoneSetMode.FALLBACK,
                zones=zone_list,
            )
        )
        account = Account.model_validate(
            {
                "account_id": account_id,
                "name": f"Company {n} B.V.",
                "domain": f"company{n}.example",
                "segment": "saas-mid",
                "contacts": [
                    {"contact_id": f"c_{n}_{i}", "email": f"p{i}@company{n}.example", "first_name": f"P{i}"}
                    for i in range(2)
                ],
            }
        )
        write_profile(pipe, campaign.tenant, account)
        if len(batch) >= 500:
            store.publish_many(batch)
            pipe.execute()
            batch = []
    if batch:
        store.publish_many(batch)
        pipe.execute()


def constant_csv(path: Path, rows: int, columns: int) -> float:
    """Seconds to write `rows` rows of constant text with the csv module (the baseline)."""
    import csv

    row = ["Scaling the sales team? Ramp every hire faster"] * columns
    started = time.perf_counter()
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\r\n")
        writer.writerow([f"c{i}" for i in range(columns)])
        for _ in range(rows):
            writer.writerow(row)
    return time.perf_counter() - started


def export_in_process(client: redis.Redis, path: Path) -> tuple[float, int]:
    """Seconds for `export_rows` + `write_export` to a file (no interpreter start-up), and rows."""
    from datetime import UTC, datetime

    from outbound.export import export_rows, write_export
    from welcomemat.campaign.view import load_campaign_view
    from welcomemat.security.links import signed_url
    from welcomemat.security.tokens import TokenSigner

    signer = TokenSigner([EXPORT_SECRET])

    def link_for(account_id: str, contact_id: str) -> str:
        return signed_url(
            signer,
            "https://wm.example.com",
            tenant="acme",
            campaign="q4-pipeline",
            account=account_id,
            contact=contact_id,
            qr=False,
            ttl_s=30 * 86400,
        )

    started = time.perf_counter()
    view = load_campaign_view(client, "acme", "q4-pipeline")
    header, rows = export_rows(client, view, link_for, now=datetime.now(UTC))
    with path.open("w", encoding="utf-8", newline="") as handle:
        write_export(header, rows, handle, "csv")
    seconds = time.perf_counter() - started
    with path.open(encoding="utf-8") as handle:
        return seconds, sum(1 for _ in handle) - 1


def export_command(url: str, home: Path, out: Path) -> tuple[float, int]:
    """Wall seconds of `welcomemat export --out` (start-up included) and its peak RSS in KiB."""
    env = {**os.environ, "REDIS_URL": url, "WELCOMEMAT_HOME": str(home), "WELCOMEMAT_SECRET": EXPORT_SECRET}
    code = (
        "import resource, sys\n"
        "from cli.main import main\n"
        f"rc = main(['export', 'acme/q4-pipeline', '--out', {str(out)!r}])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"welcomemat export exited {done.returncode}: {done.stderr}")
    return seconds, int(done.stderr.strip().splitlines()[-1])


def bench_export(sizes: list[int], repeat: int) -> None:
    print(f"sequencer export, example campaign, 2 contacts per account; best of {repeat}")
    print(
        f"{'contacts':>9}{'rows':>9}{'baseline s':>12}{'export s':>10}{'rows/s':>10}{'x baseline':>12}"
        f"{'command s':>11}{'peak RSS MiB':>14}"
    )
    for contacts in sizes:
        with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
            client = redis.Redis.from_url(url)
            publish_export_campaign(client, contacts)
            out = Path(tmp) / "export.csv"
            base = export = command = float("inf")
            rss = rows = 0
            for _ in range(repeat):  # interleaved, best kept: slower repeats measure neighbours
                seconds, rows = export_in_process(client, out)
                export = min(export, seconds)
                base = min(base, constant_csv(Path(tmp) / "constant.csv", rows, 20))
                seconds, peak = export_command(url, Path(tmp) / "home", out)
                command, rss = min(command, seconds), max(rss, peak)
            client.close()
        rate, ratio = rows / export, export / base
        print(
            f"{contacts:>9,}{rows:>9,}{base:>12.2f}{export:>10.2f}{rate:>10,.0f}{ratio:>12.1f}"
            f"{command:>11.2f}{rss / 1024:>14.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="part", required=True)
    sync = sub.add_parser("sync", help="events folded per second, one consumer process vs two")
    sync.add_argument("--events", type=int, default=100_000)
    sync.add_argument("--accounts", type=int, default=2_000)
    sync.add_argument("--repeat", type=int, default=3)
    export = sub.add_parser("export", help="sequencer export time and peak memory vs writing constant CSV")
    export.add_argument("--contacts", type=int, nargs="+", default=[10_000, 100_000])
    export.add_argument("--repeat", type=int, default=3)
    alerts = sub.add_parser("alerts", help="events folded per second without and with seller alerts")
    alerts.add_argument("--events", type=int, default=50_000)
    alerts.add_argument("--accounts", type=int, default=300)
    alerts.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.part == "alerts":
        bench_alerts(args.events, args.accounts, args.repeat)
    if args.part == "sync":
        bench_sync(args.events, args.accounts, args.repeat)
    if args.part == "export":
        bench_export(args.contacts, args.repeat)


if __name__ == "__main__":
    main()
