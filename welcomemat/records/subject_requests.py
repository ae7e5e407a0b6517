"""Data-subject requests (GDPR, CCPA): erase what is held about an account or a person, or write it out.

A subject is named as a request names it: an account id, or a person's e-mail address.
`find_subjects` looks an address up in the tenant's account records (case-insensitively; one
person may be a contact of several accounts, each is a subject) and in the erasure list (an
address erased before is found again under the ids it had).

`erase` removes, for an **account**, in every campaign of the tenant: its zone sets (current,
previous, version counter), explain record, journal entry, IP ranges, review-queue and sample
entries, conversions, distributed runs' failure and sample entries, and its failure in the last
run report; in the tenant: its account record, its events (the event stream and its dead
letters), its queued CRM changes, its seller alerts (queued and dead-lettered) and their
per-day marks. For a **person** (a contact of an account): their entry in the record's profile
and their per-contact counters, and the events and seller alerts naming them. Both revoke
the subject's tokens and keep precompute from publishing it again (`welcomemat.records.erasure`).

Order, so that nothing can bring the data back:

1. the erasure list's mark (revocation, suppression), alone in a transaction: from here on the
   fold skips the subject's events, and a renderer that reloads honours no token of theirs;
2. per campaign, one transaction: its keys, and a change message with version 0 that makes
   every renderer reload the revocations and IP ranges and drop what it remembered;
3. in the tenant, one transaction: the record, the events and CRM changes found now (after the
   renderers stopped attributing visits), and the audit entry (`erase`, with the counts).

An erasure that fails part-way (Redis went away) raises; running it again finishes it. A second
erasure finds nothing left, removes nothing and still writes its audit entry. `account_known`
tells an account id the tenant never held nor erased (a typo, another tenant's id) from one
already erased, before anything is written. Not removed:
audit entries (the record of who did what, ids only), event seen-markers and beacon de-dup keys
(event and view ids only), a distributed run's company short names (company names, for 30 days), and
queued precompute work (the worker leaves erased subjects out when it gets to them).

`export_subject` writes out everything held about the subject, as JSON-ready data.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis

from welcomemat import keys
from welcomemat.errors import InputError, StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.records.account_records import contact_erasure, iter_account_records, read_account_record
from welcomemat.records.audit import AuditAction, Auditor, queue_entry, read_entries
from welcomemat.records.conversions import iter_conversions
from welcomemat.records.erasure import ErasureMark, account_field, contact_field, email_field
from welcomemat.records.event_entries import (
    BATCH_FIELD,
    ENTRIES_PER_READ,
    PoisonEvent,
    batch_fields,
    entry_events,
)
from welcomemat.replies import reply_text_lossy
from welcomemat.zones.overview_index import queue_prune, register_index_scripts
from welcomemat.zones.store import ZoneSetChange, ZoneSetStore

__all__ = [
    "EVENT_ACCOUNT_FIELD",
    "EVENT_CONTACT_FIELD",
    "ErasureReport",
    "Subject",
    "account_known",
    "erase",
    "export_subject",
    "find_subjects",
    "readmit",
    "tenant_campaigns",
]

# The event stream's fields naming who an event is about (written by the renderer's event
# writer, `server.engagement.events`, read by the fold, `outbound.sync`; a test keeps the three in step).
EVENT_ACCOUNT_FIELD = "account"
EVENT_CONTACT_FIELD = "contact"
# Stream entries per XRANGE call, ids per XDEL.
_PAGE = 1000
# The outbox's field naming the account a queued CRM change is about (`records.FOLD_LUA`).
_OUTBOX_ACCOUNT_FIELD = b"account"
# The events an erasure took out of the stream, no longer counted as held by it (what the
# renderer trims the stream by, `keys.events_held_key`); a count not kept is not made.
_FORGET_HELD_LUA = "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECRBY', KEYS[1], ARGV[1]) end"


@dataclass(frozen=True)
class Subject:
    """Whose data: an account of a tenant, or one contact of it (with the address it was named by)."""

    tenant: str
    account: str
    contact: str | None = None
    email: str | None = None

    def describe(self) -> str:
        if self.contact is None:
            return f"account {self.account} of {self.tenant}"
        return f"contact {self.contact} of {self.tenant}/{self.account}"


@dataclass
class ErasureReport:
    """What an erasure removed, by kind (every kind listed, zero included)."""

    subject: Subject
    removed: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.removed.values())

    def summary(self) -> str:
        found = [f"{n} {kind}" for kind, n in self.removed.items() if n]
        return ", ".join(found) if found else "nothing left"


def tenant_campaigns(client: redis.Redis, tenant: str) -> list[str]:
    """The tenant's campaign ids, from the index of published campaigns, sorted."""
    names: list[Any] = client.hkeys(keys.campaigns_index_key())
    found = set()
    for name in names:
        owner, _, campaign = reply_text_lossy(name).partition("/")
        if owner == tenant and is_valid_id(campaign):
            found.add(campaign)
    return sorted(found)


