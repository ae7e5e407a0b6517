"""The audit log's codec, writers and reader, against a real Redis."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import pytest
import redis

from welcomemat import keys
from welcomemat.errors import AuditError, InputError, StoredValueError
from welcomemat.records.audit import (
    APPEND_ATTEMPTS,
    AuditAction,
    AuditEntry,
    Auditor,
    Via,
    append_entry,
    check_actor,
    check_reason,
    queue_entry,
    read_entries,
    read_page,
)

T0 = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


class Clock:
    """A clock the test moves: one minute per entry."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def auditor(name: str = "alice", via: Via = Via.CLI) -> Auditor:
    return Auditor(name, via, Clock())


def test_an_entry_round_trips_through_the_stream(redis_client: redis.Redis) -> None:
    entry = auditor().entry(
        AuditAction.REJECT,
        tenant="acme",
        campaign="q4-pipeline",
        account="acct_dymaxa",
        version=3,
        reason="cites a rumour, not the press release",
    )
    entry_id = append_entry(redis_client, entry)
    [read] = read_entries(redis_client, "acme")
    assert read == entry.model_copy(update={"id": entry_id})
    assert read.at == T0 + timedelta(minutes=1)  # the auditor's clock, not Redis's
    assert redis_client.ttl(keys.audit_stream_key("acme")) > keys.AUDIT_TTL_S - 60
    fields = redis_client.xrange(keys.audit_stream_key("acme"))[0][1]
    assert b"contact" not in fields and fields[b"via"] == b"cli"  # unset fields are left out


def test_ids_are_the_stream_order_and_filters_apply(redis_client: redis.Redis) -> None:
    who = auditor()
    for account, campaign in (("a1", "c1"), ("a2", "c1"), ("a1", "c2")):
        append_entry(
            redis_client,
            who.entry(AuditAction.APPROVE, tenant="acme", campaign=campaign, account=account, version=1),
        )
    append_entry(redis_client, who.entry(AuditAction.ERASE, tenant="globex", account="a1"))
    everything = read_entries(redis_client, "acme")
    ids = [e.id for e in everything]
    assert ids == sorted(ids, key=lambda i: tuple(int(p) for p in i.split("-")))  # type: ignore[union-attr]
    assert [(e.account, e.campaign) for e in read_entries(redis_client, "acme", account="a1")] == [
        ("a1", "c1"),
        ("a1", "c2"),
    ]
    assert len(read_entries(redis_client, "acme", campaign="c1")) == 2
    assert [e.account for e in read_entries(redis_client, "acme", since=T0 + timedelta(minutes=2))] == [
        "a2",
        "a1",
    ]
    newest = read_entries(redis_client, "acme", newest_first=True, limit=1)
    assert [(e.account, e.campaign) for e in newest] == [("a1", "c2")]
    assert len(read_entries(redis_client, "acme", newest_first=True, scan_max=2)) == 2
    assert [e.tenant for e in read_entries(redis_client, "globex")] == ["globex"]


def test_reading_pages_through_a_long_log(redis_client: redis.Redis) -> None:
    who = auditor()
    pipe = redis_client.pipeline(transaction=False)
    for n in range(1203):
        queue_entry(pipe, who.entry(AuditAction.PUBLISH, tenant="acme", account=f"a{n}", version=1))  # type: ignore[arg-type]
    pipe.execute()
    assert len(read_entries(redis_client, "acme")) == 1203
    assert [e.account for e in read_entries(redis_client, "acme", newest_first=True, account="a0")] == ["a0"]
    assert read_entries(redis_client, "acme", newest_first=True, scan_max=700, account="a0") == []


def test_an_entry_queued_on_a_transaction_is_written_with_it(redis_client: redis.Redis) -> None:
    pipe = redis_client.pipeline(transaction=True)
    pipe.set(keys.account_record_key("acme", "a1"), b"x")
    queue_entry(pipe, auditor().entry(AuditAction.ERASE, tenant="acme", account="a1"))  # type: ignore[arg-type]
    pipe.execute()
    assert [e.action for e in read_entries(redis_client, "acme")] == [AuditAction.ERASE]


