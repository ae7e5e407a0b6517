"""Every channel shows only what its facts allow: web, email (the export), seller (the CRM), print.

The same example population is precomputed with every fact's `surfaces` rewritten; each
channel then reads it the way it does in production and must show a personal line built
on those facts exactly when the facts allow that channel, and the fallback otherwise.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from starlette.testclient import TestClient

from outbound.export import export_rows
from outbound.sync import Syncer, SyncOptions
from outbound.webhook import crm_change
from precompute.explain import format_explain
from server.engagement.events import EngagementEvent, EventType
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.outbound.sync_helpers import emit
from tests.outbound.test_export import link_for
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    TENANT,
    renderer_app,
    renderer_settings,
)
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.view import load_campaign_view
from welcomemat.records.account_records import ShownFact, read_account_record
from welcomemat.surfaces import ALL_SURFACES, Surface, allowed_surfaces
from welcomemat.zones.published import iter_published
from welcomemat.zones.resolution import choose_variant, resolve_zones
from welcomemat.zones.review import show
from welcomemat.zones.zoneset import Rung, ZoneSet

ACCOUNTS = 24
ZONES = ("hero_headline", "hero_support", "proof", "cta", "continuation_headline")


def link(account_id: str, contact_id: str = "c_0") -> str:
    return link_for(account_id, contact_id)


def precompute_with_surfaces(client: redis.Redis, tmp_path: Path, surfaces: list[str]) -> list[ZoneSet]:
    """The example population, every fact allowed only on `surfaces`; its published zone sets."""
    source = write_example_accounts(tmp_path / "examples.jsonl", ACCOUNTS)
    lines = []
    for line in source.read_text().splitlines():
        account = json.loads(line)
        for fact in account["facts"]:
            fact["surfaces"] = surfaces
        lines.append(json.dumps(account))
    path = tmp_path / "accounts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    precompute_offline(client, path)
    return list(iter_published(client, TENANT, CAMPAIGN))


def personal_texts(client: redis.Redis, zone_sets: list[ZoneSet]) -> dict[str, dict[str, str]]:
    """Account -> zone -> text of the personal zones that cite a fact and say something the
    fallback does not, for the personal arm."""
    view = load_campaign_view(client, TENANT, CAMPAIGN)
    out: dict[str, dict[str, str]] = {}
    for z in zone_sets:
        if assign_arm(TENANT, CAMPAIGN, z.account_id, 0.10) is not Arm.PERSONAL:
            continue
        texts = {
            c.zone_id: c.text
            for c in z.zones
            if c.rung is Rung.PERSONAL
            and c.facts
            and c.text != getattr(view.fallback_zone(z.segment, c.zone_id), "text", None)
        }
        if texts:
            out[z.account_id] = texts
    return out


def web_shows(client: redis.Redis, zone_sets: list[ZoneSet]) -> dict[str, dict[str, str]]:
    """What the renderer's `/v1/zones` serves each account's personal link, zone by zone."""
    app = renderer_app(renderer_settings(), redis_client=client)
    shown: dict[str, dict[str, str]] = {}
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.9", 40000)) as http:
        for z in zone_sets:
            token = link(z.account_id).split("wm=", 1)[1]
            body = http.get("/v1/zones", params={"campaign": CAMPAIGN, "wm": token}).json()
            shown[z.account_id] = {k: v["text"] for k, v in body["zones"].items()}
    return shown


def email_shows(client: redis.Redis) -> dict[str, dict[str, str]]:
    """The export's cells per account (zones and the rep's fact columns)."""
    view = load_campaign_view(client, TENANT, CAMPAIGN)
    _, rows = export_rows(client, view, link, now=datetime.now(UTC))
    return {row["account_id"]: row for row in rows}


def seller_shows(client: redis.Redis, zone_sets: list[ZoneSet]) -> dict[str, set[str]]:
    """Fact ids in the CRM webhook body after each account's personal page was viewed."""
    events = [
        EngagementEvent(
            type=EventType.VIEW,
            tenant=TENANT,
            campaign=CAMPAIGN,
            view_id=f"v{n}",
            ts_ms=1_764_000_000_000 + n,
            arm="personal",
            account=z.account_id,
            rung="personal",
            zone_set_version=z.version,
        )
        for n, z in enumerate(zone_sets)
    ]
    emit(client, events)
    Syncer(client, SyncOptions(name="s", tenants=(TENANT,), once=True), log=lambda _: None).run()
    out: dict[str, set[str]] = {}
    for z in zone_sets:
        record = read_account_record(client, TENANT, z.account_id)
        assert record is not None
        out[z.account_id] = {f.id for c in crm_change(record).campaigns.values() for f in c.facts_used}
    return out


