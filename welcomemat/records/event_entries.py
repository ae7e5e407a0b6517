"""Reading an engagement event stream entry (`keys.events_stream_key`): the one decoder.

The renderer writes entries (`server.engagement.events`); readers fold, count, export or erase
them: the engagement sync (`outbound.sync`, into account records), the results page's daily
series (`welcomemat.lift.daily`) and the data subject requests
(`welcomemat.records.subject_requests`). All of them read an entry here, so a field read by one
is read the same way by the others.

An entry holds one event or a batch of them:

- one event: its fields as the entry's `field: value` pairs, unknown ones left out (what the
  renderer wrote until 2026-12-04, and what tools and older streams may still hold);
- a batch (`BATCH_FIELD`), what the renderer writes, one entry per tenant and flush: a JSON
  array of events, each an array of the values of `EVENT_FIELDS` in that order, `null` where
  unknown. Every reader reads it, and an erasure
  writes one back (`batch_fields`) without the erased subject's events. A whole batch in one
  entry cost Redis 0.7-1.8 µs of CPU an event, against 12-21 for an entry per event, in four
  runs of `bench/redis_event_cost.py` (bench/README.md). An event of a batch is named
  `<entry id>.<index>` (an id, like the entry's) where a reader names events (export, dead
  letters, problems).

Other fields may sit beside `BATCH_FIELD` (its count, `BATCH_COUNT_FIELD`; a dead-letter copy
adds `source_id`, `error`, ...); they belong to the entry, not to its events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from welcomemat.records.fold import EventFold, FoldKind
from welcomemat.replies import reply_text

__all__ = [
    "BATCH_COUNT_FIELD",
    "BATCH_FIELD",
    "ENTRIES_PER_READ",
    "EVENT_FIELDS",
    "KINDS",
    "MAX_BATCH_CHARS",
    "MAX_BATCH_EVENTS",
    "ParsedEvent",
    "PoisonEvent",
    "batch_fields",
    "entry_events",
    "parse_entry",
    "parse_event",
    "parse_values",
]

# Event type (as the renderer writes it) -> the record counter it adds to.
KINDS: Mapping[str, FoldKind] = {"view": "views", "click": "clicks", "qr_scan": "qr"}


# A batch entry's field, named with its codec's version: a batch of another layout gets a new
# name, and a reader that does not know it reads no events into the wrong fields.
BATCH_FIELD = "events.v1"
# Beside it, how many events the batch holds: what trimming the stream counts
# (`server.engagement.events`), so that it need not parse a batch it drops. Readers of events
# do not need it.
BATCH_COUNT_FIELD = "events.n"
# The fields of an event in a batch, in order (the renderer's writer builds its arrays so).
EVENT_FIELDS = (
    "event_id",
    "type",
    "tenant",
    "campaign",
    "view_id",
    "ts",
    "arm",
    "account",
    "contact",
    "zone",
    "rung",
    "version",
    "identified_by",
    "variant",
    "page",
)
# Limits checked before a batch is parsed (a renderer writes at most `event_batch_max`, 500 by
# default, of at most ~1 KB each): whatever the stream holds, a reader's work stays bounded.
MAX_BATCH_EVENTS = 10_000
MAX_BATCH_CHARS = 8 * 1024 * 1024
# Entries a reader asks for per XRANGE: an entry may hold a batch of hundreds of events.
ENTRIES_PER_READ = 50


class PoisonEvent(ValueError):
    """A stream entry, or an event of a batch, that can never be folded (missing or malformed field)."""


def _text_fields(fields: Mapping[Any, Any]) -> dict[str, str]:
    try:
        return {reply_text(k): reply_text(v) for k, v in fields.items()}
    except (UnicodeDecodeError, TypeError) as exc:
        raise PoisonEvent(f"not UTF-8 text: {exc}") from None


def entry_events(entry_id: str, fields: Mapping[Any, Any]) -> list[tuple[str, dict[str, str]]]:
    """Each event of a stream entry as (its name, its fields): an entry of one event is itself,
    named by the entry's id; a batch entry gives each of its events, named `<entry id>.<index>`.

    Raises PoisonEvent when the entry does not decode (not UTF-8, a batch that is not JSON, over
    the limits, or an event that is not an array of `EVENT_FIELDS` strings and nulls): a batch
    is read whole or not at all.
    """
    values = _text_fields(fields)
    batch = values.get(BATCH_FIELD)
    if batch is None:
        return [(entry_id, values)]
    if len(batch) > MAX_BATCH_CHARS:
        raise PoisonEvent(f"batch of {len(batch):,} characters; at most {MAX_BATCH_CHARS:,} are read")
    try:
        decoded = json.loads(batch)
    except (ValueError, RecursionError) as exc:
        raise PoisonEvent(f"batch is not JSON: {exc}") from None
    if not isinstance(decoded, list):
        raise PoisonEvent("batch is not a JSON array")
    if len(decoded) > MAX_BATCH_EVENTS:
        raise PoisonEvent(f"batch of {len(decoded):,} events; at most {MAX_BATCH_EVENTS:,} are read")
    events: list[tuple[str, dict[str, str]]] = []
    width = len(EVENT_FIELDS)
    for index, event in enumerate(decoded):
        if (
            not isinstance(event, list)
            or len(event) != width
            or not all(value is None or isinstance(value, str) for value in event)
        ):
            raise PoisonEvent(f"event {index} of the batch is not an array of {width} strings or nulls")
        named = {name: value for name, value in zip(EVENT_FIELDS, event, strict=True) if value is not None}
        events.append((f"{entry_id}.{index}", named))
    return events


def batch_fields(
    events: Sequence[Mapping[str, str]], beside: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A batch entry's fields holding `events` (each `EVENT_FIELDS` name -> value; other names
    are not kept), with the entry's other fields `beside` it. What an erasure writes back of a
    batch it took an event out of: the same codec the renderer writes."""
    rows = [[event.get(name) for name in EVENT_FIELDS] for event in events]
    return {
        **(beside or {}),
        BATCH_FIELD: json.dumps(rows, separators=(",", ":")),
        BATCH_COUNT_FIELD: str(len(rows)),
    }


