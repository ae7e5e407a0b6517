"""A stream's consumer group and dead-letter stream: creating the group, copying an entry out.

Written once for the consumer loop (`welcomemat.streams.consumer`) and for the producers that must
make sure a group exists before their first entry (the precompute queue, the sync, the
webhook outbox), so every stream gets its group from id 0 and its TTL the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import redis

from welcomemat import keys
from welcomemat.streams.handler import Delivery, Stream

__all__ = ["add_dead_letter_copy", "ensure_group"]


def ensure_group(client: redis.Redis, stream: Stream) -> bool:
    """Create the stream and its group if missing (idempotent); True when this call created the group.

    From id 0: entries added before the group existed are work too. A stream MKSTREAM made
    gets the stream's TTL, like any key.
    """
    try:
        client.xgroup_create(stream.key, stream.group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise
        return False
    client.expire(stream.key, stream.ttl_s)
    return True


def add_dead_letter_copy(pipe: Any, delivery: Delivery, reason: str, *, consumer: str) -> str:
    """Queue on `pipe` the copy of `delivery` to its dead-letter stream; that stream's key."""
    dead_key = delivery.stream.dead_letter_key
    if dead_key is None:
        raise ValueError(f"{delivery.stream.label} has no dead-letter stream")
    now = datetime.now(UTC)
    fields: dict[Any, Any] = {
        **delivery.fields,
        b"source_id": delivery.entry_id.encode(),
        b"error": reason.encode(),
        b"deliveries": str(delivery.deliveries).encode(),
        b"consumer": consumer.encode(),
        b"dead_at": now.isoformat().encode(),
        b"dead_at_ms": str(int(now.timestamp() * 1000)).encode(),
    }
    pipe.xadd(dead_key, fields)
    pipe.expire(dead_key, keys.DEAD_LETTER_TTL_S)
    return dead_key
