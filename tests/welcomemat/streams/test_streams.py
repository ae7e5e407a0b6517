"""The one consumer loop (`welcomemat.streams.consumer`) against a real Redis: claims, dead letters, bursts,
signals and outages. Consumer processes are real (`tests/welcomemat/streams/streams_consumer.py`)
where a test kills
or signals one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis

from tests.corpora import REPO_ROOT
from tests.welcomemat.streams.streams_consumer import (
    EFFECTS_KEY,
    HANDLED_KEY,
    HOLDING_KEY,
    STARTED_KEY,
    STREAM,
    RecordingHandler,
    item_of,
)
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.streams.consumer import StreamConsumer
from welcomemat.streams.groups import ensure_group
from welcomemat.streams.handler import (
    ACK,
    ConsumerOptions,
    Delivery,
    Outcome,
    Stream,
    StreamHandler,
    dead_letter,
    retry,
)


def add_items(client: redis.Redis, items: range) -> list[str]:
    return [client.xadd(STREAM.key, {"item": f"i{n}"}).decode() for n in items]  # type: ignore[union-attr]


def counts(client: redis.Redis, key: str) -> dict[str, int]:
    raw: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]
    return {k.decode(): int(v) for k, v in raw.items()}


def pending_of(client: redis.Redis, consumer: str) -> int:
    rows = client.xpending_range(STREAM.key, STREAM.group, min="-", max="+", count=10_000)
    return sum(1 for r in rows if r["consumer"] == consumer.encode())


def consumer(
    client: redis.Redis,
    handler: StreamHandler,
    name: str = "c1",
    lines: list[str] | None = None,
    **options: object,
) -> StreamConsumer:
    values: dict[str, object] = {"once": True, "batch": 10, "block_ms": 50, "claim_idle_ms": 200}
    values.update(options)
    log = lines.append if lines is not None else (lambda line: None)
    return StreamConsumer(client, handler, ConsumerOptions(name=name, **values), log=log)  # type: ignore[arg-type]


def start_process(redis_url: str, name: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.welcomemat.streams.streams_consumer", redis_url, name, *extra],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate: object, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Failing(StreamHandler):
    """Every entry fails, the way `outcome` says; records what it was handed."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.seen: list[tuple[str, int]] = []

    def streams(self) -> Sequence[Stream]:
        return [STREAM]

    def handle(self, batch: Sequence[Delivery]) -> Sequence[Outcome]:
        self.seen += [(d.entry_id, d.deliveries) for d in batch]
        return [self.outcome] * len(batch)


# -- a consumer killed mid-batch -----------------------------------------------------------------


def test_a_consumer_killed_mid_batch_leaves_its_entries_to_another_each_applied_once(
    redis_url: str, redis_client: redis.Redis
) -> None:
    items = add_items(redis_client, range(25))
    victim = start_process(redis_url, "victim", "--batch", "10", "--hang-after", "6")
    try:
        wait_for(lambda: redis_client.llen(HOLDING_KEY), "the victim to hold a batch")
        victim.send_signal(signal.SIGKILL)  # read 10, applied 6, acknowledged none
        victim.communicate(timeout=10)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.communicate()
    assert pending_of(redis_client, "victim") == 10
    assert sum(counts(redis_client, EFFECTS_KEY).values()) == 6

    time.sleep(0.25)  # the victim's entries are now idle longer than claim_idle_ms (200 ms)
    handler = RecordingHandler(redis_client)
    lines: list[str] = []
    stats = consumer(redis_client, handler, "survivor", lines).run()

    assert stats.claimed == 10 and stats.acknowledged == 25
    assert pending_of(redis_client, "victim") == 0
    assert redis_client.xpending(STREAM.key, STREAM.group)["pending"] == 0  # type: ignore[index]
    effects = counts(redis_client, EFFECTS_KEY)
    assert effects == {f"i{n}": 1 for n in range(25)}, "every entry applied exactly once in effect"
    handled = counts(redis_client, HANDLED_KEY)
    assert sum(handled.values()) == 25 + 6  # the victim's six applied entries were handled again
    claimed = [d for batch in handler.batches for d in batch if d.claimed]
    assert [d.entry_id for d in claimed] == items[:10]
    assert {d.deliveries for d in claimed} == {2}, "the group counted the victim's delivery"
    assert any("claimed 10 entries of the test stream" in line for line in lines)


def test_a_restarted_consumer_rereads_its_own_pending_entries_without_waiting(
    redis_client: redis.Redis,
) -> None:
    add_items(redis_client, range(8))
    ensure_group(redis_client, STREAM)
    redis_client.xreadgroup(STREAM.group, "same", {STREAM.key: ">"}, count=5)  # then the process died
    handler = RecordingHandler(redis_client)
    stats = consumer(redis_client, handler, "same", claim_idle_ms=3_600_000).run()
    assert stats.claimed == 0 and stats.acknowledged == 8
    first = handler.batches[0]
    assert len(first) == 5 and {d.deliveries for d in first} == {2} and not any(d.claimed for d in first)
    assert counts(redis_client, EFFECTS_KEY) == {f"i{n}": 1 for n in range(8)}


