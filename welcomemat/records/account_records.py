"""The shared account records: what a known account did on the site, for outbound to build on.

One Redis hash per account at `keys.account_record_key(tenant, account_id)`, in the
tenant's hash slot with its events stream, so folding an event (mark it seen, update the
record, queue the CRM change) is one atomic Lua step. Two writers, one reader API:

- the precompute job writes the account's profile (name, domain, segment, tier, contacts) and
  the facts its published zone set cites, when it publishes (`write_profile`);
- `welcomemat sync` folds each engagement event into per-campaign counters
  (`welcomemat.records.fold`);
- everyone else reads through `read_account_record` / `iter_account_records` only: the
  hash layout below is this module's business.

Hash fields (ids hold no `:`, so every field parses one way; a fact id comes last):

    profile                      JSON {name, domain, segment, tier, contacts[, crm_owner]}
    fact:<fact id>               JSON ShownFact: a cited fact's type and statement (no evidence)
    e:<campaign>:first|last      first / last event time, Unix ms
    e:<campaign>:views|clicks|qr counters
    e:<campaign>:zone:<zone>     clicks in one zone
    e:<campaign>:arm, arm_at     last arm seen, and the order key of the event that set it
    e:<campaign>:ver, facts, ver_at   zone-set version last shown, its cited facts (JSON), order key
    e:<campaign>:variant         the copy variant of that version ("" none)
    p:<campaign>:<contact>:first|last|views|clicks|qr   the same counters per contact
    w:<campaign>:<contact>:<state>   JSON WorkflowMark: a contact's exported / delivered / printed
                                 mark (written by `welcomemat.records.contact_workflow`)
    rev                          bumped by every fold: one CRM change per revision
    updated_ms                   last write, Unix ms
    wh_pending, wh_rev           CRM webhook bookkeeping (outbound.webhook)

How an event is folded in, in any order and exactly once, is `welcomemat.records.fold`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from welcomemat import keys
from welcomemat.errors import StoredValueError
from welcomemat.records.accounts import Account, PostalAddress
from welcomemat.replies import reply_text
from welcomemat.storage.redis_client import run_script
from welcomemat.surfaces import Surface
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneSet

__all__ = [
    "SCAN_COUNT",
    "AccountRecord",
    "CampaignEngagement",
    "ContactEngagement",
    "ContactProfile",
    "ShownFact",
    "WorkflowMark",
    "cited_facts",
    "contact_erasure",
    "iter_account_records",
    "last_seen_many",
    "mark_crm_delivered",
    "read_account_record",
    "take_crm_change",
    "write_profile",
]

# Keys per SCAN call, and records read per pipelined batch while iterating.
SCAN_COUNT = 500
# An owner longer than an e-mail address may be (RFC 5321: 254) is cut there.
_OWNER_MAX_CHARS = 254


class ShownFact(BaseModel):
    """A fact a visitor was shown: public to the seller, never to visitors (no evidence, no confidence)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    type: str
    statement: str
    source_url: str
    published_at: date
    # The channels the fact may reach (`welcomemat.surfaces`): the seller's copy of the
    # record (the CRM webhook) carries only facts allowed on `seller`. Written before
    # surfaces were recorded: web only.
    surfaces: tuple[Surface, ...] = (Surface.WEB,)

    def allows(self, surface: Surface) -> bool:
        return surface in self.surfaces


class ContactProfile(BaseModel):
    """A contact of the account as the CRM export named them (only contacts with an email)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    contact_id: str
    email: str
    first_name: str | None = None
    last_name: str | None = None
    title: str | None = None
    # Where direct mail reaches them (`welcomemat mail`); None: no mail.
    address: PostalAddress | None = None


class CampaignEngagement(BaseModel):
    """What the account did in one campaign, folded from its events."""

    model_config = ConfigDict(extra="forbid")

    first_seen_ms: int | None = None
    last_seen_ms: int | None = None
    views: int = 0
    clicks: int = 0
    clicks_by_zone: dict[str, int] = Field(default_factory=dict)
    qr_scans: int = 0
    last_arm: str | None = None
    zone_set_version: int | None = None
    # The copy variant of `zone_set_version` (`welcomemat.campaign.experiments`), when it has one.
    variant: str | None = None
    # The personal zones' cited facts of `zone_set_version`, when the page showed them.
    facts_shown: list[ShownFact] = Field(default_factory=list)


class ContactEngagement(BaseModel):
    """The same counters per contact, when events name one."""

    model_config = ConfigDict(extra="forbid")

    contact_id: str
    first_seen_ms: int | None = None
    last_seen_ms: int | None = None
    views: int = 0
    clicks: int = 0
    qr_scans: int = 0


class WorkflowMark(BaseModel):
    """A workflow state a contact reached (`welcomemat.records.contact_workflow`): first and latest
    time (Unix ms), and the latest one's detail."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_ms: int
    at_ms: int
    detail: dict[str, str | int | None] = Field(default_factory=dict)


