"""What a user of the Streams consumer loop (`welcomemat.streams.consumer`) gives it and gets back.

A `StreamHandler` names its `Stream`s and turns each `Delivery` into an `Outcome` (`ACK`,
`ACKED`, `retry(why)`, `dead_letter(why)`); `ConsumerOptions` tune the loop; the loop's
counters (`ConsumerStats`) read through each user's own report (`ConsumerReport`). Kept apart
from the loop so that a handler's module reads its contract without the loop's machinery.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACK",
    "ACKED",
    "DEFAULT_BLOCK_MS",
    "DEFAULT_CLAIM_IDLE_MS",
    "ConsumerOptions",
    "ConsumerReport",
    "ConsumerStats",
    "Delivery",
    "Outcome",
    "Stream",
    "StreamHandler",
    "Verdict",
    "dead_letter",
    "retry",
]

DEFAULT_BLOCK_MS = 2_000  # how long a follow-mode read waits for new entries; also the longest a stop waits
# An entry unacknowledged this long sits on a dead consumer (a live one acknowledges, or keeps it claimed).
DEFAULT_CLAIM_IDLE_MS = 60_000


@dataclass(frozen=True)
class Stream:
    """A stream read through a consumer group, and where its failures go."""

    key: str
    group: str
    ttl_s: int  # given to the stream when the loop creates it (MKSTREAM), as its writers do
    label: str  # how log lines name it: "tenant acme", "acme/q4-pipeline"
    dead_letter_key: str | None = None  # None: nothing is ever dead-lettered (retried until done)
    delete_acked: bool = False  # XDEL after XACK: the entries are work items, not a log
    scope: tuple[str, ...] = ()  # the ids it belongs to (tenant[, campaign]), for the handler


@dataclass(frozen=True)
class Delivery:
    """One entry delivered to this consumer."""

    stream: Stream
    entry_id: str
    fields: Mapping[bytes, bytes]
    deliveries: int  # the group's times-delivered counter, this delivery included
    claimed: bool = False  # taken over from another consumer (XAUTOCLAIM)


class Verdict(enum.StrEnum):
    ACK = "ack"  # done: the loop acknowledges it (and deletes it, with `Stream.delete_acked`)
    ACKED = "acked"  # done, and the handler acknowledged it in its own transaction
    RETRY = "retry"  # failed: left pending, delivered again (dead-lettered at `max_deliveries`)
    DEAD_LETTER = "dead_letter"  # can never succeed: dead-letter it now


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    reason: str = ""


ACK = Outcome(Verdict.ACK)
ACKED = Outcome(Verdict.ACKED)


def retry(reason: str) -> Outcome:
    """Leave the entry pending, to be delivered again; an empty `reason` is not logged (e.g. an
    entry skipped while a circuit breaker is open: its failure was logged once already)."""
    return Outcome(Verdict.RETRY, reason)


def dead_letter(reason: str) -> Outcome:
    return Outcome(Verdict.DEAD_LETTER, reason)


class StreamHandler(ABC):
    """What a consumer does with its entries; the loop does the reading, claiming and failing."""

    @abstractmethod
    def streams(self) -> Sequence[Stream]:
        """The streams to consume now (called every cycle: cache what is costly to find)."""

    @abstractmethod
    def handle(self, batch: Sequence[Delivery]) -> Sequence[Outcome]:
        """One outcome per entry of `batch`, in order. An exception retries the whole batch."""

    def dead_letter_writes(self, pipe: Any, delivery: Delivery, reason: str) -> bool:
        """Writes to add to the dead-letter transaction, after the copy. True: they acknowledge the
        entry themselves (e.g. acknowledge-and-count in one script), so the loop adds no XACK."""
        return False

    def dead_lettered(self, delivery: Delivery, reason: str, reply: Any) -> None:
        """After the dead-letter transaction; `reply` is its last command's reply."""
        return None


@dataclass(frozen=True)
class ConsumerOptions:
    name: str  # the consumer's name in the group: stable across restarts to re-read its own entries
    once: bool = False  # drain, then return from `run`
    batch: int = 100  # entries per XREADGROUP and per `handle`
    claim_batch: int | None = None  # entries per XAUTOCLAIM (default: `batch`)
    block_ms: int = DEFAULT_BLOCK_MS
    claim_idle_ms: int = DEFAULT_CLAIM_IDLE_MS
    max_deliveries: int | None = 5  # None: never dead-letter
    retry_after_s: float = 0.0  # how long a retried entry waits before this consumer re-reads it
    keep_claimed: bool = False  # reset the idle time of the batch in hand (slow handlers)
    backoff_cap_s: float = 5.0  # the longest wait between attempts while Redis is down
    # With `once`: how long Redis may stay unreachable (every cycle failing) before `run` gives
    # up. A Redis Cluster failover takes its node timeout (15 s by default) plus an election,
    # and a run can meet two in a row: the budget outlasts that.
    once_outage_max_s: float = 60.0


@dataclass
class ConsumerStats:
    """Progress counters (read from other threads while `run` goes on)."""

    read: int = 0  # entries delivered to this consumer, redeliveries included
    acknowledged: int = 0  # handled and acknowledged (ACK or ACKED)
    claimed: int = 0  # taken over from other (dead) consumers
    failed_attempts: int = 0  # outcomes RETRY, and batches whose handler raised
    dead_lettered: int = 0
    redis_errors: int = 0  # cycles that failed because Redis was unavailable


@dataclass
class ConsumerReport:
    """What one user of the loop (worker, sync, outbox) counts, beside the loop's own counters.

    Users subclass it with their own fields; the loop's counters read through, so every
    command's summary spells them the same way.
    """

    loop: ConsumerStats = field(default_factory=ConsumerStats)

    @property
    def read(self) -> int:
        """Entries delivered to this consumer (including redeliveries)."""
        return self.loop.read

    @property
    def claimed(self) -> int:
        """Taken over from dead consumers (XAUTOCLAIM), or failed here and retried."""
        return self.loop.claimed

    @property
    def failed_attempts(self) -> int:
        return self.loop.failed_attempts

    @property
    def dead_lettered(self) -> int:
        return self.loop.dead_lettered

    @property
    def redis_errors(self) -> int:
        return self.loop.redis_errors
