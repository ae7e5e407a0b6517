"""The CRM webhook: push each changed account record to a configured URL, without losing any.

A fold that changes a record queues a change on the tenant's outbox stream
(`keys.webhook_outbox_key`, consumer group `keys.WEBHOOK_CONSUMER_GROUP`), in the same
atomic step as the fold, and at most one queued change per account at a time. A sender:

- takes a change, reads the record as it is now (`records.take_crm_change`) and POSTs it,
  serialized by `crm_change` (engagement and the facts shown that are allowed on the
  `seller` surface; never evidence, confidence or webhook bookkeeping), with
  `Idempotency-Key: <tenant>.<account>.<revision>`: a redelivered change carries the same
  key and the same body, so the receiver applies it once;
- signs `<timestamp>.<body>` with HMAC-SHA256 under `WELCOMEMAT_CRM_WEBHOOK_SECRET`:
  `X-Welcomemat-Timestamp: <unix seconds>`, `X-Welcomemat-Signature: sha256=<hex>`. The
  receiver recomputes it (`verify_signature`) and refuses old timestamps (replays);
- posts through `outbound.receiver_http` (one deadline per request, the response body capped
  and never decompressed, redirects never followed, a stop cancels it) and retries 408/425/429/5xx
  and network faults through the one retry layer (`welcomemat.storage.resilience.ResilientCaller`:
  exponential backoff with full jitter, Retry-After honoured up to a cap; every wait ends at a
  stop) inside the one circuit breaker (`welcomemat.storage.breaker`);
- acknowledges and deletes the change only after a 2xx. Anything else leaves it pending
  in the outbox: the next pass (or another sender, after `claim_idle_ms`) sends it again,
  so nothing is lost while the receiver is down. A change whose revision was already
  delivered (a newer send covered it) is dropped without a request.

Reading the outbox (own pending changes, those of stopped senders, new ones), following it
and waiting out Redis outages is the core's one consumer loop (`welcomemat.streams.consumer`); a
change is never dead-lettered: it waits for the receiver.

Its URL is a credential (a path or query may carry a key): admitted and printed (its host
only) by `outbound.receiver_http`, as the alert webhook's is.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict

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
from welcomemat import keys
from welcomemat.errors import ConfigError, ProviderUnavailable, StoredValueError
from welcomemat.records.account_records import AccountRecord, mark_crm_delivered, take_crm_change
from welcomemat.storage.breaker import CircuitBreaker
from welcomemat.streams.groups import ensure_group as ensure_stream_group
from welcomemat.streams.handler import (
    ACK,
    ACKED,
    ConsumerOptions,
    Delivery,
    Outcome,
    Stream,
    retry,
)
from welcomemat.surfaces import Surface

__all__ = [
    "IDEMPOTENCY_HEADER",
    "MIN_SECRET_CHARS",
    "SIGNATURE_HEADER",
    "SIGNATURE_TOLERANCE_S",
    "TIMESTAMP_HEADER",
    "CrmCampaign",
    "CrmChange",
    "CrmContact",
    "CrmFact",
    "WebhookConfig",
    "WebhookSender",
    "WebhookStats",
    "crm_change",
    "ensure_outbox_group",
    "idempotency_key",
    "outbox_stream",
    "sign",
    "signed_headers",
    "verify_signature",
]

# Where the lines go when the caller passes no `log` (the commands pass their own, on stderr).
_logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Welcomemat-Signature"
TIMESTAMP_HEADER = "X-Welcomemat-Timestamp"
IDEMPOTENCY_HEADER = "Idempotency-Key"
# How old a signed timestamp a receiver should accept, in seconds (replay window).
SIGNATURE_TOLERANCE_S = 300
MIN_SECRET_CHARS = 32
_BATCH = 50  # outbox entries per read
_FOLLOW_BLOCK_MS = 500  # how long a following sender's read waits for new changes
_RETRY_AFTER_S = 5.0  # while following: how long a change that was not delivered waits for the next try


# -- the payload: one explicit serializer -----------------------------------------------------------


class CrmFact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: str
    statement: str
    source_url: str
    published_at: date


class CrmCampaign(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    first_seen_ms: int | None
    last_seen_ms: int | None
    views: int
    clicks: int
    clicks_by_zone: dict[str, int]
    qr_scans: int
    last_arm: str | None
    zone_set_version: int | None
    variant: str | None
    facts_used: list[CrmFact]


class CrmContact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    contact_id: str
    email: str | None
    first_seen_ms: int | None
    last_seen_ms: int | None
    views: int
    clicks: int
    qr_scans: int


class CrmChange(BaseModel):
    """The webhook body: an account's engagement and the facts its pages used, at one revision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str
    account_id: str
    name: str | None
    domain: str | None
    revision: int
    updated_ms: int | None
    campaigns: dict[str, CrmCampaign]
    contacts: dict[str, dict[str, CrmContact]]  # campaign -> contact id -> engagement


