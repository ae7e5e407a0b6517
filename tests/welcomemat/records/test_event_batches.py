"""Batch entries of the event stream (`welcomemat.records.event_entries`): one stream entry holding
many events, read event by event by every reader (the sync's fold, the daily series, a data
subject's export and erasure), next to entries of one event."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from outbound import sync
from outbound.sync import Syncer, SyncOptions
from server.engagement.events import _FIELDS as WRITER_FIELDS
from server.engagement.events import EngagementEvent
from tests.outbound.sync_helpers import CAMPAIGN, TENANT, actual_counts, emit, expected_counts, make_events
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.lift.comparison import AccountOutcome
from welcomemat.lift.daily import daily_counts
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.event_entries import (
    BATCH_FIELD,
    EVENT_FIELDS,
    MAX_BATCH_CHARS,
    MAX_BATCH_EVENTS,
    PoisonEvent,
    batch_fields,
    entry_events,
    parse_entry,
    parse_event,
)
from welcomemat.records.subject_requests import Subject, erase, export_subject

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def fields_of(event: EngagementEvent) -> dict[str, str]:
    """The event's fields as the renderer names them (`EngagementEvent.stream_entry`)."""
    entry = event.stream_entry()
    return dict(zip(entry[::2], entry[1::2], strict=True))


def add_batch(client: redis.Redis, events: list[EngagementEvent] | list[dict[str, str]], **id_: str) -> str:
    fields = batch_fields([e if isinstance(e, dict) else fields_of(e) for e in events])
    raw = client.xadd(keys.events_stream_key(TENANT), fields, **id_)  # type: ignore[arg-type]
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def syncer(client: redis.Redis, **options: Any) -> Syncer:
    values: dict[str, Any] = {"tenants": (TENANT,), "once": True, "block_ms": 50, "claim_idle_ms": 200}
    values.update(options)
    return Syncer(client, SyncOptions(name="s1", **values), log=lambda line: None)


# -- the codec -------------------------------------------------------------------------------------


def test_the_writer_and_the_readers_list_the_same_fields_in_the_same_order() -> None:
    assert tuple(WRITER_FIELDS) == EVENT_FIELDS


def test_a_batch_entry_is_its_events_named_by_entry_id_and_index() -> None:
    events = make_events(3, accounts=2)
    fields = batch_fields([fields_of(e) for e in events])
    read = entry_events("1700-0", {k.encode(): v.encode() for k, v in fields.items()})
    assert [name for name, _ in read] == ["1700-0.0", "1700-0.1", "1700-0.2"]
    assert [values for _, values in read] == [fields_of(e) for e in events]  # unknown fields left out
    single = fields_of(events[0])
    assert entry_events("1701-0", single) == [("1701-0", single)]  # an entry of one event is itself


@pytest.mark.parametrize(
    ("batch", "why"),
    [
        ("not json", "not JSON"),
        ('{"a": 1}', "not a JSON array"),
        ("[[" * 100_000, "not JSON"),  # nested past the parser's depth
        ('[["only", "two"]]', "event 0"),
        (json.dumps([[None] * len(EVENT_FIELDS), [1] * len(EVENT_FIELDS)]), "event 1"),
        (json.dumps([[None] * len(EVENT_FIELDS)] * (MAX_BATCH_EVENTS + 1)), "at most"),
        ("[" + " " * MAX_BATCH_CHARS + "]", "at most"),
    ],
)
def test_a_batch_that_does_not_decode_is_poison_whole(batch: str, why: str) -> None:
    with pytest.raises(PoisonEvent, match=why):
        entry_events("1-0", {BATCH_FIELD: batch})
    with pytest.raises(PoisonEvent):
        parse_event(TENANT, "1-0", {BATCH_FIELD: "[]"})  # several events: never read as one


_ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,20}", fullmatch=True)


@given(
    st.lists(
        st.dictionaries(st.sampled_from(EVENT_FIELDS), _ID | st.text(max_size=30), max_size=15), max_size=20
    )
)
def test_any_events_come_back_from_a_batch_as_written(events: list[dict[str, str]]) -> None:
    fields = batch_fields(events, {"source_id": "9-0"})
    assert fields["source_id"] == "9-0"
    assert [values for _, values in entry_events("5-0", fields)] == events


@given(st.text(max_size=300) | st.binary(max_size=300))
def test_any_batch_text_is_read_or_poison_never_another_error(text: str | bytes) -> None:
    try:
        entry_events("1-0", {BATCH_FIELD.encode(): text})
    except PoisonEvent:
        pass


def test_a_broken_event_of_a_batch_is_poison_alone() -> None:
    good, other = make_events(2, accounts=1)
    broken = {**fields_of(other), "ts": "yesterday"}
    read = parse_entry(TENANT, "7-0", batch_fields([fields_of(good), broken]))
    assert read[0][0] == "7-0.0" and read[0][1] is not None and not isinstance(read[0][1], PoisonEvent)
    assert read[1][0] == "7-0.1" and isinstance(read[1][1], PoisonEvent)


