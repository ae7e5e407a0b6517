"""Events through the renderer's real writer, and what the records should add up to."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable

import redis

from server.engagement.events import EngagementEvent, EventType, EventWriter
from server.metrics import RendererMetrics
from welcomemat.records.account_records import AccountRecord, iter_account_records

TENANT = "acme"
CAMPAIGN = "q4-expansion"


def writer(client: redis.Redis, batch_max: int = 1) -> EventWriter:
    return EventWriter(
        client,
        RendererMetrics(),
        queue_max=1_000_000,
        batch_max=batch_max,
        flush_interval_s=0.01,
        stream_maxlen=10_000_000,
        autostart=False,
    )


def make_events(
    count: int, *, accounts: int = 50, start_ms: int = 1_764_000_000_000
) -> list[EngagementEvent]:
    """A deterministic mix of views, clicks (two zones) and QR scans over `accounts` accounts."""
    kinds = (EventType.VIEW, EventType.VIEW, EventType.CLICK, EventType.QR_SCAN)
    events = []
    for n in range(count):
        kind = kinds[n % len(kinds)]
        events.append(
            EngagementEvent(
                type=kind,
                tenant=TENANT,
                campaign=CAMPAIGN,
                view_id=f"v{n}",
                ts_ms=start_ms + n,
                arm="personal" if n % 5 else "holdout",
                account=f"acct_{n % accounts}",
                contact=f"c_{n % 3}" if n % 2 else None,
                zone=("cta" if n % 3 else "proof") if kind is EventType.CLICK else None,
            )
        )
    return events


def emit(client: redis.Redis, events: Iterable[EngagementEvent], batch_max: int = 1) -> int:
    """Through `EventWriter`, as the renderer writes them; how many reached the stream. One
    event per stream entry by default (a batch of one), so that tests of the consumer's
    delivery, claiming and crashes have many entries; `batch_max` writes batches as the
    renderer does under load."""
    w = writer(client, batch_max)
    for e in events:
        assert w.emit(e)
    written = 0
    while w.queued:
        written += w.flush_once()
    return written


def expected_counts(events: Iterable[EngagementEvent]) -> dict[str, Counter[str]]:
    """Per account: views, clicks, qr, click:<zone>, and per contact views/clicks/qr."""
    out: dict[str, Counter[str]] = {}
    for e in events:
        assert e.account is not None
        c = out.setdefault(e.account, Counter())
        name = {EventType.VIEW: "views", EventType.CLICK: "clicks", EventType.QR_SCAN: "qr"}[e.type]
        c[name] += 1
        if e.zone:
            c[f"click:{e.zone}"] += 1
        if e.contact:
            c[f"{e.contact}:{name}"] += 1
    return out


def actual_counts(client: redis.Redis, tenant: str = TENANT) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for record in iter_account_records(client, tenant):
        out[record.account_id] = record_counts(record)
    return out


def record_counts(record: AccountRecord) -> Counter[str]:
    c: Counter[str] = Counter()
    for e in record.engagement.values():
        c["views"] += e.views
        c["clicks"] += e.clicks
        c["qr"] += e.qr_scans
        for zone, n in e.clicks_by_zone.items():
            c[f"click:{zone}"] += n
    for per_contact in record.contacts_engagement.values():
        for contact, ce in per_contact.items():
            c[f"{contact}:views"] += ce.views
            c[f"{contact}:clicks"] += ce.clicks
            c[f"{contact}:qr"] += ce.qr_scans
    return +c  # drop zeros


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