def test_a_retried_appends_second_copy_is_read_once(redis_client: redis.Redis) -> None:
    entry = auditor().entry(AuditAction.ROLLBACK, tenant="acme", account="a1", reason="wrong fact")
    append_entry(redis_client, entry)
    append_entry(redis_client, entry)  # the reply of the first was lost; the retry wrote it again
    assert len(read_entries(redis_client, "acme")) == 1


def test_an_append_that_cannot_reach_redis_raises_after_retrying() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
    pauses: list[float] = []
    entry = auditor().entry(AuditAction.APPROVE, tenant="acme", campaign="q4", account="a1", version=2)
    with pytest.raises(AuditError, match="approve of a1 in q4 v2 was done, but its audit entry") as raised:
        append_entry(client, entry, sleep=pauses.append)
    assert raised.value.entry == entry
    assert len(pauses) == APPEND_ATTEMPTS - 1


def test_actions_on_no_tenant_go_to_the_global_log(redis_client: redis.Redis) -> None:
    append_entry(redis_client, auditor().entry(AuditAction.SECRET_ROTATE, tenant=None, detail="2 keys"))
    [entry] = read_entries(redis_client, None)
    assert entry.action is AuditAction.SECRET_ROTATE and entry.tenant is None
    assert redis_client.exists(keys.global_audit_stream_key())


def test_an_entry_that_does_not_decode_is_named_or_collected(redis_client: redis.Redis) -> None:
    key = keys.audit_stream_key("acme")
    redis_client.xadd(key, {"action": "launch_missiles", "actor": "mallory"})
    append_entry(redis_client, auditor().entry(AuditAction.APPROVE, tenant="acme", account="a1", version=1))
    with pytest.raises(StoredValueError, match=key):
        read_entries(redis_client, "acme")
    problems: list[StoredValueError] = []
    assert len(read_entries(redis_client, "acme", problems=problems)) == 1 and len(problems) == 1


def test_reasons_and_actors_are_checked() -> None:
    assert check_reason("  wrong\n fact ", AuditAction.REJECT, source="--reason") == "wrong fact"
    assert check_reason(None, AuditAction.APPROVE, source="--reason") is None
    for action in (AuditAction.REJECT, AuditAction.ROLLBACK):
        with pytest.raises(InputError, match="needs a reason") as raised:
            check_reason(" \n", action, source="--reason")
        assert raised.value.field == "--reason"
        with pytest.raises(InputError, match="needs a reason"):
            auditor().entry(action, tenant="acme", account="a1")
    with pytest.raises(InputError, match="at most 500"):
        check_reason("x" * 501, AuditAction.REJECT, source="reason")
    assert check_actor(" Jane Doe ", source="--by") == "Jane Doe"
    for bad in ("", "  ", None, "a\nb", "x" * 129):
        with pytest.raises(InputError):
            check_actor(bad, source="--by")


def test_the_model_refuses_what_a_log_line_cannot_hold() -> None:
    good = auditor().entry(AuditAction.APPROVE, tenant="acme", account="a1", version=1)
    for field, value in (("actor", "a\x1bb"), ("account", "a:b"), ("version", 0), ("reason", "x\ny")):
        with pytest.raises(ValueError):
            AuditEntry.model_validate({**good.model_dump(), field: value})


def test_the_log_reads_a_page_at_a_time_newest_first(redis_client: redis.Redis) -> None:
    auditor = Auditor("rita", Via.CLI, lambda: datetime(2026, 12, 2, tzinfo=UTC))
    for version in range(1, 6):
        append_entry(redis_client, auditor.entry(AuditAction.APPROVE, tenant="acme", version=version))
    seen: list[int | None] = []
    before: str | None = None
    while True:
        entries, before = read_page(redis_client, "acme", before=before, limit=2)
        seen += [e.version for e in entries]
        if before is None:
            break
    assert seen == [5, 4, 3, 2, 1]
    assert read_page(redis_client, "acme", before="0-0", limit=2) == ([], None)
    assert read_page(redis_client, "acme", before="1-0", limit=2) == ([], None)
    with pytest.raises(ValueError):
        read_page(redis_client, "acme", before="1-2-3", limit=2)
