"""The audit log: who did what to which campaign, account or person, when, and why.

One Redis Stream per tenant (`keys.audit_stream_key`); an action that concerns no one tenant
(a signing-key rotation) goes to `keys.global_audit_stream_key`. An entry's id is its stream
id, which Redis makes monotonic within the stream: the log has one order. Entries are never
trimmed; the stream expires `keys.AUDIT_TTL_S` after its last entry. `AuditEntry` is the one
codec: its writers (`queue_entry`, `append_entry`) and its reader (`read_entries`) use it.

- **Who**: `actor`, the name the action came with (a named admin token over HTTP, `--by NAME`
  or `WELCOMEMAT_OPERATOR` on the command line), and `via`, the door it came through.
- **When**: the `Auditor`'s clock, injected; nothing here reads the time.
- **Why**: `reason`, required for the actions in `REASON_REQUIRED`.

Atomicity. Where the action's writes and the log share a hash slot (an erasure's tenant-wide
writes), the entry is queued on the action's own MULTI (`queue_entry`): both or neither.
Where they cannot (a review decision writes in the campaign's slot, `{tenant:campaign}`, and
Redis Cluster allows no transaction across slots), the entry is appended right after the
action (`append_entry`), retried on a connection fault, and a final failure raises
`AuditError`: the action stands and the caller says, loudly, that it was not recorded (the
command exits 1, the admin route answers 503). A retry whose first attempt did reach Redis
leaves two copies with the same `op`; `read_entries` returns the first.

A signing-key or bearer-token rotation is recorded by the first renderer that starts with
the new credentials (`welcomemat.security.credential_changes`), via `startup`.
"""

from __future__ import annotations

import enum
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import redis
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from welcomemat import keys
from welcomemat.errors import AuditError, InputError, StoredValueError
from welcomemat.ids import OpaqueId, is_valid_id
from welcomemat.replies import reply_text

__all__ = [
    "ACTOR_MAX_CHARS",
    "APPEND_ATTEMPTS",
    "REASON_MAX_CHARS",
    "REASON_REQUIRED",
    "STREAM_ID",
    "AuditAction",
    "AuditEntry",
    "Auditor",
    "Via",
    "append_entry",
    "audit_key",
    "audit_tenants",
    "check_actor",
    "check_reason",
    "queue_entry",
    "read_entries",
    "read_page",
]

ACTOR_MAX_CHARS = 128
REASON_MAX_CHARS = 500
_DETAIL_MAX_CHARS = 2000
# A stream entry id (`<ms>-<seq>`): what a page of the log starts before.
STREAM_ID = re.compile(r"[0-9]{1,19}-[0-9]{1,19}")
_SEQ_MAX = 2**64 - 1  # a stream id's sequence number is an unsigned 64-bit integer
# Attempts of an append after the action, and the pause before each retry (seconds): a
# connection reset or a failover costs a few hundred milliseconds, not more.
APPEND_ATTEMPTS = 3
_RETRY_PAUSES_S = (0.05, 0.25)
# Entries per XRANGE call while reading.
_PAGE = 500

# No control characters (a log line must stay one line, a table one row); printable otherwise.
_Text = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f]*$")]


class AuditAction(enum.StrEnum):
    """What was done."""

    APPROVE = "approve"  # a reviewer approved a zone-set version: it is served as personal
    REJECT = "reject"  # a reviewer rejected a version: the account keeps the fallback
    ROLLBACK = "rollback"  # the previous zone set made current again
    PUBLISH = "publish"  # precompute published a new zone-set version of an account
    ERASE = "erase"  # a data subject's (account's or contact's) data erased, its tokens revoked
    READMIT = "readmit"  # an erased subject's suppression lifted: precompute may publish it again
    SUBJECT_EXPORT = "subject_export"  # everything held about a person written out for them
    SECRET_ROTATE = "secret_rotate"  # signing keys or bearer tokens changed (seen at a renderer start)
    GUIDELINES_PROPOSE = "guidelines_propose"  # a guideline version replayed; its candidate report written
    GUIDELINES_SIGNOFF = "guidelines_signoff"  # a candidate report's diagnosis signed off (high risk: step 1)
    GUIDELINES_PROMOTE = "guidelines_promote"  # a candidate's guidelines written into campaign.yaml
    GUIDELINES_ROLLBACK = "guidelines_rollback"  # the active guideline version replaced by its previous one
    EXPERIMENT_STOP = "experiment_stop"  # a copy experiment ended, one variant kept (a new guideline version)
    ADMIN_INVITE = "admin_invite"  # a person invited to the admin pages of a tenant, with a role
    ADMIN_REVOKE = "admin_revoke"  # a person's admin sessions ended and roles removed


# A person must say why: these undo or refuse someone else's work, or put personal copy back.
REASON_REQUIRED = frozenset(
    {AuditAction.REJECT, AuditAction.ROLLBACK, AuditAction.READMIT, AuditAction.GUIDELINES_ROLLBACK}
)