def find_subjects(client: redis.Redis, tenant: str, name: str) -> list[Subject]:
    """The subjects `name` (an account id or an e-mail address) means in `tenant`.

    An account id is always a subject (whatever is held about it, maybe nothing). An address is
    each contact the tenant's account records list with it, and each it was erased as before.
    """
    if "@" not in name:
        if not is_valid_id(name):
            raise InputError(f"{name!r} is neither an account id nor an e-mail address", field="SUBJECT")
        return [Subject(tenant, name)]
    wanted = name.strip().casefold()
    found: dict[tuple[str, str], Subject] = {}
    for record in iter_account_records(client, tenant, problems=[]):
        for profile in record.contacts:
            if profile.email.strip().casefold() == wanted:
                found[(record.account_id, profile.contact_id)] = Subject(
                    tenant, record.account_id, profile.contact_id, name.strip()
                )
    mark = _read_mark(client, tenant, email_field(name))
    for ref in mark.contacts if mark is not None else ():
        account, _, contact = ref.partition(":")
        if is_valid_id(account) and is_valid_id(contact):
            found.setdefault((account, contact), Subject(tenant, account, contact, name.strip()))
    return [found[k] for k in sorted(found)]


def account_known(
    client: redis.Redis, tenant: str, account: str, campaigns: Sequence[str] | None = None
) -> bool:
    """Whether the tenant holds anything `erase` would remove about the account, or erased it
    before (a mark on the erasure list, suppressing or readmitted). Reads only."""
    if client.hexists(keys.erasures_key(tenant), account_field(account)):
        return True
    if client.exists(keys.account_record_key(tenant, account)):
        return True
    for campaign in campaigns if campaigns is not None else tenant_campaigns(client, tenant):
        if client.exists(
            keys.zone_set_key(tenant, campaign, account),
            keys.previous_zone_set_key(tenant, campaign, account),
            keys.zone_set_version_key(tenant, campaign, account),
            keys.explain_key(tenant, campaign, account),
        ):
            return True
        for key in (keys.journal_key(tenant, campaign), keys.ip_ranges_key(tenant, campaign)):
            if client.hexists(key, account):
                return True
        for key in (
            keys.review_queue_key(tenant, campaign),
            keys.review_sample_key(tenant, campaign),
            keys.review_held_key(tenant, campaign),
        ):
            if client.zscore(key, account) is not None:
                return True
        if any(c.account_id == account for c in _conversions(client, tenant, campaign)):
            return True
        for run_id in _run_ids(client, tenant, campaign):
            if client.hexists(keys.run_failures_key(tenant, campaign, run_id), account):
                return True
        if _report_without(client.get(keys.run_report_key(tenant, campaign)), account)[1]:
            return True
    streams = (
        keys.events_stream_key(tenant),
        keys.events_dead_letter_key(tenant),
        keys.seller_alert_outbox_key(tenant),
        keys.seller_alert_dead_letter_key(tenant),
    )
    if any(next(_stream_fields(client, key, account, None), None) is not None for key in streams):
        return True
    return bool(_outbox_entries(client, tenant, account))


