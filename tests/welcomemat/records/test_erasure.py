"""The erasure list: revocations by account and contact, suppression at precompute, the fold's cut-off."""

from __future__ import annotations

from datetime import UTC, datetime

import redis

from tests.welcomemat.records.test_records import ACCOUNT, TENANT, account, event, fold_all
from welcomemat import keys
from welcomemat.records.account_records import read_account_record
from welcomemat.records.erasure import (
    ErasureMark,
    Revocations,
    account_field,
    contact_field,
    email_digest,
    email_field,
    load_revocations,
    suppress,
)

ERASED_AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
BEFORE = int(ERASED_AT.timestamp()) + 1


def mark(*, suppress: bool = True) -> str:
    return ErasureMark(erased_at=ERASED_AT, revoke_before=BEFORE, suppress=suppress).model_dump_json()


def test_a_token_from_before_the_erasure_is_revoked_and_one_from_after_is_not() -> None:
    revocations = Revocations({"a1": BEFORE}, {("a2", "c1"): BEFORE})
    assert revocations.revoked("a1", None, BEFORE - 1) and revocations.revoked("a1", "c9", BEFORE - 3600)
    assert not revocations.revoked("a1", None, BEFORE)  # issued after the erasure (a re-added account)
    assert revocations.revoked("a2", "c1", BEFORE - 1)
    assert not revocations.revoked("a2", None, BEFORE - 1)  # the account's own link names no one
    assert not revocations.revoked("a2", "c2", BEFORE - 1) and not revocations.revoked(None, None, 0)
    assert not Revocations() and not Revocations().revoked("a1", None, 0)


def test_revocations_load_from_the_list_and_skip_what_does_not_decode(redis_client: redis.Redis) -> None:
    key = keys.erasures_key(TENANT)
    redis_client.hset(
        key,
        mapping={
            account_field("a1"): mark(),
            contact_field("a2", "c1"): mark(suppress=False),  # readmitted: still revoked
            email_field("x@y.example"): mark(),
            account_field("a3"): b"not json",
            "p:bad": mark(),
        },
    )
    assert load_revocations(redis_client, TENANT) == Revocations({"a1": BEFORE}, {("a2", "c1"): BEFORE})
    assert load_revocations(redis_client, "nobody") == Revocations()


def test_precompute_leaves_out_erased_accounts_and_contacts_by_id_or_address(
    redis_client: redis.Redis,
) -> None:
    dymaxa = account()
    other = account(account_id="acct_other", contacts=[{"contact_id": "c_new", "email": "JORAM@dymaxa.com "}])
    third = account(account_id="acct_third")
    assert suppress(redis_client, TENANT, [dymaxa, other]).kept == [dymaxa, other]  # no list: untouched
    redis_client.hset(
        keys.erasures_key(TENANT),
        mapping={
            account_field("acct_third"): mark(),
            contact_field(ACCOUNT, "c_noemail"): mark(),
            email_field("joram@dymaxa.com"): mark(),
            account_field("acct_back"): mark(suppress=False),
        },
    )
    result = suppress(redis_client, TENANT, [dymaxa, other, third, account(account_id="acct_back")])
    assert result.accounts == ["acct_third"] and result.contacts == 4
    assert [a.account_id for a in result.kept] == [ACCOUNT, "acct_other", "acct_back"]
    assert result.kept[0].contacts == [] and result.kept[1].contacts == []
    # A readmitted account is published again, but not with a person erased by address.
    assert [c.contact_id for c in result.kept[2].contacts] == ["c_noemail"]
    assert email_digest(" Joram@Dymaxa.COM") == email_digest("joram@dymaxa.com")


def test_the_fold_skips_events_from_before_an_erasure(redis_client: redis.Redis) -> None:
    redis_client.hset(keys.erasures_key(TENANT), contact_field(ACCOUNT, "c_joram"), mark())
    before_ms, after_ms = (BEFORE - 10) * 1000, BEFORE * 1000
    replies = fold_all(
        redis_client,
        [
            event(1, ts_ms=before_ms, contact="c_joram"),  # the erased person, before: never folded
            event(2, ts_ms=before_ms),  # the account, no contact: folded
            event(3, ts_ms=after_ms, contact="c_joram"),  # after the erasure (a new link): folded
        ],
    )
    assert replies[0] == -2 and replies[1] > 0 and replies[2] > 0
    redis_client.hset(keys.erasures_key(TENANT), account_field(ACCOUNT), mark())
    assert fold_all(redis_client, [event(4, ts_ms=before_ms), event(5, ts_ms=after_ms)])[0] == -2
    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None and record.engagement["q4-expansion"].views == 3
