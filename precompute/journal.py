"""The run journal: where each account of a campaign's run got to, what `--resume` reads.

One Redis hash per campaign (`keys.journal_key`), one JSON entry per account: its state,
why, the input hash it was decided from, the version published, when. A run first journals
every account `accepted` (`accept`), then each account's outcome in the pipeline that
publishes it (`record`). A run killed mid-way leaves accounts `accepted`; `--resume` reads
a chunk's entries (`load`) and skips those journalled `published` with the same input hash.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import redis

from welcomemat import keys
from welcomemat.records.accounts import Account

__all__ = ["Journal", "JournalState"]

_ACCEPT_BATCH = 1000  # accounts per pipeline of HSETNX when a run journals them `accepted`


class JournalState:
    ACCEPTED = "accepted"
    PUBLISHED = "published"
    DEFERRED = "deferred"  # published as fallback because the provider could not write; redone next run
    FAILED = "failed"


class Journal:
    """One campaign's journal hash, under `key`."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = key

    def accept(self, accounts: Sequence[Account], now: datetime) -> None:
        """Journal every account `accepted`, at `now`, unless it has an entry already."""
        for start in range(0, len(accounts), _ACCEPT_BATCH):
            chunk = accounts[start : start + _ACCEPT_BATCH]
            entries = {
                a.account_id: json.dumps({"state": JournalState.ACCEPTED, "at": now.isoformat()})
                for a in chunk
            }
            # Keep a published entry as it is until this run replaces it: --resume relies on it.
            pipe = self.client.pipeline(transaction=False)
            for account_id, value in entries.items():
                pipe.hsetnx(self.key, account_id, value)
            pipe.execute()

    def record(
        self,
        pipe: redis.client.Pipeline,
        account_id: str,
        state: str,
        input_hash: str,
        *,
        reason: str = "",
        version: int | None = None,
    ) -> None:
        """Add the account's entry, stamped now, to `pipe` (the one that publishes it)."""
        pipe.hset(
            self.key,
            account_id,
            json.dumps(
                {
                    "state": state,
                    "reason": reason,
                    "input_hash": input_hash,
                    "version": version,
                    "at": datetime.now(UTC).isoformat(),
                }
            ),
        )

    def refresh(self, pipe: redis.client.Pipeline) -> None:
        """Add to `pipe` the renewal of the journal's TTL (`keys.JOURNAL_TTL_S`)."""
        pipe.expire(self.key, keys.JOURNAL_TTL_S)

    def load(self, chunk: Sequence[Account]) -> dict[str, dict[str, object]]:
        """The journal entries of one chunk (HMGET): a worker reads only what it resumes."""
        ids = [a.account_id for a in chunk]
        raw: list[bytes | None] = self.client.hmget(self.key, ids)  # type: ignore[assignment]
        out: dict[str, dict[str, object]] = {}
        for account_id, value in zip(ids, raw, strict=True):
            if value is None:
                continue
            try:
                out[account_id] = json.loads(value)
            except (ValueError, UnicodeDecodeError):
                continue  # an unreadable entry is redone, not trusted
        return out
