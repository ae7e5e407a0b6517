"""The one Redis Streams consumer loop: read through a consumer group, claim back, dead-letter.

The precompute worker, the engagement sync and the CRM webhook sender each consume
streams through a consumer group; what they do with an entry differs, how they get it
and what happens when it fails does not. A `StreamHandler` says which streams to read
(`streams`) and what became of each entry of a batch (`handle`: `ACK`, `ACKED`,
`retry(why)` or `dead_letter(why)`); a `StreamConsumer` does the rest, at least once:

- reads new entries with XREADGROUP, creating the stream and group when missing (from id
  0: entries written before the group existed are work too) and again after NOGROUP (the
  stream expired, or a restarted Redis lost it);
- re-reads its own pending entries (`XREADGROUP ... 0`) when it first sees a stream, so a
  consumer restarted under the same name picks up what it held; and again after an entry
  it handled asked to be retried (`retry_after_s` later);
- takes over entries idle longer than `claim_idle_ms` on any consumer (XAUTOCLAIM): their
  consumer died. With `keep_claimed`, a batch in hand has its idle time reset while it is
  handled (XCLAIM JUSTID, not a delivery), so that a slow batch is not taken from a live one;
- counts deliveries with the group's times-delivered counter (XPENDING): an entry retried
  on its `max_deliveries`th delivery, or delivered more often than that and never
  acknowledged (it kills its consumers), is dead-lettered: copied with the reason to the
  stream's dead-letter stream and acknowledged, in one transaction;
- Redis down: waits it out, backing off from 0.2 s up to `backoff_cap_s`, and resumes; it
  never ends the process. With `once`, a Redis that stays down (every cycle failing) for
  longer than `once_outage_max_s` raises the last error;
- stops after the batch in hand when `stop()` is called (from a signal handler, see
  `welcomemat.stop_signals`) or the injected `threading.Event` is set;
- `once` (burst): drains what is there (its own pending entries, entries idle on dead
  consumers, new ones) and returns once nothing is left pending in the group.

A dead-lettered entry keeps its fields and gains `source_id` (its id in the source stream),
`error`, `deliveries`, `consumer`, `dead_at` (ISO 8601, UTC) and `dead_at_ms`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from welcomemat.replies import reply_text_lossy
from welcomemat.storage.redis_client import REDIS_OUTAGE_ERRORS
from welcomemat.streams.groups import add_dead_letter_copy, ensure_group
from welcomemat.streams.handler import (
    ConsumerOptions,
    ConsumerStats,
    Delivery,
    Stream,
    StreamHandler,
    Verdict,
    retry,
)

__all__ = ["ConsumerProcess", "StreamConsumer"]

_BACKOFF_MIN_S = 0.2


class StreamConsumer:
    """One consumer in one or more consumer groups: reads, claims back, hands batches over, acknowledges,
    dead-letters, waits out Redis outages."""

    def __init__(
        self,
        client: redis.Redis,
        handler: StreamHandler,
        options: ConsumerOptions,
        *,
        log: Callable[[str], None],
        stop: threading.Event | None = None,
        progress: Callable[[ConsumerStats], None] | None = None,
        stats: ConsumerStats | None = None,
        heartbeat: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.handler = handler
        self.options = options
        self.name = options.name
        self.stats = stats or ConsumerStats()  # given: counters shared with another consumer
        self._log = log
        self._stopping = stop or threading.Event()
        self._progress = progress
        # Called at every pass of the loop (at least every `block_ms` when idle, every retry during an
        # outage) and after every batch: a liveness probe reads it, so a loop that hangs is restarted.
        self._heartbeat = heartbeat or (lambda: None)
        self._grouped: set[str] = set()
        self._own_due: dict[str, float] = {}  # stream key -> when to re-read our own pending entries
        # Claim back at least twice per idle threshold, so a dead consumer's entry waits < 1.5x it.
        self._claim_every_s = max(0.05, min(options.claim_idle_ms / 2000, 5.0))
        self._last_claim = float("-inf")
        self._rotation = 0

    # -- lifecycle -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Finish the batch in hand, then return from `run` (safe from a signal handler)."""
        self._stopping.set()

    @property
    def stop_event(self) -> threading.Event:
        """The flag `stop` sets: share it with `welcomemat.stop_signals.stop_on_signals` or
        with other consumers."""
        return self._stopping

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self) -> ConsumerStats:
        """Consume until stopped (with `once`: until the streams are drained)."""
        errors = 0
        outage_since = 0.0
        while not self.stopping:
            self._heartbeat()
            try:
                streams = self._ready(self.handler.streams())
                if not streams:
                    if self.options.once:
                        break
                    self._stopping.wait(self.options.block_ms / 1000)
                    continue
                done = self._own_pending(streams, only_due=True)
                if time.monotonic() - self._last_claim >= self._claim_every_s:
                    self._last_claim = time.monotonic()
                    done += self._claim_idle(streams)
                done += self._read_new(streams, block_ms=None)
                if done == 0 and not self._own_pending_due(streams):
                    if self.options.once:
                        if self._drained(streams):
                            break
                        # Entries of others not idle long enough to claim, or ours waiting to retry.
                        self._stopping.wait(min(1.0, self._claim_every_s))
                    else:
                        self._read_new(streams, block_ms=self._block_ms(streams))
                if errors:
                    self._log("Redis is back; resuming")
                errors = 0
            except REDIS_OUTAGE_ERRORS as exc:
                errors += 1
                self.stats.redis_errors += 1
                if errors == 1:
                    outage_since = time.monotonic()
                if self.options.once and time.monotonic() - outage_since >= self.options.once_outage_max_s:
                    raise
                wait = min(self.options.backoff_cap_s, _BACKOFF_MIN_S * 2 ** min(errors, 10))
                if errors == 1 or errors % 10 == 0:
                    self._log(f"Redis unavailable ({exc}); retrying every {wait:.1f} s")
                self._grouped.clear()  # a restarted Redis may have lost the groups: make sure again
                self._stopping.wait(wait)
        return self.stats

    def run_pass(self, streams: Sequence[Stream]) -> int:
        """One pass, no waiting: our own pending entries, entries idle on dead consumers, then one
        batch of new entries per stream; how many entries were handled. Redis errors propagate."""
        streams = self._ready(streams)
        done = self._own_pending(streams, only_due=False)
        done += self._claim_idle(streams)
        return done + self._read_new(streams, block_ms=None)

    def handle(self, batch: Sequence[Delivery]) -> None:
        """Hand a batch delivered outside the loop (e.g. read by hand) to the handler and settle it."""
        self._handle(batch)

    # -- finding work --------------------------------------------------------------------------

    def _ready(self, streams: Sequence[Stream]) -> list[Stream]:
        """`streams`, each with its group ensured; a stream seen for the first time has its own
        pending entries re-read (after a crash: ours, delivered, never acknowledged)."""
        for stream in streams:
            if stream.key not in self._grouped:
                ensure_group(self.client, stream)
                self._grouped.add(stream.key)
                self._own_due.setdefault(stream.key, 0.0)
        return list(streams)

    def _own_pending_due(self, streams: Sequence[Stream]) -> bool:
        now = time.monotonic()
        return any(self._own_due.get(s.key, float("inf")) <= now for s in streams)

    def _block_ms(self, streams: Sequence[Stream]) -> int:
        """How long each stream's blocking read waits: a cycle comes back in time to claim and retry."""
        wait_ms = min(self.options.block_ms, int(self._claim_every_s * 1000))
        due = [self._own_due[s.key] for s in streams if s.key in self._own_due]
        if due:
            wait_ms = min(wait_ms, max(0, int((min(due) - time.monotonic()) * 1000)))
        return max(10, wait_ms // len(streams))

    def _own_pending(self, streams: Sequence[Stream], *, only_due: bool) -> int:
        """Re-read the entries this consumer holds, page by page (XREADGROUP from an id, not `>`)."""
        handled = 0
        now = time.monotonic()
        for stream in streams:
            if only_due and self._own_due.get(stream.key, float("inf")) > now:
                continue
            self._own_due.pop(stream.key, None)  # a retry in this pass sets it again
            start = "0-0"
            while not self.stopping:
                reply = self._xreadgroup(stream, start, count=self.options.batch, block_ms=None)
                if not reply:
                    break
                start = reply[-1][0]
                gone = [entry_id for entry_id, fields in reply if not fields]
                if gone:  # pending, but trimmed or deleted from the stream: nothing to do
                    self._acknowledge(stream, gone)
                entries = [(entry_id, fields) for entry_id, fields in reply if fields]
                if entries:
                    counts = self._deliveries(stream, entries)
                    handled += self._deliver(stream, entries, counts, claimed=False)
        return handled

    def _claim_idle(self, streams: Sequence[Stream]) -> int:
        """Take over entries idle longer than `claim_idle_ms` on any consumer, and handle them."""
        handled = 0
        count = self.options.claim_batch or self.options.batch
        for stream in streams:
            start = "0-0"
            while not self.stopping:
                try:
                    reply: Any = self.client.xautoclaim(
                        stream.key,
                        stream.group,
                        self.name,
                        min_idle_time=self.options.claim_idle_ms,
                        start_id=start,
                        count=count,
                    )
                except redis.ResponseError as exc:
                    self._no_group(stream, exc)
                    break
                start = reply_text_lossy(reply[0])
                gone = [reply_text_lossy(i) for i, f in reply[1] if not f]
                if gone:
                    self._acknowledge(stream, gone)
                entries = [(reply_text_lossy(i), f) for i, f in reply[1] if f]
                if entries:
                    self.stats.claimed += len(entries)
                    self._log(f"claimed {len(entries)} entries of {stream.label} left by a stopped consumer")
                    handled += self._deliver(stream, entries, self._deliveries(stream, entries), claimed=True)
                if start == "0-0":
                    break
        return handled

    def _read_new(self, streams: Sequence[Stream], *, block_ms: int | None) -> int:
        """One batch of never-delivered entries per stream (blocking: until the first that has some)."""
        if not streams:
            return 0
        handled = 0
        self._rotation = (self._rotation + 1) % len(streams)
        for stream in [*streams[self._rotation :], *streams[: self._rotation]]:
            if self.stopping:
                break
            reply = self._xreadgroup(stream, ">", count=self.options.batch, block_ms=block_ms)
            entries = [(entry_id, fields) for entry_id, fields in reply if fields]
            if entries:
                handled += self._deliver(stream, entries, [1] * len(entries), claimed=False)
                if block_ms is not None:
                    break
        return handled

    def _xreadgroup(
        self, stream: Stream, start: str, *, count: int, block_ms: int | None
    ) -> list[tuple[str, Mapping[bytes, bytes]]]:
        try:
            reply: Any = self.client.xreadgroup(
                stream.group, self.name, {stream.key: start}, count=count, block=block_ms
            )
        except redis.ResponseError as exc:
            self._no_group(stream, exc)
            return []
        return [(reply_text_lossy(i), f or {}) for _, messages in (reply or []) for i, f in messages]

    def _no_group(self, stream: Stream, exc: redis.ResponseError) -> None:
        if "NOGROUP" not in str(exc):
            raise exc
        ensure_group(self.client, stream)  # the stream expired or was deleted

    def _deliveries(self, stream: Stream, entries: Sequence[tuple[str, Any]]) -> list[int]:
        """The group's times-delivered counter of each entry, this delivery included."""
        rows: Any = self.client.xpending_range(
            stream.key,
            stream.group,
            min=entries[0][0],
            max=entries[-1][0],
            count=len(entries),
            consumername=self.name,
        )
        counts = {reply_text_lossy(r["message_id"]): int(r["times_delivered"]) for r in rows}
        for entry_id, _ in entries:
            if entry_id not in counts:  # others of ours in the range crowded it out: ask for it alone
                one: Any = self.client.xpending_range(stream.key, stream.group, entry_id, entry_id, 1)
                counts[entry_id] = int(one[0]["times_delivered"]) if one else 1
        return [counts[entry_id] for entry_id, _ in entries]

    def _drained(self, streams: Sequence[Stream]) -> bool:
        """Nothing pending in the group on any stream (the caller found nothing new to read)."""
        for stream in streams:
            try:
                summary: Any = self.client.xpending(stream.key, stream.group)
            except redis.ResponseError:
                continue
            if int(summary["pending"]):
                return False
        return True

    # -- handing over and settling -------------------------------------------------------------

    def _deliver(
        self,
        stream: Stream,
        entries: Sequence[tuple[str, Mapping[bytes, bytes]]],
        deliveries: Sequence[int],
        *,
        claimed: bool,
    ) -> int:
        """Hand `entries` to the handler in batches and settle each outcome; how many were handed."""
        batch: list[Delivery] = []
        limit = self.options.max_deliveries
        self.stats.read += len(entries)
        for (entry_id, fields), count in zip(entries, deliveries, strict=True):
            delivery = Delivery(stream, entry_id, fields, count, claimed)
            if limit is not None and stream.dead_letter_key is not None and count > limit:
                self._dead_letter(
                    delivery, f"delivered {count - 1} times and never acknowledged (its consumers died)"
                )
            else:
                batch.append(delivery)
        for start in range(0, len(batch), self.options.batch):
            if self.stopping and start:
                break  # delivered, not handled: ours to re-read on restart, or idle for others to claim
            self._handle(batch[start : start + self.options.batch])
        if self._progress is not None:
            self._progress(self.stats)
        return len(entries)

    def _handle(self, batch: Sequence[Delivery]) -> None:
        try:
            with self._keep_claimed(batch):
                outcomes = list(self.handler.handle(batch))
            self._heartbeat()
            if len(outcomes) != len(batch):
                raise ValueError(f"{len(outcomes)} outcomes for a batch of {len(batch)} entries")
        except REDIS_OUTAGE_ERRORS:
            raise
        except Exception as exc:  # anything: the batch stays pending and is retried, then dead-lettered
            outcomes = [retry(f"{type(exc).__name__}: {exc}")] * len(batch)
        ack: list[str] = []
        for delivery, outcome in zip(batch, outcomes, strict=True):
            if outcome.verdict is Verdict.ACK:
                ack.append(delivery.entry_id)
                self.stats.acknowledged += 1
            elif outcome.verdict is Verdict.ACKED:
                self.stats.acknowledged += 1
        if ack:
            self._acknowledge(batch[0].stream, ack)
        for delivery, outcome in zip(batch, outcomes, strict=True):
            if outcome.verdict is Verdict.RETRY:
                self._failed(delivery, outcome.reason)
            elif outcome.verdict is Verdict.DEAD_LETTER:
                self._dead_letter(delivery, outcome.reason)

    def _failed(self, delivery: Delivery, reason: str) -> None:
        self.stats.failed_attempts += 1
        limit = self.options.max_deliveries
        of = f" of {limit}" if limit is not None else ""
        if reason:
            self._log(
                f"entry {delivery.entry_id} of {delivery.stream.label} failed "
                f"(delivery {delivery.deliveries}{of}): {reason}"
            )
        if limit is not None and delivery.stream.dead_letter_key is not None and delivery.deliveries >= limit:
            self._dead_letter(delivery, reason)
            return
        due = time.monotonic() + self.options.retry_after_s
        self._own_due[delivery.stream.key] = min(due, self._own_due.get(delivery.stream.key, due))

    def _dead_letter(self, delivery: Delivery, reason: str) -> None:
        """Copy the entry with the reason to the dead-letter stream and acknowledge it, in one transaction."""
        stream = delivery.stream
        pipe = self.client.pipeline(transaction=True)
        dead_key = add_dead_letter_copy(pipe, delivery, reason, consumer=self.name)
        if not self.handler.dead_letter_writes(pipe, delivery, reason):
            pipe.xack(stream.key, stream.group, delivery.entry_id)
            if stream.delete_acked:
                pipe.xdel(stream.key, delivery.entry_id)
        replies = pipe.execute()
        self.stats.dead_lettered += 1
        self._log(
            f"entry {delivery.entry_id} of {stream.label} moved to {dead_key} "
            f"after {delivery.deliveries} deliveries: {reason}"
        )
        self.handler.dead_lettered(delivery, reason, replies[-1])

    def _acknowledge(self, stream: Stream, entry_ids: Sequence[str]) -> None:
        if not stream.delete_acked:
            self.client.xack(stream.key, stream.group, *entry_ids)
            return
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(stream.key, stream.group, *entry_ids)
        pipe.xdel(stream.key, *entry_ids)
        pipe.execute()

    @contextmanager
    def _keep_claimed(self, batch: Sequence[Delivery]) -> Iterator[None]:
        """With `keep_claimed`: reset the batch's idle time while it is handled, so nobody claims it."""
        if not self.options.keep_claimed or not batch:
            yield
            return
        done = threading.Event()
        interval_s = max(0.02, self.options.claim_idle_ms / 3000)
        stream = batch[0].stream
        ids: list[Any] = [d.entry_id for d in batch]

        def beat() -> None:
            while not done.wait(interval_s):
                try:
                    self.client.xclaim(stream.key, stream.group, self.name, 0, ids, justid=True)
                except redis.RedisError:
                    pass  # the next beat tries again; at worst an entry is handled twice

        thread = threading.Thread(target=beat, name=f"keep-claimed {ids[0]}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()


class ConsumerProcess:
    """A process built on the loop (the precompute worker, the sync): its command stops it.

    Subclasses set `_consumer` in `__init__`.
    """

    _consumer: StreamConsumer

    def stop(self) -> None:
        """Finish the batch in hand, then return from `run` (safe from a signal handler)."""
        self._consumer.stop()

    @property
    def stopping(self) -> bool:
        return self._consumer.stopping
