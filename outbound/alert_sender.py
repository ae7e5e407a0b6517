"""Deliver queued seller alerts: a chat message to the alert webhook, a task to the CRM webhook.

`outbound.seller_alerts` queues each alert on the tenant's alert outbox
(`keys.seller_alert_outbox_key`) once per destination, so a chat server that is down never
makes the CRM task wait (nor send twice), and the other way round. An `AlertSender` is a
handler on the core's one consumer loop (`welcomemat.streams.consumer`, group
`keys.SELLER_ALERTS_CONSUMER_GROUP`), which reads, claims back entries of stopped senders and
counts deliveries; per entry it:

- serializes the stored alert for its destination (`outbound.seller_alert.slack_message` or
  `crm_task`) and POSTs it (`outbound.receiver_http.post_json`); the CRM task is signed like a CRM
  change (`X-Welcomemat-Signature`, `X-Welcomemat-Timestamp`) with `Idempotency-Key:
  seller_task.<tenant>.<campaign>.<account>.<day>` and `X-Welcomemat-Event: seller_task`;
- posts through `outbound.receiver_http` (one deadline per request, the body capped and never
  decompressed, redirects never followed) and retries 408/425/429/5xx and faults through the one
  retry layer and a circuit breaker per destination (`welcomemat.storage.resilience`); a stop (SIGTERM)
  ends a request or a retry wait at once, and the alert stays queued;
- posts an owner's alert (destination `owner`, `outbound.seller_alerts`) to the URL the entry
  carries, once the URL gate passes it again (else it is dead-lettered at once, the URL never
  quoted), with the chat channel's policy (or the default one) and a breaker per owner webhook,
  so one owner's webhook that is down delays no other seller's alerts;
- on a 2xx deletes the entry; otherwise leaves it pending for the next pass, and after
  `max_deliveries` passes the loop moves it, with the reason, to the tenant's dead-letter stream
  (`keys.seller_alert_dead_letter_key`): an alert is about today, and one that cannot be
  delivered is better read there than sent days late. An entry whose alert does not decode, or
  whose destination is no longer configured, is dead-lettered at once.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis
from pydantic import ValidationError

from outbound.outbox import OutboxSender, OutboxStats
from outbound.receiver_http import (
    ReceiverClient,
    ReceiverPolicy,
    ReceiverStopped,
    WebhookRejected,
    post_json,
    receiver_caller,
    receiver_host,
    receiver_url,
    stoppable_sleep,
)
from outbound.seller_alert import SellerAlert, crm_task, slack_message, task_idempotency_key
from outbound.seller_alerts import OWNER_DESTINATION
from outbound.webhook import WebhookConfig, signed_headers
from welcomemat import keys
from welcomemat.errors import ConfigError, ProviderUnavailable
from welcomemat.replies import reply_text_lossy
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.storage.resilience import ResilientCaller
from welcomemat.streams.handler import (
    ACK,
    ConsumerOptions,
    Delivery,
    Outcome,
    Stream,
    dead_letter,
    retry,
)

__all__ = [
    "EVENT_HEADER",
    "AlertChannel",
    "AlertSender",
    "alert_outbox_stream",
]

# Where the lines go when the caller passes no `log` (the commands pass their own, on stderr).
_logger = logging.getLogger(__name__)

EVENT_HEADER = "X-Welcomemat-Event"
_BATCH = 50
_FOLLOW_BLOCK_MS = 500
# While following: how long an alert that was not delivered waits for its next pass. With
# `DEFAULT_MAX_DELIVERIES` passes, a receiver down (or refusing) for about ten minutes sees the
# alert dead-lettered: still there to read and replay, but no longer sent late.
_RETRY_AFTER_S = 60.0
DEFAULT_MAX_DELIVERIES = 10  # passes (each with its own retries) before an alert is dead-lettered
# Owner webhooks a process keeps a breaker for (forgotten whole when full: a fresh breaker each).
_OWNER_RECEIVERS_MAX = 1000


@dataclass(frozen=True)
class AlertChannel(ReceiverPolicy):
    """The chat webhook seller alerts are posted to (`WELCOMEMAT_ALERT_WEBHOOK_URL`).

    Its URL is a credential (an incoming webhook's path is its secret): `describe` shows the host only.
    """

    url: str

    def __post_init__(self) -> None:
        receiver_url("WELCOMEMAT_ALERT_WEBHOOK_URL", self.url)

    def describe(self) -> str:
        return receiver_host(self.url)


def alert_outbox_stream(tenant: str) -> Stream:
    """The tenant's alert outbox as the consumer loop reads it: delivered entries are deleted,
    undeliverable ones dead-lettered."""
    return Stream(
        key=keys.seller_alert_outbox_key(tenant),
        group=keys.SELLER_ALERTS_CONSUMER_GROUP,
        ttl_s=keys.SELLER_ALERT_OUTBOX_TTL_S,
        label=f"the seller-alert outbox of tenant {tenant}",
        dead_letter_key=keys.seller_alert_dead_letter_key(tenant),
        delete_acked=True,
        scope=(tenant,),
    )


@dataclass(frozen=True)
class _Receiver:
    """One destination: its URL, breaker and retry layer."""

    url: str
    breaker: CircuitBreaker
    caller: ResilientCaller


class AlertSender(OutboxSender):
    """Delivers the tenants' queued seller alerts; one per `welcomemat sync` process, sharing the group."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        name: str,
        channel: AlertChannel | None,
        crm: WebhookConfig | None,
        max_deliveries: int = DEFAULT_MAX_DELIVERIES,
        claim_idle_ms: int = 60_000,
        retry_after_s: float = _RETRY_AFTER_S,
        http: ReceiverClient | None = None,
        log: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.name = name
        self._stop = stop or threading.Event()
        self._crm_secret = crm.secret if crm is not None else ""
        self._destinations: dict[str, _Receiver] = {}
        for dest, variable, config in (
            ("slack", "WELCOMEMAT_ALERT_WEBHOOK_URL", channel),
            ("crm", "WELCOMEMAT_CRM_WEBHOOK_URL", crm),
        ):
            if config is not None:
                breaker = CircuitBreaker(config.failure_threshold, config.reset_after_s)
                caller = receiver_caller(config, breaker, sleep=sleep or stoppable_sleep(self._stop), rng=rng)
                # Posted to as the URL gate normalised it (each config checked it already).
                self._destinations[dest] = _Receiver(receiver_url(variable, config.url), breaker, caller)
        # Owners' webhooks (`seller_alerts.owners`): tried as hard as the channel, each its own breaker.
        self._owner_policy: ReceiverPolicy = channel if channel is not None else ReceiverPolicy()
        self._owner_sleep = sleep or stoppable_sleep(self._stop)
        self._rng = rng
        self._owners: dict[str, _Receiver] = {}
        self._http = http or ReceiverClient(stop=self._stop)
        options = ConsumerOptions(
            name=name,
            batch=_BATCH,
            block_ms=_FOLLOW_BLOCK_MS,
            claim_idle_ms=claim_idle_ms,
            max_deliveries=max_deliveries,
            retry_after_s=retry_after_s,
        )
        log = log or (lambda line: _logger.info("alerts %s: %s", name, line))
        super().__init__(client, options, log, OutboxStats(), stop=self._stop)

    @property
    def destinations(self) -> tuple[str, ...]:
        return tuple(self._destinations)

    def close(self) -> None:
        self._http.close()

    def outbox(self, tenant: str) -> Stream:
        return alert_outbox_stream(tenant)

    # -- the consumer loop's handler -----------------------------------------------------------

    def handle(self, batch: Sequence[Delivery]) -> list[Outcome]:
        # Stopping: what is left stays pending, for the next run.
        return [retry("") if self._stop.is_set() else self._deliver(delivery) for delivery in batch]

    def _deliver(self, delivery: Delivery) -> Outcome:
        fields = {reply_text_lossy(k): reply_text_lossy(v) for k, v in delivery.fields.items()}
        dest = fields.get("dest", "")
        if dest == OWNER_DESTINATION:
            target = self._owner_receiver(fields.get("url", ""))
            if target is None:
                return dead_letter("the owner's webhook URL is not one the URL gate allows")
        else:
            target = self._destinations.get(dest)
        if target is None:
            return dead_letter(f"destination {dest!r} is not configured in this process")
        try:
            alert = SellerAlert.model_validate_json(fields.get("alert", ""))
        except ValidationError as exc:
            return dead_letter(f"the alert does not decode: {exc.error_count()} problems")
        if target.breaker.state == "open":
            self.stats.failed += 1
            return retry("")  # its failure was logged when the breaker opened
        if dest in ("slack", OWNER_DESTINATION):
            body = json.dumps(slack_message(alert), ensure_ascii=False).encode()
            headers: dict[str, str] = {}
        else:
            body = crm_task(alert).model_dump_json().encode()
            headers = {EVENT_HEADER: "seller_task"}
        key = task_idempotency_key(alert)

        def attempt(timeout_s: float) -> None:
            self.stats.attempts += 1
            sent = dict(headers)
            if dest == "crm":
                sent.update(signed_headers(self._crm_secret, key, body))
            post_json(self._http, target.url, body, sent, timeout_s)

        try:
            target.caller.call(attempt)
        except (ProviderUnavailable, WebhookRejected) as exc:
            self.stats.failed += 1
            return retry(f"{dest} alert {key} not delivered: {exc}")
        except ReceiverStopped:
            return retry("")  # kept queued; nothing to report
        self.stats.delivered += 1
        return ACK

    def _owner_receiver(self, raw: str) -> _Receiver | None:
        """The receiver of an owner's webhook (None: the URL gate refuses it), kept per URL."""
        try:
            url = receiver_url("seller_alerts.owners", raw)
        except ConfigError:
            return None
        found = self._owners.get(url)
        if found is None:
            if len(self._owners) >= _OWNER_RECEIVERS_MAX:
                self._owners.clear()
            policy = self._owner_policy
            breaker = CircuitBreaker(policy.failure_threshold, policy.reset_after_s)
            caller = receiver_caller(policy, breaker, sleep=self._owner_sleep, rng=self._rng)
            found = self._owners[url] = _Receiver(url, breaker, caller)
        return found