# -- dead letters ----------------------------------------------------------------------------------


def test_an_entry_retried_on_its_last_delivery_is_dead_lettered_with_why(redis_client: redis.Redis) -> None:
    [entry_id] = add_items(redis_client, range(1))
    handler = Failing(retry("ValueError: not today"))
    lines: list[str] = []
    stats = consumer(redis_client, handler, lines=lines, max_deliveries=3).run()

    assert handler.seen == [(entry_id, 1), (entry_id, 2), (entry_id, 3)]
    assert (stats.failed_attempts, stats.dead_lettered, stats.acknowledged) == (3, 1, 0)
    [(dead_id, fields)] = redis_client.xrange(STREAM.dead_letter_key)  # type: ignore[misc]
    assert fields[b"item"] == b"i0" and fields[b"source_id"] == entry_id.encode()
    assert fields[b"error"] == b"ValueError: not today" and fields[b"deliveries"] == b"3"
    assert fields[b"consumer"] == b"c1" and b"dead_at" in fields and b"dead_at_ms" in fields
    assert redis_client.ttl(STREAM.dead_letter_key) > 0  # type: ignore[arg-type]
    assert redis_client.xpending(STREAM.key, STREAM.group)["pending"] == 0  # type: ignore[index]
    assert redis_client.xlen(STREAM.key) == 1, "acknowledged, not deleted: the stream is a log"
    assert any("delivery 3 of 3" in line for line in lines)
    assert any(f"entry {entry_id} of the test stream moved to" in line for line in lines)


def test_an_entry_that_kills_its_consumers_is_dead_lettered_without_another_try(
    redis_client: redis.Redis,
) -> None:
    [entry_id] = add_items(redis_client, range(1))
    ensure_group(redis_client, STREAM)
    redis_client.xreadgroup(STREAM.group, "dead1", {STREAM.key: ">"})
    redis_client.xreadgroup(STREAM.group, "dead1", {STREAM.key: "0"})  # delivered twice, never acknowledged
    time.sleep(0.25)
    handler = Failing(ACK)
    stats = consumer(redis_client, handler, max_deliveries=2).run()
    assert handler.seen == [], "delivered more than max_deliveries times: not handed over again"
    assert stats.dead_lettered == 1
    [(_, fields)] = redis_client.xrange(STREAM.dead_letter_key)  # type: ignore[misc]
    assert fields[b"source_id"] == entry_id.encode() and fields[b"deliveries"] == b"3"
    assert b"never acknowledged" in fields[b"error"]


def test_a_handler_can_dead_letter_at_once_and_add_its_writes_to_the_transaction(
    redis_client: redis.Redis,
) -> None:
    deleting = Stream(**{**vars(STREAM), "delete_acked": True})

    class Refusing(Failing):
        def streams(self) -> Sequence[Stream]:
            return [deleting]

        def dead_letter_writes(self, pipe: object, delivery: Delivery, reason: str) -> bool:
            pipe.hset("streams-test:{t}:refused", item_of(delivery), reason)  # type: ignore[attr-defined]
            return False

        def dead_lettered(self, delivery: Delivery, reason: str, reply: object) -> None:
            self.after = reply

    add_items(redis_client, range(3))
    handler = Refusing(dead_letter("PoisonEvent: field 'ts' is missing"))
    stats = consumer(redis_client, handler).run()
    assert stats.dead_lettered == 3 and stats.failed_attempts == 0
    assert [d for _, d in handler.seen] == [1, 1, 1]
    assert redis_client.hlen("streams-test:{t}:refused") == 3
    assert redis_client.xlen(STREAM.dead_letter_key) == 3  # type: ignore[arg-type]
    assert redis_client.xlen(STREAM.key) == 0, "acknowledged and deleted (delete_acked)"
    assert handler.after == 1  # the last command of the transaction: XDEL of one entry


def test_a_handler_that_raises_retries_its_batch(redis_client: redis.Redis) -> None:
    class Raising(Failing):
        def handle(self, batch: Sequence[Delivery]) -> Sequence[Outcome]:
            super().handle(batch)
            raise RuntimeError("the model provider is on fire")

    add_items(redis_client, range(2))
    lines: list[str] = []
    stats = consumer(redis_client, Raising(ACK), lines=lines, max_deliveries=2).run()
    assert (stats.failed_attempts, stats.dead_lettered) == (4, 2)
    errors = {f[b"error"] for _, f in redis_client.xrange(STREAM.dead_letter_key)}  # type: ignore[union-attr]
    assert errors == {b"RuntimeError: the model provider is on fire"}


# -- burst mode --------------------------------------------------------------------------------------


