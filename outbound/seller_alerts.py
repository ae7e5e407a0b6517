"""Seller alerts from folded engagement: one per account, campaign and day, queued for delivery.

Where alerts are made: in `welcomemat sync`, right after a batch of events is folded into the
account records (`outbound.sync.Syncer`), never in the renderer. The renderer already writes
every visit, QR scan and click to the tenant's event stream off the request path; deciding on
an alert there would add Redis reads (tier, dedup marker, record) to requests, and a renderer's
event queue is at-most-once by design, while the fold is at-least-once and already holds each
event's account, contact, arm and zone-set version. So a page costs nothing more, and an alert
waits only as long as the fold (a few seconds while `sync` follows the stream).

For each folded event (a fold that was already done counts too: a consumer killed between the
fold and its alert redoes it, and the marker below keeps it single) of a campaign with
`seller_alerts`, whose account's tier is one it names:

- the alert day is the UTC date of the event's own time (`alert_day`), not of the fold: a
  backlog folded after midnight still counts for the day the account came;
- an event older than `ALERT_MAX_AGE_S` by the injected clock raises none (a sync catching up
  on days of events must not page sellers about last week); the marker outlives the day plus
  that age (`keys.SELLER_ALERT_SENT_TTL_S`), so a late event never alerts twice;
- one Lua step (atomic: no other command runs between its parts) checks the marker
  (`keys.seller_alert_sent_key`) and, only when it is not set, adds the alert to the tenant's
  alert outbox once per destination (the chat webhook, the CRM task) and sets it, in the
  tenant's hash slot: any number of sync processes, on any machine, queue one alert per
  account, campaign and day.

The chat alert goes to the account's owner: when `seller_alerts.owners` maps the account's
`crm_owner` (read from its record), the entry's destination is `owner` and it carries that
owner's webhook URL (checked by the URL gate when the campaign was loaded, and again before the
post), in place of the campaign's channel (`WELCOMEMAT_ALERT_WEBHOOK_URL`); that owner's alert is
posted there even when the process has no channel. An account without an owner, or whose owner
is not mapped, goes to the channel. The CRM task names the owner either way.

The alert is built before that step from the account record (name, tier, contact), the zone
set of the version the page showed (the claim and its cited facts, sources through the URL gate)
and the published campaign (its pages and `seller_alerts.next_step`); an EXISTS first skips that
work for accounts already alerted today. A process remembers the marks it saw and each account's
tier for a minute, so the events of accounts already alerted, or of other tiers, cost no Redis
read at all. Delivery is `outbound.alert_sender`'s.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

import redis

from outbound.seller_alert import AlertAction, AlertClaim, AlertContact, AlertFact, SellerAlert
from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config
from welcomemat.campaign.contract import CONTINUATION_PAGE_ID, LANDING_PAGE_ID, Campaign
from welcomemat.errors import StoredValueError
from welcomemat.records.account_records import AccountRecord, read_account_record
from welcomemat.records.fold import EventFold, FoldKind
from welcomemat.replies import reply_text
from welcomemat.security.urlgate import safe_href, source_href
from welcomemat.surfaces import Surface
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet

__all__ = [
    "ALERT_MAX_AGE_S",
    "DESTINATIONS",
    "OWNER_DESTINATION",
    "AlertStats",
    "SellerAlertProducer",
    "alert_day",
    "page_url",
]

# Where the lines go when the caller passes no `log` (the commands pass their own, on stderr).
_logger = logging.getLogger(__name__)

# Events older than this (by the producer's clock) raise no alert: 24 hours.
ALERT_MAX_AGE_S = 24 * 3600
# An event stamped this far past the producer's clock is a clock gone wrong, not an alert: 5 min.
_FUTURE_SKEW_S = 5 * 60
# How long a campaign's `seller_alerts` are trusted before the stored config is read again.
_CAMPAIGN_REFRESH_S = 10.0
# How long an account's tier, read from its record, is trusted: a republished tier takes effect
# within a minute.
_TIER_REFRESH_S = 60.0
# Bounds of what a producer remembers (cleared whole when full: forgetting costs a Redis read).
_MARKS_REMEMBERED = 200_000
_TIERS_REMEMBERED = 200_000
# Where an alert goes: the chat webhook, the CRM webhook's task.
DESTINATIONS = ("slack", "crm")
# The chat alert of an account whose owner `seller_alerts.owners` maps: posted to that owner's
# webhook (the entry's `url`) instead of "slack", whatever destinations the process has.
OWNER_DESTINATION = "owner"

_ACTIONS: dict[FoldKind, AlertAction] = {"views": "visit", "qr": "qr_scan", "clicks": "cta_click"}

# KEYS: 1 the day's marker, 2 the tenant's alert outbox. ARGV: 1 marker TTL s, 2 outbox TTL s,
# 3 account id, 4 contact id ("" none), 5 the alert (JSON), 6 the owner's webhook URL (for the
# `owner` destination; "" none), 7.. the destinations. Returns 1 when the alert was queued, 0
# when the account was alerted for that day already. The mark is set last: a script is atomic but
# not rolled back, so an XADD that fails leaves no mark behind and the next delivery of the event
# tries again.
_QUEUE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 7, #ARGV do
  local fields = {'dest', ARGV[i], 'account', ARGV[3]}
  if ARGV[4] ~= '' then
    table.insert(fields, 'contact')
    table.insert(fields, ARGV[4])
  end
  if ARGV[i] == 'owner' then
    table.insert(fields, 'url')
    table.insert(fields, ARGV[6])
  end
  table.insert(fields, 'alert')
  table.insert(fields, ARGV[5])
  redis.call('XADD', KEYS[2], '*', unpack(fields))
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
return 1
"""


