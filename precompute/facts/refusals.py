"""Why the population's facts were refused, counted from the published explain records.

A first run that is NO GO usually is so because research was refused, not because copy
was bad: ten of fourteen facts naming the account by its brand, say. Plain `welcomemat qa`
names the top refusal reasons with one example each (its detail says what would pass),
so nobody has to know about `--findings` or read `explain` account by account.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict, Field

from precompute.explain import decode_explain_record
from welcomemat import keys

__all__ = ["FactRefusal", "FactRefusalTally"]

EXPLAIN_CHUNK = 500  # explain records read per MGET


class FactRefusal(BaseModel):
    """One refusal reason: how many facts, and the first one refused for it."""

    model_config = ConfigDict(extra="forbid")

    reason: str
    facts: int
    accounts: int
    example: str = Field(description="account id, fact id and the decision's detail of the first fact")


class FactRefusalTally:
    """Counts untrusted facts by reason over every account QA scans, reading explain records in chunks."""

    def __init__(self, client: redis.Redis, tenant: str, campaign: str) -> None:
        self._client, self._tenant, self._campaign = client, tenant, campaign
        self._pending: list[str] = []
        self._facts: Counter[str] = Counter()
        self._accounts: Counter[str] = Counter()
        self._examples: dict[str, str] = {}

    def add(self, account_id: str) -> None:
        self._pending.append(account_id)
        if len(self._pending) >= EXPLAIN_CHUNK:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        names = [keys.explain_key(self._tenant, self._campaign, a) for a in self._pending]
        for account_id, raw in zip(self._pending, self._client.mget(names), strict=True):
            self._fold(account_id, decode_explain_record(raw))
        self._pending.clear()

    def _fold(self, account_id: str, record: Mapping[str, Any]) -> None:
        facts = record.get("facts")
        reasons: set[str] = set()
        for fact in facts if isinstance(facts, list) else ():
            if not isinstance(fact, dict) or fact.get("trusted"):
                continue
            reason = str(fact.get("reason") or "untrusted")
            self._facts[reason] += 1
            reasons.add(reason)
            if reason not in self._examples:
                self._examples[reason] = f"{account_id} {fact.get('id')}: {fact.get('detail') or reason}"
        self._accounts.update(reasons)

    def top(self) -> list[FactRefusal]:
        """Every reason, most facts first (ties by name, so the order is stable)."""
        self.flush()
        ranked = sorted(self._facts.items(), key=lambda kv: (-kv[1], kv[0]))
        return [
            FactRefusal(reason=r, facts=n, accounts=self._accounts[r], example=self._examples[r])
            for r, n in ranked
        ]
