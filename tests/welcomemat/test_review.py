"""Review decisions and rollbacks are audit-logged: who, which version, why; never silently unlogged."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import redis

from tests.welcomemat.test_store import ACCOUNT, CAMPAIGN, TENANT, make_zone_set
from welcomemat import keys
from welcomemat.audit import AuditAction, Auditor, Via, read_entries
from welcomemat.errors import AuditError, InputError
from welcomemat.review import decide, roll_back
from welcomemat.store import ZoneSetStore
from welcomemat.zoneset import ZoneSetStatus

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
RITA = Auditor("rita", Via.CLI, lambda: NOW)


@pytest.fixture
def store(redis_client: redis.Redis) -> ZoneSetStore:
    return ZoneSetStore(redis_client)


def test_an_approval_is_logged_with_who_which_version_and_when(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(status=ZoneSetStatus.PENDING_REVIEW))
    outcome = decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=True, auditor=RITA, expected_version=1)
    assert outcome.applied
    [entry] = read_entries(redis_client, TENANT)
    assert (entry.action, entry.actor, entry.via, entry.campaign, entry.account) == (
        AuditAction.APPROVE,
        "rita",
        Via.CLI,
        CAMPAIGN,
        ACCOUNT,
    )
    assert (entry.version, entry.detail, entry.at, entry.reason) == (2, "reviewed v1", NOW, None)
    # Nothing changed, nothing logged: a stale version, or approving what is approved.
    decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=True, auditor=RITA, expected_version=1)
    decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=True, auditor=RITA, expected_version=2)
    assert len(read_entries(redis_client, TENANT)) == 1


def test_a_rejection_needs_a_reason_before_anything_is_done(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(status=ZoneSetStatus.PENDING_REVIEW))
    for reason in (None, "", "  \n "):
        with pytest.raises(InputError, match="reject needs a reason"):
            decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=False, auditor=RITA, reason=reason)
    assert store.get(TENANT, CAMPAIGN, ACCOUNT).status is ZoneSetStatus.PENDING_REVIEW  # type: ignore[union-attr]
    decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=False, auditor=RITA, reason="cites a rumour")
    [entry] = read_entries(redis_client, TENANT)
    assert (entry.action, entry.reason, entry.version) == (AuditAction.REJECT, "cites a rumour", 2)


def test_a_rollback_needs_a_reason_and_is_logged(redis_client: redis.Redis, store: ZoneSetStore) -> None:
    store.publish(make_zone_set())
    store.publish(make_zone_set(input_hash="hash-0002", headline="a line nobody checked"))
    with pytest.raises(InputError, match="rollback needs a reason"):
        roll_back(redis_client, TENANT, CAMPAIGN, ACCOUNT, auditor=RITA, reason=None)
    assert store.get(TENANT, CAMPAIGN, ACCOUNT).version == 2  # type: ignore[union-attr]
    restored = roll_back(
        redis_client, TENANT, CAMPAIGN, ACCOUNT, auditor=RITA, reason="v2 names a competitor"
    )
    assert restored is not None and restored.version == 3
    assert roll_back(redis_client, TENANT, CAMPAIGN, ACCOUNT, auditor=RITA, reason="again") is None
    [entry] = read_entries(redis_client, TENANT)
    assert (entry.action, entry.version, entry.reason) == (AuditAction.ROLLBACK, 3, "v2 names a competitor")


def test_a_decision_whose_entry_cannot_be_written_stands_and_says_so(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    store.publish(make_zone_set(status=ZoneSetStatus.PENDING_REVIEW))
    redis_client.set(keys.audit_stream_key(TENANT), b"not a stream")  # every XADD now fails
    with pytest.raises(AuditError, match=f"approve of {ACCOUNT} in {CAMPAIGN} v2 was done, but its audit"):
        decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=True, auditor=RITA)
    assert store.get(TENANT, CAMPAIGN, ACCOUNT).status is ZoneSetStatus.PUBLISHED  # type: ignore[union-attr]
