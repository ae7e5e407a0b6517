"""`welcomemat worker` and `welcomemat precompute-status`: the distributed side of precompute.

A worker consumes the runs `welcomemat precompute --enqueue` put on the campaigns' work
streams (`precompute.worker`), with the provider each run names; the status command reads a
run's progress from any machine and, when it is complete, its report and QA verdict. Exit
codes as `cli.precompute_command`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import redis

from cli.precompute_command import make_provider, resolve_campaign
from cli.run_output import print_run_report
from cli.stderr_log import stderr_log
from precompute.provider_faults import every_call_failed
from precompute.providers.base import Provider
from precompute.publish import PageCheckFactory
from precompute.qa import run_qa
from welcomemat.campaign.owner import read_ownership, refuse_other_tenant
from welcomemat.errors import InputError
from welcomemat.ids import is_valid_id
from welcomemat.model_cost import read_last_run_cost
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, connect_for_blocking_reads, resolve_redis
from welcomemat.zones.store import ZoneSetStore

__all__ = ["check_alive", "run_precompute_status", "run_worker"]


def _campaign_ref(arg: str, client: redis.Redis) -> tuple[str, str]:
    """`tenant/campaign` as given (a worker may start before anything is enqueued) unless another
    tenant owns the id, else resolved."""
    tenant, sep, campaign_id = arg.partition("/")
    if sep and not Path(arg).is_file():
        for kind, value in (("tenant", tenant), ("campaign", campaign_id)):
            if not is_valid_id(value):
                raise InputError(f"{kind} id {value!r} in {arg!r} is not a valid id", field="--campaign")
        refuse_other_tenant(read_ownership(client, campaign_id), tenant)
        return tenant, campaign_id
    loaded, _ = resolve_campaign(arg, client)
    return loaded.tenant, loaded.campaign


def _provider_from_options(name: str, options: Mapping[str, object], settings: Settings) -> Provider:
    """The provider a run record names, with the options `--enqueue` recorded (per worker: a
    `deadline_s` counts from when this worker first builds the run's provider)."""
    concurrency, deadline_s = options.get("concurrency", 1), options.get("deadline_s")
    return make_provider(
        name,
        settings,
        concurrency=concurrency if isinstance(concurrency, int) else 1,
        deadline_s=float(deadline_s) if isinstance(deadline_s, int | float) else None,
        self_review=options.get("self_review", True) is not False,
    )


def run_worker(
    *,
    campaign: str | None,
    name: str | None,
    once: bool,
    block_ms: int,
    claim_idle_ms: int,
    max_deliveries: int,
    page_check: PageCheckFactory | None = None,
    heartbeat_file: Path | None = None,
) -> int:
    """Consume enqueued runs until SIGTERM/SIGINT (or, with `once`, until drained); exit 0, or 1
    when `once` gave up on a Redis that stayed down. `page_check`: the renderer's check of each
    account's own pages in the campaign's theme (`precompute.publish`), passed in by the CLI."""
    from precompute.worker import Worker, WorkerOptions, default_consumer_name
    from welcomemat.stop_signals import stop_on_signals
    from welcomemat.storage.redis_client import REDIS_OUTAGE_ERRORS
    from welcomemat.streams.heartbeat import HeartbeatFile

    settings = Settings.from_env()
    target = resolve_redis(settings)
    client = connect_for_blocking_reads(target, block_ms)
    options = WorkerOptions(
        name=name or default_consumer_name(),
        campaign=_campaign_ref(campaign, client) if campaign else None,
        block_ms=block_ms,
        claim_idle_ms=claim_idle_ms,
        max_deliveries=max_deliveries,
        once=once,
    )
    stop = threading.Event()
    log = stderr_log(f"worker {options.name}")
    worker = Worker(
        client,
        lambda name, opts: _provider_from_options(name, opts, settings),
        options,
        log=log,
        stop=stop,
        page_check=page_check,
        prices=settings.model_prices,
        heartbeat=HeartbeatFile(heartbeat_file, log) if heartbeat_file is not None else None,
    )
    scope = f"{options.campaign[0]}/{options.campaign[1]}" if options.campaign else "every active run"
    print(f"worker {options.name}: consuming {scope} on {target.describe()}", file=sys.stderr, flush=True)
    failed_redis: str | None = None
    with stop_on_signals(stop):
        try:
            stats = worker.run()
        except REDIS_OUTAGE_ERRORS as exc:  # only with --once: without it the worker waits for Redis
            failed_redis, stats = str(exc), worker.stats
    print(
        f"worker {options.name}: stopped; {stats.entries} entries ({stats.accounts} accounts), "
        f"{stats.claimed} claimed back, {stats.dead_lettered} dead-lettered, "
        f"{stats.runs_completed} runs completed",
        file=sys.stderr,
    )
    if failed_redis is not None:
        print(f"welcomemat: failed: Redis unavailable, worker stopped: {failed_redis}", file=sys.stderr)
        return 1
    return 0


def check_alive(heartbeat_file: Path | None, *, max_age_s: int) -> int:
    """`worker --check-alive`: 0 when the worker's heartbeat file is younger than `max_age_s`."""
    from welcomemat.streams.heartbeat import heartbeat_age

    if heartbeat_file is None:
        raise InputError(
            "--check-alive reads the worker's --heartbeat-file: give the same PATH", field="--heartbeat-file"
        )
    age = heartbeat_age(heartbeat_file, time.time())
    if age is None:
        print(
            f"worker: no heartbeat at {heartbeat_file} (not started, or started without --heartbeat-file)",
            file=sys.stderr,
        )
        return 1
    if age > max_age_s:
        print(f"worker: heartbeat {age:.0f} s old (> {max_age_s} s): its loop is stuck", file=sys.stderr)
        return 1
    return 0


def run_precompute_status(campaign: str, *, run_id: str | None, as_json: bool, zones: str | None) -> int:
    """Progress of a distributed run (default: the campaign's latest); QA verdict once complete."""
    from precompute.queue import latest_run_id, read_progress

    client = connect(resolve_redis(Settings.from_env()))
    tenant, campaign_id = _campaign_ref(campaign, client)
    ref = f"{tenant}/{campaign_id}"
    run_id = run_id or latest_run_id(client, tenant, campaign_id)
    if run_id is None:
        raise InputError(f"no enqueued run of {ref} is recorded; use `welcomemat precompute --enqueue`")
    if not is_valid_id(run_id):
        raise InputError(f"run id {run_id!r} is not a valid id", field="--run")
    progress = read_progress(client, tenant, campaign_id, run_id)
    if progress is None:
        raise InputError(
            f"run {run_id!r} of {ref} is not recorded (expired, or another campaign's)", field="--run"
        )
    report = progress.to_report()
    qa = None
    if progress.complete:
        # The cost the worker that counted the last account figured and stored with the report.
        last = read_last_run_cost(client, tenant, campaign_id)
        if last is not None and last.started_at == report.started_at:
            report.cost = last.cost
        loaded, zone_contracts = resolve_campaign(ref, client, zones)
        qa = run_qa(ZoneSetStore(client), loaded, zone_contracts)
        report.verdict = qa.verdict
    if as_json:
        out = {"progress": progress.model_dump(mode="json"), "report": report.model_dump(mode="json")}
        print(json.dumps(out, indent=2))
    else:
        record, done = progress.record, progress.count("processed")
        print(
            f"run {record.run_id} of {ref} ({record.provider}): {progress.status.value}, "
            f"{done}/{record.total} accounts processed ({done / record.total:.0%}); "
            f"{progress.count('entries_done')}/{record.entries} entries, "
            f"{progress.pending_entries} in flight, {progress.count('dead_lettered')} dead-lettered"
        )
        print(
            f"  published {report.published}, unchanged {report.unchanged}, deferred {report.deferred}, "
            f"failed {len(report.failed)}" + (f", resumed {report.resumed}" if report.resumed else "")
        )
        if progress.by_worker:
            print("  by worker: " + ", ".join(f"{k} {v}" for k, v in sorted(progress.by_worker.items())))
        if qa is not None:
            print_run_report(report)
            print(f"  QA verdict: {qa.verdict} (details: welcomemat qa {ref})")
    if qa is None:
        return 0
    return 1 if qa.verdict == "NO GO" or report.failed or every_call_failed(report) else 0
