"""The event writer: non-blocking emit, a stream entry per batch, the stream trimmed by the events it
holds, re-queue on failure, drops counted, an event id on every event, beacons written once however
often they are sent."""

from __future__ import annotations

import json
import time

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.engagement.events import EngagementEvent, EventType, EventWriter, new_event_id
from server.metrics import RendererMetrics
from tests.event_stream import event_count, stream_events
from welcomemat import keys
from welcomemat.ids import is_valid_id
from welcomemat.records.event_entries import BATCH_COUNT_FIELD, BATCH_FIELD


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


def write_all(w: EventWriter, numbers: range) -> None:
    """Emit `event(n)` for each n, then flush until the queue is empty."""
    for n in numbers:
        w.emit(event(n))
    while w.flush_once():
        pass


def timestamps(client: redis.Redis) -> list[int]:
    """The `ts` of each event acme's stream holds, in order: `event(n)` is stamped n."""
    return [int(fields[b"ts"]) for _, fields in stream_events(client, "acme")]


def test_events_are_written_in_order_with_a_ttl(redis_client: redis.Redis) -> None:
    w = writer(redis_client)
    for n in range(25):
        assert w.emit(event(n))
    deadline = time.monotonic() + 5
    while event_count(redis_client, "acme") < 25:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    w.close()
    entries = stream_events(redis_client, "acme")
    assert [fields[b"view_id"] for _, fields in entries] == [f"v{n}".encode() for n in range(25)]
    assert b"contact" not in entries[0][1]  # unknown values are left out
    assert 0 < redis_client.ttl(keys.events_stream_key("acme")) <= keys.EVENTS_STREAM_TTL_S


def test_a_batch_is_one_stream_entry_per_tenant_its_beacons_in_it_once(redis_client: redis.Redis) -> None:
    """Redis parses, stores and trims one entry per batch and tenant, not one per event."""
    w = writer(redis_client, autostart=False, queue_max=1000, batch_max=500)
    for n in range(300):
        w.emit(event(n, tenant="acme" if n % 3 else "globex"))
    w.emit(beacon("e-1", tenant="acme"))
    w.emit(beacon("e-1", tenant="acme"))  # sent twice: in the entry once
    assert w.flush_once() == 302
    [(entry_id, fields)] = redis_client.xrange(keys.events_stream_key("acme"))
    assert fields[BATCH_COUNT_FIELD.encode()] == b"201" and list(fields)[0] == BATCH_FIELD.encode()
    assert redis_client.get(keys.events_held_key("acme")) == b"201"
    events = stream_events(redis_client, "acme")
    assert len(events) == 201 and events[-1][1][b"event_id"] == b"e-1"
    assert events[0][0] == entry_id + b".0"
    assert (
        redis_client.xlen(keys.events_stream_key("globex")) == 1
        and event_count(redis_client, "globex") == 100
    )
    assert (w.written, w.duplicates) == (301, 1)


def test_a_batch_of_duplicates_only_writes_no_entry(redis_client: redis.Redis) -> None:
    w = writer(redis_client, autostart=False)
    w.emit(beacon("e-1"))
    w.flush_once()
    w.emit(beacon("e-1"))
    assert w.flush_once() == 1 and w.duplicates == 1
    assert redis_client.xlen(keys.events_stream_key("acme")) == 1


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


def test_a_batch_being_written_still_counts_as_queued(redis_client: redis.Redis) -> None:
    """Health and shutdown read `queued` while the writer holds a batch: those events are not
    written yet, so they count (a Redis that hangs must not look like an empty queue)."""
    w = writer(redis_client, autostart=False)
    for n in range(5):
        w.emit(event(n))
    seen: list[int] = []
    script = w._write_batch

    def watching(**kwargs: object) -> object:
        seen.append(w.queued)
        return script(**kwargs)

    w._write_batch = watching  # type: ignore[method-assign]
    assert w.flush_once() == 5
    assert seen == [5] and w.queued == 0


