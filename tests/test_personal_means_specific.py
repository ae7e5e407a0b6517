"""Personal means specific: a line that uses none of its facts' specifics is segment copy everywhere.

Two accounts precomputed with the example campaign and the offline composer: Dymaxa, whose
headline names its Series A, and Pelto, whose only trusted fact is a new CRO. Pelto's
hero_support pattern ("A new revenue leader usually means new sellers ...") names nothing
of the fact, its proof is a library proof point and its CTA an approved label: every zone
passes every check, none is personal. `explain`, QA, the sequencer export, the results
page and `report lift --by rung` must all say so, each reading it the way it does in
production.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from outbound.export import export_rows
from precompute.explain import format_explain
from precompute.qa import run_qa
from tests.example_accounts import precompute_offline
from tests.outbound.test_export import link_for
from tests.precompute.test_pipeline import NOW, dymaxa
from tests.server.conftest import BASE_URL, CAMPAIGN, TENANT, example_inputs, renderer_app, renderer_settings
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.view import load_campaign_view
from welcomemat.lift.groups import LiftDimension, campaign_grouped_report
from welcomemat.zones.review import show
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet, ZoneSetMode

ADMIN = "admin-token-for-specific-0123456789"
PELTO = "acct_pelto"
DYMAXA = "acct_dymaxa"


def pelto() -> dict[str, Any]:
    """A SaaS account whose only trusted fact is a new Chief Revenue Officer, five days old."""
    return {
        "account_id": PELTO,
        "name": "Pelto Oy",
        "domain": "pelto.fi",
        "segment": "saas-mid",
        "tier": 2,
        "country": "FI",
        "city": "Helsinki",
        "contacts": [{"contact_id": "c_aino", "email": "aino@pelto.fi", "first_name": "Aino"}],
        "facts": [
            {
                "id": "pelto-cro",
                "type": "leadership",
                "subject": "Pelto",
                "statement": "Pelto appointed Ines de Vries as Chief Revenue Officer",
                "person": "Ines de Vries",
                "source_url": "https://pelto.fi/news/new-cro",
                "published_at": (NOW.date() - timedelta(days=5)).isoformat(),
                "confidence": "high",
                "surfaces": ["web", "email", "seller"],
            }
        ],
    }


@pytest.fixture
def published(tmp_path: Path, redis_client: redis.Redis) -> dict[str, ZoneSet]:
    assert {assign_arm(TENANT, CAMPAIGN, a, 0.10) for a in (PELTO, DYMAXA)} == {Arm.PERSONAL}
    path = tmp_path / "accounts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (dymaxa(NOW.date(), tier=2), pelto())) + "\n")
    precompute_offline(redis_client, path, now=NOW)
    store = ZoneSetStore(redis_client)
    sets = {a: store.get(TENANT, CAMPAIGN, a) for a in (PELTO, DYMAXA)}
    assert all(sets.values())
    return {a: z for a, z in sets.items() if z is not None}


def test_the_zone_set_stores_generic_lines_on_the_segment_rung_with_their_citations(
    published: dict[str, ZoneSet],
) -> None:
    zones = {z.zone_id: z for z in published[PELTO].zones}
    support = zones["hero_support"]
    assert support.text.startswith("A new revenue leader usually means new sellers")
    assert (support.rung, support.reason) == (Rung.SEGMENT, "not_specific:leadership")
    assert [f.fact_id for f in support.facts] == ["pelto-cro"]  # kept for the audit and its channels
    assert (zones["proof"].rung, zones["proof"].reason) == (Rung.SEGMENT, "not_specific:library")
    assert (zones["cta"].rung, zones["cta"].reason) == (Rung.SEGMENT, "not_specific:leadership")
    assert published[PELTO].mode is ZoneSetMode.FALLBACK
    # The line was chosen because of the fact: the set still ends when the fact does.
    ends = published[PELTO].valid_until
    assert ends is not None and ends.date() == NOW.date() - timedelta(days=5) + timedelta(days=90)
    # Dymaxa's headline names its round: personal; its CTA label does not: segment.
    dymaxa_zones = {z.zone_id: z for z in published[DYMAXA].zones}
    assert dymaxa_zones["hero_headline"].rung is Rung.PERSONAL
    assert "Series A" in dymaxa_zones["hero_headline"].text
    assert (dymaxa_zones["cta"].rung, dymaxa_zones["cta"].reason) == (Rung.SEGMENT, "not_specific:funding")
    assert published[DYMAXA].mode is ZoneSetMode.DEGRADED


def test_explain_shows_segment_copy_and_why(redis_client: redis.Redis, published: dict[str, ZoneSet]) -> None:
    record = show(redis_client, TENANT, CAMPAIGN, PELTO)
    assert record is not None
    by_zone = {z["zone_id"]: z for z in record["zones"]}
    assert (by_zone["hero_support"]["rung"], by_zone["hero_support"]["reason"]) == (
        "segment",
        "not_specific:leadership",
    )
    assert record["mode"] == "fallback"
    text = format_explain(record)
    assert "hero_support: segment (not_specific:leadership) cites pelto-cro" in text
    assert "why: a draft that passed every check but uses no specific of a fact it cites" in text


def test_qa_counts_them_as_segment_copy_and_the_account_in_fallback(
    redis_client: redis.Redis, published: dict[str, ZoneSet]
) -> None:
    campaign, zones = example_inputs()
    report = run_qa(ZoneSetStore(redis_client), campaign, zones, now=NOW)
    personal = sum(1 for z in published[DYMAXA].zones if z.rung is Rung.PERSONAL)
    assert report.zones_by_rung == {"personal": personal, "segment": 10 - personal}
    assert report.by_mode == {"fallback": 1, "degraded": 1}
    assert report.fallback_rate == 0.5
    assert report.fallback_reasons["not_specific:leadership"] == 2
    assert report.fallback_reasons["not_specific:library"] == 1
    # A not-specific draft passed every check: an attempt, not a failure.
    assert (report.check_failed, report.check_failure_rate) == (0, 0.0)
    assert report.personal_attempts == 10 - sum(
        1 for zs in published.values() for z in zs.zones if z.reason.startswith("no_")
    )
    sampled = {s.account_id: {z.zone_id: z.rung for z in s.zones} for s in report.sample}
    assert set(sampled[PELTO].values()) == {"segment"}


def test_the_export_row_is_segment_copy_without_a_fact(
    redis_client: redis.Redis, published: dict[str, ZoneSet]
) -> None:
    _, rows = export_rows(redis_client, load_campaign_view(redis_client, TENANT, CAMPAIGN), link_for, now=NOW)
    by_account = {row["account_id"]: row for row in rows}
    row = by_account[PELTO]
    assert (row["arm"], row["status"], row["rung"]) == ("personal", "ok", "segment")
    assert (row["fact"], row["fact_url"], row["fact_date"]) == ("", "", "")
    assert row["hero_support"].startswith("A new revenue leader usually means new sellers")
    dymaxa_row = by_account[DYMAXA]
    assert (dymaxa_row["rung"], dymaxa_row["fact"]) == ("personal", "Dymaxa raised a Series A")


def test_the_results_page_counts_them_as_segment_copy(
    redis_client: redis.Redis, published: dict[str, ZoneSet]
) -> None:
    app = renderer_app(renderer_settings(admin_token=ADMIN), redis_client=redis_client, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL) as client:
        response = client.get(
            f"/admin/results/{CAMPAIGN}",
            params={"format": "json"},
            headers={"authorization": f"Bearer {ADMIN}"},
        )
    assert response.status_code == 200, response.text
    report = response.json()
    personal = sum(1 for z in published[DYMAXA].zones if z.rung is Rung.PERSONAL)
    assert report["rung_mix"] == {"personal": personal, "segment": 10 - personal, "default": 0}
    assert report["fallback_reasons"]["not_specific"] == 4  # Pelto's three, Dymaxa's CTA


def test_lift_by_rung_puts_the_account_in_the_segment_group(
    redis_client: redis.Redis, published: dict[str, ZoneSet]
) -> None:
    view = load_campaign_view(redis_client, TENANT, CAMPAIGN)
    grouped = campaign_grouped_report(redis_client, view, LiftDimension.RUNG, now=NOW)
    accounts = {g.group: g.report.arm(Arm.PERSONAL).accounts for g in grouped.groups}
    assert accounts == {"personal": 1, "segment": 1}
    by_fact_type = campaign_grouped_report(redis_client, view, LiftDimension.FACT_TYPE, now=NOW)
    assert "leadership" not in {g.group for g in by_fact_type.groups}  # no personal zone to credit
