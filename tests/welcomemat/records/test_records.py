"""The shared account records: profile written at publish, events folded once, read back whole."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from welcomemat import keys
from welcomemat.errors import StoredValueError
from welcomemat.records.account_records import (
    AccountRecord,
    ShownFact,
    iter_account_records,
    read_account_record,
    write_profile,
)
from welcomemat.records.accounts import Account
from welcomemat.records.fold import FOLD_LUA, EventFold, fold_events
from welcomemat.surfaces import Surface
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

TENANT = "acme"
CAMPAIGN = "q4-expansion"
ACCOUNT = "acct_dymaxa"
F1 = CitedFact(fact_id="f1", source_url="https://dymaxa.com/press/series-a", published_at=date(2026, 11, 26))


def account(**extra: object) -> Account:
    data: dict[str, object] = {
        "account_id": ACCOUNT,
        "name": "Dymaxa B.V.",
        "domain": "dymaxa.com",
        "segment": "saas-mid",
        "contacts": [
            {"contact_id": "c_joram", "email": "joram@dymaxa.com", "first_name": "Joram", "title": "VP"},
            {"contact_id": "c_noemail", "first_name": "Anon"},
        ],
        "facts": [
            {
                "id": "f1",
                "type": "funding",
                "statement": "Dymaxa raised a Series A",
                "source_url": "https://dymaxa.com/press/series-a",
                "published_at": "2026-11-26",
                "confidence": "high",
                "evidence": "SECRET EVIDENCE TEXT",
            },
            {"id": "f2", "type": "hiring", "statement": "Dymaxa is hiring", "evidence": "more evidence"},
        ],
    }
    data.update(extra)
    return Account.model_validate(data)


def zone_set(version: int = 1) -> ZoneSet:
    return ZoneSet(
        tenant=TENANT,
        campaign=CAMPAIGN,
        account_id=ACCOUNT,
        version=version,
        input_hash="hash-0001",
        guideline_version="g1",
        created_at=datetime(2026, 11, 28, tzinfo=UTC),
        mode=ZoneSetMode.DEGRADED,
        zones=(
            ZoneContent(zone_id="headline", text="Congrats", rung=Rung.PERSONAL, reason="fact", facts=(F1,)),
            ZoneContent(zone_id="proof", text="Proof", rung=Rung.SEGMENT, reason="no_fact"),
        ),
    )


def event(n: int, **overrides: object) -> EventFold:
    values: dict[str, object] = {
        "tenant": TENANT,
        "account_id": ACCOUNT,
        "campaign": CAMPAIGN,
        "kind": "views",
        "ts_ms": 1_700_000_000_000 + n,
        "event_id": f"ev{n}",
    }
    values.update(overrides)
    return EventFold(**values)  # type: ignore[arg-type]


def fold_all(client: redis.Redis, events: list[EventFold], *, outbox: bool = False) -> list[int | str]:
    return fold_events(client.register_script(FOLD_LUA), client, events, outbox=outbox, now_ms=1)


def test_profile_keeps_what_a_seller_reads_and_no_evidence(redis_client: redis.Redis) -> None:
    write_profile(redis_client, TENANT, account(), zone_set(), now_ms=5)
    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None
    assert (record.name, record.domain, record.segment, record.updated_ms) == (
        "Dymaxa B.V.",
        "dymaxa.com",
        "saas-mid",
        5,
    )
    assert [c.contact_id for c in record.contacts] == ["c_joram"]  # no email: nothing to send to
    assert record.contacts[0].title == "VP"
    assert record.engagement == {}
    raw = b"".join(v for v in redis_client.hgetall(keys.account_record_key(TENANT, ACCOUNT)).values())
    assert b"SECRET EVIDENCE" not in raw and b"confidence" not in raw
    assert b"Dymaxa is hiring" not in raw  # f2 was not cited: not a fact shown
    assert redis_client.ttl(keys.account_record_key(TENANT, ACCOUNT)) > 0


def test_unknown_account_has_no_record(redis_client: redis.Redis) -> None:
    assert read_account_record(redis_client, TENANT, "acct_nobody") is None


def test_fold_counts_views_clicks_scans_by_campaign_zone_and_contact(redis_client: redis.Redis) -> None:
    write_profile(redis_client, TENANT, account(), zone_set())
    fold_all(
        redis_client,
        [
            event(1, arm="personal", zone_set_version=1, facts=(F1,)),
            event(2, kind="clicks", zone="cta", contact="c_joram"),
            event(3, kind="clicks", zone="cta"),
            event(4, kind="clicks", zone="proof"),
            event(5, kind="qr", contact="c_joram", ts_ms=1_600_000_000_000),
            event(6, campaign="other", arm="holdout"),
        ],
    )
    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None
    q4 = record.engagement[CAMPAIGN]
    assert (q4.views, q4.clicks, q4.qr_scans) == (1, 3, 1)
    assert q4.clicks_by_zone == {"cta": 2, "proof": 1}
    assert q4.first_seen_ms == 1_600_000_000_000 and q4.last_seen_ms == 1_700_000_000_004
    assert q4.last_arm == "personal" and q4.zone_set_version == 1
    assert q4.facts_shown == [
        ShownFact(
            id="f1",
            type="funding",
            statement="Dymaxa raised a Series A",
            source_url="https://dymaxa.com/press/series-a",
            published_at=date(2026, 11, 26),
            surfaces=(Surface.WEB,),  # as the zone set cites it (none named: the web only)
        )
    ]
    assert record.engagement["other"].last_arm == "holdout"
    joram = record.contacts_engagement[CAMPAIGN]["c_joram"]
    assert (joram.views, joram.clicks, joram.qr_scans) == (0, 1, 1)
    assert joram.first_seen_ms == 1_600_000_000_000
    assert record.revision == 6


def test_the_same_event_folds_once(redis_client: redis.Redis) -> None:
    replies = fold_all(redis_client, [event(1), event(1), event(2), event(1)])
    assert replies == [1, -1, 2, -1]
    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None and record.engagement[CAMPAIGN].views == 2
    assert redis_client.ttl(keys.event_seen_key(TENANT, "ev1")) > 0


def test_one_broken_record_costs_its_event_only(redis_client: redis.Redis) -> None:
    redis_client.set(keys.account_record_key(TENANT, "acct_broken"), "not a hash")
    replies = fold_all(redis_client, [event(1), event(2, account_id="acct_broken"), event(3)])
    assert replies[0] == 1 and replies[2] == 2
    assert isinstance(replies[1], str) and "WRONGTYPE" in replies[1]
    assert not redis_client.exists(keys.event_seen_key(TENANT, "ev2"))  # a retry finds it unfolded
    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None and record.engagement[CAMPAIGN].views == 2


def test_fold_keys_share_the_tenant_slot() -> None:
    slots = {
        key_slot(k.encode())
        for k in (
            keys.event_seen_key(TENANT, "ev1"),
            keys.account_record_key(TENANT, ACCOUNT),
            keys.webhook_outbox_key(TENANT),
            keys.events_stream_key(TENANT),
        )
    }
    assert len(slots) == 1


def test_outbox_gets_one_pending_change_per_account(redis_client: redis.Redis) -> None:
    fold_all(redis_client, [event(1), event(2), event(3, account_id="acct_other")], outbox=True)
    entries = redis_client.xrange(keys.webhook_outbox_key(TENANT))
    assert sorted(fields[b"account"] for _, fields in entries) == [b"acct_dymaxa", b"acct_other"]
    assert redis_client.ttl(keys.webhook_outbox_key(TENANT)) > 0


def test_a_fact_without_a_known_statement_is_left_out(redis_client: redis.Redis) -> None:
    unknown = CitedFact(fact_id="f9", source_url="https://x.example/a", published_at=date(2026, 1, 1))
    fold_all(redis_client, [event(1, zone_set_version=3, facts=(unknown,))])
    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None
    assert record.engagement[CAMPAIGN].zone_set_version == 3
    assert record.engagement[CAMPAIGN].facts_shown == []


def test_iter_finds_every_record_of_the_tenant_only(redis_client: redis.Redis) -> None:
    for i in range(1203):
        write_profile(redis_client, TENANT, account(account_id=f"acct_{i}"))
    write_profile(redis_client, "globex", account())
    ids = [r.account_id for r in iter_account_records(redis_client, TENANT)]
    assert len(ids) == 1203 and len(set(ids)) == 1203


def test_corrupt_record_names_its_key_or_is_reported_and_skipped(redis_client: redis.Redis) -> None:
    write_profile(redis_client, TENANT, account(account_id="acct_good"))
    redis_client.hset(keys.account_record_key(TENANT, "acct_bad"), "profile", "{not json")
    with pytest.raises(StoredValueError, match="acct_bad"):
        read_account_record(redis_client, TENANT, "acct_bad")
    problems: list[StoredValueError] = []
    assert [r.account_id for r in iter_account_records(redis_client, TENANT, problems=problems)] == [
        "acct_good"
    ]
    assert len(problems) == 1 and "acct_bad" in str(problems[0])


def test_bad_ids_never_reach_a_key() -> None:
    with pytest.raises(ValueError, match="contact"):
        event(1, contact="c:1")
    with pytest.raises(ValueError, match="event_id"):
        event(1, event_id="x y")


_events = st.lists(
    st.builds(
        lambda n, kind, arm, contact, zone, version: event(
            n,
            ts_ms=1_700_000_000_000 + n % 7,  # ties in time: the event id breaks them
            kind=kind,
            arm=arm,
            contact=contact,
            zone=zone,
            zone_set_version=version,
            facts=(F1,) if version else (),
        ),
        st.integers(0, 40),
        st.sampled_from(["views", "clicks", "qr"]),
        st.sampled_from([None, "personal", "holdout"]),
        st.sampled_from([None, "c_joram", "c_ann"]),
        st.sampled_from([None, "cta", "proof"]),
        st.sampled_from([None, 1, 2]),
    ),
    min_size=1,
    max_size=25,
)


def comparable(record: AccountRecord | None) -> AccountRecord | None:
    return None if record is None else record.model_copy(update={"updated_ms": None})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=_events, seed=st.integers(0, 2**32))
def test_any_order_and_duplication_of_events_folds_to_the_same_record(
    redis_client: redis.Redis, events: list[EventFold], seed: int
) -> None:
    # The same event id always carries the same content, as a redelivery does.
    unique = list({e.event_id: e for e in events}.values())
    redis_client.flushdb()
    fold_all(redis_client, unique)
    expected = comparable(read_account_record(redis_client, TENANT, ACCOUNT))

    rng = random.Random(seed)
    shuffled = unique + [rng.choice(unique) for _ in range(len(unique))]
    rng.shuffle(shuffled)
    redis_client.flushdb()
    fold_all(redis_client, shuffled)
    assert comparable(read_account_record(redis_client, TENANT, ACCOUNT)) == expected
    assert expected is not None
    assert sum(c.views + c.clicks + c.qr_scans for c in expected.engagement.values()) == len(unique)