def erase(
    client: redis.Redis,
    subject: Subject,
    *,
    auditor: Auditor,
    reason: str | None,
    campaigns: Sequence[str] | None = None,
) -> ErasureReport:
    """Erase what is held about `subject` (see the module docstring); its audit entry says what."""
    tenant, account, contact = subject.tenant, subject.account, subject.contact
    report = ErasureReport(subject)
    campaign_ids = list(campaigns) if campaigns is not None else tenant_campaigns(client, tenant)
    entry = auditor.entry(AuditAction.ERASE, tenant=tenant, account=account, contact=contact, reason=reason)
    _write_marks(client, subject, entry.at)
    for campaign in campaign_ids:
        _erase_in_campaign(client, subject, campaign, report)
    # The tenant's slot: what is found now goes, with the audit entry, in one transaction.
    events = list(_stream_matches(client, keys.events_stream_key(tenant), account, contact))
    dead = list(_stream_matches(client, keys.events_dead_letter_key(tenant), account, contact))
    outbox = (
        []
        if contact is not None
        else [_Match(i, [(i, {})]) for i in _outbox_entries(client, tenant, account)]
    )
    # Seller alerts name the account (and the contact, when the visit did) in their fields.
    alerts = list(_stream_matches(client, keys.seller_alert_outbox_key(tenant), account, contact))
    dead_alerts = list(_stream_matches(client, keys.seller_alert_dead_letter_key(tenant), account, contact))
    markers = (
        []
        if contact is not None
        else sorted(
            {
                reply_text_lossy(k)
                for k in client.scan_iter(
                    match=keys.seller_alert_sent_scan_pattern(tenant, account), count=_PAGE
                )
            }
        )
    )
    record_key = keys.account_record_key(tenant, account)
    pipe = client.pipeline(transaction=True)
    if contact is None:
        report.removed["account records"] += int(client.exists(record_key))
        pipe.delete(record_key)
    else:
        profile, counters = contact_erasure(client, tenant, account, contact)
        report.removed["contact profiles"] += int(profile is not None)
        report.removed["contact counters"] += len(counters)
        if profile is not None:
            pipe.hset(record_key, "profile", profile)
        if counters:
            pipe.hdel(record_key, *counters)
    for kind, key, matches in (
        ("events", keys.events_stream_key(tenant), events),
        ("dead-lettered events", keys.events_dead_letter_key(tenant), dead),
        ("queued CRM changes", keys.webhook_outbox_key(tenant), outbox),
        ("queued seller alerts", keys.seller_alert_outbox_key(tenant), alerts),
        ("dead-lettered seller alerts", keys.seller_alert_dead_letter_key(tenant), dead_alerts),
    ):
        if contact is not None and kind == "queued CRM changes":
            continue  # a change is the account's; the record it sends no longer names the person
        report.removed[kind] += sum(len(m.events) for m in matches)
        ids = [m.entry_id for m in matches]
        for start in range(0, len(ids), _PAGE):
            pipe.xdel(key, *ids[start : start + _PAGE])
        # A batch entry's other events stay: written back as a batch of their own (a new entry
        # id; the fold's seen markers outlive the stream, so a sync that folded them skips them).
        for match in matches:
            if match.rest:
                pipe.xadd(key, batch_fields(match.rest, match.beside))  # type: ignore[arg-type]
    if markers:
        report.removed["seller alert marks"] += len(markers)
        pipe.delete(*markers)
    queue_entry(pipe, entry.model_copy(update={"detail": f"removed {report.total}: {report.summary()}"}))
    pipe.execute()
    if report.removed["events"]:
        # After the transaction, not in it (a Cluster pipeline runs no script): a count left
        # high by a crash in between trims that many events early, never more.
        client.eval(_FORGET_HELD_LUA, 1, keys.events_held_key(tenant), report.removed["events"])
    return report


def readmit(client: redis.Redis, subject: Subject, *, auditor: Auditor, reason: str | None) -> bool:
    """Let precompute publish an erased subject again (its old tokens stay revoked). False when
    it is not on the erasure list (or already readmitted): nothing written, nothing logged."""
    names = _mark_fields(subject)
    key = keys.erasures_key(subject.tenant)
    changed: dict[str, str] = {}
    for name in names:
        mark = _read_mark(client, subject.tenant, name)
        if mark is not None and mark.suppress:
            changed[name] = mark.model_copy(update={"suppress": False}).model_dump_json()
    if not changed:
        return False
    entry = auditor.entry(
        AuditAction.READMIT,
        tenant=subject.tenant,
        account=subject.account,
        contact=subject.contact,
        reason=reason,
        detail="precompute may publish it again; tokens issued before the erasure stay revoked",
    )
    pipe = client.pipeline(transaction=True)
    pipe.hset(key, mapping=changed)  # type: ignore[arg-type]
    pipe.expire(key, keys.ERASURES_TTL_S)
    queue_entry(pipe, entry)
    pipe.execute()
    return True


