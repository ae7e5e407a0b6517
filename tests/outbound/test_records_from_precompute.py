"""Precompute writes each account's profile when it publishes; a page view then names the facts shown."""

from __future__ import annotations

from pathlib import Path

import redis

from outbound.sync import Syncer, SyncOptions
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from server.engagement.events import EngagementEvent, EventType
from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from tests.outbound.sync_helpers import emit
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.account_records import iter_account_records, read_account_record
from welcomemat.records.accounts import read_accounts
from welcomemat.zones.contract import load_zone_contracts
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung


def test_published_accounts_have_records_and_a_personal_view_names_its_facts(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    run = PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
    )
    path = write_example_accounts(tmp_path / "accounts.jsonl", 40)
    report = run.run(path)
    accounts = {a.account_id: a for a in read_accounts(path).accounts}
    tenant, campaign_id = campaign.tenant, campaign.campaign

    records = {r.account_id: r for r in iter_account_records(redis_client, tenant)}
    assert set(records) == set(accounts) and report.accounts == 40
    for account_id, record in records.items():
        account = accounts[account_id]
        assert (record.name, record.domain, record.segment) == (account.name, account.domain, account.segment)
        assert [c.contact_id for c in record.contacts] == [c.contact_id for c in account.contacts if c.email]
        assert record.engagement == {}

    # A personal page view of an account whose zone set cites facts: the record names them.
    store = ZoneSetStore(redis_client)
    personal = next(
        z
        for a in sorted(accounts)
        if (z := store.get(tenant, campaign_id, a)) is not None
        and any(zone.rung is Rung.PERSONAL and zone.facts for zone in z.zones)
    )
    cited = {f.fact_id for zone in personal.zones if zone.rung is Rung.PERSONAL for f in zone.facts}
    emit(
        redis_client,
        [
            EngagementEvent(
                type=EventType.VIEW,
                tenant=tenant,
                campaign=campaign_id,
                view_id="v1",
                ts_ms=1_764_000_000_000,
                arm="personal",
                account=personal.account_id,
                rung="personal",
                zone_set_version=personal.version,
            )
        ],
    )
    Syncer(redis_client, SyncOptions(name="s", tenants=(tenant,), once=True), log=lambda _: None).run()
    record = read_account_record(redis_client, tenant, personal.account_id)
    assert record is not None
    shown = record.engagement[campaign_id].facts_shown
    assert {f.id for f in shown} == cited
    facts = {f.id: f for f in accounts[personal.account_id].facts}
    for fact in shown:
        assert (fact.type, fact.statement) == (facts[fact.id].type, facts[fact.id].statement)
