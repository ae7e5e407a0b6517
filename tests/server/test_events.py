"""The event writer: non-blocking emit, batched XADD with MAXLEN ~, re-queue on failure, drops counted."""

from __future__ import annotations

import time

import redis

from server.events import EngagementEvent, EventType, EventWriter
from server.metrics import RendererMetrics
from welcomemat import keys


def event(n: int, tenant: str = "acme") -> EngagementEvent:
    return EngagementEvent(
        type=EventType.VIEW,
        tenant=tenant,
        campaign="q4",
        view_id=f"v{n}",
        ts_ms=n,
        arm="personal",
        account="a1",
    )


def writer(client: redis.Redis, *, autostart: bool = True, **kwargs: int) -> EventWriter:
    options = {"queue_max": 100, "batch_max": 10, "flush_interval_s": 0.01, "stream_maxlen": 1000} | kwargs
    return EventWriter(client, RendererMetrics(), autostart=autostart, **options)  # type: ignore[arg-type]


def test_events_are_written_in_order_with_a_ttl(redis_client: redis.Redis) -> None:
    w = writer(redis_client)
    for n in range(25):
        assert w.emit(event(n))
    deadline = time.monotonic() + 5
    while redis_client.xlen(keys.events_stream_key("acme")) < 25:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    w.close()
    entries = redis_client.xrange(keys.events_stream_key("acme"))
    assert [fields[b"view_id"] for _, fields in entries] == [f"v{n}".encode() for n in range(25)]
    assert b"contact" not in entries[0][1]  # unknown values are left out
    assert 0 < redis_client.ttl(keys.events_stream_key("acme")) <= keys.EVENTS_STREAM_TTL_S


def test_full_queue_drops_and_counts(redis_client: redis.Redis) -> None:
    w = writer(redis_client, queue_max=3, autostart=False)  # no writer thread: the queue only fills
    results = [w.emit(event(n)) for n in range(5)]
    assert results == [True, True, True, False, False]
    assert w.dropped == 2


def test_failed_write_keeps_the_batch_for_later() -> None:
    dead = redis.Redis.from_url("unix:///nonexistent/wm.sock")
    w = writer(dead, autostart=False)
    for n in range(5):
        w.emit(event(n))
    try:
        w.flush_once()
    except redis.RedisError:
        pass
    else:
        raise AssertionError("expected a Redis error")
    assert w.queued == 5 and w.dropped == 0
    dead.close()


def test_stream_is_trimmed_approximately(redis_client: redis.Redis) -> None:
    w = writer(redis_client, queue_max=5000, batch_max=500, stream_maxlen=100, autostart=False)
    for n in range(3000):
        w.emit(event(n))
    while w.flush_once():
        pass
    assert redis_client.xlen(keys.events_stream_key("acme")) < 1000


def test_events_of_several_tenants_go_to_their_own_streams(redis_client: redis.Redis) -> None:
    w = writer(redis_client, autostart=False)
    for n in range(6):
        w.emit(event(n, tenant="acme" if n % 2 else "globex"))
    assert w.flush_once() == 6
    acme = redis_client.xrange(keys.events_stream_key("acme"))
    globex = redis_client.xrange(keys.events_stream_key("globex"))
    assert [f[b"view_id"] for _, f in acme] == [b"v1", b"v3", b"v5"]
    assert [f[b"view_id"] for _, f in globex] == [b"v0", b"v2", b"v4"]
    assert acme[0][1] == {
        b"type": b"view",
        b"tenant": b"acme",
        b"campaign": b"q4",
        b"view_id": b"v1",
        b"ts": b"1",
        b"arm": b"personal",
        b"account": b"a1",
    }
