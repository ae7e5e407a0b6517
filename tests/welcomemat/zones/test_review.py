"""Review decisions and rollbacks are audit-logged: who, which version, why; never silently unlogged."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest
import redis

from tests.welcomemat.zones.test_store import ACCOUNT, CAMPAIGN, TENANT, make_zone_set
from welcomemat import keys
from welcomemat.errors import AuditError, InputError
from welcomemat.records.audit import AuditAction, Auditor, Via, read_entries
from welcomemat.zones.held import HeldDraft, HoldLayer
from welcomemat.zones.review import approve_held, decide, list_queue, roll_back
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode, ZoneSetStatus

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


# -- held drafts -------------------------------------------------------------------------------


def _hold_proof(client: redis.Redis, store: ZoneSetStore, **held: Any) -> ZoneSet:
    """Publish the zone set with `proof` on segment copy and its draft held in the explain record."""
    current = store.publish(make_zone_set()).zone_set
    content = ZoneContent(
        zone_id="proof",
        text="Dymaxa's four new SDRs ramp faster with us",
        rung=Rung.PERSONAL,
        reason="personal:hiring",
        facts=(
            CitedFact(fact_id="f2", source_url="https://dymaxa.com/jobs", published_at=date(2026, 11, 20)),
        ),
    )
    entry = HeldDraft(
        zone_id="proof",
        layer=HoldLayer.SELF_REVIEW,
        note="implies the SDRs are hired",
        draft=content.text,
        content=content,
        valid_until=datetime(2027, 1, 20, tzinfo=UTC),
    ).model_copy(update=held)
    record = {
        "account_id": ACCOUNT,
        "version": current.version,
        "input_hash": current.input_hash,
        "zones": [{"zone_id": "proof", "rung": "segment", "reason": "self_review_rejected", "held": None}],
    }
    record["zones"][0]["held"] = entry.model_dump(mode="json")  # type: ignore[index]
    client.set(keys.explain_key(TENANT, CAMPAIGN, ACCOUNT), json.dumps(record))
    client.zadd(keys.review_held_key(TENANT, CAMPAIGN), {ACCOUNT: 1.0})
    return current


def test_an_approved_held_draft_is_a_new_version_with_the_zone_personal(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    current = _hold_proof(redis_client, store)
    [item] = [i for i in list_queue(redis_client, TENANT, CAMPAIGN) if i.queue == "held"]
    assert [(h.zone_id, h.note, h.approvable) for h in item.held] == [
        ("proof", "implies the SDRs are hired", True)
    ]
    outcome = approve_held(redis_client, TENANT, CAMPAIGN, ACCOUNT, "proof", auditor=RITA, expected_version=1)
    assert outcome.applied and outcome.result is not None
    revised = store.get(TENANT, CAMPAIGN, ACCOUNT)
    assert revised is not None and revised.version == 2 and revised.input_hash == current.input_hash
    proof = revised.zone("proof")
    assert proof is not None and (proof.rung, proof.reason) == (Rung.PERSONAL, "approved:hiring")
    assert revised.mode is ZoneSetMode.FULL and revised.valid_until == datetime(2027, 1, 20, tzinfo=UTC)
    assert store.get_previous(TENANT, CAMPAIGN, ACCOUNT) == current  # rollback undoes it
    assert not redis_client.zcard(keys.review_held_key(TENANT, CAMPAIGN))
    [entry] = read_entries(redis_client, TENANT)
    assert (entry.action, entry.version, entry.detail) == (
        AuditAction.APPROVE,
        2,
        "held draft of zone proof (self_review) from v1",
    )


def test_an_approved_held_draft_that_is_not_specific_stays_segment_copy(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    """Approval publishes what the draft is: a line using no specific of its facts is not personal."""
    generic = ZoneContent(
        zone_id="proof",
        text="Teams cut ramp time from 90 to 45 days with Acme Revenue.",
        rung=Rung.SEGMENT,
        reason="not_specific:hiring",
        facts=(
            CitedFact(fact_id="f2", source_url="https://dymaxa.com/jobs", published_at=date(2026, 11, 20)),
        ),
    )
    _hold_proof(redis_client, store, content=generic, draft=generic.text)
    outcome = approve_held(redis_client, TENANT, CAMPAIGN, ACCOUNT, "proof", auditor=RITA)
    assert outcome.applied and "as segment copy (not specific)" in outcome.detail
    revised = store.get(TENANT, CAMPAIGN, ACCOUNT)
    assert revised is not None and revised.version == 2
    proof = revised.zone("proof")
    assert proof is not None and (proof.rung, proof.reason, proof.text) == (
        Rung.SEGMENT,
        "not_specific:hiring",
        generic.text,
    )
    assert [f.fact_id for f in proof.facts] == ["f2"]
    assert revised.mode is ZoneSetMode.DEGRADED  # the set's other zones are as they were


@pytest.mark.parametrize(
    ("held", "why"),
    [
        ({"failures": ("numbers:unsupported_number",)}, "approval never bypasses"),
        ({"content": None, "failures": ("cta_link_refused",)}, "approval never bypasses"),
        ({"valid_until": datetime(2026, 12, 1, tzinfo=UTC)}, "expired"),
    ],
)
def test_a_held_draft_failing_a_check_or_expired_is_refused_and_nothing_is_logged(
    redis_client: redis.Redis, store: ZoneSetStore, held: dict[str, Any], why: str
) -> None:
    current = _hold_proof(redis_client, store, **held)
    outcome = approve_held(redis_client, TENANT, CAMPAIGN, ACCOUNT, "proof", auditor=RITA)
    assert not outcome.applied and why in outcome.detail
    assert store.get(TENANT, CAMPAIGN, ACCOUNT) == current and not read_entries(redis_client, TENANT)


def test_a_held_draft_of_other_inputs_or_a_stale_version_is_not_approved(
    redis_client: redis.Redis, store: ZoneSetStore
) -> None:
    _hold_proof(redis_client, store)
    stale = approve_held(redis_client, TENANT, CAMPAIGN, ACCOUNT, "proof", auditor=RITA, expected_version=7)
    assert not stale.applied and "no longer current" in stale.detail
    store.publish(make_zone_set(input_hash="hash-0002"))  # a rerun on new inputs: not what was held
    other = approve_held(redis_client, TENANT, CAMPAIGN, ACCOUNT, "proof", auditor=RITA)
    assert not other.applied and "no held draft" in other.detail
    assert not read_entries(redis_client, TENANT)