def export_subject(client: redis.Redis, subject: Subject, *, auditor: Auditor) -> dict[str, Any]:
    """Everything held about `subject`, as JSON-ready data; the export is audit-logged."""
    tenant, account, contact = subject.tenant, subject.account, subject.contact
    data: dict[str, Any] = {"tenant": tenant, "account_id": account}
    record = read_account_record(client, tenant, account)
    if contact is not None:
        data["contact_id"] = contact
        data["profile"] = next(
            (
                c.model_dump(mode="json")
                for c in (record.contacts if record else [])
                if c.contact_id == contact
            ),
            None,
        )
        data["engagement"] = {
            campaign: per_contact[contact].model_dump(mode="json")
            for campaign, per_contact in (record.contacts_engagement.items() if record else ())
            if contact in per_contact
        }
        # Where the person stands in each campaign: exported, delivered, printed marks.
        data["workflow"] = {
            campaign: {state: mark.model_dump(mode="json") for state, mark in per_contact[contact].items()}
            for campaign, per_contact in (record.workflow.items() if record else ())
            if contact in per_contact
        }
    else:
        data["record"] = record.model_dump(mode="json") if record is not None else None
        data["campaigns"] = {
            campaign: _campaign_data(client, tenant, campaign, account)
            for campaign in tenant_campaigns(client, tenant)
        }
    data["events"] = [
        {"id": entry_id, **fields}
        for entry_id, fields in _stream_fields(client, keys.events_stream_key(tenant), account, contact)
    ]
    data["dead_lettered_events"] = [
        {"id": entry_id, **fields}
        for entry_id, fields in _stream_fields(client, keys.events_dead_letter_key(tenant), account, contact)
    ]
    data["seller_alerts"] = [
        {"id": entry_id, **fields}
        for key in (keys.seller_alert_outbox_key(tenant), keys.seller_alert_dead_letter_key(tenant))
        for entry_id, fields in _stream_fields(client, key, account, contact)
    ]
    marks = {name: _read_mark(client, tenant, name) for name in _mark_fields(subject)}
    data["erasure"] = {
        name.partition(":")[0]: mark.model_dump(mode="json", exclude={"contacts"})
        for name, mark in marks.items()
        if mark is not None
    }
    data["audit"] = [
        e.model_dump(mode="json", exclude_none=True)
        for e in read_entries(client, tenant, account=account, problems=[])
        if contact is None or e.contact == contact
    ]
    entry = auditor.entry(
        AuditAction.SUBJECT_EXPORT,
        tenant=tenant,
        account=account,
        contact=contact,
        detail=f"{len(data['events'])} events",
    )
    pipe = client.pipeline(transaction=True)
    queue_entry(pipe, entry)
    pipe.execute()
    return data


# -- erasing, step by step -------------------------------------------------------------------------


def _mark_fields(subject: Subject) -> list[str]:
    if subject.contact is None:
        return [account_field(subject.account)]
    names = [contact_field(subject.account, subject.contact)]
    if subject.email:
        names.append(email_field(subject.email))
    return names


def _read_mark(client: redis.Redis, tenant: str, name: str) -> ErasureMark | None:
    raw = client.hget(keys.erasures_key(tenant), name)
    if raw is None:
        return None
    try:
        return ErasureMark.model_validate_json(raw)
    except ValueError:
        return None  # rewritten by this erasure


def _write_marks(client: redis.Redis, subject: Subject, at: datetime) -> None:
    """The erasure list's marks: a mark still suppressing is kept as it was (its revocation instant
    with it), so erasing twice changes nothing; a missing or readmitted one is written anew."""
    key = keys.erasures_key(subject.tenant)
    fresh = ErasureMark(erased_at=at, revoke_before=int(at.timestamp()) + 1)
    mapping: dict[str, str] = {}
    for name in _mark_fields(subject):
        existing = _read_mark(client, subject.tenant, name)
        mark = existing if existing is not None and existing.suppress else fresh
        if name.startswith("m:") and subject.contact is not None:
            ref = f"{subject.account}:{subject.contact}"
            if ref not in mark.contacts:
                mark = mark.model_copy(update={"contacts": (*mark.contacts, ref)})
        if mark is not existing:
            mapping[name] = mark.model_dump_json()
    pipe = client.pipeline(transaction=True)
    if mapping:
        pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]
    pipe.expire(key, keys.ERASURES_TTL_S)
    pipe.execute()