def alert_day(ts_ms: int) -> date:
    """The UTC calendar day of an event's time: the day its one alert stands for."""
    return datetime.fromtimestamp(ts_ms / 1000, UTC).date()


def page_url(public_url: str, campaign: str, page_id: str) -> str:
    """The public address of a campaign's page (`/c/<campaign>`, the continuation at `/continue`)."""
    suffix = "/continue" if page_id == CONTINUATION_PAGE_ID else ""
    return f"{public_url}/c/{campaign}{suffix}"


@dataclass
class AlertStats:
    queued: int = 0  # alerts queued (each once per destination)
    already: int = 0  # the account was alerted for that campaign and day before
    stale: int = 0  # events too old (or too far in the future) to alert about
    not_built: int = 0  # a record, zone set or config that did not decode: logged, no alert


@dataclass(frozen=True)
class _Candidate:
    event: EventFold
    day: date
    sent_key: str
    campaign: Campaign


class SellerAlertProducer:
    """Turns a sync batch's folded events into queued seller alerts (see the module docstring)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        destinations: Sequence[str],
        public_url: str,
        clock: Callable[[], datetime],
        log: Callable[[str], None] | None = None,
    ) -> None:
        unknown = set(destinations) - set(DESTINATIONS)
        if unknown or not destinations:
            raise ValueError(f"destinations must be some of {DESTINATIONS}, got {list(destinations)}")
        self.client = client
        self.destinations = tuple(destinations)
        self.public_url = public_url.rstrip("/")
        self.stats = AlertStats()
        self._clock = clock
        self._log = log or (lambda line: _logger.info("alerts: %s", line))
        self._queue = client.register_script(_QUEUE_LUA)
        self._store = ZoneSetStore(client)
        # (tenant, campaign) -> (read at, config digest, campaign or None when it has no alerts)
        self._campaigns: dict[tuple[str, str], tuple[float, str, Campaign | None]] = {}
        # Day marks this process saw set (by itself or another): those accounts are done for the day.
        self._marked: set[str] = set()
        # (tenant, account) -> (read at, tier): most events are of accounts seen in the last minute.
        self._tiers: dict[tuple[str, str], tuple[float, int | None]] = {}

    def produce(self, events: Sequence[EventFold]) -> int:
        """Queue the alerts `events` (folded, of one or more tenants) call for; how many were queued."""
        found = self._candidates(events, self._clock())
        if not found:
            return 0
        # Cheapest first: tiers (mostly remembered), then the day's mark (remembered once seen).
        tiers = self._tiers_of([event for event, _, _ in found])
        candidates: list[_Candidate] = []
        for event, day, campaign in found:
            assert campaign.seller_alerts is not None  # kept by `_candidates`
            if tiers.get((event.tenant, event.account_id)) not in campaign.seller_alerts.tiers:
                continue
            sent_key = keys.seller_alert_sent_key(
                event.tenant, event.campaign, event.account_id, day.isoformat()
            )
            if sent_key not in self._marked:
                candidates.append(_Candidate(event, day, sent_key, campaign))
        if not candidates:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for candidate in candidates:
            pipe.exists(candidate.sent_key)
        queued = 0
        for candidate, already in zip(candidates, pipe.execute(), strict=True):
            if already:
                self.stats.already += 1
                self._remember(candidate.sent_key)
                continue
            event = candidate.event
            try:
                alert = self._build(candidate, candidate.campaign)
            except (StoredValueError, ValueError) as exc:  # one bad record costs its own alert only
                self.stats.not_built += 1
                self._log(f"no alert for {event.tenant}/{event.campaign}/{event.account_id}: {exc}")
                continue
            if alert is not None:
                queued += self._enqueue(candidate, alert)
        return queued

    # -- what this process already knows ---------------------------------------------------------

    def _remember(self, sent_key: str) -> None:
        """A day's mark seen set: no need to ask Redis again for that account and day."""
        if len(self._marked) >= _MARKS_REMEMBERED:
            self._marked.clear()  # forgetting only costs an EXISTS each
        self._marked.add(sent_key)

    def _tiers_of(self, events: Sequence[EventFold]) -> dict[tuple[str, str], int | None]:
        """Each event's account's tier: from what was read in the last minute, else its record's
        profile (one pipelined HGET for those not known)."""
        now = time.monotonic()
        wanted = {(e.tenant, e.account_id) for e in events}
        found = {
            who: tier
            for who in wanted
            if (cached := self._tiers.get(who)) is not None and now - cached[0] < _TIER_REFRESH_S
            for tier in (cached[1],)
        }
        missing = sorted(wanted - set(found))
        if missing:
            pipe = self.client.pipeline(transaction=False)
            for tenant, account in missing:
                pipe.hget(keys.account_record_key(tenant, account), "profile")
            if len(self._tiers) >= _TIERS_REMEMBERED:
                self._tiers.clear()
            for who, raw in zip(missing, pipe.execute(), strict=True):
                found[who] = _tier(raw)
                self._tiers[who] = (now, found[who])
        return found

    # -- which events ------------------------------------------------------------------------------

    def _candidates(
        self, events: Sequence[EventFold], now: datetime
    ) -> list[tuple[EventFold, date, Campaign]]:
        """The earliest event of each (tenant, campaign, account, day) young enough to alert about,
        of a campaign with alerts, with its day and campaign."""
        now_ms = int(now.timestamp() * 1000)
        earliest: dict[tuple[str, str, str, date], EventFold] = {}
        for event in events:
            if event.kind not in _ACTIONS:
                continue
            if not now_ms - ALERT_MAX_AGE_S * 1000 <= event.ts_ms <= now_ms + _FUTURE_SKEW_S * 1000:
                self.stats.stale += 1
                continue
            key = (event.tenant, event.campaign, event.account_id, alert_day(event.ts_ms))
            kept = earliest.get(key)
            if kept is None or (event.ts_ms, event.event_id) < (kept.ts_ms, kept.event_id):
                earliest[key] = event
        out: list[tuple[EventFold, date, Campaign]] = []
        for (tenant, campaign_id, _, day), event in earliest.items():
            campaign = self._campaign(tenant, campaign_id)
            if campaign is not None and campaign.seller_alerts is not None:
                out.append((event, day, campaign))
        return out

    def _campaign(self, tenant: str, campaign_id: str) -> Campaign | None:
        """The published campaign (None: not published, or its config does not decode), reread
        every few seconds so a new `seller_alerts` takes effect without a restart."""
        cached = self._campaigns.get((tenant, campaign_id))
        if cached is not None and time.monotonic() - cached[0] < _CAMPAIGN_REFRESH_S:
            return cached[2]
        raw = self.client.get(keys.campaign_config_key(tenant, campaign_id))
        digest = hashlib.sha256(raw).hexdigest() if isinstance(raw, bytes) else ""
        if cached is not None and cached[1] == digest:
            campaign = cached[2]
        elif raw is None:
            campaign = None
        else:
            try:
                campaign = decode_campaign_config(tenant, campaign_id, raw).campaign
            except StoredValueError as exc:
                self._log(f"{tenant}/{campaign_id}: no alerts while its config does not decode: {exc}")
                campaign = None
        self._campaigns[(tenant, campaign_id)] = (time.monotonic(), digest, campaign)
        return campaign

    # -- building ----------------------------------------------------------------------------------

    def _build(self, candidate: _Candidate, campaign: Campaign) -> SellerAlert | None:
        event = candidate.event
        settings = campaign.seller_alerts
        assert settings is not None  # checked by the caller
        record = read_account_record(self.client, event.tenant, event.account_id)
        if record is None or record.tier is None:
            return None  # erased or expired since the fold
        page_id = _page_of(campaign, event)
        page = campaign.pages.get(page_id)
        zone_set = self._zone_set_shown(event)
        claim, withheld = _claim(record, zone_set, page.zones if page is not None else ())
        if zone_set is not None:
            rung: str | None = (
                Rung.PERSONAL.value if withheld or claim is not None or _any_personal(zone_set) else None
            )
        else:
            rung = Rung.SEGMENT.value if event.arm in ("personal", "holdout") else None
        return SellerAlert(
            tenant=event.tenant,
            campaign=event.campaign,
            account_id=event.account_id,
            account_name=record.name,
            domain=record.domain,
            tier=record.tier,
            contact=_contact(record, event.contact),
            owner=record.crm_owner,
            action=_ACTIONS[event.kind],
            zone=event.zone if event.kind == "clicks" else None,
            occurred_at=datetime.fromtimestamp(event.ts_ms / 1000, UTC),
            day=candidate.day,
            page_id=page_id,
            page_url=page_url(self.public_url, event.campaign, page_id),
            rung=rung,
            claim=claim,
            claim_withheld=withheld,
            next_step=settings.next_step,
            next_step_url=safe_href(settings.next_step_url, campaign.allowlist()),
        )

    def _zone_set_shown(self, event: EventFold) -> ZoneSet | None:
        """The zone set the page served as personal: the version the event names (current or
        previous); for a QR scan that names none (written before scans named it, or while the
        renderer could not read the zone set), the current one if it was servable as personal
        at the scan. None: the page served segment or default copy."""
        if event.zone_set_version is None:
            if event.kind != "qr" or event.arm != "personal":
                return None
            current = self._store.get(event.tenant, event.campaign, event.account_id)
            at = datetime.fromtimestamp(event.ts_ms / 1000, UTC)
            return current if current is not None and current.is_servable_as_personal(at) else None
        for read in (self._store.get, self._store.get_previous):
            zone_set = read(event.tenant, event.campaign, event.account_id)
            if zone_set is not None and zone_set.version == event.zone_set_version:
                return zone_set
        return None

    # -- queueing ----------------------------------------------------------------------------------

    def _enqueue(self, candidate: _Candidate, alert: SellerAlert) -> int:
        event = candidate.event
        settings = candidate.campaign.seller_alerts
        owner_url = settings.owner_destination(alert.owner) if settings is not None else None
        destinations = _destinations(self.destinations, owner_url)
        done = self._queue(
            keys=[candidate.sent_key, keys.seller_alert_outbox_key(event.tenant)],
            args=[
                keys.SELLER_ALERT_SENT_TTL_S,
                keys.SELLER_ALERT_OUTBOX_TTL_S,
                event.account_id,
                event.contact or "",
                alert.model_dump_json(),
                owner_url or "",
                *destinations,
            ],
            client=self.client,
        )
        self._remember(candidate.sent_key)
        if int(done):
            self.stats.queued += 1
            return 1
        self.stats.already += 1
        return 0


