"""Seller alerts end to end: a real precompute, events through the renderer's writer, the real sync
fold, real Redis, and a real HTTP receiver on a loopback port standing in for Slack and the CRM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from cli.sync_command import alert_channel
from outbound.alert_sender import EVENT_HEADER, AlertChannel, AlertSender
from outbound.seller_alerts import SellerAlertProducer, alert_day
from outbound.sync import Syncer, SyncOptions
from outbound.webhook import (
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookConfig,
    verify_signature,
)
from server.engagement.events import EngagementEvent, EventType
from tests.corpora import REPO_ROOT
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.outbound.http_receiver import serve_http
from tests.outbound.sync_helpers import emit
from welcomemat import keys
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.sections import SellerAlerts
from welcomemat.errors import ConfigError
from welcomemat.records.audit import Auditor, Via
from welcomemat.records.subject_requests import Subject, erase, export_subject
from welcomemat.settings import Settings
from welcomemat.surfaces import Surface
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.review import decide
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet

SECRET = "k" * 40
TENANT, CAMPAIGN = "acme", "q4-pipeline"
# The day precompute runs on, and the sync's clock a few hours later (never today's date).
RUN_AT = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
NOW = RUN_AT + timedelta(hours=6)
PUBLIC_URL = "https://go.acmerevenue.example"
TIER_1, TIER_1_UNAPPROVED, TIER_3 = "acct_dymaxa", "acct_00001", "acct_00002"
WELCOMEMAT = str(Path(sys.executable).with_name("welcomemat"))


@dataclass
class Receiver:
    """Slack at /slack, the CRM at /crm: answers `fail_first` requests (then `fail_always`) with 500."""

    fail_first: int = 0
    fail_always: bool = False
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    accepted: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            self.requests.append((path, headers, body))
            if self.fail_always or len(self.requests) <= self.fail_first:
                return 500
            self.accepted.append((path, headers, body))
            return 200

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(body) for p, _, body in self.accepted if p == path]


def serve(receiver: Receiver) -> AbstractContextManager[str]:
    return serve_http(lambda path, headers, body: (receiver.handle(path, dict(headers.items()), body), {}))


def precompute(client: redis.Redis, accounts: Path, campaign: Campaign | None = None) -> None:
    """Publish the example campaign (or `campaign`, its edit) for `accounts` with the offline writer."""
    precompute_offline(client, accounts, campaign, now=RUN_AT)


@pytest.fixture
def published(tmp_path: Path, redis_client: redis.Redis) -> ZoneSet:
    """The example campaign (with `seller_alerts`) published for 12 accounts; Dymaxa (tier 1) approved.
    Returns Dymaxa's zone set."""
    precompute(redis_client, write_example_accounts(tmp_path / "accounts.jsonl", 12, today=RUN_AT.date()))
    outcome = decide(
        redis_client, TENANT, CAMPAIGN, TIER_1, approve=True, auditor=Auditor("test", Via.CLI, lambda: RUN_AT)
    )
    assert outcome.applied, outcome.detail
    zone_set = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, TIER_1)
    assert zone_set is not None and any(z.rung is Rung.PERSONAL and z.facts for z in zone_set.zones)
    return zone_set


def event(
    kind: EventType,
    account: str,
    at: datetime,
    *,
    n: int = 0,
    contact: str | None = None,
    version: int | None = None,
    zone: str | None = None,
    arm: str = "personal",
    page: str | None = None,
) -> EngagementEvent:
    return EngagementEvent(
        type=kind,
        tenant=TENANT,
        campaign=CAMPAIGN,
        view_id=f"v{n}",
        ts_ms=int(at.timestamp() * 1000),
        arm=arm,
        account=account,
        contact=contact,
        zone=zone,
        rung="personal" if version is not None else "segment",
        zone_set_version=version,
        page=page,
    )


def crm_config(url: str) -> WebhookConfig:
    return WebhookConfig(
        url=f"{url}/crm",
        secret=SECRET,
        timeout_s=5.0,
        backoff_base_s=0.01,
        backoff_cap_s=0.02,
        failure_threshold=50,
    )