def test_stream_is_trimmed_to_its_length_in_events(redis_client: redis.Redis) -> None:
    """Past `stream_maxlen` events, the oldest whole entries go: the newest events stay, and the
    stream holds at most that many (a batch at most fewer)."""
    w = writer(redis_client, queue_max=5000, batch_max=30, stream_maxlen=100, autostart=False)
    write_all(w, range(3000))
    held = timestamps(redis_client)
    assert held == list(range(3000 - len(held), 3000))
    assert 100 - 30 < len(held) <= 100
    assert int(redis_client.get(keys.events_held_key("acme")) or 0) == len(held)
    ttl = redis_client.ttl(keys.events_held_key("acme"))
    assert 0 < ttl <= keys.EVENTS_STREAM_TTL_S


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30), st.integers(20, 200))
def test_the_stream_keeps_the_newest_events_up_to_its_length_whatever_the_batches(
    redis_client: redis.Redis, sizes: list[int], maxlen: int
) -> None:
    """Batches of any sizes in any order: after each write the stream holds the newest events,
    in order, at most `maxlen` of them unless the newest entry alone is longer, and no fewer than
    a whole entry short of it; its count is what it holds."""
    redis_client.delete(keys.events_stream_key("acme"), keys.events_held_key("acme"))
    w = writer(redis_client, queue_max=100, batch_max=40, stream_maxlen=maxlen, autostart=False)
    sent = 0
    for size in sizes:
        for n in range(sent, sent + size):
            w.emit(event(n))
        assert w.flush_once() == size
        sent += size
        held = timestamps(redis_client)
        assert held == list(range(sent - len(held), sent))
        assert len(held) <= max(maxlen, size)
        assert len(held) > min(sent, maxlen) - 40 or len(held) == sent
        assert int(redis_client.get(keys.events_held_key("acme")) or 0) == len(held)


def test_a_stream_written_before_the_count_counts_an_entry_as_one(redis_client: redis.Redis) -> None:
    """A stream from before the count field (entries of one event; a batch of 2026-12-04's
    renderers without one) starts its count at its entries and trims each as one: the events it
    counted go, never more, and once trimmed past them it holds `maxlen` exactly again. A count
    that drifted from the stream (the stream deleted, its count not) is put right."""
    stream, held = keys.events_stream_key("acme"), keys.events_held_key("acme")
    for n in range(10):
        redis_client.xadd(stream, {"event_id": f"old{n}", "type": "view", "tenant": "acme", "ts": str(n)})
    rows = [[f"b{n}", "view", "acme", "q4", f"v{n}", str(10 + n), *[None] * 9] for n in range(20)]
    redis_client.xadd(stream, {BATCH_FIELD: json.dumps(rows)})
    w = writer(redis_client, batch_max=10, stream_maxlen=15, autostart=False)
    write_all(w, range(30, 40))  # counted: 11 entries + 10 = 21, so the 6 oldest lone events go
    assert timestamps(redis_client) == list(range(6, 40)) and redis_client.get(held) == b"15"
    write_all(w, range(40, 45))  # 20: the 4 lone ones and the uncounted batch (one) go
    assert timestamps(redis_client) == list(range(30, 45)) and redis_client.get(held) == b"15"

    redis_client.delete(stream)
    redis_client.set(held, 10_000)
    write_all(w, range(99, 100))
    assert timestamps(redis_client) == [99] and redis_client.get(held) == b"1"


def test_a_batch_longer_than_the_stream_length_is_kept_whole(redis_client: redis.Redis) -> None:
    """What was just written is never trimmed: the newest entry stays even past the length."""
    w = writer(redis_client, queue_max=5000, batch_max=500, stream_maxlen=100, autostart=False)
    write_all(w, range(1000))
    assert timestamps(redis_client) == list(range(500, 1000))