# -- the readers, on a real Redis ----------------------------------------------------------------------


def test_batch_entries_fold_each_event_once_next_to_single_entries(redis_client: redis.Redis) -> None:
    events = make_events(1000, accounts=20)
    for event in events[:100]:  # entries of one event, as written before batches
        redis_client.xadd(keys.events_stream_key(TENANT), fields_of(event))  # type: ignore[arg-type]
    for start in range(100, 1000, 300):
        add_batch(redis_client, events[start : start + 300])
    stats = syncer(redis_client, batch=2).run()
    assert (stats.folded, stats.duplicates, stats.dead_lettered) == (1000, 0, 0)
    assert actual_counts(redis_client) == expected_counts(events)
    assert syncer(redis_client).run().folded == 0  # all acknowledged: nothing read again


def test_a_broken_event_of_a_batch_is_dead_lettered_alone_and_the_batch_folds(
    redis_client: redis.Redis,
) -> None:
    events = make_events(4, accounts=2)
    rows = [fields_of(e) for e in events]
    rows[2] = {**rows[2], "ts": "yesterday"}
    entry_id = add_batch(redis_client, rows)
    stats = syncer(redis_client).run()
    assert (stats.folded, stats.dead_lettered) == (3, 1)  # the CLI's exit code counts it
    assert stats.dead == [
        f"{TENANT} {entry_id}.2: PoisonEvent: not a whole number: "
        "invalid literal for int() with base 10: 'yesterday'"
    ]
    assert actual_counts(redis_client) == expected_counts(events[:2] + events[3:])
    [(_, dead)] = redis_client.xrange(keys.events_dead_letter_key(TENANT))
    assert dead[b"source_id"] == f"{entry_id}.2".encode() and dead[b"ts"] == b"yesterday"
    assert dead[b"view_id"] == rows[2]["view_id"].encode()  # the event's own fields, not the batch
    pending = redis_client.xpending(keys.events_stream_key(TENANT), keys.SYNC_CONSUMER_GROUP)
    assert pending["pending"] == 0


def test_a_batch_that_does_not_decode_is_dead_lettered_whole_after_its_deliveries(
    redis_client: redis.Redis,
) -> None:
    events = make_events(10, accounts=2)
    emit(redis_client, events)
    raw = redis_client.xadd(keys.events_stream_key(TENANT), {BATCH_FIELD: "[[not json"})
    stats = syncer(redis_client, max_deliveries=2).run()
    assert (stats.folded, stats.dead_lettered) == (10, 1)
    [(_, dead)] = redis_client.xrange(keys.events_dead_letter_key(TENANT))
    assert dead[b"source_id"] == raw and b"not JSON" in dead[b"error"]


def test_the_daily_series_counts_the_events_of_batch_entries(redis_client: redis.Redis) -> None:
    ts = int(datetime(2026, 11, 29, 9, 0, tzinfo=UTC).timestamp() * 1000)

    def event(n: int, kind: str, account: str, zone: str | None = None) -> dict[str, str]:
        values = {"event_id": f"e{n}", "type": kind, "tenant": TENANT, "campaign": CAMPAIGN}
        values |= {"view_id": f"v{n // 2}", "ts": str(ts + n), "account": account}
        return values | ({"zone": zone} if zone else {})

    add_batch(
        redis_client, [event(0, "view", "acct_a"), event(1, "click", "acct_a", "cta")], id=f"{ts + 5}-0"
    )
    add_batch(
        redis_client,
        [event(2, "view", "acct_b"), {**event(3, "view", "acct_a"), "ts": "x"}],
        id=f"{ts + 9}-0",
    )
    outcomes = [AccountOutcome("acct_a", Arm.PERSONAL), AccountOutcome("acct_b", Arm.HOLDOUT)]
    problems: list[str] = []
    series = daily_counts(
        redis_client, TENANT, CAMPAIGN, outcomes, frozenset({"cta"}), now=NOW, days=1, problems=problems
    )
    today = {(c.arm, c.variant): c for c in series}
    assert (today[(Arm.PERSONAL, None)].visits, today[(Arm.PERSONAL, None)].cta_clicks) == (1, 1)
    assert today[(Arm.HOLDOUT, None)].visits == 1
    assert problems == [
        f"{keys.events_stream_key(TENANT)} {ts + 9}-0.1: not a whole number: "
        "invalid literal for int() with base 10: 'x'"
    ]


