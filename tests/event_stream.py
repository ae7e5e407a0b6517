"""A tenant's engagement events as the stream holds them, one per event: the renderer writes a
batch per stream entry (`welcomemat.records.event_entries`), tests ask about events."""

from __future__ import annotations

from typing import Any

import redis
from redis.cluster import RedisCluster

from welcomemat import keys
from welcomemat.records.event_entries import entry_events


def stream_events(client: redis.Redis | RedisCluster, tenant: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """Every event of the tenant's stream, in order, as XRANGE gives entries: (its name, its
    fields as bytes). A batch's events are named `<entry id>.<index>`."""
    entries: Any = client.xrange(keys.events_stream_key(tenant))
    return [
        (name.encode(), {k.encode(): v.encode() for k, v in values.items()})
        for raw_id, fields in entries
        for name, values in entry_events(
            raw_id.decode() if isinstance(raw_id, bytes) else str(raw_id), fields
        )
    ]


def event_count(client: redis.Redis | RedisCluster, tenant: str) -> int:
    """How many events the tenant's stream holds (XLEN counts entries: batches)."""
    return len(stream_events(client, tenant))