def _destinations(configured: Sequence[str], owner_url: str | None) -> list[str]:
    """Where one alert is queued: the owner's webhook in place of the channel when the owner is
    mapped (even without a channel), else the configured destinations as they are."""
    if owner_url is None:
        return list(configured)
    return [OWNER_DESTINATION, *(d for d in configured if d != "slack")]


def _tier(raw_profile: object) -> int | None:
    """The tier in a record's profile field, without decoding the whole record."""
    if raw_profile is None:
        return None
    try:
        tier = json.loads(reply_text(raw_profile)).get("tier")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None
    return tier if isinstance(tier, int) and not isinstance(tier, bool) else None


def _page_of(campaign: Campaign, event: EventFold) -> str:
    """Which page the event happened on. A view names its page (one the campaign still has); a QR
    scan lands on the continuation page; a click is on the first page (landing first) showing its
    zone; else (a view written before views named their page) the landing page, where links send
    visitors."""
    if event.kind == "views" and event.page is not None and event.page in campaign.pages:
        return event.page
    if event.kind == "qr" and CONTINUATION_PAGE_ID in campaign.pages:
        return CONTINUATION_PAGE_ID
    if event.kind == "clicks" and event.zone is not None:
        order = sorted(campaign.pages, key=lambda page_id: page_id != LANDING_PAGE_ID)
        for page_id in order:
            if event.zone in campaign.pages[page_id].zones:
                return page_id
    return LANDING_PAGE_ID


