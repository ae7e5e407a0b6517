"""Renderer test helpers: the example campaign published as precompute publishes it, zone sets, apps.

The campaign config is written in the shape `precompute.published_config.publish_campaign_config`
writes (`{"campaign": ..., "zones": ..., "theme"?: ...}` under `keys.campaign_config_key`, indexed in
`keys.campaigns_index_key`); the renderer tests do not run precompute. No owner is recorded
(`keys.campaign_owner_key`): the renderer serves such an id as its one indexed tenant's, like a
campaign published before owners were recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.app import create_app
from server.tuning import RendererTuning
from tests.corpora import REPO_ROOT
from welcomemat import keys
from welcomemat.arms import Arm, assign_arm
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.settings import Settings
from welcomemat.surfaces import ALL_SURFACES
from welcomemat.theme.folder import Theme
from welcomemat.zones.contract import ZoneContract, load_zone_contracts
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

SECRET = "renderer-test-secret-0123456789abcdef"
OTHER_SECRET = "another-secret-nobody-configured-0123456789"
TENANT = "acme"
CAMPAIGN = "q4-pipeline"
PUBLIC_URL = "https://wm.example.com"
HOST = "testserver"
BASE_URL = f"https://{HOST}"


def example_inputs() -> tuple[Campaign, dict[str, ZoneContract]]:
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    return load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones), zones


def publish_config(
    client: redis.Redis,
    campaign: Campaign | Mapping[str, Any],
    zones: Mapping[str, Any],
    theme: Theme | Mapping[str, Any] | None = None,
) -> None:
    """Write a campaign config (with its theme, if given) and index entry as precompute does."""
    data = campaign.model_dump(mode="json") if isinstance(campaign, Campaign) else dict(campaign)
    config: dict[str, Any] = {
        "campaign": data,
        "zones": {
            k: v.model_dump(mode="json") if isinstance(v, ZoneContract) else v for k, v in zones.items()
        },
    }
    if theme is not None:
        config["theme"] = theme.model_dump(mode="json") if isinstance(theme, Theme) else dict(theme)
    tenant, campaign_id = data["tenant"], data["campaign"]
    client.set(keys.campaign_config_key(tenant, campaign_id), json.dumps(config).encode())
    client.hset(keys.campaigns_index_key(), f"{tenant}/{campaign_id}", campaign_id)


def publish_ip_ranges(
    client: redis.Redis, tenant: str, campaign: str, ranges: Mapping[str, list[str]]
) -> None:
    key = keys.ip_ranges_key(tenant, campaign)
    client.delete(key)
    if ranges:
        client.hset(key, mapping={a: json.dumps(c) for a, c in ranges.items()})


def account_in(
    arm: Arm, fraction: float = 0.10, tenant: str = TENANT, campaign: str = CAMPAIGN, prefix: str = ""
) -> str:
    """An account id the stable hash puts in `arm` for this campaign."""
    for i in range(10_000):
        account = f"acct_{prefix or arm.value}_{i}"
        if assign_arm(tenant, campaign, account, fraction) is arm:
            return account
    raise AssertionError(f"no account lands in {arm}")


PERSONAL_ACCOUNT = account_in(Arm.PERSONAL)
HOLDOUT_ACCOUNT = account_in(Arm.HOLDOUT)


def accounts_in(arm: Arm, count: int) -> list[str]:
    """`count` distinct account ids the stable hash puts in `arm` (default holdout fraction)."""
    found: list[str] = []
    i = 0
    while len(found) < count:
        candidate = account_in(arm, prefix=f"{arm.value}{i}")
        if candidate not in found:
            found.append(candidate)
        i += 1
    return found


def make_zone_set(
    account: str = PERSONAL_ACCOUNT,
    *,
    texts: Mapping[str, str] | None = None,
    hrefs: Mapping[str, str] | None = None,
    segment: str | None = "saas-mid",
    status: ZoneSetStatus = ZoneSetStatus.PUBLISHED,
    valid_until: datetime | None = None,
    input_hash: str = "input-hash-0001",
    tenant: str = TENANT,
    campaign: str = CAMPAIGN,
) -> ZoneSet:
    """A zone set with personal zones for `texts` (zone id -> text); link zones get `hrefs`."""
    texts = texts if texts is not None else {"hero_headline": "Congrats on the Series A, Dymaxa"}
    hrefs = hrefs or {}
    zones = tuple(
        ZoneContent(
            zone_id=zone_id,
            text=text,
            href=hrefs.get(zone_id),
            cta_id="book_ramp_review" if zone_id in hrefs else None,
            rung=Rung.PERSONAL,
            reason="personal:funding",
            facts=(
                CitedFact(
                    fact_id="f1",
                    source_url="https://dymaxa.com/press",
                    published_at=date(2026, 11, 26),
                    surfaces=ALL_SURFACES,
                ),
            ),
        )
        for zone_id, text in texts.items()
    )
    return ZoneSet(
        tenant=tenant,
        campaign=campaign,
        account_id=account,
        segment=segment,
        input_hash=input_hash,
        guideline_version="2026-11-01",
        created_at=datetime.now(UTC),
        valid_until=valid_until if valid_until is not None else datetime.now(UTC) + timedelta(days=7),
        status=status,
        mode=ZoneSetMode.DEGRADED,
        zones=zones,
    )


# A page waits at most 250 ms on Redis in production, then serves the fallback. A test
# process can stall longer than that (a full garbage collection of the suite's heap late in
# a run, a loaded CI machine), which turns a personal answer into the fallback at random.
# Tests that are not about the budget give it room; those that are set their own.
ROOMY_TUNING = RendererTuning(redis_timeout_s=10.0, readiness_timeout_s=5.0)


def publish_example_at(redis_url: str, headline: str) -> None:
    """Publish the example campaign and one personal zone set (its headline `headline`) to the
    Redis at `redis_url`, through a client of its own (the app under test keeps its own)."""
    writer = redis.Redis.from_url(redis_url)
    try:
        campaign, zone_contracts = example_inputs()
        publish_config(writer, campaign, zone_contracts)
        ZoneSetStore(writer).publish(make_zone_set(texts={"hero_headline": headline}))
    finally:
        writer.close()


def tuning_for_tests(**overrides: Any) -> RendererTuning:
    """`RendererTuning` with the test suite's Redis budget, plus `overrides`."""
    return replace(ROOMY_TUNING, **overrides)