def print_shows(client: redis.Redis, zone_sets: list[ZoneSet]) -> dict[str, dict[str, str]]:
    """The copy a print piece gets per account: the one ladder, asked for the print surface."""
    view = load_campaign_view(client, TENANT, CAMPAIGN)
    now = datetime.now(UTC)
    return {
        z.account_id: {
            r.zone_id: r.text
            for r in resolve_zones(view, ZONES, choose_variant(Arm.PERSONAL, z, now), Surface.PRINT)
        }
        for z in zone_sets
    }


def reaches(shown: dict[str, str], personal: dict[str, str]) -> bool:
    return any(shown.get(zone) == text for zone, text in personal.items())


@pytest.mark.parametrize("only", [Surface.WEB, Surface.EMAIL, Surface.SELLER, Surface.PRINT])
def test_a_fact_allowed_only_with_the_web_on_one_channel_reaches_that_channel_only(
    redis_client: redis.Redis, tmp_path: Path, only: Surface
) -> None:
    """Facts allowed on the web and one more channel: that channel and the web show them, no other."""
    zone_sets = precompute_with_surfaces(redis_client, tmp_path, sorted({"web", only.value}))
    personal = personal_texts(redis_client, zone_sets)
    assert len(personal) >= 5  # the population has personal pages to leak
    cited = {z.account_id: {f.fact_id for c in z.zones for f in c.facts} for z in zone_sets}

    web = web_shows(redis_client, zone_sets)
    email = email_shows(redis_client)
    seller = seller_shows(redis_client, zone_sets)
    print_ = print_shows(redis_client, zone_sets)
    for account_id, texts in personal.items():
        assert reaches(web[account_id], texts)  # the web is always allowed here
        row = email[account_id]
        assert reaches(row, texts) is (only is Surface.EMAIL), (account_id, row)
        assert row["fact_url"].startswith("https://") is (only is Surface.EMAIL)
        assert bool(seller[account_id] & cited[account_id]) is (only is Surface.SELLER)
        assert reaches(print_[account_id], texts) is (only is Surface.PRINT)
        if only is not Surface.PRINT:
            assert all(r for r in print_[account_id].values())  # the print fallback, never nothing

    # `explain` says, per zone, where its text may go.
    account_id = next(iter(personal))
    record = show(redis_client, TENANT, CAMPAIGN, account_id)
    assert record is not None
    cited = [z for z in record["zones"] if z["facts"]]
    assert cited and all(
        z["surfaces"] == ["web", only.value] if only is not Surface.WEB else z["surfaces"] == ["web"]
        for z in cited
    )
    assert f"shown on {', '.join(cited[0]['surfaces'])}" in format_explain(record)


def test_a_fact_not_allowed_on_the_web_never_reaches_a_page(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    """Page zones are written only from web facts: email-, seller- or print-only research reaches no page."""
    zone_sets = precompute_with_surfaces(redis_client, tmp_path, ["email", "seller", "print"])
    assert zone_sets and not any(c.facts for z in zone_sets for c in z.zones)
    for account_id, shown in web_shows(redis_client, zone_sets).items():
        assert shown and all(zone in shown for zone in ZONES), account_id
    assert not any(row["rung"] == "personal" for row in email_shows(redis_client).values())


def test_known_surfaces_only() -> None:
    assert allowed_surfaces([" Web", "EMAIL", "linkedin", "web"]) == (Surface.WEB, Surface.EMAIL)
    assert allowed_surfaces([]) == ()


def test_zone_sets_and_records_written_before_surfaces_still_decode_as_web_only() -> None:
    """The stored formats only gained a field: old values read as what was checked then, the web."""
    old_zone_set = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "account_id": "acct_old",
        "input_hash": "input-hash-old1",
        "guideline_version": "2026-11-01",
        "created_at": "2026-11-30T10:00:00Z",
        "mode": "degraded",
        "zones": [
            {
                "zone_id": "hero_headline",
                "text": "Congrats on the Series A, Dymaxa",
                "rung": "personal",
                "reason": "personal:funding",
                "facts": [
                    {"fact_id": "f1", "source_url": "https://dymaxa.com/p", "published_at": "2026-11-26"}
                ],
            },
            {"zone_id": "proof", "text": "Teams like yours", "rung": "segment", "reason": "no_trusted_fact"},
        ],
    }
    zone_set = ZoneSet.model_validate_json(json.dumps(old_zone_set))
    hero, proof = zone_set.zones
    assert hero.surfaces == (Surface.WEB,) and not hero.allows(Surface.EMAIL)
    assert proof.surfaces == ALL_SURFACES  # fallback copy goes everywhere
    shown = ShownFact.model_validate_json(
        '{"id": "f1", "type": "funding", "statement": "Dymaxa raised a Series A",'
        ' "source_url": "https://dymaxa.com/p", "published_at": "2026-11-26"}'
    )
    assert shown.surfaces == (Surface.WEB,) and not shown.allows(Surface.SELLER)