def test_small_entries_are_not_trimmed_by_a_large_batch_while_under_the_length(
    redis_client: redis.Redis,
) -> None:
    """A quiet hour writes entries of one event, a send's peak entries of hundreds: the first full
    batch must not cut the stream to a few entries' worth, deleting events the sync has not read
    (a `welcomemat sync --once` from cron, or one that was down)."""
    w = writer(redis_client, queue_max=5000, batch_max=500, stream_maxlen=2000, autostart=False)
    for n in range(900):
        w.emit(event(n))
        assert w.flush_once() == 1  # an entry per event
    for n in range(900, 1400):
        w.emit(event(n))
    assert w.flush_once() == 500  # one entry of 500
    held = timestamps(redis_client)
    assert held == list(range(1400))  # under 2,000 events: nothing trimmed


def test_events_of_several_tenants_go_to_their_own_streams(redis_client: redis.Redis) -> None:
    w = writer(redis_client, autostart=False)
    for n in range(6):
        w.emit(event(n, tenant="acme" if n % 2 else "globex"))
    assert w.flush_once() == 6
    acme, globex = stream_events(redis_client, "acme"), stream_events(redis_client, "globex")
    assert [f[b"view_id"] for _, f in acme] == [b"v1", b"v3", b"v5"]
    assert [f[b"view_id"] for _, f in globex] == [b"v0", b"v2", b"v4"]
    event_id = acme[0][1][b"event_id"]
    assert is_valid_id(event_id.decode())
    assert acme[0][1] == {
        b"event_id": event_id,
        b"type": b"view",
        b"tenant": b"acme",
        b"campaign": b"q4",
        b"view_id": b"v1",
        b"ts": b"1",
        b"arm": b"personal",
        b"account": b"a1",
    }