class AccountRecord(BaseModel):
    """One account's shared record: profile, and engagement per campaign (and per contact)."""

    model_config = ConfigDict(extra="forbid")

    tenant: str
    account_id: str
    name: str | None = None
    domain: str | None = None
    segment: str | None = None
    # The account's tier as precompute last published it (None: published before tiers were kept).
    tier: int | None = None
    # The account's owner in the CRM (its `crm_owner`, an e-mail or name): whose seller alerts
    # these are (`outbound.seller_alerts`). None: the input did not name one.
    crm_owner: str | None = None
    contacts: list[ContactProfile] = Field(default_factory=list)
    # Every fact a published zone set of this account cites, by id (written by precompute):
    # what the seller and the sequencer quote, whether or not a visitor has seen it yet.
    facts: dict[str, ShownFact] = Field(default_factory=dict)
    engagement: dict[str, CampaignEngagement] = Field(default_factory=dict)
    contacts_engagement: dict[str, dict[str, ContactEngagement]] = Field(default_factory=dict)
    # campaign -> contact -> state -> its mark (`welcomemat.records.contact_workflow`).
    workflow: dict[str, dict[str, dict[str, WorkflowMark]]] = Field(default_factory=dict)
    updated_ms: int | None = None
    # How many folds changed this record: the CRM webhook's change number.
    revision: int = 0


# -- writing ---------------------------------------------------------------------------------------


def write_profile(
    pipe: redis.Redis | redis.client.Pipeline,
    tenant: str,
    account: Account,
    zone_set: ZoneSet | None = None,
    *,
    now_ms: int | None = None,
) -> None:
    """Queue (on a pipeline) or write the account's profile and the facts `zone_set` cites.

    The profile is replaced whole; fact entries are added (a fact shown under an older
    version keeps its statement). Only what a seller may read is kept: no evidence, no
    confidence, no raw sources. Contacts without an email are left out (nothing to send to).
    """
    key = keys.account_record_key(tenant, account.account_id)
    contacts = [
        _without_empty_address(
            ContactProfile(
                contact_id=c.contact_id,
                email=c.email,
                first_name=c.first_name,
                last_name=c.last_name,
                title=c.title,
                # Only the fields mail is printed from: not what else a CRM export carried.
                address=c.address.model_dump(include=set(PostalAddress.model_fields)) if c.address else None,
            ).model_dump(mode="json")
        )
        for c in account.contacts
        if c.email
    ]
    profile = {
        "name": account.name,
        "domain": account.domain,
        "segment": account.segment,
        "tier": account.tier,
        "contacts": contacts,
    }
    owner = (account.model_extra or {}).get("crm_owner")
    if isinstance(owner, str) and owner.strip():  # only when named: other profiles stay as they were
        profile["crm_owner"] = owner.strip()[:_OWNER_MAX_CHARS]
    mapping: dict[str, str | int] = {
        "profile": json.dumps(profile, ensure_ascii=False, separators=(",", ":")),
        "updated_ms": now_ms if now_ms is not None else int(time.time() * 1000),
    }
    if zone_set is not None:
        by_id = {f.id: f for f in account.facts}
        for cited in cited_facts(zone_set):
            fact = by_id.get(cited.fact_id)
            if fact is None:
                continue
            shown = ShownFact(
                id=fact.id,
                type=fact.type,
                statement=fact.statement,
                source_url=cited.source_url,
                published_at=cited.published_at,
                surfaces=cited.surfaces,
            )
            mapping[f"fact:{fact.id}"] = shown.model_dump_json()
    pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]
    pipe.expire(key, keys.ACCOUNT_RECORD_TTL_S)


def _without_empty_address(contact: dict[str, Any]) -> dict[str, Any]:
    # Profiles stay as they were for contacts without an address (no `"address": null`).
    if contact.get("address") is None:
        contact.pop("address", None)
    return contact


def cited_facts(zone_set: ZoneSet) -> list[CitedFact]:
    """The facts the personal zones of `zone_set` cite, each once, in zone order."""
    seen: dict[str, CitedFact] = {}
    for zone in zone_set.zones:
        if zone.rung is Rung.PERSONAL:
            for fact in zone.facts:
                seen.setdefault(fact.fact_id, fact)
    return list(seen.values())


