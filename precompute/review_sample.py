"""The review sample: which published accounts a person looks at after a run.

A campaign's `approval.sample_rate` asks for a share of what a run published to be
reviewed. The sample is stratified by segment and mode, and drawn by a stable rank of
each account id, so it depends on what was published, not on the order a local run or
the distributed workers happened to publish it in; the worker collects the candidates
across entries and draws once when the run completes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import redis

from welcomemat import keys
from welcomemat.campaign.contract import Campaign

__all__ = ["SampleCandidate", "choose_sample", "replace_review_sample"]

# (stratum, account id, status) of a published zone set: what the review sample is drawn from.
SampleCandidate = tuple[str, str, str]


def _stratum_rank(account_id: str) -> int:
    """A stable pseudo-random rank for sampling (same account, same rank, every run)."""
    return int.from_bytes(hashlib.sha256(account_id.encode()).digest()[:8], "big")


def choose_sample(candidates: Sequence[SampleCandidate], rate: float) -> list[str]:
    """A stratified sample (segment × mode) of account ids: the same candidates, the same sample.

    Per stratum, `rate` of its accounts (at least one), lowest stable rank first, so the
    sample depends on what was published, not on the order workers happened to publish it.
    """
    if rate <= 0:
        return []
    strata: dict[str, set[str]] = {}
    for stratum, account_id, _ in candidates:
        strata.setdefault(stratum, set()).add(account_id)
    chosen: list[str] = []
    for ids in strata.values():
        take = max(1, round(rate * len(ids)))
        chosen.extend(sorted(ids, key=_stratum_rank)[:take])
    return chosen


def replace_review_sample(
    client: redis.Redis, campaign: Campaign, sampled: Sequence[SampleCandidate]
) -> None:
    """Replace the campaign's review sample with one drawn from `sampled` (see `choose_sample`)."""
    chosen = choose_sample(sampled, campaign.approval.sample_rate)
    if not chosen:
        return
    key = keys.review_sample_key(campaign.tenant, campaign.campaign)
    queued_at = time.time()
    pipe = client.pipeline(transaction=True)
    pipe.delete(key)
    pipe.zadd(key, dict.fromkeys(chosen, queued_at))
    pipe.expire(key, keys.CAMPAIGN_TTL_S)
    pipe.execute()