class Via(enum.StrEnum):
    """The door an action came through."""

    CLI = "cli"  # a `welcomemat` command: actor from --by or WELCOMEMAT_OPERATOR
    HTTP = "http"  # an admin route: actor is the admin token's name
    PRECOMPUTE = "precompute"  # a precompute run (local) or worker publishing
    STARTUP = "startup"  # a process noticed it at start (new signing keys or bearer tokens)


class AuditEntry(BaseModel):
    """One entry of the log. `id` is its stream id, known once it is stored (None before)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = None
    at: AwareDatetime
    action: AuditAction
    actor: Annotated[_Text, StringConstraints(min_length=1, max_length=ACTOR_MAX_CHARS)]
    via: Via
    tenant: OpaqueId | None = None
    campaign: OpaqueId | None = None
    account: OpaqueId | None = None
    contact: OpaqueId | None = None
    version: int | None = Field(default=None, ge=1)
    reason: Annotated[_Text, StringConstraints(max_length=REASON_MAX_CHARS)] | None = None
    detail: Annotated[_Text, StringConstraints(max_length=_DETAIL_MAX_CHARS)] | None = None
    # Random per action: tells a retried append's second copy from a second action.
    op: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]

    def to_fields(self) -> dict[str, str]:
        """The stream entry's fields: every field but `id`, unset ones left out."""
        fields = self.model_dump(mode="json", exclude={"id"}, exclude_none=True)
        return {name: str(value) for name, value in fields.items()}

    @classmethod
    def from_fields(cls, key: str, entry_id: str, fields: Mapping[Any, Any]) -> AuditEntry:
        """Decode a stream entry; StoredValueError naming the key and entry when it does not."""
        try:
            values = {reply_text(k): reply_text(v) for k, v in fields.items()}
            return cls.model_validate({**values, "id": entry_id})
        except (UnicodeDecodeError, TypeError, ValidationError) as exc:
            raise StoredValueError(f"{key} entry {entry_id}", f"{type(exc).__name__}: {exc}") from None


def check_actor(name: str | None, *, source: str) -> str:
    """A name fit to stand as `actor`; InputError naming `source` (the flag or variable) if not."""
    value = (name or "").strip()
    if not value:
        raise InputError("name who is acting (an audit entry records it)", field=source)
    if len(value) > ACTOR_MAX_CHARS or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise InputError(
            f"{value[:40]!r}... is not a name: at most {ACTOR_MAX_CHARS} characters, no control characters",
            field=source,
        )
    return value


def check_reason(text: str | None, action: AuditAction, *, source: str) -> str | None:
    """The reason as recorded (whitespace collapsed), None when none was given and none is needed.

    InputError naming `source` when `action` needs one and there is none, or it is too long.
    """
    value = " ".join((text or "").split())  # newlines and tabs become spaces: one line
    if not value:
        if action in REASON_REQUIRED:
            raise InputError(f"{action.value} needs a reason: say why, for the audit log", field=source)
        return None
    if len(value) > REASON_MAX_CHARS:
        raise InputError(f"the reason is {len(value)} characters; at most {REASON_MAX_CHARS}", field=source)
    return value


@dataclass(frozen=True)
class Auditor:
    """Makes the entries of one actor: who, through which door, and the clock that says when."""

    actor: str
    via: Via
    clock: Callable[[], datetime]

    def entry(
        self,
        action: AuditAction,
        *,
        tenant: str | None,
        campaign: str | None = None,
        account: str | None = None,
        contact: str | None = None,
        version: int | None = None,
        reason: str | None = None,
        detail: str | None = None,
    ) -> AuditEntry:
        """The entry for an action done now. `reason` must already be checked (`check_reason`)."""
        if action in REASON_REQUIRED and not reason:
            raise InputError(f"{action.value} needs a reason: say why, for the audit log", field="reason")
        return AuditEntry(
            at=self.clock(),
            action=action,
            actor=self.actor,
            via=self.via,
            tenant=tenant,
            campaign=campaign,
            account=account,
            contact=contact,
            version=version,
            reason=reason,
            detail=detail,
            op=secrets.token_hex(8),
        )


def audit_key(tenant: str | None) -> str:
    """The stream an entry of `tenant` goes to (None: the log of actions on no one tenant)."""
    return keys.global_audit_stream_key() if tenant is None else keys.audit_stream_key(tenant)


def audit_tenants(client: redis.Redis) -> list[str]:
    """Every tenant with an audit log (SCAN: also tenants whose campaigns have expired), sorted."""
    found: set[str] = set()
    for raw in client.scan_iter(match=keys.audit_stream_scan_pattern(), count=500):
        tenant = reply_text(raw).partition("{")[2].partition("}")[0]
        if is_valid_id(tenant):
            found.add(tenant)
    return sorted(found)


def queue_entry(pipe: redis.client.Pipeline, entry: AuditEntry) -> None:
    """Queue the entry on the caller's transaction (its keys must share the log's slot)."""
    key = audit_key(entry.tenant)
    pipe.xadd(key, entry.to_fields())  # type: ignore[arg-type]
    pipe.expire(key, keys.AUDIT_TTL_S)