def test_erasing_a_person_takes_their_events_out_of_a_batch_and_keeps_the_others(
    redis_client: redis.Redis,
) -> None:
    events = make_events(40, accounts=2)  # contacts of two accounts, in one batch with others
    subject_event = next(e for e in events if e.contact is not None)
    assert subject_event.account is not None and subject_event.contact is not None
    subject = Subject(TENANT, subject_event.account, subject_event.contact)
    theirs = [e for e in events if (e.account, e.contact) == (subject.account, subject.contact)]
    others = [e for e in events if e not in theirs]
    entry_id = add_batch(redis_client, events)
    emit(redis_client, others[:3])  # and entries of one event about other people
    auditor = Auditor("dpo", Via.CLI, lambda: NOW)

    exported = export_subject(redis_client, subject, auditor=auditor)
    assert [e["event_id"] for e in exported["events"]] == [e.event_id for e in theirs]
    assert all(e["id"].startswith(f"{entry_id}.") for e in exported["events"])

    report = erase(redis_client, subject, auditor=auditor, reason=None, campaigns=[])
    assert report.removed["events"] == len(theirs)
    left = [
        values
        for raw_id, fields in redis_client.xrange(keys.events_stream_key(TENANT))
        for _, values in entry_events(raw_id.decode(), fields)
    ]
    assert sorted(v["event_id"] for v in left) == sorted(
        [e.event_id for e in others] + [e.event_id for e in others[:3]]
    )
    assert not any(v.get("contact") == subject.contact for v in left)
    assert export_subject(redis_client, subject, auditor=auditor)["events"] == []
    assert erase(redis_client, subject, auditor=auditor, reason=None, campaigns=[]).removed["events"] == 0


def test_an_erasure_takes_what_it_removed_off_the_stream_count(redis_client: redis.Redis) -> None:
    """The renderer trims the stream by the events it holds (`keys.events_held_key`): what an
    erasure removed no longer counts, and no count is made for a stream that kept none."""
    events = make_events(40, accounts=2)
    subject_event = next(e for e in events if e.contact is not None)
    assert subject_event.account is not None and subject_event.contact is not None
    subject = Subject(TENANT, subject_event.account, subject_event.contact)
    theirs = [e for e in events if (e.account, e.contact) == (subject.account, subject.contact)]
    assert emit(redis_client, events, batch_max=15) == 40
    held = keys.events_held_key(TENANT)
    assert redis_client.get(held) == b"40"
    auditor = Auditor("dpo", Via.CLI, lambda: NOW)
    report = erase(redis_client, subject, auditor=auditor, reason=None, campaigns=[])
    assert report.removed["events"] == len(theirs) > 0
    left = sum(
        len(entry_events(raw_id.decode(), fields))
        for raw_id, fields in redis_client.xrange(keys.events_stream_key(TENANT))
    )
    assert int(redis_client.get(held) or 0) == left == 40 - len(theirs)

    redis_client.delete(held)  # a stream written before the count was kept
    other = next(e for e in events if e.contact is not None and e not in theirs)
    assert other.account is not None
    report = erase(
        redis_client,
        Subject(TENANT, other.account, other.contact),
        auditor=auditor,
        reason=None,
        campaigns=[],
    )
    assert report.removed["events"] > 0 and not redis_client.exists(held)


def test_a_read_of_large_batches_is_folded_in_calls_of_a_bounded_size(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An atomic fold holds Redis for its whole length: a read of full batches (500 events an
    entry) is folded in calls of at most FOLD_CHUNK events, not one call for the read."""
    sizes: list[int] = []
    fold = sync.fold_events

    def recording(script: Any, client: redis.Redis, events: Any, **kwargs: Any) -> Any:
        sizes.append(len(events))
        return fold(script, client, events, **kwargs)

    monkeypatch.setattr(sync, "fold_events", recording)
    events = make_events(1500, accounts=30)
    assert emit(redis_client, events, batch_max=500) == 1500
    stats = syncer(redis_client).run()
    assert stats.folded == 1500 and actual_counts(redis_client) == expected_counts(events)
    assert max(sizes) <= sync.FOLD_CHUNK and sum(sizes) == 1500


def test_erasure_removes_a_batch_no_reader_can_read_when_its_text_names_the_subject(
    redis_client: redis.Redis,
) -> None:
    subject = Subject(TENANT, "acct_7", "c_7")
    stream = keys.events_stream_key(TENANT)
    broken = redis_client.xadd(stream, {BATCH_FIELD: '[["e1","view","acme","q","v","1",null,"acct_7","c_7"'})
    other = redis_client.xadd(stream, {BATCH_FIELD: '[["e2","view","acme","q","v","1",null,"acct_8"'})
    report = erase(
        redis_client, subject, auditor=Auditor("dpo", Via.CLI, lambda: NOW), reason=None, campaigns=[]
    )
    assert report.removed["events"] == 1
    assert [entry_id for entry_id, _ in redis_client.xrange(stream)] == [other] != [broken]