def crm_change(record: AccountRecord) -> CrmChange:
    """The body for `record`, field by field: what is not named here never leaves."""
    emails = {c.contact_id: c.email for c in record.contacts}
    return CrmChange(
        tenant=record.tenant,
        account_id=record.account_id,
        name=record.name,
        domain=record.domain,
        revision=record.revision,
        updated_ms=record.updated_ms,
        campaigns={
            campaign: CrmCampaign(
                first_seen_ms=e.first_seen_ms,
                last_seen_ms=e.last_seen_ms,
                views=e.views,
                clicks=e.clicks,
                clicks_by_zone=dict(e.clicks_by_zone),
                qr_scans=e.qr_scans,
                last_arm=e.last_arm,
                zone_set_version=e.zone_set_version,
                variant=e.variant,
                facts_used=[
                    CrmFact(
                        id=f.id,
                        type=f.type,
                        statement=f.statement,
                        source_url=f.source_url,
                        published_at=f.published_at,
                    )
                    for f in e.facts_shown
                    if f.allows(Surface.SELLER)  # the CRM is the seller's surface
                ],
            )
            for campaign, e in sorted(record.engagement.items())
        },
        contacts={
            campaign: {
                contact_id: CrmContact(
                    contact_id=contact_id,
                    email=emails.get(contact_id),
                    first_seen_ms=c.first_seen_ms,
                    last_seen_ms=c.last_seen_ms,
                    views=c.views,
                    clicks=c.clicks,
                    qr_scans=c.qr_scans,
                )
                for contact_id, c in sorted(per_contact.items())
            }
            for campaign, per_contact in sorted(record.contacts_engagement.items())
        },
    )


def idempotency_key(tenant: str, account_id: str, revision: int) -> str:
    """One key per (account, change): the same change always carries the same key."""
    return f"{tenant}.{account_id}.{revision}"


# -- signing ----------------------------------------------------------------------------------------


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """`sha256=<hex>`: HMAC-SHA256 of `<timestamp>.<body>` under `secret`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_signature(
    secret: str,
    timestamp: str | None,
    body: bytes,
    signature: str | None,
    *,
    now: float | None = None,
    tolerance_s: int = SIGNATURE_TOLERANCE_S,
) -> bool:
    """What a receiver checks: the signature matches and the timestamp is recent (no replay)."""
    if not timestamp or not signature or not timestamp.isdigit():
        return False
    sent = int(timestamp)
    current = time.time() if now is None else now
    if abs(current - sent) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, sent, body), signature)


# -- sending ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WebhookConfig(ReceiverPolicy):
    url: str
    secret: str
    claim_idle_ms: int = 60_000  # a change pending this long on another sender is taken over

    def __post_init__(self) -> None:
        receiver_url("WELCOMEMAT_CRM_WEBHOOK_URL", self.url)
        if len(self.secret) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"WELCOMEMAT_CRM_WEBHOOK_SECRET must be at least {MIN_SECRET_CHARS} characters "
                "when WELCOMEMAT_CRM_WEBHOOK_URL is set"
            )

    def describe(self) -> str:
        """The receiver's host: the URL's path, query and credentials are never printed."""
        return receiver_host(self.url)


@dataclass
class WebhookStats(OutboxStats):
    covered: int = 0  # changes dropped because a newer send already carried them


def outbox_stream(tenant: str) -> Stream:
    """The tenant's outbox as the consumer loop reads it: delivered changes are deleted; none is
    ever dead-lettered."""
    return Stream(
        key=keys.webhook_outbox_key(tenant),
        group=keys.WEBHOOK_CONSUMER_GROUP,
        ttl_s=keys.WEBHOOK_OUTBOX_TTL_S,
        label=f"the CRM outbox of tenant {tenant}",
        delete_acked=True,
        scope=(tenant,),
    )


def ensure_outbox_group(client: redis.Redis, tenant: str) -> None:
    """Create the tenant's outbox stream and the sender group if missing (idempotent)."""
    ensure_stream_group(client, outbox_stream(tenant))