def _any_personal(zone_set: ZoneSet) -> bool:
    return any(zone.rung is Rung.PERSONAL for zone in zone_set.zones)


def _claim(
    record: AccountRecord, zone_set: ZoneSet | None, page_zones: Sequence[str]
) -> tuple[AlertClaim | None, bool]:
    """The first personal zone of the page (in page order, then any) that cites facts, with them;
    and whether it is withheld because a fact it cites is not cleared for sellers (its research's
    `surfaces` do not name `seller`, or the record does not hold the fact)."""
    if zone_set is None:
        return None, False
    ordered = [z for zone_id in page_zones if (z := zone_set.zone(zone_id)) is not None]
    ordered += [z for z in zone_set.zones if z.zone_id not in page_zones]
    for zone in ordered:
        if zone.rung is not Rung.PERSONAL or not zone.facts:
            continue
        known = [(cited, record.facts.get(cited.fact_id)) for cited in zone.facts]
        if not zone.allows(Surface.SELLER) or any(fact is None for _, fact in known):
            return None, True
        facts = tuple(
            AlertFact(
                type=fact.type,
                statement=fact.statement,
                source_url=source_href(cited.source_url),
                published_at=cited.published_at,
            )
            for cited, fact in known
            if fact is not None
        )
        return AlertClaim(zone_id=zone.zone_id, text=zone.text, facts=facts), False
    return None, False


def _contact(record: AccountRecord, contact_id: str | None) -> AlertContact | None:
    if contact_id is None:
        return None
    profile = next((c for c in record.contacts if c.contact_id == contact_id), None)
    if profile is None:
        return AlertContact(contact_id=contact_id)
    name = " ".join(p for p in (profile.first_name, profile.last_name) if p) or None
    return AlertContact(contact_id=contact_id, name=name, email=profile.email, title=profile.title)