def append_entry(
    client: redis.Redis, entry: AuditEntry, *, sleep: Callable[[float], None] = time.sleep
) -> str:
    """Append the entry after its action; its stream id. Retried on a connection fault;
    AuditError when it could not be written (the action it records stands)."""
    error: RedisError | None = None
    for attempt in range(APPEND_ATTEMPTS):
        if attempt:
            sleep(_RETRY_PAUSES_S[min(attempt - 1, len(_RETRY_PAUSES_S) - 1)])
        try:
            pipe = client.pipeline(transaction=True)
            queue_entry(pipe, entry)
            entry_id, _ = pipe.execute()
            return reply_text(entry_id)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            error = exc
        except RedisError as exc:  # a refusal (OOM, wrong type, read-only): retrying will not help
            raise _not_recorded(entry, exc) from exc
    assert error is not None
    raise _not_recorded(entry, error) from error


def _not_recorded(entry: AuditEntry, cause: BaseException) -> AuditError:
    what = entry.action.value + "".join(
        f" {label}{value}"
        for label, value in (("of ", entry.account), ("in ", entry.campaign), ("v", entry.version))
        if value is not None
    )
    return AuditError(f"{what} was done, but its audit entry could not be written: {cause}", entry)


def read_entries(
    client: redis.Redis,
    tenant: str | None,
    *,
    since: datetime | None = None,
    campaign: str | None = None,
    account: str | None = None,
    contact: str | None = None,
    newest_first: bool = False,
    limit: int | None = None,
    scan_max: int | None = None,
    problems: list[StoredValueError] | None = None,
) -> list[AuditEntry]:
    """The entries of a tenant's log (None: the log of no one tenant) that match every filter given.

    `since`: entries `at` or after it. `limit`: at most that many (from the end the order starts
    at); `scan_max`: read at most that many stream entries (the admin page looks back that far).
    An entry that does not decode raises StoredValueError, unless `problems` is given: then it is
    appended there and skipped.
    """
    key = audit_key(tenant)
    found: list[AuditEntry] = []
    ops: set[str] = set()
    entries = _scan(client, key, newest_first=newest_first, scan_max=scan_max)
    for entry_id, fields in entries:
        try:
            entry = AuditEntry.from_fields(key, entry_id, fields)
        except StoredValueError as exc:
            if problems is None:
                raise
            problems.append(exc)
            continue
        if (
            (since is not None and entry.at < since)
            or (campaign is not None and entry.campaign != campaign)
            or (account is not None and entry.account != account)
            or (contact is not None and entry.contact != contact)
        ):
            continue
        if entry.op in ops:  # the second copy of a retried append
            continue
        ops.add(entry.op)
        found.append(entry)
        if limit is not None and len(found) >= limit:
            break
    return found


def read_page(
    client: redis.Redis,
    tenant: str | None,
    *,
    before: str | None,
    limit: int,
    problems: list[StoredValueError] | None = None,
) -> tuple[list[AuditEntry], str | None]:
    """A page of a tenant's log, newest first: the entries older than `before` (a stream id;
    None: from the newest), at most `limit`, and the cursor of the next page (None: the end).

    An entry that does not decode is skipped (into `problems`, when given); a retried append's
    second copy is shown once.
    """
    if before is not None and not STREAM_ID.fullmatch(before):
        raise ValueError(f"not a stream entry id: {before[:40]!r}")
    key = audit_key(tenant)
    top = "+" if before is None else _just_before(before)
    if top is None:  # nothing is older than the first id a stream can hold
        return [], None
    raw: list[Any] = client.xrevrange(key, max=top, min="-", count=limit + 1)  # type: ignore[assignment]
    found: list[AuditEntry] = []
    ops: set[str] = set()
    for raw_id, fields in raw[:limit]:
        try:
            entry = AuditEntry.from_fields(key, reply_text(raw_id), fields or {})
        except StoredValueError as exc:
            if problems is not None:
                problems.append(exc)
            continue
        if entry.op not in ops:
            ops.add(entry.op)
            found.append(entry)
    following = reply_text(raw[limit - 1][0]) if len(raw) > limit else None
    return found, following


def _just_before(entry_id: str) -> str | None:
    """The greatest stream id below `entry_id` (None: there is none): `(0-0` is not a range Redis takes."""
    ms, seq = (int(part) for part in entry_id.split("-"))
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{_SEQ_MAX}" if ms > 0 else None


def _scan(
    client: redis.Redis, key: str, *, newest_first: bool, scan_max: int | None
) -> Iterator[tuple[str, Mapping[Any, Any]]]:
    read = 0
    cursor = "+" if newest_first else "-"
    while scan_max is None or read < scan_max:
        count = _PAGE if scan_max is None else min(_PAGE, scan_max - read)
        if newest_first:
            page = client.xrevrange(key, max=cursor, min="-", count=count)
        else:
            page = client.xrange(key, min=cursor, max="+", count=count)
        if not page:
            return
        for raw_id, fields in page:
            yield reply_text(raw_id), fields or {}  # a deleted entry has no fields: it does not decode
        read += len(page)
        cursor = "(" + reply_text(page[-1][0])  # exclusive: the next page starts after it
        if len(page) < count:
            return