class ParsedEvent(NamedTuple):
    """One event of a stream entry, read: its name (`entry_events`), its fold (an EventFold, None
    when it is not one to fold, or the PoisonEvent that says why it never will be), its fields."""

    name: str
    fold: EventFold | None | PoisonEvent
    values: dict[str, str]


def parse_entry(tenant: str, entry_id: str, fields: Mapping[Any, Any]) -> list[ParsedEvent]:
    """Each event of a stream entry (`entry_events`), read. Raises PoisonEvent when the entry
    itself does not decode."""
    parsed: list[ParsedEvent] = []
    for name, values in entry_events(entry_id, fields):
        try:
            parsed.append(ParsedEvent(name, parse_values(tenant, name, values), values))
        except PoisonEvent as exc:
            parsed.append(ParsedEvent(name, exc, values))
    return parsed


def parse_event(tenant: str, entry_id: str, fields: Mapping[Any, Any]) -> EventFold | None:
    """A stream entry of one event as a fold, None when it is not one to fold, PoisonEvent when
    it is broken (a batch entry is read by `parse_entry`)."""
    values = _text_fields(fields)
    if BATCH_FIELD in values:
        raise PoisonEvent("a batch entry holds several events: read it with parse_entry")
    return parse_values(tenant, entry_id, values)


def parse_values(tenant: str, name: str, values: Mapping[str, str]) -> EventFold | None:
    """One event's fields (text) as a fold, None when it is not one to fold, PoisonEvent when it is
    broken; `name` (the entry's id, or a batch event's `entry_events` name) stands in for a missing
    event id."""
    kind = KINDS.get(values.get("type", ""))
    account = values.get("account")
    if kind is None or not account:
        return None
    if values.get("tenant", tenant) != tenant:
        raise PoisonEvent(f"tenant {values.get('tenant')!r} in the stream of tenant {tenant!r}")
    # Ids are checked once, by EventFold: a bad one makes this entry poison, never a key.
    if "campaign" not in values:
        raise PoisonEvent("field 'campaign' is missing")
    try:
        ts_ms = int(values["ts"])
        version = int(values["version"]) if "version" in values else None
    except KeyError:
        raise PoisonEvent("field 'ts' is missing") from None
    except ValueError as exc:
        raise PoisonEvent(f"not a whole number: {exc}") from None
    try:
        return EventFold(
            tenant=tenant,
            account_id=account,
            campaign=values["campaign"],
            kind=kind,
            ts_ms=ts_ms,
            event_id=values.get("event_id") or name,
            arm=values.get("arm"),
            contact=values.get("contact"),
            zone=values.get("zone"),
            zone_set_version=version,
            variant=values.get("variant"),
            page=values.get("page"),  # absent from events written before views named their page
            view_id=values.get("view_id"),
        )
    except ValueError as exc:
        raise PoisonEvent(str(exc)) from None
