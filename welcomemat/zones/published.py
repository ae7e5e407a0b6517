"""Every published zone set of a campaign, read in batches: what exports and the lift report count.

A campaign's population is its accounts with a zone set in status `published` (pending
review and rejected sets are not served, so they are not counted either). Read in MGET
batches in SCAN order, so memory stays flat whatever the campaign's size; a value that does
not decode is skipped and described, never the end of the read.
"""

from __future__ import annotations

from collections.abc import Iterator

import redis

from welcomemat.errors import StoredValueError
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import ZoneSet, ZoneSetStatus

__all__ = ["PUBLISHED_BATCH", "iter_published", "published_batch", "zone_set_batch"]

PUBLISHED_BATCH = 500  # accounts per MGET


def zone_set_batch(
    store: ZoneSetStore, tenant: str, campaign: str, ids: list[str]
) -> tuple[dict[str, ZoneSet], dict[str, str]]:
    """The zone sets among `ids` in any status, and id -> what is wrong for those that do not decode.

    Ids without a zone set are in neither.
    """
    unreadable: dict[str, str] = {}
    try:
        found = store.get_many(tenant, campaign, ids)
    except StoredValueError:  # one bad value: read them one by one, report the bad ones
        found = {}
        for account_id in ids:
            try:
                found[account_id] = store.get(tenant, campaign, account_id)
            except StoredValueError as exc:
                unreadable[account_id] = str(exc)
    return {a: z for a, z in found.items() if z is not None}, unreadable


def published_batch(
    store: ZoneSetStore, tenant: str, campaign: str, ids: list[str], problems: list[str]
) -> dict[str, ZoneSet]:
    """The published zone sets among `ids`; one that does not decode is described in `problems`."""
    found, unreadable = zone_set_batch(store, tenant, campaign, ids)
    problems.extend(unreadable.values())
    return {a: z for a, z in found.items() if z.status is ZoneSetStatus.PUBLISHED}


def iter_published(
    client: redis.Redis, tenant: str, campaign: str, problems: list[str] | None = None
) -> Iterator[ZoneSet]:
    """Every published zone set of a campaign (SCAN order), read in batches.

    A zone set that does not decode is skipped and described in `problems` (when given).
    """
    store = ZoneSetStore(client)
    sink: list[str] = problems if problems is not None else []
    batch: list[str] = []
    for account_id in store.iter_account_ids(tenant, campaign):
        batch.append(account_id)
        if len(batch) >= PUBLISHED_BATCH:
            yield from published_batch(store, tenant, campaign, batch, sink).values()
            batch = []
    if batch:
        yield from published_batch(store, tenant, campaign, batch, sink).values()