class WebhookSender(OutboxSender):
    """Delivers the tenants' queued CRM changes; one per process, sharing the outbox group."""

    stats: WebhookStats

    def __init__(
        self,
        client: redis.Redis,
        config: WebhookConfig,
        *,
        name: str,
        http: ReceiverClient | None = None,
        breaker: CircuitBreaker | None = None,
        log: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.config = config
        self.name = name
        self.breaker = breaker or CircuitBreaker(config.failure_threshold, config.reset_after_s)
        self._stop = stop or threading.Event()
        self._url = receiver_url("WELCOMEMAT_CRM_WEBHOOK_URL", config.url)
        self._http = http or ReceiverClient(stop=self._stop)
        self._caller = receiver_caller(
            config, self.breaker, sleep=sleep or stoppable_sleep(self._stop), rng=rng
        )
        options = ConsumerOptions(
            name=name,
            batch=_BATCH,
            block_ms=_FOLLOW_BLOCK_MS,
            claim_idle_ms=config.claim_idle_ms,
            max_deliveries=None,  # a change waits for its receiver however long it is down
            retry_after_s=_RETRY_AFTER_S,
        )
        log = log or (lambda line: _logger.info("webhook %s: %s", name, line))
        super().__init__(client, options, log, WebhookStats(), stop=self._stop)

    def close(self) -> None:
        self._http.close()

    def outbox(self, tenant: str) -> Stream:
        return outbox_stream(tenant)

    # -- the consumer loop's handler -----------------------------------------------------------

    def handle(self, batch: Sequence[Delivery]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        for delivery in batch:
            if self._stop.is_set():  # stopping: what is left stays pending, for the next run
                outcomes.append(retry(""))
                continue
            if self.breaker.state == "open":
                self.stats.failed += 1
                outcomes.append(retry(""))  # its failure was logged when the breaker opened
                continue
            outcomes.append(
                self._deliver(delivery.stream.scope[0], delivery.entry_id, _fields(delivery.fields))
            )
        return outcomes

    # -- one change ----------------------------------------------------------------------------

    def _deliver(self, tenant: str, entry_id: str, fields: dict[str, str]) -> Outcome:
        account = fields.get("account", "")
        try:
            record, delivered = take_crm_change(self.client, tenant, account)
        except (
            ValueError,
            StoredValueError,
        ) as exc:  # a bad id in the entry, or a record that does not decode
            self._log(f"change {entry_id} of tenant {tenant} dropped: {exc}")
            return ACK
        if record is None or record.revision <= delivered:
            self.stats.covered += 1
            return ACK
        body = crm_change(record).model_dump_json().encode()
        key = idempotency_key(tenant, account, record.revision)
        try:
            self._caller.call(lambda timeout_s: self._post(body, key, timeout_s))
        except (ProviderUnavailable, WebhookRejected) as exc:
            self.stats.failed += 1
            return retry(f"change {key} not delivered, kept in the outbox: {exc}")
        except ReceiverStopped:
            return retry("")  # kept in the outbox; nothing to report
        self.stats.delivered += 1
        pipe = self.client.pipeline(transaction=True)  # record and outbox share the tenant's slot
        mark_crm_delivered(pipe, tenant, account, record.revision)
        pipe.xack(keys.webhook_outbox_key(tenant), keys.WEBHOOK_CONSUMER_GROUP, entry_id)
        pipe.xdel(keys.webhook_outbox_key(tenant), entry_id)
        pipe.execute()
        return ACKED

    def _post(self, body: bytes, key: str, timeout_s: float) -> None:
        """One attempt. RetryableError for faults worth another; WebhookRejected for a refusal."""
        self.stats.attempts += 1
        post_json(self._http, self._url, body, signed_headers(self.config.secret, key, body), timeout_s)


def signed_headers(secret: str, key: str, body: bytes) -> dict[str, str]:
    """The headers of a CRM webhook request: idempotency key, and the signature of this attempt."""
    timestamp = int(time.time())
    return {
        IDEMPOTENCY_HEADER: key,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(secret, timestamp, body),
    }


def _fields(raw: Any) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in raw.items()}


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
