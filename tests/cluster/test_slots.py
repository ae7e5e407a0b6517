"""Every key a transaction, script or multi-key command touches together is in one Cluster slot.

Computed here for every key builder of `welcomemat.keys` (the slot is CRC16 of the hash tag,
as Redis computes it), and checked by the server itself: the cluster answers CROSSSLOT to a
script or transaction that strays, and the builders' keys are used together on it below.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import date

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from tests.cluster.local_cluster import LocalCluster
from welcomemat import keys

# The id a builder's parameter takes, by parameter name.
_ID = st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,20}", fullmatch=True)
_VIEW_ID = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)  # welcomemat.ids.VIEW_ID_PATTERN
# Keys outside any tenant's slot: read by campaign id alone, single-key commands only.
UNTAGGED = {
    keys.campaigns_index_key,
    keys.campaign_owner_key,
    keys.active_runs_key,
    keys.global_audit_stream_key,
    keys.credential_fingerprints_key,
    keys.audit_stream_scan_pattern,
    # An admin invite and an admin session: single keys, read and written alone.
    keys.admin_invite_key,
    keys.admin_session_key,
}
# One person's admin keys (their grants and their sessions' set, written in one sign-in and
# one revoke) share the person's slot.
PERSON_BUILDERS = {keys.admin_grants_key, keys.admin_person_sessions_key}


# Every public function of the module builds a key, a SCAN pattern, a channel or a prefix.
BUILDERS: list[Callable[..., str]] = [
    getattr(keys, name) for name in keys.__all__ if callable(getattr(keys, name))
]
# Keys that name a campaign but live in the tenant's slot, written in one script with the
# tenant's own keys (a seller alert's day mark, with the tenant's alert outbox).
TENANT_SLOT_WITH_CAMPAIGN = {keys.seller_alert_sent_key}
CAMPAIGN_BUILDERS = [
    b
    for b in BUILDERS
    if b not in UNTAGGED
    and b not in TENANT_SLOT_WITH_CAMPAIGN
    and {"tenant", "campaign"} <= set(inspect.signature(b).parameters)
]
TENANT_BUILDERS = [
    b
    for b in BUILDERS
    if b not in UNTAGGED and b not in CAMPAIGN_BUILDERS and "tenant" in inspect.signature(b).parameters
]


def _call(builder: Callable[..., str], ids: dict[str, str]) -> str:
    return builder(**{p: ids[p] for p in inspect.signature(builder).parameters})


def test_every_builder_is_in_a_group() -> None:
    grouped = set(CAMPAIGN_BUILDERS) | set(TENANT_BUILDERS) | UNTAGGED | PERSON_BUILDERS
    assert set(BUILDERS) == grouped
    assert keys.zone_set_key in CAMPAIGN_BUILDERS and keys.run_key in CAMPAIGN_BUILDERS
    assert keys.events_stream_key in TENANT_BUILDERS and keys.erasures_key in TENANT_BUILDERS
    assert keys.seller_alert_sent_key in TENANT_BUILDERS and keys.seller_alert_outbox_key in TENANT_BUILDERS


@settings(max_examples=60, deadline=None)
@given(
    tenant=_ID,
    campaign=_ID,
    account_id=_ID,
    run_id=_ID,
    event_id=_ID,
    view_id=_VIEW_ID,
    zone=_ID,
    day=st.dates(),
)
def test_a_campaigns_keys_share_one_slot_and_a_tenants_keys_another(
    tenant: str,
    campaign: str,
    account_id: str,
    run_id: str,
    event_id: str,
    view_id: str,
    zone: str,
    day: date,
) -> None:
    ids = {
        "tenant": tenant,
        "campaign": campaign,
        "account_id": account_id,
        "run_id": run_id,
        "event_id": event_id,
        "view_id": view_id,
        "zone": zone,
        "day": day.isoformat(),
    }
    campaign_slots = {key_slot(_call(b, ids).encode()) for b in CAMPAIGN_BUILDERS}
    tenant_slots = {key_slot(_call(b, ids).encode()) for b in TENANT_BUILDERS}
    assert campaign_slots == {key_slot(f"{tenant}:{campaign}".encode())}
    assert tenant_slots == {key_slot(tenant.encode())}


@settings(max_examples=30, deadline=None)
@given(person=st.from_regex(r"[0-9a-f]{64}", fullmatch=True))
def test_a_persons_admin_keys_share_one_slot(person: str) -> None:
    assert len({key_slot(builder(person).encode()) for builder in PERSON_BUILDERS}) == 1


def test_the_cluster_refuses_a_script_whose_keys_stray(
    redis_cluster: LocalCluster, cluster_client: redis.Redis
) -> None:
    """What the tests on the cluster rely on: a cross-slot script is refused there, by the
    client before sending and by the server (CROSSSLOT: "don't hash to the same slot") when sent."""
    script = "return redis.call('GET', KEYS[1]) or redis.call('GET', KEYS[2])"
    apart = [keys.zone_set_key("acme", "q4", "a"), keys.account_record_key("acme", "a")]
    assert key_slot(apart[0].encode()) != key_slot(apart[1].encode())
    with pytest.raises(RedisClusterException, match="same key slot"):
        cluster_client.eval(script, 2, *apart)
    with (
        redis_cluster.master_of(apart[0]).client() as node,
        pytest.raises(redis.ResponseError, match="hash to the same slot"),
    ):
        node.eval(script, 2, *apart)
    together = [keys.zone_set_key("acme", "q4", "a"), keys.journal_key("acme", "q4")]
    assert cluster_client.eval(script, 2, *together) is None
