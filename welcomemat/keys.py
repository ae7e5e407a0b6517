"""The Redis key schema: every key and channel Welcomemat uses, and how long each lives.

Keys read `wm:<schema version>:{<hash tag>}:<kind>[:<id>]`. The hash tag is what Redis
Cluster hashes to pick a slot, so everything written together shares one tag:

- per campaign, `{tenant:campaign}`: zone sets (current, previous, version counter), the
  change channel and the publish journal. A publish is one MULTI/EXEC over these keys,
  which Cluster only allows inside one slot. A distributed run's work stream, dead-letter
  stream and run records share the tag too, so a worker's "count and acknowledge" is one
  transaction.
- per tenant, `{tenant}`: the engagement event stream and the account records that events
  are folded into, so a fold (read events, update records, acknowledge) stays in one slot;
  the audit log and the erasure list share it, so an erasure's tenant-wide writes and its
  audit entry are one transaction.
- per admin person, `{admin:<SHA-256 of the e-mail>}`: their roles and their session hashes,
  written together at sign-in and revoke.
- none, for the few small keys read by campaign id alone (the campaigns index, a campaign
  id's owner, the active runs): single-key commands only.

Ids are checked with `welcomemat.ids.is_valid_id` before they reach a key: they cannot
hold `:`, `{`, `}` or glob characters, so a key parses one way only and a SCAN pattern
built from ids matches nothing but what it names. Bump `KEY_SCHEMA_VERSION` when the
layout or a stored value's format changes incompatibly: old keys then stop being read
and expire on their own.

Every key written gets a TTL from this module (`*_TTL_S`, seconds).
"""

from __future__ import annotations

from welcomemat.ids import is_valid_id, is_view_id

__all__ = [
    "ACCOUNT_RECORD_TTL_S",
    "ADMIN_GRANTS_TTL_S",
    "ADMIN_INVITE_TTL_S",
    "ADMIN_SESSIONS_TTL_S",
    "AUDIT_TTL_S",
    "BEACON_EVENT_TTL_S",
    "CAMPAIGN_OWNER_TTL_S",
    "CAMPAIGN_TTL_S",
    "CONVERSIONS_TTL_S",
    "DEAD_LETTER_TTL_S",
    "ERASURES_TTL_S",
    "EVENTS_STREAM_TTL_S",
    "EVENT_SEEN_TTL_S",
    "GUIDELINES_TTL_S",
    "JOURNAL_TTL_S",
    "KEY_PREFIX",
    "KEY_SCHEMA_VERSION",
    "OVERVIEW_REBUILD_TTL_S",
    "OVERVIEW_TTL_S",
    "PREVIOUS_ZONE_SET_TTL_S",
    "RUN_TTL_S",
    "SELLER_ALERTS_CONSUMER_GROUP",
    "SELLER_ALERT_OUTBOX_TTL_S",
    "SELLER_ALERT_SENT_TTL_S",
    "SYNC_CONSUMER_GROUP",
    "WEBHOOK_CONSUMER_GROUP",
    "WEBHOOK_OUTBOX_TTL_S",
    "WORK_CONSUMER_GROUP",
    "WORK_STREAM_TTL_S",
    "ZONE_SET_TTL_S",
    "ZONE_SET_VERSION_TTL_S",
    "account_record_key",
    "account_record_scan_pattern",
    "active_runs_key",
    "admin_grants_key",
    "admin_invite_key",
    "admin_person_sessions_key",
    "admin_session_key",
    "audit_stream_key",
    "audit_stream_scan_pattern",
    "beacon_view_key",
    "campaign_config_key",
    "campaign_owner_key",
    "campaign_prefix",
    "campaigns_index_key",
    "changes_channel",
    "conversions_key",
    "credential_fingerprints_key",
    "dead_letter_stream_key",
    "erasures_key",
    "event_seen_key",
    "events_dead_letter_key",
    "events_held_key",
    "events_stream_key",
    "explain_key",
    "global_audit_stream_key",
    "guidelines_key",
    "ip_ranges_key",
    "journal_key",
    "overview_counts_key",
    "overview_ids_key",
    "overview_rebuild_key",
    "overview_rows_key",
    "overview_tags_key",
    "previous_zone_set_key",
    "review_held_key",
    "review_queue_key",
    "review_sample_key",
    "run_companies_key",
    "run_failures_key",
    "run_key",
    "run_report_key",
    "run_sample_key",
    "runs_key",
    "seller_alert_dead_letter_key",
    "seller_alert_outbox_key",
    "seller_alert_sent_key",
    "seller_alert_sent_scan_pattern",
    "tenant_prefix",
    "view_seen_key",
    "webhook_outbox_key",
    "work_stream_key",
    "zone_set_key",
    "zone_set_scan_pattern",
    "zone_set_version_key",
]