def _erase_in_campaign(client: redis.Redis, subject: Subject, campaign: str, report: ErasureReport) -> None:
    tenant, account = subject.tenant, subject.account
    pipe = client.pipeline(transaction=True)
    kinds: list[str] = []
    if subject.contact is None:
        for kind, key in (
            ("zone sets", keys.zone_set_key(tenant, campaign, account)),
            ("previous zone sets", keys.previous_zone_set_key(tenant, campaign, account)),
            ("version counters", keys.zone_set_version_key(tenant, campaign, account)),
            ("explain records", keys.explain_key(tenant, campaign, account)),
        ):
            pipe.delete(key)
            kinds.append(kind)
        for kind, key in (
            ("journal entries", keys.journal_key(tenant, campaign)),
            ("IP ranges", keys.ip_ranges_key(tenant, campaign)),
        ):
            pipe.hdel(key, account)
            kinds.append(kind)
        for kind, key in (
            ("review queue entries", keys.review_queue_key(tenant, campaign)),
            ("review sample entries", keys.review_sample_key(tenant, campaign)),
            ("held-draft review entries", keys.review_held_key(tenant, campaign)),
        ):
            pipe.zrem(key, account)
            kinds.append(kind)
        conversions = [
            c.conversion_id for c in _conversions(client, tenant, campaign) if c.account_id == account
        ]
        if conversions:
            pipe.hdel(keys.conversions_key(tenant, campaign), *conversions)
            kinds.append("conversions")
        for run_id in _run_ids(client, tenant, campaign):
            pipe.hdel(keys.run_failures_key(tenant, campaign, run_id), account)
            kinds.append("run failures")
            sample_key = keys.run_sample_key(tenant, campaign, run_id)
            members = [
                m
                for m in client.sscan_iter(sample_key, count=500)
                if reply_text_lossy(m).endswith(f"\t{account}")
            ]
            if members:
                pipe.srem(sample_key, *members)
                kinds.append("run sample entries")
        report_key = keys.run_report_key(tenant, campaign)
        rewritten, dropped = _report_without(client.get(report_key), account)
        if dropped:
            pipe.set(report_key, rewritten, keepttl=True)
            report.removed["run report failures"] += dropped
        # Last, after the zone set's DEL in this transaction: its overview row goes with it.
        queue_prune(pipe, register_index_scripts(client)[1], tenant, campaign, account)
    replies = pipe.execute() if len(pipe) else []
    for kind, reply in zip(kinds, replies, strict=False):
        report.removed[kind] += int(reply)
    # After the transaction: PUBLISH names no key, so a Redis Cluster refuses it inside one.
    change = ZoneSetChange(tenant=tenant, campaign=campaign, account_id=account, version=0)
    client.publish(keys.changes_channel(tenant, campaign), change.model_dump_json())


def _conversions(client: redis.Redis, tenant: str, campaign: str) -> Iterator[Any]:
    try:
        yield from iter_conversions(client, tenant, campaign)
    except StoredValueError:
        return  # a broken conversion is no one's: the lift report names it


def _run_ids(client: redis.Redis, tenant: str, campaign: str) -> list[str]:
    runs: list[Any] = client.zrange(keys.runs_key(tenant, campaign), 0, -1)
    return [r for r in (reply_text_lossy(x) for x in runs) if is_valid_id(r)]


def _report_without(raw: object, account: str) -> tuple[bytes, int]:
    """The stored last-run report (JSON) without the account's failure, and how many were dropped."""
    if not isinstance(raw, bytes | str):
        return b"", 0
    try:
        report = json.loads(raw)
        failed = report.get("failed", [])
        kept = [f for f in failed if not (isinstance(f, dict) and f.get("account_id") == account)]
    except (ValueError, AttributeError):
        return b"", 0
    if len(kept) == len(failed):
        return b"", 0
    report["failed"] = kept
    return json.dumps(report).encode(), len(failed) - len(kept)


