"""Where each contact of a campaign stands: precomputed → exported → delivered → engaged → converted,
and for mail printed → scanned.

One answer to "which contacts got the personal version, and did anything happen". Each state
comes from the one place that knows it:

- `precomputed`: the account's zone set in the campaign (its version and status);
- `exported`: `welcomemat export`, as it writes the contact's row: arm, rung, status,
  variant, zone-set version (`WorkflowRecorder`);
- `delivered`: `welcomemat delivered import`, the sequencer's sent/delivered file;
- `engaged`: the event fold (`welcomemat sync`): the contact's page views and clicks;
- `converted`: the campaign's conversions (`welcomemat.records.conversions`): an account's outcome,
  so every contact of it;
- `printed`: the mail run, through `record_printed`;
- `scanned`: the event fold: the contact's QR scans.

The recorded marks (`exported`, `delivered`, `printed`) live in the account's record hash
(`keys.account_record_key`, the tenant's hash slot), one field per contact and state:
`w:<campaign>:<contact>:<state>` → JSON `{first_ms, at_ms, ...detail}`. They are written by
one Lua script per batch of accounts (never a round trip per contact), only into records that
exist (a mark never creates a record without its TTL), and merged order-independently: the
earliest `first_ms` is kept, the detail is that of the latest `at_ms`. Writing the same mark
twice changes nothing. Erasing a contact deletes its marks with its counters.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import redis

from welcomemat import keys
from welcomemat.errors import StoredValueError
from welcomemat.records.account_records import AccountRecord, WorkflowMark
from welcomemat.records.conversions import NEGATIVE_OUTCOMES, iter_conversions
from welcomemat.storage.redis_client import run_script
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "MARK_BATCH",
    "RECORDED_STATES",
    "ContactState",
    "ContactWorkflow",
    "WorkflowRecorder",
    "contact_workflows",
    "mark_field",
    "record_marks",
    "record_printed",
]

# Accounts per script call: the export's own batch, so marks cost one call per batch read.
MARK_BATCH = 500


class ContactState(enum.StrEnum):
    PRECOMPUTED = "precomputed"
    EXPORTED = "exported"
    DELIVERED = "delivered"
    ENGAGED = "engaged"
    CONVERTED = "converted"
    PRINTED = "printed"
    SCANNED = "scanned"


# The states written as marks; the others are read from where they already live.
RECORDED_STATES = (ContactState.EXPORTED, ContactState.DELIVERED, ContactState.PRINTED)


@dataclass(frozen=True)
class ContactWorkflow:
    """Every state one contact reached in a campaign (a state it did not reach is absent)."""

    contact_id: str
    states: dict[ContactState, WorkflowMark]

    @property
    def latest(self) -> ContactState | None:
        reached = [s for s in ContactState if s in self.states]
        return reached[-1] if reached else None

    def as_json(self) -> dict[str, Any]:
        return {
            "contact_id": self.contact_id,
            "states": {s.value: m.model_dump(mode="json") for s, m in self.states.items()},
        }


def mark_field(campaign: str, contact_id: str, state: ContactState) -> str:
    """The account record's hash field of one mark."""
    return f"w:{campaign}:{contact_id}:{state.value}"


# KEYS: account record keys. ARGV: triples (1-based key index, field, JSON {at_ms, detail}).
# Writes only into existing records; returns how many marks were written or changed.
_MARK_LUA = """
local written = 0
for i = 1, #ARGV, 3 do
  local key = KEYS[tonumber(ARGV[i])]
  if redis.call('EXISTS', key) == 1 then
    local new = cjson.decode(ARGV[i + 2])
    new.first_ms = new.at_ms
    local raw = redis.call('HGET', key, ARGV[i + 1])
    if raw then
      local ok, old = pcall(cjson.decode, raw)
      if ok and type(old) == 'table' and tonumber(old.first_ms) and tonumber(old.at_ms) then
        new.first_ms = math.min(tonumber(old.first_ms), new.at_ms)
        if tonumber(old.at_ms) > new.at_ms then
          old.first_ms = new.first_ms
          new = old
        end
      end
    end
    local encoded = cjson.encode(new)
    if encoded ~= raw then
      redis.call('HSET', key, ARGV[i + 1], encoded)
      written = written + 1
    end
  end
end
return written
"""


@dataclass(frozen=True, slots=True)
class _Mark:
    account_id: str
    contact_id: str
    state: ContactState
    at_ms: int
    detail: Mapping[str, str | int | None]


def record_marks(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    marks: Iterable[tuple[str, str, ContactState, int, Mapping[str, str | int | None]]],
) -> int:
    """Write (account, contact, state, at_ms, detail) marks, one script call per `MARK_BATCH`
    accounts; a mark for an account without a record is skipped. Returns the marks written."""
    written = 0
    by_account: dict[str, list[_Mark]] = {}
    for account_id, contact_id, state, at_ms, detail in marks:
        if account_id not in by_account and len(by_account) >= MARK_BATCH:  # an account's marks stay together
            written += _write(client, tenant, campaign, by_account)
            by_account = {}
        by_account.setdefault(account_id, []).append(_Mark(account_id, contact_id, state, at_ms, detail))
    if by_account:
        written += _write(client, tenant, campaign, by_account)
    return written