KEY_PREFIX = "wm"
KEY_SCHEMA_VERSION = 1

_DAY_S = 24 * 3600

# 90 days: a zone set older than its campaign's life is garbage. Refreshed on every write.
ZONE_SET_TTL_S = 90 * _DAY_S
# 30 days: rollback is for recent mistakes; an older previous version is not worth keeping.
PREVIOUS_ZONE_SET_TTL_S = 30 * _DAY_S
# 90 days, like the zone set it numbers: the counter must not expire while a zone set it
# numbered is still current, or versions would start again at 1.
ZONE_SET_VERSION_TTL_S = ZONE_SET_TTL_S
# 90 days, like the zone sets it lists, refreshed on every write: the campaign overview's index.
OVERVIEW_TTL_S = ZONE_SET_TTL_S
# 10 minutes: a rebuild of that index (100,000 accounts: about 30 s) that died is started again after it.
OVERVIEW_REBUILD_TTL_S = 10 * 60
# 90 days: the publish journal explains what a campaign's zone sets came from.
JOURNAL_TTL_S = 90 * _DAY_S
# 90 days: a campaign's contract, review queue and last run report live as long as its zone sets.
CAMPAIGN_TTL_S = 90 * _DAY_S
# 456 days, refreshed on every publish by the owner: a campaign id stays its tenant's while
# anything may still point at it: the campaign stays published 90 days after its last publish
# (`CAMPAIGN_TTL_S`), and a link or QR code signed in that time lives up to 366 days
# (`welcomemat.security.tokens.MAX_TTL_S`); conversions are kept 365 days.
CAMPAIGN_OWNER_TTL_S = (90 + 366) * _DAY_S
# 30 days without a new event: the stream is idle and its events are folded long ago.
EVENTS_STREAM_TTL_S = 30 * _DAY_S
# 365 days: account records are what outbound and sellers build on across campaigns.
ACCOUNT_RECORD_TTL_S = 365 * _DAY_S
# 14 days, refreshed on every write: work nobody picked up in two weeks was abandoned, and
# acknowledged entries are deleted as they go, so a live stream never needs to last longer.
WORK_STREAM_TTL_S = 14 * _DAY_S
# 30 days: long enough for a person to look at what failed and enqueue it again.
DEAD_LETTER_TTL_S = 30 * _DAY_S
# 30 days, refreshed on every count: a distributed run's record, counters, failures and
# review-sample candidates (its zone sets live on under their own TTL).
RUN_TTL_S = 30 * _DAY_S

# 365 days, refreshed on every write: CRM outcomes arrive months after the outreach, and the
# lift report compares them long after the campaign's pages are gone.
CONVERSIONS_TTL_S = 365 * _DAY_S
# 35 days: an event's "folded" marker must outlive every copy of the event that could be
# delivered again; the stream itself lives 30 days past its last event.
EVENT_SEEN_TTL_S = 35 * _DAY_S
# 30 days, refreshed on every write: CRM changes wait this long for a receiver to come back.
WEBHOOK_OUTBOX_TTL_S = 30 * _DAY_S
# 7 days, refreshed on every write: a seller alert is about today; one its receivers could not
# take for a week is stale (it is dead-lettered after a few passes anyway, `outbound.alert_sender`).
SELLER_ALERT_OUTBOX_TTL_S = 7 * _DAY_S
# 3 days: the "alerted today" marker of an (account, campaign, day) must outlive that day (24 h)
# plus the oldest event that may still raise an alert (`outbound.seller_alerts.ALERT_MAX_AGE_S`,
# 24 h), or a late event of the same day would alert twice; a day more for clock skew.
SELLER_ALERT_SENT_TTL_S = 3 * _DAY_S