# -- CRM change bookkeeping (outbound.webhook) -----------------------------------------------------

# KEYS: record. ARGV: delivered revision. Raise the delivered mark, never lower it (two senders
# may finish out of order).
_MARK_DELIVERED_LUA = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'wh_rev') or '0')
if tonumber(ARGV[1]) > cur then redis.call('HSET', KEYS[1], 'wh_rev', ARGV[1]) end
return cur
"""


def take_crm_change(client: redis.Redis, tenant: str, account_id: str) -> tuple[AccountRecord | None, int]:
    """The record as it is now, and the last revision delivered to the CRM, for a queued change.

    Clears the account's "change queued" mark first, so that a fold landing while this
    change is being sent queues another one: no change is missed, and a change that finds
    its revision already delivered is simply dropped by the sender.
    """
    key = keys.account_record_key(tenant, account_id)
    pipe = client.pipeline(transaction=True)
    pipe.hdel(key, "wh_pending")
    pipe.hgetall(key)
    raw: Mapping[Any, Any] = pipe.execute()[1]
    if not raw:
        return None, 0
    delivered = raw.get(b"wh_rev", raw.get("wh_rev"))
    return _decode(key, tenant, account_id, raw), int(delivered or 0)


def mark_crm_delivered(
    client: redis.Redis | redis.client.Pipeline, tenant: str, account_id: str, revision: int
) -> None:
    """Record that the CRM received the account's record at `revision` (only ever raised)."""
    script = client.register_script(_MARK_DELIVERED_LUA)
    run_script(client, script, [keys.account_record_key(tenant, account_id)], [revision])


# -- erasing a person (welcomemat.records.subject_requests) ------------------------------------------------


def contact_erasure(
    client: redis.Redis, tenant: str, account_id: str, contact_id: str
) -> tuple[str | None, list[str]]:
    """What erasing one contact changes in the account's record: the profile without them (None
    when it does not name them) and the per-contact fields to delete: counters and workflow
    marks (`p:*:<contact>:*`, `w:*:<contact>:*`)."""
    key = keys.account_record_key(tenant, account_id)
    raw: Mapping[Any, Any] = client.hgetall(key)
    fields = {reply_text(k): reply_text(v) for k, v in raw.items()}
    profile: str | None = None
    if "profile" in fields:
        data = json.loads(fields["profile"])
        contacts = [c for c in data.get("contacts", []) if c.get("contact_id") != contact_id]
        if len(contacts) != len(data.get("contacts", [])):
            data["contacts"] = contacts
            profile = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    counters = [
        name
        for name in fields
        if name.startswith(("p:", "w:"))
        and name.partition(":")[2].partition(":")[2].partition(":")[0] == contact_id
    ]
    return profile, sorted(counters)


# -- reading ---------------------------------------------------------------------------------------


def read_account_record(client: redis.Redis, tenant: str, account_id: str) -> AccountRecord | None:
    """The account's record, or None when it has none. StoredValueError when it does not decode."""
    key = keys.account_record_key(tenant, account_id)
    raw: Mapping[Any, Any] = client.hgetall(key)
    if not raw:
        return None
    return _decode(key, tenant, account_id, raw)


def last_seen_many(
    client: redis.Redis, tenant: str, campaign: str, account_ids: Sequence[str]
) -> dict[str, int | None]:
    """When each account last visited `campaign` (Unix ms; None: never, or no record), in one
    pipeline of HGETs: a page of the campaign overview needs this field, not the whole records."""
    pipe = client.pipeline(transaction=False)
    for account_id in account_ids:
        pipe.hget(keys.account_record_key(tenant, account_id), f"e:{campaign}:last")
    found: dict[str, int | None] = {}
    for account_id, raw in zip(account_ids, pipe.execute() if account_ids else [], strict=True):
        try:
            found[account_id] = None if raw is None else int(reply_text(raw))
        except ValueError:  # a broken counter is no visit this page can show
            found[account_id] = None
    return found