@dataclass
class _Match:
    """A stream entry naming the subject: its events about the subject (name, fields) and, for a
    batch entry (`welcomemat.records.event_entries`), its other events and its other fields."""

    entry_id: str
    events: list[tuple[str, dict[str, str]]]
    rest: list[dict[str, str]] = field(default_factory=list)
    beside: dict[str, str] = field(default_factory=dict)


def _stream_matches(client: redis.Redis, key: str, account: str, contact: str | None) -> Iterator[_Match]:
    """Entries of an event stream (or of a stream of the same fields: seller alerts, dead
    letters) with events about the account (and, given one, the contact)."""

    def about(fields: dict[str, str]) -> bool:
        if fields.get(EVENT_ACCOUNT_FIELD) != account:
            return False
        return contact is None or fields.get(EVENT_CONTACT_FIELD) == contact

    start = "-"
    while True:
        page: list[Any] = client.xrange(key, min=start, max="+", count=ENTRIES_PER_READ)  # type: ignore[assignment]
        for raw_id, raw_fields in page:
            entry_id = reply_text_lossy(raw_id)
            fields = {reply_text_lossy(k): reply_text_lossy(v) for k, v in (raw_fields or {}).items()}
            if BATCH_FIELD not in fields:
                if about(fields):
                    yield _Match(entry_id, [(entry_id, fields)])
                continue
            try:
                events = entry_events(entry_id, fields)
            except PoisonEvent:
                # No reader can read it (the sync dead-letters it): if its text names the
                # subject, the whole entry goes.
                text = fields[BATCH_FIELD]
                if account in text and (contact is None or contact in text):
                    yield _Match(entry_id, [(entry_id, fields)])
                continue
            mine = [(name, event) for name, event in events if about(event)]
            if mine:
                rest = [event for _, event in events if not about(event)]
                beside = {k: v for k, v in fields.items() if k != BATCH_FIELD}
                yield _Match(entry_id, mine, rest, beside)
        if len(page) < ENTRIES_PER_READ:
            return
        start = "(" + reply_text_lossy(page[-1][0])


def _stream_fields(
    client: redis.Redis, key: str, account: str, contact: str | None
) -> Iterator[tuple[str, dict[str, str]]]:
    """Events of an event stream about the account (and, given one, the contact): each one's
    name (its entry's id, or `<entry id>.<index>` in a batch) and fields."""
    for match in _stream_matches(client, key, account, contact):
        yield from match.events


def _outbox_entries(client: redis.Redis, tenant: str, account: str) -> list[str]:
    key = keys.webhook_outbox_key(tenant)
    found: list[str] = []
    start = "-"
    while True:
        page: list[Any] = client.xrange(key, min=start, max="+", count=_PAGE)  # type: ignore[assignment]
        found += [
            reply_text_lossy(i)
            for i, f in page
            if f and reply_text_lossy(f.get(_OUTBOX_ACCOUNT_FIELD, b"")) == account
        ]
        if len(page) < _PAGE:
            return found
        start = "(" + reply_text_lossy(page[-1][0])


def _campaign_data(client: redis.Redis, tenant: str, campaign: str, account: str) -> dict[str, Any]:
    store = ZoneSetStore(client)
    out: dict[str, Any] = {}
    for name, read in (("zone_set", store.get), ("previous_zone_set", store.get_previous)):
        try:
            zone_set = read(tenant, campaign, account)
        except StoredValueError as exc:
            out[name] = {"unreadable": str(exc)}
            continue
        out[name] = zone_set.model_dump(mode="json") if zone_set is not None else None
    explain = client.get(keys.explain_key(tenant, campaign, account))
    out["explain"] = _json_or_text(explain)
    out["journal"] = _json_or_text(client.hget(keys.journal_key(tenant, campaign), account))
    out["ip_ranges"] = _json_or_text(client.hget(keys.ip_ranges_key(tenant, campaign), account))
    out["conversions"] = [
        c.model_dump(mode="json") for c in _conversions(client, tenant, campaign) if c.account_id == account
    ]
    return out


def _json_or_text(raw: object) -> Any:
    if raw is None:
        return None
    text = reply_text_lossy(raw)
    try:
        return json.loads(text)
    except ValueError:
        return text