# 2 years, refreshed on every entry: who approved, rolled back or erased what must outlive the
# zone sets and records it is about (365 days) by a full year of audits.
AUDIT_TTL_S = 2 * 365 * _DAY_S
# Guideline change records answer "which rules wrote this page" as long as the audit log does.
GUIDELINES_TTL_S = 2 * 365 * _DAY_S
# 3 years, refreshed on every erasure: the erasure list revokes the tokens an erased subject
# holds (none lives longer than 366 days, `tokens.MAX_TTL_S`) and keeps precompute from
# publishing them again from an accounts file that still lists them.
ERASURES_TTL_S = 3 * 365 * _DAY_S

# 7 hours: what a view token's beacons were counted for (its view, a click per zone) is
# remembered (repeats ignored) for longer than the token lives (6 hours,
# `tokens.DEFAULT_VIEW_TTL_S`): once the token has expired, a replay is refused anyway.
BEACON_EVENT_TTL_S = 7 * 60 * 60

# 15 minutes: an admin sign-in link (`welcomemat admin invite`) is used at once or asked for again.
ADMIN_INVITE_TTL_S = 15 * 60
# 30 days: the longest an admin session may last (`WELCOMEMAT_ADMIN_SESSION_MAX_S` is capped at it);
# a person's set of session hashes lives as long as the newest of them may.
ADMIN_SESSIONS_TTL_S = 30 * _DAY_S
# 1 year: a person's admin roles per tenant, refreshed at each sign-in; a role nobody signs in
# with for a year lapses (an invite gives it again).
ADMIN_GRANTS_TTL_S = 365 * _DAY_S

# The one consumer group every `welcomemat worker` joins on a campaign's work stream.
WORK_CONSUMER_GROUP = "precompute"
# The one consumer group every `welcomemat sync` joins on a tenant's events stream.
SYNC_CONSUMER_GROUP = "sync"
# The consumer group of the CRM webhook senders on a tenant's outbox stream.
WEBHOOK_CONSUMER_GROUP = "webhook"
# The consumer group of the seller-alert senders on a tenant's alert outbox stream.
SELLER_ALERTS_CONSUMER_GROUP = "seller_alerts"


def _checked(kind: str, value: str) -> str:
    if not is_valid_id(value):
        raise ValueError(
            f"invalid {kind} id {value!r} for a Redis key: "
            "use letters, digits and '_.-', starting with a letter or digit, at most 64 characters"
        )
    return value


def tenant_prefix(tenant: str) -> str:
    """`wm:1:{acme}`: the prefix of every per-tenant key."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:{{{_checked('tenant', tenant)}}}"


def campaign_prefix(tenant: str, campaign: str) -> str:
    """`wm:1:{acme:q4-expansion}`: the prefix of every per-campaign key."""
    tag = f"{_checked('tenant', tenant)}:{_checked('campaign', campaign)}"
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:{{{tag}}}"


def zone_set_key(tenant: str, campaign: str, account_id: str) -> str:
    """The current zone set of an account (JSON). TTL `ZONE_SET_TTL_S`."""
    return f"{campaign_prefix(tenant, campaign)}:zs:{_checked('account', account_id)}"


def previous_zone_set_key(tenant: str, campaign: str, account_id: str) -> str:
    """The zone set that was current before (JSON), kept for rollback.

    TTL `PREVIOUS_ZONE_SET_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:zs_prev:{_checked('account', account_id)}"


def zone_set_version_key(tenant: str, campaign: str, account_id: str) -> str:
    """The last version number given to an account's zone sets (integer).

    TTL `ZONE_SET_VERSION_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:zs_ver:{_checked('account', account_id)}"


