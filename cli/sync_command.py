"""The `welcomemat sync` command: settings, Redis, signals, progress, summary, exit code.

One stop event (SIGTERM, Ctrl-C) reaches every loop of the run: the fold, both outbox senders
(their passes, requests and retry waits) and the `--once` passes over the outboxes, so the
command exits within seconds whatever a receiver answers. Receivers are named by host only.
`--claim-idle-ms` applies to every stream the command reads: the events and both outboxes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import redis

from cli.stderr_log import stderr_log
from outbound.alert_sender import AlertChannel, AlertSender
from outbound.seller_alerts import SellerAlertProducer
from outbound.sync import Syncer, SyncOptions, SyncStats, default_consumer_name, discover_tenants
from outbound.webhook import WebhookConfig, WebhookSender
from welcomemat.errors import ConfigError, InputError
from welcomemat.ids import is_valid_id
from welcomemat.settings import Settings
from welcomemat.stop_signals import stop_on_signals
from welcomemat.storage.connection import connect_for_blocking_reads, resolve_redis
from welcomemat.storage.redis_client import REDIS_OUTAGE_ERRORS

__all__ = ["alert_channel", "run_sync", "webhook_config"]

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
    return WebhookConfig(
        url=settings.crm_webhook_url,
        secret=settings.crm_webhook_secret,
        timeout_s=settings.receiver_deadline_s,
    )


def alert_channel(settings: Settings) -> AlertChannel | None:
    """The chat webhook seller alerts go to, or None; ConfigError when its URL is refused."""
    if not settings.alert_webhook_url:
        return None
    return AlertChannel(url=settings.alert_webhook_url, timeout_s=settings.receiver_deadline_s)


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
    if config is not None:
        # The outboxes are streams like the events': a change left pending by a stopped sender
        # is taken over after the same `--claim-idle-ms`, not after the config's default.
        config = replace(config, claim_idle_ms=claim_idle_ms)
    channel = alert_channel(settings)
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
    # Seller alerts (campaigns with `seller_alerts`) go wherever a receiver is configured.
    alerts: AlertSender | None = None
    producer: SellerAlertProducer | None = None
    if channel is not None or config is not None:
        alerts = AlertSender(
            client,
            name=options.name,
            channel=channel,
            crm=config,
            claim_idle_ms=claim_idle_ms,
            log=stderr_log(f"alerts {options.name}"),
            stop=stop,
        )
        producer = SellerAlertProducer(
            client,
            destinations=alerts.destinations,
            public_url=settings.public_url,
            clock=lambda: datetime.now(UTC),
            log=stderr_log("alerts"),
        )
    syncer = Syncer(
        client,
        options,
        log=stderr_log(f"sync {options.name}"),
        progress=_progress_line if tty else None,
        stop=stop,
        alerts=producer,
    )
    sender = (
        WebhookSender(client, config, name=options.name, log=stderr_log(f"webhook {options.name}"), stop=stop)
        if config is not None
        else None
    )
    scope = ", ".join(options.tenants) if options.tenants else "every tenant with a published campaign"
    hook = f"; CRM webhook to {config.describe()}" if config is not None else ""
    if channel is not None:
        hook += f"; seller alerts to {channel.describe()}"
    print(f"sync {options.name}: folding events of {scope} on {target.describe()}{hook}", file=sys.stderr)

    threads: list[threading.Thread] = []
    if not once:
        for name, follower in (("wm-webhook", sender), ("wm-alerts", alerts)):
            if follower is not None:
                thread = threading.Thread(
                    target=follower.run_until_stopped,
                    args=(lambda: syncer.tenants_seen, stop),
                    name=name,
                    daemon=True,
                )
                thread.start()
                threads.append(thread)
    failed_redis: str | None = None
    try:
        with stop_on_signals(stop):
            try:
                syncer.run()
            except REDIS_OUTAGE_ERRORS as exc:  # only with --once: without it the sync waits for Redis
                failed_redis = str(exc)
            for outbox_sender in (sender, alerts):
                if outbox_sender is None or not once or failed_redis is not None:
                    continue
                tenant_list = syncer.tenants_seen or discover_tenants(client)
                for _ in range(_ONCE_WEBHOOK_PASSES_MAX):
                    if stop.is_set() or not outbox_sender.run_pass(tenant_list):
                        break
                    if not outbox_sender.queued(tenant_list):
                        break
    finally:
        stop.set()
        for thread in threads:
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
    if alerts is not None and producer is not None:
        waiting_alerts = _safe_queued(alerts, syncer.tenants_seen)
        print(
            f"sync {options.name}: seller alerts: {producer.stats.queued} queued, "
            f"{alerts.stats.delivered} deliveries, {alerts.stats.dead_lettered} dead-lettered, "
            f"{waiting_alerts} waiting in the outbox"
        )
        alerts.close()
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


def _safe_queued(sender: WebhookSender | AlertSender, tenants: Sequence[str]) -> int | str:
    try:
        return sender.queued(tenants)
    except redis.RedisError:
        return "unknown (Redis unavailable)"
