"""What every sender of a tenant outbox shares (CRM changes, seller alerts): passes and follow mode.

A sender is a handler on the core's one consumer loop (`welcomemat.streams.consumer`) over one outbox
stream per tenant; `--once` runs make passes over the tenants' outboxes, a following `sync`
runs the loop in a thread until it stops. Subclasses say which stream a tenant's outbox is and
what delivering an entry means (`handle`).

Both honour one stop event (SIGTERM, Ctrl-C): a pass stops reading after the entry in hand, and
the subclasses' requests and retry waits end on it too, so `sync` exits within seconds however
long a receiver asks it to wait. What was not delivered stays in the outbox.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis

from welcomemat.streams.consumer import StreamConsumer
from welcomemat.streams.handler import ConsumerOptions, ConsumerReport, Stream, StreamHandler

__all__ = ["OutboxSender", "OutboxStats"]


@dataclass
class OutboxStats(ConsumerReport):
    delivered: int = 0  # entries a receiver accepted (2xx)
    failed: int = 0  # entries left in the outbox by a pass (receiver down, refusing, breaker open)
    attempts: int = 0  # HTTP requests made


class OutboxSender(StreamHandler):
    """A consumer of the tenants' outboxes; one per process, sharing the outbox's group."""

    stats: OutboxStats

    def __init__(
        self,
        client: redis.Redis,
        options: ConsumerOptions,
        log: Callable[[str], None],
        stats: OutboxStats,
        *,
        stop: threading.Event | None = None,
    ) -> None:
        self.client = client
        self._options = options
        self._log = log
        self._consumer = StreamConsumer(client, self, options, log=log, stop=stop, stats=stats.loop)
        self.stats = stats
        self._tenants: Callable[[], Sequence[str]] = lambda: ()

    @abstractmethod
    def outbox(self, tenant: str) -> Stream:
        """The tenant's outbox as the consumer loop reads it."""

    def run_pass(self, tenants: Sequence[str]) -> int:
        """Try every queued entry of `tenants` once (its retries included); how many were delivered.

        While a receiver's breaker is open no request is made: what is left stays queued; once
        the stop event is set, neither is any other.
        """
        before = self.stats.delivered
        self._consumer.run_pass([self.outbox(t) for t in tenants])
        return self.stats.delivered - before

    def queued(self, tenants: Sequence[str]) -> int:
        """Entries waiting in the outboxes of `tenants` (not yet delivered)."""
        return sum(int(self.client.xlen(self.outbox(t).key)) for t in tenants)

    def run_until_stopped(self, tenants: Callable[[], Sequence[str]], stop: threading.Event) -> None:
        """Follow mode: send entries as they are queued, and those not delivered again after the
        options' `retry_after_s`, until `stop`; Redis outages are waited out."""
        self._tenants = tenants
        StreamConsumer(
            self.client, self, self._options, log=self._log, stop=stop, stats=self.stats.loop
        ).run()

    def streams(self) -> list[Stream]:
        return [self.outbox(t) for t in self._tenants()]
