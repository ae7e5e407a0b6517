"""Reading an engagement event stream entry (`keys.events_stream_key`): the one decoder.

The renderer writes entries (`server.engagement.events.EngagementEvent.stream_entry`); two readers fold
or count them: the engagement sync (`outbound.sync`, into account records) and the results
page's daily series (`welcomemat.lift.daily`). Both decode an entry here, so a field read by
one is read the same way by the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from welcomemat.records.fold import EventFold, FoldKind
from welcomemat.replies import reply_text

__all__ = ["KINDS", "PoisonEvent", "parse_event"]

# Event type (as the renderer writes it) -> the record counter it adds to.
KINDS: Mapping[str, FoldKind] = {"view": "views", "click": "clicks", "qr_scan": "qr"}


class PoisonEvent(ValueError):
    """A stream entry that can never be folded (missing or malformed field)."""


def parse_event(tenant: str, entry_id: str, fields: Mapping[Any, Any]) -> EventFold | None:
    """One stream entry as a fold, None when it is not one to fold, PoisonEvent when it is broken."""
    try:
        values = {reply_text(k): reply_text(v) for k, v in fields.items()}
    except (UnicodeDecodeError, TypeError) as exc:
        raise PoisonEvent(f"not UTF-8 text: {exc}") from None
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
            event_id=values.get("event_id") or entry_id,
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