def renderer_app(
    settings: Settings | None = None, *, tuning: RendererTuning | None = None, **kwargs: Any
) -> Starlette:
    """`create_app` with the test suite's Redis budget unless `tuning` says otherwise."""
    return create_app(
        settings if settings is not None else renderer_settings(),
        tuning=tuning if tuning is not None else ROOMY_TUNING,
        **kwargs,
    )


def renderer_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "secret": SECRET,
        "public_url": PUBLIC_URL,
        "allowed_hosts": (HOST, "wm.example.com"),
    }
    values.update(overrides)
    return Settings.from_env({}, **values)


def signer(clock: Any = None) -> TokenSigner:
    return TokenSigner([SECRET]) if clock is None else TokenSigner([SECRET], clock=clock)


def link_token(account: str = PERSONAL_ACCOUNT, *, contact: str | None = None, **kwargs: Any) -> str:
    kind = kwargs.pop("kind", TokenKind.LINK)
    return signer(kwargs.pop("clock", None)).sign(
        kind,
        tenant=kwargs.pop("tenant", TENANT),
        campaign=kwargs.pop("campaign", CAMPAIGN),
        account=account,
        contact=contact,
        ttl_s=kwargs.pop("ttl_s", 3600),
    )


@pytest.fixture
def store(redis_client: redis.Redis) -> ZoneSetStore:
    return ZoneSetStore(redis_client)


@pytest.fixture
def published(redis_client: redis.Redis) -> Campaign:
    """The example campaign, published."""
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    return campaign


@pytest.fixture
def app(redis_client: redis.Redis, published: Campaign) -> Starlette:
    return renderer_app(redis_client=redis_client, tuning=tuning_for_tests(watcher_poll_s=0.05))


@pytest.fixture
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.7", 50000)) as test_client:
        yield test_client