def test_once_drains_and_returns_and_waits_for_entries_a_live_consumer_holds(
    redis_client: redis.Redis,
) -> None:
    add_items(redis_client, range(30))
    ensure_group(redis_client, STREAM)
    redis_client.xreadgroup(STREAM.group, "other", {STREAM.key: ">"}, count=4)  # held elsewhere
    handler = RecordingHandler(redis_client)
    stats = consumer(redis_client, handler, claim_idle_ms=300).run()
    # It returned only once nothing was pending: it waited for the other's four to become claimable.
    assert stats.acknowledged == 30 and stats.claimed == 4
    assert redis_client.xpending(STREAM.key, STREAM.group)["pending"] == 0  # type: ignore[index]
    assert consumer(redis_client, RecordingHandler(redis_client), "c2").run().read == 0


def test_once_with_nothing_to_read_returns_at_once_and_a_process_exits_0(
    redis_url: str, redis_client: redis.Redis
) -> None:
    empty = consumer(redis_client, RecordingHandler(redis_client))
    assert empty.run_pass([]) == 0
    stats = empty.run()
    assert stats.read == 0 and redis_client.ttl(STREAM.key) > 0, "the stream it made has a TTL"
    add_items(redis_client, range(3))
    proc = start_process(redis_url, "burst", "--once")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["acknowledged"] == 3


def test_once_gives_up_on_a_redis_that_stays_down(tmp_path: Path) -> None:
    with temporary_redis(tmp_path / "redis") as url:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1)
    lines: list[str] = []
    stopped = consumer(
        client, RecordingHandler(client), lines=lines, once_outage_max_s=1.0, backoff_cap_s=0.2
    )
    with pytest.raises(redis.ConnectionError):
        stopped.run()
    assert stopped.stats.redis_errors >= 2  # it tried again within the second before giving up
    assert any("Redis unavailable" in line for line in lines)
    client.close()


def test_once_waits_out_an_outage_of_many_cycles_shorter_than_its_budget(tmp_path: Path) -> None:
    """A burst consumer gives up on time, not on a count of failed cycles: a Cluster failover
    (or two in a row) fails many quick cycles and must not end the run."""
    home = tmp_path / "redis"
    first = temporary_redis(home)
    url = first.__enter__()
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=2)
    add_items(client, range(20))
    time.sleep(1.1)  # appendfsync everysec: the entries survive the restart
    first.__exit__(None, None, None)
    lines: list[str] = []
    burst = consumer(
        client, RecordingHandler(client), "burst", lines, backoff_cap_s=0.05, once_outage_max_s=60
    )
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(burst.run()), daemon=True)
    thread.start()
    try:
        wait_for(lambda: burst.stats.redis_errors >= 20, "twenty failed cycles")
        assert thread.is_alive(), "the burst consumer gave up on a count of failed cycles"
        with temporary_redis(home):
            thread.join(30)
            assert outcome, "the burst consumer did not finish once Redis was back"
            assert counts(client, EFFECTS_KEY) == {f"i{n}": 1 for n in range(20)}
    finally:
        burst.stop()
        client.close()
    assert any("resuming" in line for line in lines)


# -- signals and outages -----------------------------------------------------------------------------


def test_sigterm_finishes_the_batch_in_hand_then_exits_0(redis_url: str, redis_client: redis.Redis) -> None:
    add_items(redis_client, range(5))
    proc = start_process(redis_url, "follower", "--batch", "5", "--slow-s", "1")
    try:
        wait_for(lambda: redis_client.llen(STARTED_KEY), "the follower to start a batch")
        proc.send_signal(signal.SIGTERM)  # mid-batch: five read, none acknowledged yet
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert json.loads(out)["acknowledged"] == 5
    assert pending_of(redis_client, "follower") == 0
    assert counts(redis_client, EFFECTS_KEY) == {f"i{n}": 1 for n in range(5)}


def test_redis_stopped_and_restarted_is_waited_out_and_nothing_is_lost(tmp_path: Path) -> None:
    home = tmp_path / "redis"
    first = temporary_redis(home)
    url = first.__enter__()
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=2)
    handler = RecordingHandler(client)
    lines: list[str] = []
    follower = consumer(client, handler, "follower", lines, once=False, block_ms=100)
    thread = threading.Thread(target=follower.run, daemon=True)
    try:
        add_items(client, range(50))
        thread.start()
        wait_for(lambda: follower.stats.acknowledged >= 50, "the follower to handle the first entries")
        time.sleep(1.1)  # appendfsync everysec: what was written survives the restart
        first.__exit__(None, None, None)  # Redis stops under a following consumer
        first = None
        wait_for(lambda: follower.stats.redis_errors >= 2, "the follower to notice the outage")
        assert thread.is_alive(), "the follower crashed on a Redis outage"
        with temporary_redis(home):  # back: same socket, same data (AOF)
            add_items(client, range(50, 100))
            wait_for(lambda: follower.stats.acknowledged >= 100, "every entry handled")
            follower.stop()
            thread.join(10)
            assert not thread.is_alive()
            assert counts(client, EFFECTS_KEY) == {f"i{n}": 1 for n in range(100)}
            assert client.xpending(STREAM.key, STREAM.group)["pending"] == 0  # type: ignore[index]
        assert any("Redis unavailable" in line for line in lines)
        assert any("resuming" in line for line in lines)
    finally:
        follower.stop()
        if first is not None:
            first.__exit__(None, None, None)
        client.close()
