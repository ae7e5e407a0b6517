"""Readers never crash on a date already stored (issue 25, finding 3).

Before the bound (`welcomemat.bounded_time`), `POST /v1/conversions` stored
`occurred_at: 9999-12-31T23:00:00-14:00` (year 10000 in UTC) with 202, and `delivered import`
stored marks at such times; from then on the results page answered 500 (HTML, JSON, CSV) and
`welcomemat explain` exited with a traceback. The door now refuses them; what an older version
stored (written straight into Redis here) costs only itself: skipped and said, or shown as an
unreadable time, never the page or the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from cli.delivered_import import import_delivered
from outbound.export import export_rows
from outbound.sync import Syncer, SyncOptions
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.outbound.test_export import link_for
from tests.outbound.test_export import run as run_cli
from tests.server.admin.results_data import NOW, Population, publish_results_campaign
from tests.server.conftest import BASE_URL, CAMPAIGN, TENANT, renderer_app, renderer_settings
from welcomemat import keys
from welcomemat.campaign.view import load_campaign_view
from welcomemat.errors import StoredValueError
from welcomemat.records.account_records import read_account_record
from welcomemat.records.contact_workflow import ContactState, contact_workflows, mark_field
from welcomemat.records.conversions import iter_conversions
from welcomemat.zones.store import ZoneSetStore

ADMIN = "admin-token-for-stored-dates-0123456789"
CRM = "crm-token-for-stored-dates-0123456789ab"

# occurred_at values an older version stored: past year 9999 or before year 1 once in UTC,
# outside 2000-2100, naive, not a date. Each is written as that version wrote it.
OLD_OCCURRED_AT = {
    "old-year-10000": "9999-12-31T23:00:00-14:00",
    "old-year-0": "0001-01-01T00:00:00+14:00",
    "old-year-9999": "9999-12-31T23:59:59Z",
    "old-year-1": "0001-01-01T00:00:00Z",
    "old-1999": "1999-12-31T23:59:59+01:00",
    "old-naive": "2026-11-28T10:00:00",
    "old-not-a-date": "soon",
}
# Unix ms an older `delivered import` stored (year 10000, year 0, far past, beyond any clock)
OLD_MARK_MS = (253_402_387_200_000, -62_135_646_000_000, -1, 10**30)


def old_conversion(account: str, conversion_id: str, occurred_at: str) -> str:
    """A conversion as an older version stored it (its `StoredConversion` JSON, offset as sent)."""
    return json.dumps(
        {
            "tenant": TENANT,
            "campaign": CAMPAIGN,
            "account_id": account,
            "type": "meeting_booked",
            "conversion_id": conversion_id,
            "occurred_at": occurred_at,
            "value": None,
            "arm": "personal",
            "received_at": "2026-11-28T10:00:00Z",
        }
    )


def store_old_conversions(client: redis.Redis, account: str) -> None:
    key = keys.conversions_key(TENANT, CAMPAIGN)
    for conversion_id, occurred_at in OLD_OCCURRED_AT.items():
        client.hset(key, conversion_id, old_conversion(account, conversion_id, occurred_at))


def without_generated_at(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_generated_at(v) for k, v in value.items() if k != "generated_at"}
    if isinstance(value, list):
        return [without_generated_at(v) for v in value]
    return value


# -- the results page ----------------------------------------------------------------------------


@pytest.fixture
def population(redis_client: redis.Redis) -> Population:
    return publish_results_campaign(redis_client)


@pytest.fixture
def renderer(redis_client: redis.Redis, population: Population) -> Iterator[TestClient]:
    settings = renderer_settings(admin_token=ADMIN, crm_token=CRM)
    app = renderer_app(settings, redis_client=redis_client, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        yield client


def results(client: TestClient, fmt: str) -> Any:
    response = client.get(
        f"/admin/results/{CAMPAIGN}", params={"format": fmt}, headers={"authorization": f"Bearer {ADMIN}"}
    )
    assert response.status_code == 200, response.text[:500]
    return response


@pytest.mark.parametrize("occurred_at", ["9999-12-31T23:00:00-14:00", "0001-01-01T00:00:00+14:00"])
def test_the_issues_conversion_is_refused_at_the_door_and_the_results_page_stays_up(
    renderer: TestClient, population: Population, occurred_at: str
) -> None:
    body = {
        "campaign": CAMPAIGN,
        "account_id": population.personal[0],
        "type": "meeting_booked",
        "conversion_id": "edge-of-time",
        "occurred_at": occurred_at,
    }
    posted = renderer.post("/v1/conversions", json=body, headers={"authorization": f"Bearer {CRM}"})
    for fmt in ("html", "json", "csv"):
        results(renderer, fmt)  # was 500 once the conversion was stored
    assert posted.status_code == 400  # was 202
    assert "field 'occurred_at'" in posted.json()["error"]
    assert "2000-01-01T00:00:00Z and 2100-12-31T23:59:59Z" in posted.json()["error"]


def test_conversions_stored_before_the_bound_cost_only_themselves_on_the_results_page(
    renderer: TestClient, redis_client: redis.Redis, population: Population
) -> None:
    before_json = without_generated_at(results(renderer, "json").json())
    before_csv = results(renderer, "csv").text
    store_old_conversions(redis_client, population.personal[0])
    redis_client.hset(keys.conversions_key(TENANT, CAMPAIGN), "old-corrupt", b"{not json")

    # The same numbers as before: each bad value is skipped, never counted, never a 500.
    as_json, as_csv = results(renderer, "json"), results(renderer, "csv")
    assert without_generated_at(as_json.json()) == before_json
    assert as_csv.text == before_csv
    skipped = str(len(OLD_OCCURRED_AT) + 1)
    assert as_json.headers["x-welcomemat-skipped"] == as_csv.headers["x-welcomemat-skipped"] == skipped
    page = results(renderer, "html").text
    for conversion_id in (*OLD_OCCURRED_AT, "old-corrupt"):
        assert conversion_id in page  # each one said, in the page's problems
    assert "2000-01-01T00:00:00Z" in page  # ...with why


def test_iter_conversions_skips_and_names_each_bad_value_or_raises_without_a_sink(
    redis_client: redis.Redis,
) -> None:
    store_old_conversions(redis_client, "acct_00001")
    good = json.loads(old_conversion("acct_00001", "good", "2026-11-28T10:00:00+01:00"))
    redis_client.hset(keys.conversions_key(TENANT, CAMPAIGN), "good", json.dumps(good))
    problems: list[StoredValueError] = []
    found = list(iter_conversions(redis_client, TENANT, CAMPAIGN, problems=problems))
    assert [c.conversion_id for c in found] == ["good"]
    assert found[0].occurred_at == datetime(2026, 11, 28, 9, tzinfo=UTC)
    assert sorted(p.key.rsplit(" ", 1)[1] for p in problems) == sorted(OLD_OCCURRED_AT)
    with pytest.raises(StoredValueError):
        list(iter_conversions(redis_client, TENANT, CAMPAIGN))


# -- the lift report, explain, export, the workflow ----------------------------------------------


def test_report_lift_skips_and_says_each_bad_conversion(
    redis_client: redis.Redis, population: Population, redis_url: str, tmp_path: Path
) -> None:
    store_old_conversions(redis_client, population.personal[0])
    result = run_cli("report", "lift", CAMPAIGN, "--json", redis_url=redis_url, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout)["campaign"] == CAMPAIGN
    skipped = [line for line in result.stderr.splitlines() if line.startswith("welcomemat: skipped:")]
    assert len(skipped) == len(OLD_OCCURRED_AT)


@pytest.fixture
def precomputed(tmp_path: Path, redis_client: redis.Redis) -> tuple[str, str]:
    """The example campaign over 6 accounts; (an account with contacts, one of its contacts)."""
    precompute_offline(redis_client, write_example_accounts(tmp_path / "accounts.jsonl", 6))
    for key in redis_client.scan_iter(match=keys.account_record_scan_pattern(TENANT)):
        account = key.decode().rsplit(":", 1)[-1] if isinstance(key, bytes) else str(key).rsplit(":", 1)[-1]
        record = read_account_record(redis_client, TENANT, account)
        if record is not None and record.contacts:
            return record.account_id, record.contacts[0].contact_id
    raise AssertionError("no example account with a contact")


def test_delivered_import_refuses_the_issues_dates_and_explain_still_explains(
    redis_client: redis.Redis, precomputed: tuple[str, str], redis_url: str, tmp_path: Path
) -> None:
    account, contact = precomputed
    sent = tmp_path / "sent.csv"
    sent.write_text(
        "account_id,contact_id,delivered_at\n"
        f"{account},{contact},9999-12-31T23:00:00-14:00\n"
        f"{account},{contact},0001-01-01T00:00:00+14:00\n"
        f"{account},{contact},2026-03-03T08:00:00+01:00\n",
        encoding="utf-8",
    )
    report = import_delivered(redis_client, TENANT, CAMPAIGN, sent, now=NOW)
    explained = run_cli("explain", CAMPAIGN, account, redis_url=redis_url, home=tmp_path)
    assert explained.returncode == 0, explained.stderr  # was a traceback
    assert "delivered 2026-03-03T07:00:00+00:00" in explained.stdout
    assert [(p.line, p.field) for p in report.problems] == [(2, "delivered_at"), (3, "delivered_at")]
    assert all("2100-12-31T23:59:59Z" in p.message for p in report.problems)
    assert report.written == 1


@pytest.mark.parametrize("at_ms", OLD_MARK_MS)
def test_explain_shows_a_bad_stored_time_as_unreadable_and_skips_bad_conversions(
    redis_client: redis.Redis, precomputed: tuple[str, str], redis_url: str, tmp_path: Path, at_ms: int
) -> None:
    account, contact = precomputed
    record_key = keys.account_record_key(TENANT, account)
    mark = json.dumps({"first_ms": at_ms, "at_ms": at_ms, "detail": {}})
    redis_client.hset(record_key, mark_field(CAMPAIGN, contact, ContactState.DELIVERED), mark)
    redis_client.hset(record_key, f"p:{CAMPAIGN}:{contact}:first", str(at_ms))  # engaged, per the fold
    redis_client.hset(record_key, f"p:{CAMPAIGN}:{contact}:views", "1")
    store_old_conversions(redis_client, account)

    text = run_cli("explain", CAMPAIGN, account, redis_url=redis_url, home=tmp_path)
    assert text.returncode == 0, text.stderr  # was a traceback
    assert "Traceback" not in text.stderr
    line = next(x for x in text.stdout.splitlines() if x.strip().startswith(f"{contact}:"))
    assert f"delivered unreadable time ({at_ms})" in line and f"engaged unreadable time ({at_ms})" in line
    assert "precomputed 20" in line  # the rest of the contact's states still shown
    warned = [x for x in text.stderr.splitlines() if x.startswith("warning: skipped")]
    assert len(warned) == len(OLD_OCCURRED_AT)

    as_json = run_cli("explain", CAMPAIGN, account, "--json", redis_url=redis_url, home=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    states = {w["contact_id"]: w["states"] for w in json.loads(as_json.stdout)["workflow"]}[contact]
    assert states["delivered"]["at_ms"] == at_ms  # the stored value as it is, for whoever repairs it
    assert "converted" not in states  # no readable conversion


def test_export_and_the_workflow_read_past_bad_stored_dates(
    redis_client: redis.Redis, precomputed: tuple[str, str]
) -> None:
    account, contact = precomputed
    record_key = keys.account_record_key(TENANT, account)
    for state, at_ms in zip((ContactState.DELIVERED, ContactState.EXPORTED), OLD_MARK_MS, strict=False):
        mark = json.dumps({"first_ms": at_ms, "at_ms": at_ms, "detail": {}})
        redis_client.hset(record_key, mark_field(CAMPAIGN, contact, state), mark)
    store_old_conversions(redis_client, account)
    view = load_campaign_view(redis_client, TENANT, CAMPAIGN)
    summary, rows = export_rows(redis_client, view, link_for, now=NOW)
    exported = list(rows)
    assert any(r["account_id"] == account for r in exported)
    record = read_account_record(redis_client, TENANT, account)
    assert record is not None
    problems: list[StoredValueError] = []
    zone_set = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, account)
    workflows = contact_workflows(redis_client, record, CAMPAIGN, zone_set, problems=problems)
    assert len(problems) == len(OLD_OCCURRED_AT)
    states = {w.contact_id: w.states for w in workflows}[contact]
    assert states[ContactState.DELIVERED].at_ms == OLD_MARK_MS[0]
    assert ContactState.CONVERTED not in states


# -- the sync fold --------------------------------------------------------------------------------


def test_the_sync_fold_goes_on_past_events_with_times_no_clock_holds(
    redis_client: redis.Redis, precomputed: tuple[str, str]
) -> None:
    account, contact = precomputed
    stream = keys.events_stream_key(TENANT)
    good_ms = int((NOW - timedelta(hours=1)).timestamp() * 1000)
    for n, ts in enumerate(
        ("99999999999999999999", "-5", "1e308", "NaN", "253402387200000", "", "２０２６", str(good_ms))
    ):
        fields = {
            "type": "view",
            "tenant": TENANT,
            "campaign": CAMPAIGN,
            "account": account,
            "contact": contact,
            "event_id": f"ev-{n}",
            "arm": "personal",
            "ts": ts,
        }
        redis_client.xadd(stream, fields)  # type: ignore[arg-type]
    lines: list[str] = []
    Syncer(
        redis_client, SyncOptions(name="dates", tenants=(TENANT,), once=True, block_ms=50), log=lines.append
    ).run()
    record = read_account_record(redis_client, TENANT, account)
    assert record is not None
    assert record.engagement[CAMPAIGN].views >= 1  # the good event folded, whatever the others did


# -- the seller alerts ----------------------------------------------------------------------------


def test_seller_alerts_go_out_past_bad_stored_dates(redis_client: redis.Redis, tmp_path: Path) -> None:
    """Dymaxa's record holds what an older version stored (conversions and marks outside the
    years, a cited fact dated year 1) and the stream an event in year 10000: the visit an hour
    ago is still alerted, the year-10000 one is stale, nothing raises."""
    from server.engagement.events import EventType
    from tests.outbound import test_seller_alerts as alerts

    alerts.precompute(
        redis_client, write_example_accounts(tmp_path / "a.jsonl", 12, today=alerts.RUN_AT.date())
    )
    auditor = alerts.Auditor("test", alerts.Via.CLI, lambda: alerts.RUN_AT)
    assert alerts.decide(redis_client, TENANT, CAMPAIGN, alerts.TIER_1, approve=True, auditor=auditor).applied
    published = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, alerts.TIER_1)
    assert published is not None
    record_key = keys.account_record_key(TENANT, alerts.TIER_1)
    store_old_conversions(redis_client, alerts.TIER_1)
    for name, raw in redis_client.hgetall(record_key).items():
        if name.startswith(b"fact:"):  # every cited fact dated year 1, as no version would write now
            redis_client.hset(record_key, name, json.dumps({**json.loads(raw), "published_at": "0001-01-01"}))
    mark = json.dumps({"first_ms": OLD_MARK_MS[0], "at_ms": OLD_MARK_MS[0], "detail": {}})
    redis_client.hset(record_key, mark_field(CAMPAIGN, "c_joram", ContactState.DELIVERED), mark)

    now = alerts.NOW
    year_10000 = datetime(9999, 12, 31, 23, tzinfo=UTC)
    alerts.emit(
        redis_client,
        [
            alerts.event(
                EventType.VIEW,
                alerts.TIER_1,
                now - timedelta(hours=1),
                contact="c_joram",
                version=published.version,
            ),
            alerts.event(
                EventType.VIEW, alerts.TIER_1, year_10000, n=2, contact="c_joram", version=published.version
            ),
        ],
    )
    producer = alerts.sync(redis_client)
    assert producer.stats.queued == 1 and producer.stats.stale == 1
    receiver = alerts.Receiver()
    with alerts.serve(receiver) as url:
        sender = alerts.sender(redis_client, url)
        assert sender.run_pass([TENANT]) == 2  # the chat message and the CRM task
        sender.close()
    (slack,) = receiver.bodies("/slack")
    assert slack["text"].startswith("Dymaxa B.V. visited the landing page")


def test_explain_of_an_account_whose_record_does_not_decode_still_explains_the_zone_set(
    redis_client: redis.Redis, precomputed: tuple[str, str], redis_url: str, tmp_path: Path
) -> None:
    account, _ = precomputed
    record_key = keys.account_record_key(TENANT, account)
    redis_client.hset(record_key, "fact:old", json.dumps({"id": "old", "published_at": "+275760-09-13"}))
    text = run_cli("explain", CAMPAIGN, account, redis_url=redis_url, home=tmp_path)
    assert text.returncode == 0, text.stderr  # was exit 1: the whole explain lost to one value
    assert f"({account})" in text.stdout and "zones:" in text.stdout
    assert "warning: skipped" in text.stderr and record_key in text.stderr


def test_the_review_queue_shows_a_queued_time_no_clock_holds_as_unreadable(
    renderer: TestClient, redis_client: redis.Redis, population: Population
) -> None:
    scores = {
        population.personal[0]: 1e20,
        population.personal[1]: float("inf"),
        population.personal[2]: -1e15,
    }
    good = population.personal[3]
    redis_client.zadd(keys.review_queue_key(TENANT, CAMPAIGN), {**scores, good: NOW.timestamp()})
    response = renderer.get(f"/admin/review/{CAMPAIGN}", headers={"authorization": f"Bearer {ADMIN}"})
    assert response.status_code == 200, response.text[:300]  # was 500 (year past 9999)
    shown = {e["account_id"]: e["queued_at"] for e in response.json()["items"]}
    assert all(shown[a].startswith("unreadable time") for a in scores)
    assert shown[good] == NOW.isoformat(timespec="seconds")