def zone_set_scan_pattern(tenant: str, campaign: str) -> str:
    """SCAN MATCH pattern for every current zone set key of a campaign.

    Matches `...:zs:<account>` only, not `zs_prev` or `zs_ver`: ids hold no glob characters.
    """
    return f"{campaign_prefix(tenant, campaign)}:zs:*"


def overview_ids_key(tenant: str, campaign: str) -> str:
    """The campaign overview's accounts: a sorted set of account ids, every score 0, so it is
    read in id order by ZRANGEBYLEX (prefix search, cursor paging; `welcomemat.zones.overview`).

    Written in the same transaction or script as the zone set it lists. TTL `OVERVIEW_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:ov:ids"


def overview_rows_key(tenant: str, campaign: str) -> str:
    """Hash of account id -> the overview's compact row of its current zone set (JSON).

    TTL `OVERVIEW_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:ov:rows"


def overview_tags_key(tenant: str, campaign: str) -> str:
    """The overview's filters: a sorted set of `<field>=<value>/<account id>`, every score 0, so the
    accounts of one filter value are one ZRANGEBYLEX range, in id order. TTL `OVERVIEW_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:ov:tags"


def overview_counts_key(tenant: str, campaign: str) -> str:
    """Hash of `<field>=<value>` -> how many accounts the overview lists with it, and `@built`
    once the index holds every zone set published before it existed. TTL `OVERVIEW_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:ov:counts"


def overview_rebuild_key(tenant: str, campaign: str) -> str:
    """Marker that a rebuild of the campaign overview's index is under way (SET NX: one at a time).

    TTL `OVERVIEW_REBUILD_TTL_S`; deleted when the rebuild ends.
    """
    return f"{campaign_prefix(tenant, campaign)}:ov:rebuilding"


def changes_channel(tenant: str, campaign: str) -> str:
    """Pub/sub channel announcing zone set changes of a campaign (not a key: no TTL)."""
    return f"{campaign_prefix(tenant, campaign)}:changes"


def journal_key(tenant: str, campaign: str) -> str:
    """The campaign's publish journal: a hash, account id -> JSON of its last state.

    TTL `JOURNAL_TTL_S`, refreshed on write.
    """
    return f"{campaign_prefix(tenant, campaign)}:journal"


def guidelines_key(tenant: str, campaign: str) -> str:
    """The campaign's guideline versions: a hash, version -> JSON of its change record
    (`welcomemat.campaign.guidelines.GuidelineChange`), and `@active` -> the active version.

    TTL `GUIDELINES_TTL_S`, refreshed on write.
    """
    return f"{campaign_prefix(tenant, campaign)}:guidelines"


def campaign_config_key(tenant: str, campaign: str) -> str:
    """The campaign contract and zone contracts as last published (JSON). TTL `CAMPAIGN_TTL_S`."""
    return f"{campaign_prefix(tenant, campaign)}:config"


def conversions_key(tenant: str, campaign: str) -> str:
    """Hash of conversion id -> JSON of a CRM outcome (type, account, the arm it was in).

    Written with HSETNX (idempotent per conversion id). TTL `CONVERSIONS_TTL_S`, refreshed on write.
    """
    return f"{campaign_prefix(tenant, campaign)}:conversions"


def campaigns_index_key() -> str:
    """Hash of `tenant/campaign` -> campaign id: every published campaign, and its tenants.

    Written after a publish claimed its id (`campaign_owner_key`, which says whose the id
    is); read to list the tenants with campaigns, and as the owner of an id published before
    owners were recorded. One small key outside any tenant's slot (single-key commands only).
    TTL `CAMPAIGN_TTL_S`, refreshed on every publish.
    """
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:campaigns"


def campaign_owner_key(campaign: str) -> str:
    """The tenant that owns a campaign id in this deployment (`welcomemat.campaign.owner`).

    Claimed at the id's first publish, refreshed by each publish of its owner, never handed
    to another tenant while it lives. One small key outside any tenant's slot (single-key
    commands only). TTL `CAMPAIGN_OWNER_TTL_S`.
    """
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:campaign_owner:{_checked('campaign', campaign)}"


def ip_ranges_key(tenant: str, campaign: str) -> str:
    """Hash of account id -> JSON list of the account's CIDRs (`["203.0.113.0/24", "2001:db8::/48"]`).

    What the renderer's IP-range identification index is built from (reloaded on a campaign's
    change announcements and every minute). Merged account by account by each run
    (`precompute.ip_range_map`: the run's accounts replace their own fields, the others stay),
    watched and written in the same transaction as the campaign config. TTL `CAMPAIGN_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:ip_ranges"


def explain_key(tenant: str, campaign: str, account_id: str) -> str:
    """Why an account's zone set is what it is (identity, fact decisions, checks), JSON.

    Internal: never served publicly. TTL `ZONE_SET_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:explain:{_checked('account', account_id)}"


def review_queue_key(tenant: str, campaign: str) -> str:
    """Sorted set of account ids waiting for a person (score: queued at, Unix seconds).

    TTL `CAMPAIGN_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:review"


def review_held_key(tenant: str, campaign: str) -> str:
    """Sorted set of account ids with a held draft (`welcomemat.zones.held`) a person may approve.

    Score: queued at, Unix seconds. The drafts themselves are in the explain records.
    TTL `CAMPAIGN_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:review_held"


def review_sample_key(tenant: str, campaign: str) -> str:
    """Sorted set of published account ids sampled for a person to read. TTL `CAMPAIGN_TTL_S`."""
    return f"{campaign_prefix(tenant, campaign)}:review_sample"


def run_report_key(tenant: str, campaign: str) -> str:
    """The last precompute run's report (JSON). TTL `CAMPAIGN_TTL_S`."""
    return f"{campaign_prefix(tenant, campaign)}:last_run"


def events_stream_key(tenant: str) -> str:
    """The tenant's engagement event stream. TTL `EVENTS_STREAM_TTL_S`, refreshed per event."""
    return f"{tenant_prefix(tenant)}:events"


def events_held_key(tenant: str) -> str:
    """How many events the tenant's stream holds (an entry holds a batch of them): what the
    renderer's write trims the stream by. Same slot and TTL as the stream."""
    return f"{tenant_prefix(tenant)}:events:held"


def _view_part(view_id: str, zone: str | None) -> str:
    """`<view id>:v` for the view itself, `<view id>:c:<zone>` for a click on a zone."""
    if not is_view_id(view_id):
        raise ValueError(f"invalid view id {view_id!r} for a Redis key: use 1-64 of letters, digits, '_-'")
    return f"{view_id}:v" if zone is None else f"{view_id}:c:{_checked('zone', zone)}"


def beacon_view_key(tenant: str, view_id: str, zone: str | None) -> str:
    """Marker that a view token's beacon was written to the stream: its view (`zone` None) or a
    click on `zone` (SET NX by the renderers' event writer: a view is written once, a click once
    per zone, however often and from wherever the token is replayed). TTL `BEACON_EVENT_TTL_S`.
    """
    return f"{tenant_prefix(tenant)}:beacon:{_view_part(view_id, zone)}"


def account_record_key(tenant: str, account_id: str) -> str:
    """An account's shared record (facts used, engagement summary).

    TTL `ACCOUNT_RECORD_TTL_S`, refreshed on write.
    """
    return f"{tenant_prefix(tenant)}:acct:{_checked('account', account_id)}"


def account_record_scan_pattern(tenant: str) -> str:
    """SCAN MATCH pattern for every account record of a tenant (ids hold no glob characters)."""
    return f"{tenant_prefix(tenant)}:acct:*"


def audit_stream_key(tenant: str) -> str:
    """The tenant's audit log: a stream, one entry per admin or review action (`welcomemat.records.audit`).

    Never trimmed. TTL `AUDIT_TTL_S`, refreshed on every entry.
    """
    return f"{tenant_prefix(tenant)}:audit"


def audit_stream_scan_pattern() -> str:
    """SCAN MATCH pattern for every tenant's audit log (`wm:1:{<tenant>}:audit`): the tenant is
    between the braces (ids hold none, nor glob characters)."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:{{*}}:audit"


def credential_fingerprints_key() -> str:
    """The fingerprints of the signing keys and bearer tokens renderers last started with
    (`welcomemat.security.credential_changes`): JSON, one key outside any tenant's slot. TTL
    `AUDIT_TTL_S`, refreshed at every renderer start."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:credentials"


def global_audit_stream_key() -> str:
    """The audit log of actions that concern no one tenant (signing-key rotation).

    One key outside any tenant's slot. TTL `AUDIT_TTL_S`, refreshed on every entry.
    """
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:audit"


def erasures_key(tenant: str) -> str:
    """The tenant's erasure list: a hash, one field per erased account, contact or e-mail address
    (`welcomemat.records.erasure`): when its tokens stop counting and whether precompute skips it.

    Read by the renderer (revocation), the engagement fold (events older than an erasure are
    not folded) and precompute (suppression). TTL `ERASURES_TTL_S`, refreshed on every write.
    """
    return f"{tenant_prefix(tenant)}:erased"


def view_seen_key(tenant: str, view_id: str, zone: str | None) -> str:
    """Marker that a view (`zone` None) or a click of that view on `zone` was folded into the
    account records: a view counts once, a click once per view and zone, however many events
    (replays, older events in the stream) carry it. Written in the same atomic step as the
    fold. TTL `EVENT_SEEN_TTL_S`.
    """
    return f"{tenant_prefix(tenant)}:vseen:{_view_part(view_id, zone)}"


def event_seen_key(tenant: str, event_id: str) -> str:
    """Marker that an event was folded into the account records (idempotent sync).

    Written in the same atomic step as the fold. TTL `EVENT_SEEN_TTL_S`.
    """
    return f"{tenant_prefix(tenant)}:seen:{_checked('event', event_id)}"


def events_dead_letter_key(tenant: str) -> str:
    """Events `welcomemat sync` gave up on after too many deliveries (a stream, with the reason).

    TTL `DEAD_LETTER_TTL_S`, refreshed on every write.
    """
    return f"{tenant_prefix(tenant)}:events_dead"


def webhook_outbox_key(tenant: str) -> str:
    """CRM changes waiting for the webhook: a stream, one entry per (account, record revision).

    Read through `WEBHOOK_CONSUMER_GROUP`; entries are deleted once delivered. TTL
    `WEBHOOK_OUTBOX_TTL_S`, refreshed on every write.
    """
    return f"{tenant_prefix(tenant)}:crm_outbox"


def seller_alert_sent_key(tenant: str, campaign: str, account_id: str, day: str) -> str:
    """Marker that a seller alert was queued for an account's engagement in a campaign on a day
    (`YYYY-MM-DD`, UTC): checked and set by `welcomemat sync` in the one script that queues the
    alert, so any number of sync processes send one alert per account, campaign and day.

    In the tenant's slot, with the alert outbox. TTL `SELLER_ALERT_SENT_TTL_S`.
    """
    return (
        f"{tenant_prefix(tenant)}:alerted:{_checked('campaign', campaign)}:"
        f"{_checked('account', account_id)}:{_checked('day', day)}"
    )


def seller_alert_sent_scan_pattern(tenant: str, account_id: str) -> str:
    """SCAN MATCH pattern for every alert marker of one account (any campaign, any day)."""
    return f"{tenant_prefix(tenant)}:alerted:*:{_checked('account', account_id)}:*"


def seller_alert_outbox_key(tenant: str) -> str:
    """Seller alerts waiting for delivery: a stream, one entry per (alert, destination).

    Read through `SELLER_ALERTS_CONSUMER_GROUP`; entries are deleted once delivered and
    dead-lettered after too many failed deliveries. TTL `SELLER_ALERT_OUTBOX_TTL_S`, refreshed
    on every write.
    """
    return f"{tenant_prefix(tenant)}:alert_outbox"


def seller_alert_dead_letter_key(tenant: str) -> str:
    """Seller alerts given up on after too many failed deliveries (a stream, with the reason).

    TTL `DEAD_LETTER_TTL_S`, refreshed on every write.
    """
    return f"{tenant_prefix(tenant)}:alerts_dead"


def work_stream_key(tenant: str, campaign: str) -> str:
    """The campaign's precompute work: a stream, one entry per chunk of accounts of a run.

    Read through the consumer group `WORK_CONSUMER_GROUP`; entries are deleted once
    acknowledged. TTL `WORK_STREAM_TTL_S`, refreshed on every write.
    """
    return f"{campaign_prefix(tenant, campaign)}:work"


def dead_letter_stream_key(tenant: str, campaign: str) -> str:
    """Work entries given up on after too many deliveries (a stream, with the reason).

    TTL `DEAD_LETTER_TTL_S`, refreshed on every write.
    """
    return f"{campaign_prefix(tenant, campaign)}:work_dead"


def run_key(tenant: str, campaign: str, run_id: str) -> str:
    """A distributed run: a hash of its record (JSON), status and progress counters.

    TTL `RUN_TTL_S`, refreshed on every count.
    """
    return f"{campaign_prefix(tenant, campaign)}:run:{_checked('run', run_id)}"


def run_failures_key(tenant: str, campaign: str, run_id: str) -> str:
    """Hash of account id -> why it failed in a distributed run. TTL `RUN_TTL_S`."""
    return f"{campaign_prefix(tenant, campaign)}:run:{_checked('run', run_id)}:failed"


def run_companies_key(tenant: str, campaign: str, run_id: str) -> str:
    """Every account's short name in a run (JSON list), for the wrong-company check.

    A worker sees one chunk, but must check a zone against every company of the run, as a
    local run does. TTL `RUN_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:run:{_checked('run', run_id)}:companies"


def run_sample_key(tenant: str, campaign: str, run_id: str) -> str:
    """Set of `stratum<TAB>account id` published in a run: the review sample is drawn from it.

    TTL `RUN_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:run:{_checked('run', run_id)}:sample"


def runs_key(tenant: str, campaign: str) -> str:
    """Sorted set of the campaign's distributed run ids (score: enqueued at, Unix seconds).

    TTL `RUN_TTL_S`.
    """
    return f"{campaign_prefix(tenant, campaign)}:runs"


def active_runs_key() -> str:
    """Hash of `tenant/campaign/run id` -> enqueued at (ISO 8601): runs workers should consume.

    One small key outside any tenant's slot (single-key commands only), so a worker started
    without `--campaign` finds every campaign's stream. TTL `RUN_TTL_S`, refreshed on write.
    """
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:active_runs"


def _digest(kind: str, value: str) -> str:
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"invalid {kind} for a Redis key: 64 lowercase hex characters (a SHA-256) expected")
    return value


def admin_invite_key(invite_id: str) -> str:
    """A pending admin invite (JSON: e-mail, tenant, role, who invited), read and deleted in one
    step when it is used (`welcomemat.security.people`). One key outside any tenant's slot.
    TTL `ADMIN_INVITE_TTL_S`."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:admin_invite:{_checked('invite', invite_id)}"


def admin_session_key(session_hash: str) -> str:
    """An admin session (JSON: e-mail, tenant, CSRF token, started and last seen), under the
    SHA-256 of its id, never the id (`welcomemat.security.admin_sessions`). TTL: what is left of
    its idle or absolute timeout, whichever ends first; refreshed at each request."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:admin_session:{_digest('session hash', session_hash)}"


def admin_person_sessions_key(person: str) -> str:
    """Set of the session hashes of one person (`person`: the SHA-256 of the e-mail address), so
    that `welcomemat admin revoke` ends them all. In the person's slot, with their grants: both
    are written in one transaction. TTL `ADMIN_SESSIONS_TTL_S`, refreshed at each
    sign-in."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:{{admin:{_digest('person', person)}}}:sessions"


def admin_grants_key(person: str) -> str:
    """Hash of tenant -> role of one person (`person`: the SHA-256 of the e-mail address).
    TTL `ADMIN_GRANTS_TTL_S`, refreshed at each sign-in."""
    return f"{KEY_PREFIX}:{KEY_SCHEMA_VERSION}:{{admin:{_digest('person', person)}}}:grants"