def iter_account_records(
    client: redis.Redis, tenant: str, *, problems: list[StoredValueError] | None = None
) -> Iterator[AccountRecord]:
    """Every account record of the tenant (SCAN, any order, each once).

    A record that does not decode raises StoredValueError, unless `problems` is given: then
    it is appended there and skipped, so one bad record does not cost the rest.
    """
    pattern = keys.account_record_scan_pattern(tenant)
    prefix = pattern[:-1]
    seen: set[str] = set()
    batch: list[str] = []

    def flush() -> Iterator[AccountRecord]:
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.hgetall(key)
        for key, raw in zip(batch, pipe.execute(), strict=True):
            if not raw:
                continue  # expired or deleted since the scan saw it
            try:
                yield _decode(key, tenant, key[len(prefix) :], raw)
            except StoredValueError as exc:
                if problems is None:
                    raise
                problems.append(exc)
        batch.clear()

    for raw_key in client.scan_iter(match=pattern, count=SCAN_COUNT):
        key = reply_text(raw_key)
        if key in seen:
            continue
        seen.add(key)
        batch.append(key)
        if len(batch) >= SCAN_COUNT:
            yield from flush()
    if batch:
        yield from flush()


def _decode(key: str, tenant: str, account_id: str, raw: Mapping[Any, Any]) -> AccountRecord:
    fields = {reply_text(k): reply_text(v) for k, v in raw.items()}
    try:
        return _build(tenant, account_id, fields)
    except (ValueError, TypeError, KeyError, ValidationError) as exc:  # ValidationError is a ValueError
        raise StoredValueError(key, f"{type(exc).__name__}: {exc}") from None


def _build(tenant: str, account_id: str, fields: dict[str, str]) -> AccountRecord:
    record = AccountRecord(tenant=tenant, account_id=account_id)
    if "profile" in fields:
        profile = json.loads(fields["profile"])
        record.name = profile.get("name")
        record.domain = profile.get("domain")
        record.segment = profile.get("segment")
        tier = profile.get("tier")
        record.tier = tier if isinstance(tier, int) and not isinstance(tier, bool) else None
        record.contacts = [ContactProfile.model_validate(c) for c in profile.get("contacts", [])]
        owner = profile.get("crm_owner")
        record.crm_owner = owner if isinstance(owner, str) and owner else None
    record.updated_ms = int(fields["updated_ms"]) if "updated_ms" in fields else None
    record.revision = int(fields.get("rev", "0"))
    catalog = {
        name.removeprefix("fact:"): value for name, value in fields.items() if name.startswith("fact:")
    }
    record.facts = {fact_id: ShownFact.model_validate_json(raw) for fact_id, raw in sorted(catalog.items())}
    campaigns: dict[str, dict[str, str]] = {}
    contacts: dict[tuple[str, str], dict[str, str]] = {}
    for name, value in fields.items():
        kind, _, rest = name.partition(":")
        if kind == "e":
            campaign, _, attribute = rest.partition(":")
            campaigns.setdefault(campaign, {})[attribute] = value
        elif kind == "p":
            campaign, _, tail = rest.partition(":")
            contact, _, attribute = tail.partition(":")
            contacts.setdefault((campaign, contact), {})[attribute] = value
        elif kind == "w":
            campaign, _, tail = rest.partition(":")
            contact, _, state = tail.partition(":")
            mark = WorkflowMark.model_validate_json(value)
            record.workflow.setdefault(campaign, {}).setdefault(contact, {})[state] = mark
    for campaign, values in sorted(campaigns.items()):
        record.engagement[campaign] = _campaign(values, catalog)
    for (campaign, contact), values in sorted(contacts.items()):
        record.contacts_engagement.setdefault(campaign, {})[contact] = ContactEngagement(
            contact_id=contact,
            first_seen_ms=_int(values.get("first")),
            last_seen_ms=_int(values.get("last")),
            views=int(values.get("views", "0")),
            clicks=int(values.get("clicks", "0")),
            qr_scans=int(values.get("qr", "0")),
        )
    return record


def _campaign(values: dict[str, str], catalog: dict[str, str]) -> CampaignEngagement:
    facts: list[ShownFact] = []
    if values.get("facts"):
        for cited in json.loads(values["facts"]):
            known = catalog.get(str(cited["fact_id"]))
            # A fact whose statement the record does not hold (its zone set was published
            # before records were written) says nothing a seller could use: left out.
            if known is not None:
                facts.append(ShownFact.model_validate_json(known))
    return CampaignEngagement(
        first_seen_ms=_int(values.get("first")),
        last_seen_ms=_int(values.get("last")),
        views=int(values.get("views", "0")),
        clicks=int(values.get("clicks", "0")),
        clicks_by_zone={
            name.removeprefix("zone:"): int(v)
            for name, v in sorted(values.items())
            if name.startswith("zone:")
        },
        qr_scans=int(values.get("qr", "0")),
        last_arm=values.get("arm"),
        zone_set_version=_int(values.get("ver")),
        variant=values.get("variant") or None,
        facts_shown=facts,
    )


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)
