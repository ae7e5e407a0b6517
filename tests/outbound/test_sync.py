"""`welcomemat sync`: events from the renderer's writer end up in the account records exactly once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import redis

from outbound.sync import PoisonEvent, Syncer, SyncOptions, discover_tenants, ensure_group, parse_event
from server.engagement.events import EngagementEvent, EventType
from tests.corpora import REPO_ROOT
from tests.outbound.sync_helpers import (
    CAMPAIGN,
    TENANT,
    actual_counts,
    emit,
    expected_counts,
    make_events,
    wait_for,
)
from tests.server.conftest import CAMPAIGN as SERVED_CAMPAIGN
from tests.server.conftest import example_inputs, publish_config
from welcomemat import keys
from welcomemat.records.account_records import read_account_record, write_profile
from welcomemat.records.accounts import Account
from welcomemat.records.event_entries import parse_entry
from welcomemat.records.fold import FOLD_LUA, EventFold, fold_events
from welcomemat.storage.embedded_redis import temporary_redis
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import CitedFact, Rung, ZoneContent, ZoneSet, ZoneSetMode

WELCOMEMAT = str(Path(sys.executable).with_name("welcomemat"))
F1 = CitedFact(fact_id="f1", source_url="https://dymaxa.com/press/series-a", published_at=date(2026, 11, 26))


def syncer(client: redis.Redis, name: str = "s1", **options: object) -> Syncer:
    values: dict[str, object] = {"tenants": (TENANT,), "once": True, "block_ms": 50, "claim_idle_ms": 200}
    values.update(options)
    return Syncer(client, SyncOptions(name=name, **values), log=lambda line: None)  # type: ignore[arg-type]


def pending_of(client: redis.Redis, consumer: str) -> int:
    rows = client.xpending_range(
        keys.events_stream_key(TENANT), keys.SYNC_CONSUMER_GROUP, min="-", max="+", count=100_000
    )
    return sum(1 for r in rows if r["consumer"] == consumer.encode())


def view(n: int, account: str = "acct_dymaxa", **extra: object) -> EngagementEvent:
    values: dict[str, object] = {
        "type": EventType.VIEW,
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "view_id": f"v{n}",
        "ts_ms": 1_764_000_000_000 + n,
        "arm": "personal",
        "account": account,
    }
    values.update(extra)
    return EngagementEvent(**values)  # type: ignore[arg-type]


# -- folding ---------------------------------------------------------------------------------------


def test_events_from_the_writer_fold_into_the_records_exactly_once(redis_client: redis.Redis) -> None:
    events = make_events(3000, accounts=40)
    assert emit(redis_client, events, batch_max=500) == 3000  # six stream entries
    assert redis_client.xlen(keys.events_stream_key(TENANT)) == 6
    stats = syncer(redis_client, batch=128).run()
    assert (stats.folded, stats.duplicates, stats.dead_lettered) == (3000, 0, 0)
    assert actual_counts(redis_client) == expected_counts(events)

    # A second run (and a second consumer) finds nothing new: the group remembers.
    again = syncer(redis_client, name="s2").run()
    assert (again.read, again.folded) == (0, 0)
    assert actual_counts(redis_client) == expected_counts(events)
    record = read_account_record(redis_client, TENANT, "acct_1")
    assert record is not None
    q4 = record.engagement[CAMPAIGN]
    assert q4.first_seen_ms == 1_764_000_000_001 and q4.last_seen_ms == 1_764_000_000_000 + 2961
    assert redis_client.ttl(keys.account_record_key(TENANT, "acct_1")) > 0


def test_the_same_event_written_twice_folds_once(redis_client: redis.Redis) -> None:
    same = view(1)
    emit(redis_client, [same, same, view(2)])  # a server-made event written twice: two entries, one id
    assert redis_client.xlen(keys.events_stream_key(TENANT)) == 3
    stats = syncer(redis_client).run()
    assert (stats.folded, stats.duplicates) == (2, 1)
    record = read_account_record(redis_client, TENANT, "acct_dymaxa")
    assert record is not None and record.engagement[CAMPAIGN].views == 2


def test_anonymous_and_uncounted_events_are_acknowledged_without_a_record(redis_client: redis.Redis) -> None:
    emit(redis_client, [view(1, account=None), view(2)])  # type: ignore[arg-type]
    redis_client.xadd(keys.events_stream_key(TENANT), {"type": "scroll", "account": "acct_x", "ts": "1"})
    stats = syncer(redis_client).run()
    assert (stats.folded, stats.skipped) == (1, 2)
    assert read_account_record(redis_client, TENANT, "acct_x") is None
    assert pending_of(redis_client, "s1") == 0


def test_stored_replays_and_clicks_on_unknown_zones_fold_once_and_not_at_all(
    redis_client: redis.Redis,
) -> None:
    """Issue 25: events already in the stream (written before the renderer refused them) of one
    view token replayed 120 times, and clicks on 30 zones the campaign does not have."""
    campaign, zones = example_inputs()  # pages' zones: hero_headline, hero_support, proof, cta, ...
    publish_config(redis_client, campaign, zones)
    account, ts = "acct_replayed", 1_764_000_000_000

    def event(n: int, kind: EventType, view_id: str, zone: str | None = None) -> EngagementEvent:
        return EngagementEvent(
            type=kind, tenant=TENANT, campaign=SERVED_CAMPAIGN, view_id=view_id, ts_ms=ts + n,
            arm="personal", account=account, zone=zone, event_id=f"{kind}-{view_id}-{zone}-{n}",
        )  # fmt: skip

    replays = [event(n, EventType.VIEW, "-one_view") for n in range(120)]
    replays += [event(n, EventType.CLICK, "-one_view", "cta") for n in range(120)]
    replays += [event(n, EventType.CLICK, "-one_view", "proof") for n in range(3)]
    unknown = [event(n, EventType.CLICK, f"v{n}", f"made_up_{n}") for n in range(30)]
    assert emit(redis_client, replays + unknown) == 273
    stats = syncer(redis_client).run()
    assert (stats.folded, stats.duplicates, stats.skipped) == (3, 240, 30)
    record = read_account_record(redis_client, TENANT, account)
    assert record is not None
    engagement = record.engagement[SERVED_CAMPAIGN]
    assert (engagement.views, engagement.clicks) == (1, 2)
    assert engagement.clicks_by_zone == {"cta": 1, "proof": 1}
    fields = redis_client.hkeys(keys.account_record_key(TENANT, account))
    assert not [f for f in fields if b"made_up" in f]


def published_zone_set(version_hash: str) -> ZoneSet:
    return ZoneSet(
        tenant=TENANT,
        campaign=CAMPAIGN,
        account_id="acct_dymaxa",
        input_hash=version_hash,
        guideline_version="g1",
        created_at=datetime(2026, 11, 28, tzinfo=UTC),
        mode=ZoneSetMode.DEGRADED,
        zones=(
            ZoneContent(zone_id="headline", text="Congrats", rung=Rung.PERSONAL, reason="fact", facts=(F1,)),
            ZoneContent(zone_id="proof", text="Proof", rung=Rung.SEGMENT, reason="no_fact"),
        ),
    )


def test_facts_shown_come_from_the_version_the_event_names(redis_client: redis.Redis) -> None:
    account = Account.model_validate(
        {
            "account_id": "acct_dymaxa",
            "name": "Dymaxa B.V.",
            "domain": "dymaxa.com",
            "segment": "saas-mid",
            "facts": [{"id": "f1", "type": "funding", "statement": "Dymaxa raised a Series A"}],
        }
    )
    store = ZoneSetStore(redis_client)
    first = store.publish(published_zone_set("hash-0001")).zone_set
    write_profile(redis_client, TENANT, account, first)
    second = store.publish(published_zone_set("hash-0002")).zone_set  # v1 moves to the previous slot
    assert (first.version, second.version) == (1, 2)

    emit(redis_client, [view(1, rung="personal", zone_set_version=1)])
    syncer(redis_client).run()
    q4 = read_account_record(redis_client, TENANT, "acct_dymaxa").engagement[CAMPAIGN]  # type: ignore[union-attr]
    assert q4.zone_set_version == 1
    assert [(f.id, f.type, f.statement) for f in q4.facts_shown] == [
        ("f1", "funding", "Dymaxa raised a Series A")
    ]

    # A holdout page showed no personal zone: the version is recorded, no facts.
    emit(redis_client, [view(2, arm="holdout", rung="segment", zone_set_version=2)])
    syncer(redis_client).run()
    q4 = read_account_record(redis_client, TENANT, "acct_dymaxa").engagement[CAMPAIGN]  # type: ignore[union-attr]
    assert (q4.zone_set_version, q4.facts_shown, q4.last_arm) == (2, [], "holdout")

    # A version neither slot holds any more: recorded without facts.
    emit(redis_client, [view(3, rung="personal", zone_set_version=7)])
    syncer(redis_client).run()
    q4 = read_account_record(redis_client, TENANT, "acct_dymaxa").engagement[CAMPAIGN]  # type: ignore[union-attr]
    assert (q4.zone_set_version, q4.facts_shown) == (7, [])


def test_tenants_are_found_from_the_campaigns_index(redis_client: redis.Redis) -> None:
    redis_client.hset(keys.campaigns_index_key(), mapping={"acme/q4": "q4", "globex/spring": "spring"})
    assert discover_tenants(redis_client) == ["acme", "globex"]
    emit(redis_client, [view(1), view(2, tenant="globex", account="acct_g")])
    stats = syncer(redis_client, tenants=()).run()
    assert stats.folded == 2
    assert read_account_record(redis_client, "globex", "acct_g") is not None


# -- crashes, poison, outages ----------------------------------------------------------------------


def test_a_consumer_that_died_between_fold_and_acknowledge_costs_nothing(redis_client: redis.Redis) -> None:
    events = make_events(500, accounts=10)
    emit(redis_client, events)
    ensure_group(redis_client, TENANT)
    # What a crash leaves: a batch read and folded by "victim", never acknowledged.
    reply = redis_client.xreadgroup(
        keys.SYNC_CONSUMER_GROUP, "victim", {keys.events_stream_key(TENANT): ">"}, count=120
    )
    folds = []
    for entry_id, fields in reply[0][1][:80]:  # killed mid-batch: 80 of its 120 folded
        [(_, folded, _)] = parse_entry(TENANT, entry_id.decode(), fields)  # a batch of one event
        assert isinstance(folded, EventFold)
        folds.append(folded)
    fold_events(redis_client.register_script(FOLD_LUA), redis_client, folds, outbox=False)
    assert pending_of(redis_client, "victim") == 120

    time.sleep(0.25)  # the victim's entries are now idle longer than claim_idle_ms (200 ms)
    stats = syncer(redis_client, name="survivor").run()
    assert stats.claimed == 120 and stats.duplicates == 80 and stats.folded == 420
    assert pending_of(redis_client, "victim") == 0
    assert actual_counts(redis_client) == expected_counts(events)


def test_a_restarted_consumer_rereads_its_own_pending_entries(redis_client: redis.Redis) -> None:
    events = make_events(300, accounts=7)
    emit(redis_client, events)
    ensure_group(redis_client, TENANT)
    redis_client.xreadgroup(keys.SYNC_CONSUMER_GROUP, "same", {keys.events_stream_key(TENANT): ">"}, count=50)
    # The same name again (e.g. `--consumer worker-1` after a reboot): no wait for claim_idle_ms.
    stats = syncer(redis_client, name="same", claim_idle_ms=3_600_000).run()
    assert stats.folded == 300 and stats.claimed == 0
    assert actual_counts(redis_client) == expected_counts(events)


def test_a_poison_entry_is_dead_lettered_after_n_deliveries_and_the_rest_fold(
    redis_client: redis.Redis,
) -> None:
    events = make_events(100, accounts=5)
    emit(redis_client, events[:50])
    poison_id = redis_client.xadd(
        keys.events_stream_key(TENANT),
        {"type": "view", "tenant": TENANT, "campaign": CAMPAIGN, "account": "acct_1", "ts": "yesterday"},
    )
    emit(redis_client, events[50:])
    lines: list[str] = []
    s = Syncer(
        redis_client,
        SyncOptions(name="s1", tenants=(TENANT,), once=True, block_ms=50, max_deliveries=3),
        log=lines.append,
    )
    stats = s.run()
    assert (stats.folded, stats.dead_lettered, stats.failed_attempts) == (100, 1, 3)
    assert actual_counts(redis_client) == expected_counts(events)
    dead = redis_client.xrange(keys.events_dead_letter_key(TENANT))
    assert len(dead) == 1
    fields = dead[0][1]
    assert fields[b"source_id"] == poison_id and fields[b"deliveries"] == b"3"
    assert b"ts" in fields and b"not a whole number" in fields[b"error"]
    assert redis_client.ttl(keys.events_dead_letter_key(TENANT)) > 0
    assert pending_of(redis_client, "s1") == 0
    assert any("moved to" in line and poison_id.decode() in line for line in lines)


def test_a_syncer_without_a_log_leaves_the_terminal_to_its_command(
    redis_client: redis.Redis, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    emit(redis_client, make_events(10, accounts=2))
    redis_client.xadd(
        keys.events_stream_key(TENANT),
        {"type": "view", "tenant": TENANT, "campaign": CAMPAIGN, "account": "acct_1", "ts": "yesterday"},
    )
    options = SyncOptions(name="quiet", tenants=(TENANT,), once=True, block_ms=50, max_deliveries=1)
    with caplog.at_level("INFO", logger="outbound.sync"):
        stats = Syncer(redis_client, options).run()
    assert (stats.folded, stats.dead_lettered) == (10, 1)
    assert capfd.readouterr() == ("", "")  # the command prints; the library only logs
    logged = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("sync quiet: ") and "moved to" in line for line in logged), logged


def env_for(redis_url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WELCOMEMAT_CRM_WEBHOOK")}
    return {**env, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}


def test_cli_once_reports_and_exits_1_when_an_event_was_dead_lettered(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    emit(redis_client, [view(1), view(2)])
    redis_client.xadd(keys.events_stream_key(TENANT), {"type": "view", "account": "acct_1", "ts": "x"})
    args = [WELCOMEMAT, "sync", "--once", "--tenant", TENANT, "--max-deliveries", "2", "--block-ms", "50"]
    done = subprocess.run(
        args, cwd=REPO_ROOT, env=env_for(redis_url, tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    assert "2 events folded" in done.stdout and "1 dead-lettered" in done.stdout
    assert "dead-lettered acme" in done.stderr and "campaign" in done.stderr
    assert re.search(r"^sync \S+: entry \S+ of .+ moved to ", done.stderr, flags=re.MULTILINE), done.stderr


def test_cli_refuses_a_bad_tenant_and_a_webhook_without_secret(tmp_path: Path, redis_url: str) -> None:
    env = env_for(redis_url, tmp_path)
    done = subprocess.run(
        [WELCOMEMAT, "sync", "--once", "--tenant", "a:b"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "--tenant" in done.stderr
    env["WELCOMEMAT_CRM_WEBHOOK_URL"] = "https://crm.example/hook"
    done = subprocess.run([WELCOMEMAT, "sync", "--once"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "WELCOMEMAT_CRM_WEBHOOK_SECRET" in done.stderr


def test_a_sync_process_killed_mid_batch_then_another_run_counts_exactly(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    events = make_events(30_000, accounts=200)
    emit(redis_client, events)
    env = env_for(redis_url, tmp_path)
    base = [WELCOMEMAT, "sync", "--once", "--tenant", TENANT, "--block-ms", "50", "--claim-idle-ms", "300"]
    victim = subprocess.Popen(
        [*base, "--consumer", "victim"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Freeze it once it has folded some and holds a batch in hand; kill it only while frozen.
        deadline = time.monotonic() + 60
        held = 0
        while time.monotonic() < deadline and victim.poll() is None:
            folded = sum(c["views"] for c in actual_counts(redis_client).values()) if held == 0 else 0
            if folded >= 2000:
                victim.send_signal(signal.SIGSTOP)
                held = pending_of(redis_client, "victim")
                if held:
                    victim.send_signal(signal.SIGKILL)
                    break
                victim.send_signal(signal.SIGCONT)
            time.sleep(0.01)
        victim.communicate(timeout=10)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.communicate()
    assert held > 0, "the victim died holding unacknowledged entries"
    total_views = sum(1 for e in events if e.type is EventType.VIEW)
    assert sum(c["views"] for c in actual_counts(redis_client).values()) < total_views, "killed mid-run"

    done = subprocess.run(
        [*base, "--consumer", "survivor"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    claimed = int(re.search(r"(\d+) claimed from stopped consumers", done.stdout).group(1))  # type: ignore[union-attr]
    assert claimed == held
    assert pending_of(redis_client, "victim") == 0
    assert actual_counts(redis_client) == expected_counts(events)


def test_redis_stopped_and_restarted_mid_sync_counts_exactly(tmp_path: Path) -> None:
    home = tmp_path / "redis"
    first = temporary_redis(home)
    url = first.__enter__()
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=2)
    events = make_events(4000, accounts=30)
    lines: list[str] = []
    s = Syncer(
        client, SyncOptions(name="follower", tenants=(TENANT,), block_ms=100, batch=100), log=lines.append
    )
    thread = threading.Thread(target=s.run, daemon=True)
    try:
        emit(client, events[:2000])
        thread.start()
        wait_for(lambda: s.stats.folded >= 500, 30, "the follower to fold some events")
        time.sleep(1.1)  # appendfsync everysec: what was written survives the restart
        first.__exit__(None, None, None)  # Redis stops, mid-sync
        first = None
        wait_for(lambda: s.stats.redis_errors >= 2, 30, "the follower to notice the outage")
        assert thread.is_alive(), "the follower crashed on a Redis outage"
        with temporary_redis(home):  # back: same socket, same data (AOF)
            emit(client, events[2000:])
            wait_for(lambda: s.stats.folded + s.stats.duplicates >= 4000, 60, "every event folded")
            s.stop()
            thread.join(10)
            assert not thread.is_alive()
            assert actual_counts(client) == expected_counts(events)
            assert any("Redis unavailable" in line for line in lines)
            assert any("resuming" in line for line in lines)
    finally:
        s.stop()
        if first is not None:
            first.__exit__(None, None, None)
        client.close()


@pytest.mark.parametrize(
    "bad", [{"ts": "1", "account": "a:b"}, {"ts": "1", "account": "a", "tenant": "other"}]
)
def test_malformed_entries_are_poison(bad: dict[str, str]) -> None:
    with pytest.raises(PoisonEvent):
        parse_event(TENANT, "1-0", {"type": "view", "campaign": CAMPAIGN, **bad})


def test_a_view_names_its_page_and_one_written_before_views_did_still_folds() -> None:
    entry = {"type": "view", "campaign": CAMPAIGN, "account": "a", "ts": "1"}
    old = parse_event(TENANT, "1-0", entry)
    assert old is not None and old.kind == "views" and old.page is None
    new = parse_event(TENANT, "2-0", {**entry, "page": "continuation"})
    assert new is not None and new.page == "continuation"
    with pytest.raises(PoisonEvent):
        parse_event(TENANT, "3-0", {**entry, "page": "a:b"})  # not an id: never a key or a URL
