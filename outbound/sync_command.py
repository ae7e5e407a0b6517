"""The `welcomemat sync` command: settings, Redis, signals, progress, summary, exit code."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import redis

from outbound.sync import Syncer, SyncOptions, SyncStats, default_consumer_name, discover_tenants
from outbound.webhook import WebhookConfig, WebhookSender
from welcomemat.connection import connect_for_blocking_reads, resolve_redis
from welcomemat.errors import ConfigError, InputError
from welcomemat.ids import is_valid_id
from welcomemat.settings import Settings
from welcomemat.streams import REDIS_OUTAGE_ERRORS, stop_on_signals

__all__ = ["run_sync", "webhook_config"]

EXIT_OK = 0
EXIT_FAILED = 1
# `--once` with a webhook: passes over the outbox while each still delivers something.
_ONCE_WEBHOOK_PASSES_MAX = 20


def webhook_config(settings: Settings) -> WebhookConfig | None:
    """The CRM webhook the settings name, or None; ConfigError when the URL comes without a good secret."""
    if not settings.crm_webhook_url:
        return None
    if not settings.crm_webhook_secret:
        raise ConfigError("WELCOMEMAT_CRM_WEBHOOK_URL is set but WELCOMEMAT_CRM_WEBHOOK_SECRET is not")
    return WebhookConfig(url=settings.crm_webhook_url, secret=settings.crm_webhook_secret)


def run_sync(
    *,
    once: bool,
    consumer: str | None,
    tenants: Sequence[str],
    block_ms: int,
    claim_idle_ms: int,
    max_deliveries: int,
) -> int:
    """Fold events into the account records (and push CRM changes) until stopped, or drained with `once`."""
    for tenant in tenants:
        if not is_valid_id(tenant):
            raise InputError(f"tenant {tenant!r} is not a valid id", field="--tenant")
    if consumer is not None and not consumer.strip():
        raise InputError("consumer name is empty", field="--consumer")
    settings = Settings.from_env()
    config = webhook_config(settings)
    target = resolve_redis(settings)
    client = connect_for_blocking_reads(target, block_ms)
    options = SyncOptions(
        name=consumer or default_consumer_name(),
        tenants=tuple(dict.fromkeys(tenants)),
        once=once,
        block_ms=block_ms,
        claim_idle_ms=claim_idle_ms,
        max_deliveries=max_deliveries,
        outbox=config is not None,
    )
    tty = sys.stderr.isatty()
    stop = threading.Event()  # set by SIGTERM/SIGINT: the syncer and the webhook sender both finish
    syncer = Syncer(client, options, progress=_progress_line if tty else None, stop=stop)
    sender = WebhookSender(client, config, name=options.name) if config is not None else None
    scope = ", ".join(options.tenants) if options.tenants else "every tenant with a published campaign"
    hook = f"; CRM webhook to {config.url}" if config is not None else ""
    print(f"sync {options.name}: folding events of {scope} on {target.describe()}{hook}", file=sys.stderr)

    thread: threading.Thread | None = None
    if sender is not None and not once:
        thread = threading.Thread(
            target=sender.run_until_stopped,
            args=(lambda: syncer.tenants_seen, stop),
            name="wm-webhook",
            daemon=True,
        )
        thread.start()
    failed_redis: str | None = None
    try:
        with stop_on_signals(stop):
            try:
                syncer.run()
            except REDIS_OUTAGE_ERRORS as exc:  # only with --once: without it the sync waits for Redis
                failed_redis = str(exc)
            if sender is not None and once and failed_redis is None:
                tenant_list = syncer.tenants_seen or discover_tenants(client)
                for _ in range(_ONCE_WEBHOOK_PASSES_MAX):
                    if not sender.run_pass(tenant_list) or not sender.queued(tenant_list):
                        break
    finally:
        stop.set()
        if thread is not None:
            thread.join(5.0)
        if tty:
            print(file=sys.stderr)
    stats = syncer.stats
    print(_summary(options.name, stats))
    if sender is not None:
        waiting = _safe_queued(sender, syncer.tenants_seen)
        print(
            f"sync {options.name}: CRM webhook: {sender.stats.delivered} changes delivered, "
            f"{sender.stats.covered} covered by a newer send, {waiting} waiting in the outbox"
            + (f" (breaker {sender.breaker.state})" if waiting else "")
        )
        sender.close()
    for line in stats.dead:
        print(f"sync {options.name}: dead-lettered {line}", file=sys.stderr)
    if failed_redis is not None:
        print(f"welcomemat: failed: Redis unavailable, sync stopped: {failed_redis}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if stats.dead_lettered else EXIT_OK


def _summary(name: str, stats: SyncStats) -> str:
    return (
        f"sync {name}: {stats.folded} events folded, {stats.duplicates} already folded, "
        f"{stats.skipped} not for a record (anonymous or not counted), {stats.claimed} claimed from "
        f"stopped consumers, {stats.dead_lettered} dead-lettered"
    )


def _progress_line(stats: SyncStats) -> None:
    print(
        f"\rsync: {stats.folded} folded, {stats.duplicates} already folded, {stats.skipped} skipped, "
        f"{stats.dead_lettered} dead-lettered",
        end="",
        file=sys.stderr,
        flush=True,
    )


def _safe_queued(sender: WebhookSender, tenants: Sequence[str]) -> int | str:
    try:
        return sender.queued(tenants)
    except redis.RedisError:
        return "unknown (Redis unavailable)"
