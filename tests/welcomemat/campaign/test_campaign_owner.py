"""A campaign id is one tenant's: claimed at its first publish, atomically, never handed over."""

from __future__ import annotations

import threading

import pytest
import redis

from welcomemat import keys
from welcomemat.campaign.owner import (
    CampaignOwnership,
    claim_campaign,
    parse_campaigns_index,
    read_ownership,
    refuse_other_tenant,
)
from welcomemat.errors import CampaignOwnerError, InputError, StoredValueError
from welcomemat.storage.redis_client import redis_from_url


def index(client: redis.Redis, *refs: str) -> None:
    """Entries of the campaigns index, as a version that recorded no owners wrote them."""
    client.hset(keys.campaigns_index_key(), mapping={ref: ref.split("/")[1] for ref in refs})


def owner(client: redis.Redis, campaign: str) -> str | None:
    raw = client.get(keys.campaign_owner_key(campaign))
    return raw.decode() if isinstance(raw, bytes) else None


def test_the_first_publish_claims_the_id_and_another_tenant_is_refused_naming_the_owner(
    redis_client: redis.Redis,
) -> None:
    claim_campaign(redis_client, "acme", "q4-pipeline")
    assert owner(redis_client, "q4-pipeline") == "acme"
    with pytest.raises(CampaignOwnerError) as refused:
        claim_campaign(redis_client, "evil", "q4-pipeline")
    assert str(refused.value) == (
        "field 'campaign': campaign 'q4-pipeline' belongs to tenant 'acme'; "
        "tenant 'evil' cannot publish it (choose another campaign id)"
    )
    assert isinstance(refused.value, InputError)  # exit 2 on the command line
    assert (refused.value.campaign, refused.value.owner, refused.value.tenant) == (
        "q4-pipeline",
        "acme",
        "evil",
    )
    assert owner(redis_client, "q4-pipeline") == "acme"
    claim_campaign(redis_client, "evil", "evil-launch")  # any other id is free
    assert owner(redis_client, "evil-launch") == "evil"


def test_the_owners_publish_refreshes_the_claim_and_a_refused_one_does_not(redis_client: redis.Redis) -> None:
    key = keys.campaign_owner_key("q4-pipeline")
    claim_campaign(redis_client, "acme", "q4-pipeline")
    assert 0 < redis_client.ttl(key) <= keys.CAMPAIGN_OWNER_TTL_S
    redis_client.expire(key, 60)
    with pytest.raises(CampaignOwnerError):
        claim_campaign(redis_client, "evil", "q4-pipeline")
    assert redis_client.ttl(key) <= 60
    claim_campaign(redis_client, "acme", "q4-pipeline")
    assert redis_client.ttl(key) > keys.CAMPAIGN_OWNER_TTL_S - 60


def test_two_tenants_claiming_a_new_id_at_once_cannot_both_win(
    redis_url: str, redis_client: redis.Redis
) -> None:
    def publish(tenant: str, campaign: str, barrier: threading.Barrier, won: list[str]) -> None:
        client = redis_from_url(redis_url, connect_timeout_s=5.0, socket_timeout_s=30.0)
        try:
            barrier.wait()
            claim_campaign(client, tenant, campaign)
            won.append(tenant)
        except CampaignOwnerError:
            pass
        finally:
            client.close()

    for round_ in range(20):
        campaign, barrier, won = f"race-{round_}", threading.Barrier(2), []
        threads = [
            threading.Thread(target=publish, args=(t, campaign, barrier, won)) for t in ("acme", "evil")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1 and owner(redis_client, campaign) == won[0]


def test_an_id_published_before_owners_were_recorded_is_its_one_indexed_tenants(
    redis_client: redis.Redis,
) -> None:
    index(redis_client, "acme/q4-pipeline")
    assert read_ownership(redis_client, "q4-pipeline").tenant == "acme"
    with pytest.raises(CampaignOwnerError, match="belongs to tenant 'acme'"):
        claim_campaign(redis_client, "evil", "q4-pipeline")
    assert owner(redis_client, "q4-pipeline") == "acme"  # recorded for the tenant that published it


def test_an_id_two_tenants_published_before_owners_goes_to_the_first_of_them_to_publish_again(
    redis_client: redis.Redis,
) -> None:
    index(redis_client, "acme/q4-pipeline", "evil/q4-pipeline")
    legacy = read_ownership(redis_client, "q4-pipeline")
    assert legacy.tenant is None and legacy.conflict == ("acme", "evil")
    with pytest.raises(CampaignOwnerError, match=r"several tenants \(acme, evil\)"):
        claim_campaign(redis_client, "mallory", "q4-pipeline")
    assert owner(redis_client, "q4-pipeline") is None
    claim_campaign(redis_client, "acme", "q4-pipeline")
    with pytest.raises(CampaignOwnerError, match="belongs to tenant 'acme'"):
        claim_campaign(redis_client, "evil", "q4-pipeline")
    recorded = read_ownership(redis_client, "q4-pipeline")
    assert recorded.tenant == "acme" and recorded.conflict == ("evil",)


def test_the_recorded_owner_wins_over_the_index() -> None:
    assert CampaignOwnership("q4", "acme", ("evil",)).tenant == "acme"
    assert CampaignOwnership("q4", "acme", ("acme", "evil")).conflict == ("evil",)
    assert CampaignOwnership("q4", None, ()).tenant is None
    assert CampaignOwnership("q4", None, ("acme",)).conflict == ()


def test_reading_refuses_another_tenants_id_and_lets_an_unpublished_one_pass(
    redis_client: redis.Redis,
) -> None:
    claim_campaign(redis_client, "acme", "q4-pipeline")
    refuse_other_tenant(read_ownership(redis_client, "q4-pipeline"), "acme")
    refuse_other_tenant(read_ownership(redis_client, "never-published"), "evil")
    with pytest.raises(CampaignOwnerError) as refused:
        refuse_other_tenant(read_ownership(redis_client, "q4-pipeline"), "evil")
    assert "belongs to tenant 'acme'; tenant 'evil' cannot use it" in str(refused.value)


def test_a_stored_owner_that_is_not_a_tenant_id_is_a_named_stored_value_error(
    redis_client: redis.Redis,
) -> None:
    redis_client.set(keys.campaign_owner_key("q4-pipeline"), b"not an id!")
    assert read_ownership(redis_client, "q4-pipeline").owner is None
    with pytest.raises(StoredValueError, match="campaign_owner:q4-pipeline"):
        claim_campaign(redis_client, "acme", "q4-pipeline")


def test_the_index_is_read_one_way_and_bad_fields_are_skipped() -> None:
    parsed = parse_campaigns_index([b"evil/q4", b"acme/q4", "acme/spring", b"no-slash", b"a:b/q4", b"acme/"])
    assert parsed == {"q4": ("acme", "evil"), "spring": ("acme",)}