def _write(client: redis.Redis, tenant: str, campaign: str, by_account: dict[str, list[_Mark]]) -> int:
    record_keys: list[str] = []
    args: list[str | int] = []
    for account_id, marks in by_account.items():
        record_keys.append(keys.account_record_key(tenant, account_id))
        for mark in marks:
            value = {"at_ms": mark.at_ms, "detail": dict(mark.detail)}
            args += [len(record_keys), mark_field(campaign, mark.contact_id, mark.state), json.dumps(value)]
    script = client.register_script(_MARK_LUA)
    return int(run_script(client, script, record_keys, args))


def record_printed(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    recipients: Iterable[tuple[str, str, Mapping[str, str | int | None]]],
    *,
    now_ms: int,
) -> int:
    """Mark (account, contact, detail) recipients `printed` at `now_ms`: what a mail run calls
    once its vendor file is written (detail: what was printed, e.g. the rung, the zone-set
    version, the file). Batched and idempotent like every mark. Returns the marks written."""
    return record_marks(
        client,
        tenant,
        campaign,
        ((a, c, ContactState.PRINTED, now_ms, detail) for a, c, detail in recipients),
    )


@dataclass
class WorkflowRecorder:
    """Collects `exported` marks while an export streams, and writes them a batch at a time."""

    client: redis.Redis
    tenant: str
    campaign: str
    now_ms: int
    written: int = 0
    _pending: list[tuple[str, str, ContactState, int, Mapping[str, str | int | None]]] = field(
        default_factory=list
    )
    _accounts: int = 0

    def exported(self, account_id: str, rows: Iterable[Mapping[str, str]]) -> None:
        for row in rows:
            detail = {k: row.get(k) or None for k in ("arm", "rung", "status", "variant", "zone_set_version")}
            self._pending.append((account_id, row["contact_id"], ContactState.EXPORTED, self.now_ms, detail))
        self._accounts += 1
        if self._accounts >= MARK_BATCH:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.written += record_marks(self.client, self.tenant, self.campaign, self._pending)
        self._pending = []
        self._accounts = 0


def contact_workflows(
    client: redis.Redis,
    record: AccountRecord,
    campaign: str,
    zone_set: ZoneSet | None,
    *,
    problems: list[StoredValueError] | None = None,
) -> list[ContactWorkflow]:
    """Each contact's states in `campaign`, from the record (marks, engagement), the zone set
    and the campaign's conversions. A stored conversion that does not decode is skipped and
    appended to `problems` (raised when None)."""
    precomputed: WorkflowMark | None = None
    if zone_set is not None:
        at = int(zone_set.created_at.timestamp() * 1000)
        detail = {"version": zone_set.version, "status": zone_set.status.value}
        precomputed = WorkflowMark(first_ms=at, at_ms=at, detail=detail)
    converted: WorkflowMark | None = None
    for conversion in iter_conversions(client, record.tenant, campaign, problems=problems):
        if conversion.account_id != record.account_id or conversion.type in NEGATIVE_OUTCOMES:
            continue  # an unsubscribe or a spam complaint is an outcome, never a conversion
        at = int(conversion.occurred_at.timestamp() * 1000)
        first = min(at, converted.first_ms) if converted else at
        if converted is None or at >= converted.at_ms:
            detail = {"type": conversion.type.value, "conversion_id": conversion.conversion_id}
            converted = WorkflowMark(first_ms=first, at_ms=at, detail=detail)
        else:
            converted = converted.model_copy(update={"first_ms": first})
    engagement = record.contacts_engagement.get(campaign, {})
    marks = record.workflow.get(campaign, {})
    out = []
    for contact in record.contacts:
        states: dict[ContactState, WorkflowMark] = {}
        if precomputed is not None:
            states[ContactState.PRECOMPUTED] = precomputed
        for state in (ContactState.EXPORTED, ContactState.DELIVERED):
            if state.value in marks.get(contact.contact_id, {}):
                states[state] = marks[contact.contact_id][state.value]
        seen = engagement.get(contact.contact_id)
        if seen is not None and seen.first_seen_ms is not None and (seen.views or seen.clicks):
            detail = {"views": seen.views, "clicks": seen.clicks}
            states[ContactState.ENGAGED] = WorkflowMark(
                first_ms=seen.first_seen_ms, at_ms=seen.last_seen_ms or seen.first_seen_ms, detail=detail
            )
        if converted is not None:
            states[ContactState.CONVERTED] = converted
        if ContactState.PRINTED.value in marks.get(contact.contact_id, {}):
            states[ContactState.PRINTED] = marks[contact.contact_id][ContactState.PRINTED.value]
        if seen is not None and seen.qr_scans and seen.first_seen_ms is not None:
            states[ContactState.SCANNED] = WorkflowMark(
                first_ms=seen.first_seen_ms,
                at_ms=seen.last_seen_ms or seen.first_seen_ms,
                detail={"scans": seen.qr_scans},
            )
        out.append(ContactWorkflow(contact.contact_id, states))
    return out