def channel(url: str) -> AlertChannel:
    return AlertChannel(
        url=f"{url}/slack", timeout_s=5.0, backoff_base_s=0.01, backoff_cap_s=0.02, failure_threshold=50
    )


def sender(client: redis.Redis, url: str, **options: Any) -> AlertSender:
    return AlertSender(
        client, name="a1", channel=channel(url), crm=crm_config(url), log=lambda _: None, **options
    )


def sync(client: redis.Redis, name: str = "s1", clock: datetime = NOW) -> SellerAlertProducer:
    producer = SellerAlertProducer(
        client, destinations=("slack", "crm"), public_url=PUBLIC_URL, clock=lambda: clock, log=lambda _: None
    )
    Syncer(
        client,
        SyncOptions(name=name, tenants=(TENANT,), once=True, block_ms=50, batch=7),
        log=lambda _: None,
        alerts=producer,
    ).run()
    return producer


def outbox(client: redis.Redis) -> list[dict[str, Any]]:
    return [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _, fields in client.xrange(keys.seller_alert_outbox_key(TENANT))
    ]


# -- content --------------------------------------------------------------------------------------


def test_a_tier1_visit_tells_the_seller_who_what_where_which_claim_and_the_next_step(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    at = NOW - timedelta(hours=1)
    emit(redis_client, [event(EventType.VIEW, TIER_1, at, contact="c_joram", version=published.version)])
    assert sync(redis_client).stats.queued == 1
    receiver = Receiver()
    with serve(receiver) as url:
        alerts = sender(redis_client, url)
        assert alerts.run_pass([TENANT]) == 2  # the chat message and the CRM task
        alerts.close()

    (slack,) = receiver.bodies("/slack")
    text = "\n".join(
        [slack["text"]]
        + [b["text"]["text"] for b in slack["blocks"] if "text" in b]
        + [f["text"] for b in slack["blocks"] for f in b.get("fields", [])]
        + [e["text"] for b in slack["blocks"] for e in b.get("elements", [])]
    )
    cited = next(z for z in published.zones if z.rung is Rung.PERSONAL and z.facts)
    assert (
        "*Dymaxa B.V.* (tier 1) visited <https://go.acmerevenue.example/c/q4-pipeline|the landing page>"
        in text
    )
    assert "Joram, Head of Sales, joram@dymaxa.com" in text  # who
    assert cited.text in text  # the claim they saw ...
    assert "Dymaxa raised a Series A (funding, 2026-11-26)" in text  # ... the fact behind it
    assert "<https://dymaxa.com/press/series-a|link>" in text  # ... and its source
    assert "offer the 20-minute ramp review" in text  # the campaign's next step
    assert "<https://www.acmerevenue.example/playbooks/sdr-ramp|open>" in text
    assert "acme/q4-pipeline · acct_dymaxa · 2026-11-30 13:00 UTC" in text
    assert "evidence" not in json.dumps(slack) and "confidence" not in json.dumps(slack)

    ((_, headers, raw),) = [r for r in receiver.accepted if r[0] == "/crm"]
    assert verify_signature(SECRET, headers[TIMESTAMP_HEADER], raw, headers[SIGNATURE_HEADER])
    assert headers[IDEMPOTENCY_HEADER] == "seller_task.acme.q4-pipeline.acct_dymaxa.2026-11-30"
    assert headers[EVENT_HEADER] == "seller_task"
    task = json.loads(raw)
    assert task["type"] == "seller_task" and task["account_id"] == TIER_1 and task["due_on"] == "2026-11-30"
    assert task["contact"] == {
        "contact_id": "c_joram",
        "name": "Joram",
        "email": "joram@dymaxa.com",
        "title": "Head of Sales",
    }
    assert task["action"] == "visit" and task["page_url"] == f"{PUBLIC_URL}/c/{CAMPAIGN}"
    assert task["claim"]["text"] == cited.text
    assert task["claim"]["facts"][0]["source_url"] == "https://dymaxa.com/press/series-a"
    assert task["subject"] == "Follow up: Dymaxa B.V. visited the landing page"
    assert "Next step: Call within one working day" in task["body"]
    assert redis_client.xlen(keys.seller_alert_outbox_key(TENANT)) == 0  # delivered entries leave


def test_a_qr_scan_names_the_continuation_page_and_a_click_the_call_to_action(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    emit(redis_client, [event(EventType.QR_SCAN, TIER_1, NOW - timedelta(hours=2))])
    emit(
        redis_client,
        [event(EventType.CLICK, TIER_1, NOW - timedelta(hours=30) + timedelta(hours=7), zone="cta")],
    )
    sync(redis_client)
    alerts = [json.loads(e["alert"]) for e in outbox(redis_client) if e["dest"] == "slack"]
    by_action = {a["action"]: a for a in alerts}
    scan, click = by_action["qr_scan"], by_action["cta_click"]
    assert scan["page_url"] == f"{PUBLIC_URL}/c/{CAMPAIGN}/continue" and scan["contact"] is None
    assert scan["claim"] is not None and scan["rung"] == "personal"  # the zone set served as personal
    assert click["zone"] == "cta" and click["page_id"] == "landing"
    assert {scan["day"], click["day"]} == {"2026-11-30", "2026-11-29"}  # two days: two alerts


def test_a_visit_to_the_continuation_page_is_reported_as_that_page(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    """A view names its page: a visitor who came back straight to the continuation page (a bookmark,
    the cookie a scan set) is not reported as visiting the landing page."""
    at = NOW - timedelta(hours=1)
    emit(redis_client, [event(EventType.VIEW, TIER_1, at, version=published.version, page="continuation")])
    sync(redis_client)
    (alert,) = [json.loads(e["alert"]) for e in outbox(redis_client) if e["dest"] == "slack"]
    assert alert["action"] == "visit" and alert["page_id"] == "continuation"
    assert alert["page_url"] == f"{PUBLIC_URL}/c/{CAMPAIGN}/continue"
    # What they saw is that page's first personal line, not the landing page's.
    personal = {z.zone_id for z in published.zones if z.rung is Rung.PERSONAL and z.facts}
    shown = [z for z in ("continuation_headline", "hero_support", "cta") if z in personal]
    assert shown and alert["claim"]["zone_id"] == shown[0]


def test_a_tier1_account_waiting_for_review_is_alerted_without_a_claim(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    emit(redis_client, [event(EventType.VIEW, TIER_1_UNAPPROVED, NOW - timedelta(minutes=5))])
    sync(redis_client)
    (entry, _) = outbox(redis_client)
    alert = json.loads(entry["alert"])
    assert alert["account_id"] == TIER_1_UNAPPROVED and alert["claim"] is None and alert["rung"] == "segment"
    receiver = Receiver()
    with serve(receiver) as url:
        sender(redis_client, url).run_pass([TENANT])
    (task,) = receiver.bodies("/crm")
    assert "Saw: segment copy: no account-specific claim" in task["body"]


def test_a_claim_whose_fact_is_not_cleared_for_sellers_is_not_quoted(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    # The same page, written from research cleared for the web only.
    web_only = published.model_copy(
        update={
            "input_hash": "web-only-research",
            "zones": tuple(
                zone.model_copy(
                    update={
                        "facts": tuple(f.model_copy(update={"surfaces": (Surface.WEB,)}) for f in zone.facts)
                    }
                )
                for zone in published.zones
            ),
        }
    )
    shown = ZoneSetStore(redis_client).publish(web_only).zone_set
    emit(redis_client, [event(EventType.VIEW, TIER_1, NOW - timedelta(hours=1), version=shown.version)])
    sync(redis_client)
    alert = json.loads(outbox(redis_client)[0]["alert"])
    assert alert["claim"] is None and alert["claim_withheld"] is True and alert["rung"] == "personal"
    assert "Series A" not in json.dumps(alert)


def test_accounts_of_other_tiers_and_anonymous_visits_send_nothing(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    at = NOW - timedelta(hours=1)
    emit(
        redis_client,
        [
            event(EventType.VIEW, TIER_3, at, n=1),
            event(EventType.QR_SCAN, TIER_3, at, n=2),
            event(EventType.CLICK, "acct_00003", at, n=3, zone="cta"),  # tier 2
            EngagementEvent(type=EventType.VIEW, tenant=TENANT, campaign=CAMPAIGN, view_id="v4", ts_ms=0),
        ],
    )
    producer = sync(redis_client)
    assert producer.stats.queued == 0
    assert not redis_client.exists(keys.seller_alert_outbox_key(TENANT))
    receiver = Receiver()
    with serve(receiver) as url:
        assert sender(redis_client, url).run_pass([TENANT]) == 0
    assert receiver.requests == []


# -- one per account and day ----------------------------------------------------------------------


def test_one_alert_per_account_and_day_across_two_consumers_running_at_once(
    redis_client: redis.Redis, redis_url: str, published: ZoneSet
) -> None:
    day_start = datetime(2026, 11, 30, tzinfo=UTC)
    events = [
        event(kind, TIER_1, day_start + timedelta(minutes=7 * n), n=n, contact="c_joram" if n % 2 else None)
        for n in range(60)
        for kind in (EventType.VIEW, EventType.CLICK, EventType.QR_SCAN)
    ]
    emit(redis_client, events)

    def consume(name: str) -> None:
        with redis.Redis.from_url(redis_url) as client:
            sync(client, name)

    threads = [threading.Thread(target=consume, args=(f"s{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    entries = outbox(redis_client)
    assert sorted(e["dest"] for e in entries) == ["crm", "slack"]  # one alert, once per destination
    alert = json.loads(entries[0]["alert"])
    # Whichever consumer set the day's mark first wrote it, about the earliest event of its batch.
    assert alert["day"] == "2026-11-30" and alert["occurred_at"].startswith("2026-11-30T0")
    assert redis_client.ttl(keys.seller_alert_sent_key(TENANT, CAMPAIGN, TIER_1, "2026-11-30")) > 2 * 86400

    # The same events delivered again (a consumer killed before its XACK) alert no one twice.
    emit(redis_client, events[:5])
    sync(redis_client, "s3")
    assert len(outbox(redis_client)) == 2


def test_day_boundaries_are_utc_days_of_the_event_and_stale_events_alert_no_one(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    midnight = datetime(2026, 11, 30, tzinfo=UTC)
    assert alert_day(int((midnight - timedelta(milliseconds=1)).timestamp() * 1000)) == date(2026, 11, 29)
    assert alert_day(int(midnight.timestamp() * 1000)) == date(2026, 11, 30)
    emit(
        redis_client,
        [
            event(EventType.VIEW, TIER_1, midnight - timedelta(minutes=1), n=1),
            event(EventType.VIEW, TIER_1, midnight + timedelta(minutes=1), n=2),
            event(EventType.VIEW, TIER_1_UNAPPROVED, midnight - timedelta(hours=30), n=3),  # > 24 h old
        ],
    )
    producer = sync(redis_client, clock=midnight + timedelta(hours=1))
    days = sorted(json.loads(e["alert"])["day"] for e in outbox(redis_client) if e["dest"] == "crm")
    assert days == ["2026-11-29", "2026-11-30"]
    assert producer.stats.stale == 1


def test_the_cli_sync_delivers_one_alert_with_two_processes_at_once(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, published: ZoneSet
) -> None:
    # The processes read the wall clock: the events are this UTC day's, whatever day it is.
    now = datetime.now(UTC)
    start = max(now.replace(hour=0, minute=0, second=0, microsecond=0), now - timedelta(minutes=30))
    emit(
        redis_client,
        [event(EventType.VIEW, TIER_1, start + (now - start) * n / 40, n=n) for n in range(40)]
        + [event(EventType.VIEW, TIER_3, now, n=99)],
    )
    receiver = Receiver()
    with serve(receiver) as url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "WELCOMEMAT_HOME": str(tmp_path / "home"),
            "WELCOMEMAT_ALERT_WEBHOOK_URL": f"{url}/slack",
            "WELCOMEMAT_PUBLIC_URL": PUBLIC_URL,
        }
        env.pop("WELCOMEMAT_CRM_WEBHOOK_URL", None)
        procs = [
            subprocess.Popen(
                [WELCOMEMAT, "sync", "--once", "--tenant", TENANT, "--consumer", f"p{i}", "--block-ms", "50"],
                cwd=REPO_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "seller alerts to 127.0.0.1" in err and url not in err  # the host only, never the URL
    assert len(receiver.bodies("/slack")) == 1
    assert sum("seller alerts: 1 queued" in out for out, _ in outputs) == 1


# -- delivery: retries and the dead letter --------------------------------------------------------


def test_a_receiver_failing_with_500_is_retried_until_it_accepts(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    emit(redis_client, [event(EventType.VIEW, TIER_1, NOW - timedelta(hours=1), version=published.version)])
    sync(redis_client)
    receiver = Receiver(fail_first=4)  # the first pass's three attempts, and one of the next pass
    with serve(receiver) as url:
        alerts = sender(redis_client, url)
        delivered = alerts.run_pass([TENANT])  # slack: 3 x 500, left pending; crm: 500, then 200
        assert delivered == 1 and alerts.queued([TENANT]) == 1
        assert alerts.run_pass([TENANT]) == 1  # slack again: 200
        alerts.close()
    assert len(receiver.requests) == 6 and [p for p, _, _ in receiver.accepted] == ["/crm", "/slack"]
    assert alerts.queued([TENANT]) == 0 and alerts.stats.dead_lettered == 0
    assert not redis_client.exists(keys.seller_alert_dead_letter_key(TENANT))


def test_an_alert_still_failing_after_max_deliveries_is_dead_lettered_with_the_reason(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    emit(redis_client, [event(EventType.QR_SCAN, TIER_1, NOW - timedelta(hours=1))])
    sync(redis_client)
    receiver = Receiver(fail_always=True)
    with serve(receiver) as url:
        alerts = sender(redis_client, url, max_deliveries=3)
        for _ in range(3):
            assert alerts.run_pass([TENANT]) == 0
        alerts.close()
    assert len(receiver.requests) == 2 * 3 * 3  # two destinations x three passes x three attempts
    assert alerts.stats.dead_lettered == 2 and alerts.queued([TENANT]) == 0
    dead = redis_client.xrange(keys.seller_alert_dead_letter_key(TENANT))
    assert sorted(f[b"dest"] for _, f in dead) == [b"crm", b"slack"]
    for _, fields in dead:
        assert fields[b"deliveries"] == b"3" and b"HTTP 500" in fields[b"error"]
        assert json.loads(fields[b"alert"])["account_id"] == TIER_1  # the alert is kept to read or replay
    assert redis_client.ttl(keys.seller_alert_dead_letter_key(TENANT)) > 0


# -- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/x",  # plain http off the machine
        "https://user:pass@hooks.example.com/x",
        "https://10.0.0.7/x",
        "hooks.example.com/x",
        "ftp://hooks.example.com/x",
    ],
)
def test_an_alert_webhook_url_the_gate_refuses_stops_the_sync_naming_the_variable(url: str) -> None:
    with pytest.raises(ConfigError, match="WELCOMEMAT_ALERT_WEBHOOK_URL") as caught:
        alert_channel(Settings.from_env({"WELCOMEMAT_ALERT_WEBHOOK_URL": url}))
    assert url not in str(caught.value)  # the URL may hold a secret: never echoed
    assert alert_channel(Settings.from_env({})) is None
    good = alert_channel(
        Settings.from_env({"WELCOMEMAT_ALERT_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/secret"})
    )
    assert good is not None and good.describe() == "hooks.slack.com"


# -- erasure --------------------------------------------------------------------------------------


def test_erasing_a_person_or_an_account_removes_their_alerts_and_marks(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    emit(
        redis_client,
        [
            event(EventType.VIEW, TIER_1, NOW - timedelta(hours=1), n=1, contact="c_joram"),
            event(EventType.VIEW, TIER_1_UNAPPROVED, NOW - timedelta(hours=1), n=2),
        ],
    )
    sync(redis_client)
    assert len(outbox(redis_client)) == 4
    auditor = Auditor("test", Via.CLI, lambda: NOW)
    exported = export_subject(redis_client, Subject(TENANT, TIER_1, "c_joram"), auditor=auditor)
    assert [json.loads(a["alert"])["contact"]["name"] for a in exported["seller_alerts"]] == ["Joram"] * 2
    erase(redis_client, Subject(TENANT, TIER_1, "c_joram"), auditor=auditor, reason="asked")
    assert [e["account"] for e in outbox(redis_client)] == [TIER_1_UNAPPROVED] * 2
    assert "Joram" not in json.dumps(outbox(redis_client))
    report = erase(redis_client, Subject(TENANT, TIER_1_UNAPPROVED), auditor=auditor, reason="asked")
    assert report.removed["queued seller alerts"] == 2 and report.removed["seller alert marks"] == 1
    assert outbox(redis_client) == []
    assert not list(
        redis_client.scan_iter(match=keys.seller_alert_sent_scan_pattern(TENANT, TIER_1_UNAPPROVED))
    )


def test_a_new_next_step_republishes_no_page_and_the_next_alert_carries_it(
    tmp_path: Path, redis_client: redis.Redis, published: ZoneSet
) -> None:
    campaign = load_campaign(
        REPO_ROOT / "examples" / "campaign.yaml", dict(load_zone_contracts(REPO_ROOT / "zones"))
    )
    assert campaign.seller_alerts is not None and campaign.seller_alerts.tiers == (1,)
    changed = campaign.model_copy(
        update={"seller_alerts": SellerAlerts(next_step="E-mail Joram the case study.")}
    )
    precompute(redis_client, tmp_path / "accounts.jsonl", changed)
    again = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, TIER_1)
    assert again is not None and (again.version, again.status) == (published.version, published.status)
    emit(redis_client, [event(EventType.VIEW, TIER_1, NOW - timedelta(hours=1), version=published.version)])
    sync(redis_client)
    alert = json.loads(outbox(redis_client)[0]["alert"])
    assert alert["next_step"] == "E-mail Joram the case study." and alert["next_step_url"] is None


def test_a_record_that_does_not_decode_costs_its_own_alert_and_a_broken_outbox_never_the_fold(
    redis_client: redis.Redis, published: ZoneSet
) -> None:
    redis_client.hset(keys.account_record_key(TENANT, TIER_1), "fact:broken", "{not json")
    at = NOW - timedelta(hours=1)
    emit(
        redis_client,
        [event(EventType.VIEW, TIER_1, at, n=1), event(EventType.VIEW, TIER_1_UNAPPROVED, at, n=2)],
    )
    producer = sync(redis_client)
    assert producer.stats.not_built == 1 and producer.stats.queued == 1
    assert {e["account"] for e in outbox(redis_client)} == {TIER_1_UNAPPROVED}

    # The outbox key holding another type: no alert can be queued, every event is still folded.
    redis_client.delete(keys.seller_alert_outbox_key(TENANT))
    redis_client.set(keys.seller_alert_outbox_key(TENANT), "not a stream")
    emit(redis_client, [event(EventType.QR_SCAN, "acct_00009", at, n=3)])  # tier 1, not alerted yet
    lines: list[str] = []
    syncer = Syncer(
        redis_client,
        SyncOptions(name="s2", tenants=(TENANT,), once=True, block_ms=50),
        log=lines.append,
        alerts=SellerAlertProducer(
            redis_client, destinations=("slack",), public_url=PUBLIC_URL, clock=lambda: NOW, log=lines.append
        ),
    )
    stats = syncer.run()
    assert stats.folded == 1 and stats.dead_lettered == 0
    assert any("seller alerts of this batch not made" in line for line in lines)
    # No mark was left behind: once the outbox is back, the account's next event that day alerts.
    assert not redis_client.exists(keys.seller_alert_sent_key(TENANT, CAMPAIGN, "acct_00009", "2026-11-30"))