def test_a_large_batch_of_several_tenants_is_written_whole_and_in_order(redis_client: redis.Redis) -> None:
    """A batch is serialised in chunks (the event loop gets the GIL in between): every
    event of every chunk reaches its tenant's stream, in emit order, once."""
    w = writer(redis_client, autostart=False, queue_max=1000, batch_max=500)
    tenants = ("acme", "globex", "initech")
    for n in range(333):
        w.emit(event(n, tenant=tenants[(n + n // 7) % 3]))
    assert w.flush_once() == 333
    for tenant in tenants:
        entries = stream_events(redis_client, tenant)
        expected = [f"v{n}".encode() for n in range(333) if tenants[(n + n // 7) % 3] == tenant]
        assert [f[b"view_id"] for _, f in entries] == expected


def beacon(event_id: str, n: int = 0, tenant: str = "acme", view_id: str | None = None) -> EngagementEvent:
    """A click beacon on `cta`, of the view `view_id` (one view per event id unless given)."""
    view = view_id or f"view-{event_id}"
    return EngagementEvent(
        type=EventType.CLICK,
        tenant=tenant,
        campaign="q4",
        view_id=view,
        ts_ms=n,
        zone="cta",
        event_id=event_id,
        dedup_key=keys.beacon_view_key(tenant, view, "cta"),
    )


def test_server_made_events_get_distinct_opaque_ids() -> None:
    ids = {event(n).event_id for n in range(1000)} | {new_event_id() for _ in range(1000)}
    assert len(ids) == 2000
    assert all(is_valid_id(i) for i in ids)


def test_a_beacon_sent_twice_to_two_renderers_is_written_once(redis_client: redis.Redis) -> None:
    first, second = writer(redis_client, autostart=False), writer(redis_client, autostart=False)
    first.emit(beacon("e-1"))
    first.emit(beacon("e-1"))  # the same batch
    first.emit(beacon("e-2"))
    assert first.flush_once() == 3
    second.emit(beacon("e-2", n=9))  # another process, later
    second.emit(beacon("e-3"))
    assert second.flush_once() == 2
    entries = stream_events(redis_client, "acme")
    assert [f[b"event_id"] for _, f in entries] == [b"e-1", b"e-2", b"e-3"]
    assert (first.written, first.duplicates, second.written, second.duplicates) == (2, 1, 1, 1)
    ttl = redis_client.ttl(keys.beacon_view_key("acme", "view-e-1", "cta"))
    assert 0 < ttl <= keys.BEACON_EVENT_TTL_S


def test_a_views_click_on_a_zone_is_written_once_whatever_its_event_id(redis_client: redis.Redis) -> None:
    w = writer(redis_client, autostart=False, queue_max=200)
    for n in range(120):  # one view token's click, replayed with fresh event ids
        w.emit(beacon(f"r-{n}", n=n, view_id="-replayed_view"))
    while w.flush_once():
        pass
    assert (w.written, w.duplicates) == (1, 119)
    assert [f[b"event_id"] for _, f in stream_events(redis_client, "acme")] == [b"r-0"]


def test_server_made_events_are_never_taken_for_duplicates(redis_client: redis.Redis) -> None:
    w = writer(redis_client, autostart=False)
    same = event(1)
    w.emit(same)
    w.emit(same)  # not a beacon: no dedup key, written as given
    w.flush_once()
    assert event_count(redis_client, "acme") == 2
    assert not redis_client.keys(keys.tenant_prefix("acme") + ":beacon:*")


def test_beacon_keys_live_under_the_tenant_hash_tag() -> None:
    assert keys.beacon_view_key("acme", "-v_1", None) == "wm:1:{acme}:beacon:-v_1:v"
    assert keys.beacon_view_key("acme", "-v_1", "cta") == "wm:1:{acme}:beacon:-v_1:c:cta"
    assert keys.view_seen_key("acme", "-v_1", "cta") == "wm:1:{acme}:vseen:-v_1:c:cta"
    for bad in ("a:b", "{x}", "", "x*", "a.b", "v" * 65):
        with pytest.raises(ValueError):
            keys.beacon_view_key("acme", bad, None)
        with pytest.raises(ValueError):
            keys.view_seen_key("acme", bad, "cta")
    with pytest.raises(ValueError):
        keys.beacon_view_key("acme", "v1", "x:y")


_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(list(EventType)),
    ts_ms=st.integers(0, 2**53),
    optional=st.fixed_dictionaries(
        {},
        optional={
            "arm": _ids,
            "account": _ids,
            "contact": _ids,
            "zone": _ids,
            "rung": _ids,
            "zone_set_version": st.integers(1, 2**53),
            "identified_by": _ids,
            "variant": _ids,
            "page": _ids,
        },
    ),
)
def test_the_stream_entry_holds_exactly_the_known_fields(
    redis_client: redis.Redis, kind: EventType, ts_ms: int, optional: dict[str, object]
) -> None:
    """Entries travel positionally (the write script names the fields): whatever subset of
    the optional fields an event has, the stream holds exactly those, under their names, and
    numbers as the decimal digits Python writes (the script never formats one)."""
    redis_client.delete(keys.events_stream_key("acme"))
    w = writer(redis_client, autostart=False)
    sent = EngagementEvent(
        type=kind,
        tenant="acme",
        campaign="q4",
        view_id="v1",
        ts_ms=ts_ms,
        **optional,  # type: ignore[arg-type]
    )
    w.emit(sent)
    assert w.flush_once() == 1
    [(_, stored)] = stream_events(redis_client, "acme")
    expected = {"event_id": sent.event_id, "type": kind.value, "tenant": "acme", "campaign": "q4"}
    expected |= {"view_id": "v1", "ts": str(ts_ms)}
    names = {"zone_set_version": "version"}
    expected |= {names.get(name, name): str(value) for name, value in optional.items()}
    assert {k.decode(): v.decode() for k, v in stored.items()} == expected
    pairs = sent.stream_entry()
    assert dict(zip(pairs[::2], pairs[1::2], strict=True)) == expected
