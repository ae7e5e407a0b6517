"""Where each contact stands: precomputed → exported → delivered → engaged → converted; printed → scanned."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from cli.delivered_import import import_delivered
from outbound.export import export_rows
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.outbound.test_export import link_for, run
from tests.server.conftest import CAMPAIGN, TENANT
from welcomemat import keys
from welcomemat.campaign.view import load_campaign_view
from welcomemat.records.account_records import contact_erasure, read_account_record
from welcomemat.records.contact_workflow import (
    MARK_BATCH,
    ContactState,
    ContactWorkflow,
    WorkflowRecorder,
    contact_workflows,
    record_printed,
)
from welcomemat.records.conversions import ConversionIn, ConversionType, record_conversion
from welcomemat.records.fold import FOLD_LUA, EventFold, fold_events
from welcomemat.zones.store import ZoneSetStore

ACCOUNTS = 24
# The clock of every mark, as a parameter: never today's date.
NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


@pytest.fixture
def precomputed(tmp_path: Path, redis_client: redis.Redis) -> redis.Redis:
    precompute_offline(redis_client, write_example_accounts(tmp_path / "accounts.jsonl", ACCOUNTS))
    return redis_client


def _export(client: redis.Redis, recorder: WorkflowRecorder | None) -> list[dict[str, str]]:
    view = load_campaign_view(client, TENANT, CAMPAIGN)
    _, rows = export_rows(client, view, link_for, now=datetime.now(UTC), recorder=recorder)
    return list(rows)


def _workflows(client: redis.Redis, account_id: str) -> dict[str, ContactWorkflow]:
    record = read_account_record(client, TENANT, account_id)
    assert record is not None
    zone_set = ZoneSetStore(client).get(TENANT, CAMPAIGN, account_id)
    return {w.contact_id: w for w in contact_workflows(client, record, CAMPAIGN, zone_set)}


def _calls(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    # Calls that ran: a first EVALSHA answered NOSCRIPT (then EVAL loads the script) is a failed call.
    return {
        name.removeprefix("cmdstat_"): int(v["calls"]) - int(v.get("failed_calls", 0))
        for name, v in stats.items()
    }


def test_the_export_marks_every_row_exported_with_one_script_call_per_batch(precomputed: redis.Redis) -> None:
    before = _calls(precomputed)
    plain = _export(precomputed, None)
    middle = _calls(precomputed)
    assert not any(
        c.get(cmd, 0) - before.get(cmd, 0) for c in (middle,) for cmd in ("hset", "eval", "evalsha")
    )

    recorder = WorkflowRecorder(precomputed, TENANT, CAMPAIGN, NOW_MS)
    rows = _export(precomputed, recorder)
    after = _calls(precomputed)
    accounts = len({r["account_id"] for r in rows})
    scripts = sum(after.get(c, 0) - middle.get(c, 0) for c in ("eval", "evalsha"))
    # One pass: the same reads as without marks, plus one script call per batch of accounts
    # (not one round trip per contact); the script's own writes are one HSET per contact.
    assert scripts == math.ceil(accounts / MARK_BATCH) == 1
    assert after["hset"] - middle["hset"] == len(rows) == len(plain) > ACCOUNTS
    for read in ("scan", "hgetall", "mget"):
        assert after.get(read, 0) - middle.get(read, 0) == middle.get(read, 0) - before.get(read, 0), read

    for row in rows:
        mark = _workflows(precomputed, row["account_id"])[row["contact_id"]].states[ContactState.EXPORTED]
        assert mark.at_ms == mark.first_ms == NOW_MS
        assert mark.detail["rung"] == row["rung"] and mark.detail["status"] == row["status"]
        assert mark.detail["arm"] == row["arm"]
        assert str(mark.detail["zone_set_version"]) == row["zone_set_version"]

    # Again, later: the first export is remembered, the latest one's detail shown.
    _export(precomputed, WorkflowRecorder(precomputed, TENANT, CAMPAIGN, NOW_MS + 60_000))
    mark = _workflows(precomputed, rows[0]["account_id"])[rows[0]["contact_id"]].states[ContactState.EXPORTED]
    assert (mark.first_ms, mark.at_ms) == (NOW_MS, NOW_MS + 60_000)


def test_each_state_comes_from_its_source_and_a_repeat_changes_nothing(
    precomputed: redis.Redis, tmp_path: Path
) -> None:
    rows = _export(precomputed, WorkflowRecorder(precomputed, TENANT, CAMPAIGN, NOW_MS))
    row = next(r for r in rows if r["rung"] == "personal")
    account, contact = row["account_id"], row["contact_id"]
    other = next(r for r in rows if r["account_id"] != account)
    states = _workflows(precomputed, account)[contact].states
    assert list(states) == [ContactState.PRECOMPUTED, ContactState.EXPORTED]
    assert states[ContactState.PRECOMPUTED].detail["version"] == int(row["zone_set_version"])

    # delivered: the sequencer's file (one bad line, one account without a record)
    delivered = tmp_path / "sent.csv"
    delivered.write_text(
        "email,account_id,contact_id,delivered_at\n"
        f"x@example.com,{account},{contact},2026-03-03T08:00:00+01:00\n"
        f"y@example.com,{other['account_id']},{other['contact_id']},yesterday\n"
        "z@example.com,acct_unknown,c_nobody,2026-03-03T08:00:00Z\n",
        encoding="utf-8",
    )
    report = import_delivered(precomputed, TENANT, CAMPAIGN, delivered, now=NOW)
    assert report.lines == 3 and report.written == 1
    assert [str(p) for p in report.problems] == [
        f"{delivered}:3, field 'delivered_at': 'yesterday' is not an ISO 8601 time with a UTC offset"
        " (e.g. 2026-11-28T15:30:00+01:00)"
    ]
    assert not precomputed.exists(keys.account_record_key(TENANT, "acct_unknown"))  # never created
    record_before = precomputed.hgetall(keys.account_record_key(TENANT, account))
    import_delivered(precomputed, TENANT, CAMPAIGN, delivered, now=NOW + timedelta(days=1))
    assert precomputed.hgetall(keys.account_record_key(TENANT, account)) == record_before
    mark = _workflows(precomputed, account)[contact].states[ContactState.DELIVERED]
    assert mark.at_ms == int(datetime(2026, 3, 3, 7, tzinfo=UTC).timestamp() * 1000)

    # engaged and scanned: the event fold (the one `welcomemat sync` runs)
    script = precomputed.register_script(FOLD_LUA)
    view_ms, qr_ms = NOW_MS + 3_600_000, NOW_MS + 7_200_000
    events = [
        EventFold(TENANT, account, CAMPAIGN, "views", view_ms, "ev-view-1", arm="personal", contact=contact),
        EventFold(
            TENANT, account, CAMPAIGN, "clicks", view_ms + 1, "ev-click-1", contact=contact, zone="cta"
        ),
        EventFold(TENANT, account, CAMPAIGN, "qr", qr_ms, "ev-qr-1", contact=contact),
    ]
    fold_events(script, precomputed, events, outbox=False, now_ms=qr_ms)
    fold_events(script, precomputed, events, outbox=False, now_ms=qr_ms)  # folded once
    states = _workflows(precomputed, account)[contact].states
    assert states[ContactState.ENGAGED].first_ms == view_ms
    assert states[ContactState.ENGAGED].detail == {"views": 1, "clicks": 1}
    assert states[ContactState.SCANNED].detail == {"scans": 1}

    # converted: the campaign's conversions, an account's outcome on each of its contacts
    occurred = NOW + timedelta(days=5)
    conversion = ConversionIn(
        campaign=CAMPAIGN,
        account_id=account,
        type=ConversionType.MEETING_BOOKED,
        conversion_id="crm-1",
        occurred_at=occurred,
    )
    record_conversion(precomputed, TENANT, 0.2, conversion, now=occurred)
    for flow in _workflows(precomputed, account).values():
        assert flow.states[ContactState.CONVERTED].detail == {
            "type": "meeting_booked",
            "conversion_id": "crm-1",
        }

    # printed: the core function the mail run calls
    printed = record_printed(
        precomputed,
        TENANT,
        CAMPAIGN,
        [(account, contact, {"rung": "personal", "file": "mail.csv"})],
        now_ms=NOW_MS,
    )
    assert printed == 1
    assert (
        record_printed(
            precomputed,
            TENANT,
            CAMPAIGN,
            [(account, contact, {"rung": "personal", "file": "mail.csv"})],
            now_ms=NOW_MS,
        )
        == 0
    )
    flow = _workflows(precomputed, account)[contact]
    assert flow.states[ContactState.PRINTED].detail == {"rung": "personal", "file": "mail.csv"}
    assert list(flow.states) == list(ContactState) and flow.latest is ContactState.SCANNED

    # the record itself holds the marks, and erasing the contact takes them with it
    record = read_account_record(precomputed, TENANT, account)
    assert record is not None and set(record.workflow[CAMPAIGN][contact]) == {
        "exported",
        "delivered",
        "printed",
    }
    _, fields = contact_erasure(precomputed, TENANT, account, contact)
    assert {f for f in fields if f.startswith("w:")} == {
        f"w:{CAMPAIGN}:{contact}:{s}" for s in ("exported", "delivered", "printed")
    }


def test_explain_shows_each_contacts_state_and_its_json(
    precomputed: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "sequence.csv"
    exported = run("export", CAMPAIGN, "--out", str(out), redis_url=redis_url, home=tmp_path)
    assert exported.returncode == 0, exported.stderr
    row = next(r for r in _export(precomputed, None) if r["rung"] == "personal")
    account, contact = row["account_id"], row["contact_id"]
    sent = tmp_path / "sent.csv"
    sent.write_text(f"account_id,contact_id\n{account},{contact}\n{account},\n", encoding="utf-8")
    imported = run("delivered", "import", CAMPAIGN, str(sent), redis_url=redis_url, home=tmp_path)
    assert imported.returncode == 2 and f"{sent}:3, field 'contact_id'" in imported.stderr
    assert "1 marks written" in imported.stderr

    as_json = run("explain", CAMPAIGN, account, "--json", redis_url=redis_url, home=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    workflow = {w["contact_id"]: w["states"] for w in json.loads(as_json.stdout)["workflow"]}
    assert list(workflow[contact]) == ["precomputed", "exported", "delivered"]
    assert workflow[contact]["exported"]["detail"]["rung"] == "personal"

    held = run("subject-export", row["email"], "--tenant", TENANT, redis_url=redis_url, home=tmp_path)
    assert held.returncode == 0, held.stderr
    person = next(s for s in json.loads(held.stdout)["held"] if s["contact_id"] == contact)
    assert set(person["workflow"][CAMPAIGN]) == {"exported", "delivered"}  # a person's access request

    text = run("explain", CAMPAIGN, account, redis_url=redis_url, home=tmp_path)
    line = next(x for x in text.stdout.splitlines() if x.strip().startswith(f"{contact}:"))
    assert " · exported " in line and "rung personal" in line and " · delivered " in line


def test_marks_for_thousands_of_contacts_cost_one_script_call_per_batch_of_accounts(
    redis_client: redis.Redis,
) -> None:
    accounts = 2 * MARK_BATCH + 1
    pipe = redis_client.pipeline(transaction=False)
    for n in range(accounts):
        pipe.hset(keys.account_record_key(TENANT, f"acct_{n:05d}"), "updated_ms", NOW_MS)
    pipe.execute()
    marks = [
        (f"acct_{n:05d}", f"c_{n}_{k}", ContactState.PRINTED, NOW_MS, {"file": "mail.csv"})
        for n in range(accounts)
        for k in range(4)
    ]
    before = _calls(redis_client)
    assert record_printed(
        redis_client, TENANT, CAMPAIGN, [(a, c, d) for a, c, _, _, d in marks], now_ms=NOW_MS
    ) == len(marks)
    after = _calls(redis_client)
    scripts = sum(after.get(c, 0) - before.get(c, 0) for c in ("eval", "evalsha"))
    assert scripts == math.ceil(accounts / MARK_BATCH) == 3  # 4,004 contacts, 3 round trips
    assert after["hset"] - before["hset"] == len(marks)
    assert (
        record_printed(redis_client, TENANT, CAMPAIGN, [(a, c, d) for a, c, _, _, d in marks], now_ms=NOW_MS)
        == 0
    )  # idempotent


def test_a_hostile_line_in_a_delivered_file_costs_that_line_only(
    precomputed: redis.Redis, tmp_path: Path
) -> None:
    """A field past csv's limit, bytes that are not UTF-8, a line of megabytes with no end, an
    unclosed quote: each is its own line's problem (file, line), never a traceback, and the lines
    after it are recorded. (A field past csv's limit once stopped the import at that line, and
    a byte that was not UTF-8 at its read buffer, dropping every line after.)"""
    rows = _export(precomputed, None)
    people = [(r["account_id"], r["contact_id"]) for r in rows][:5]
    good = [f"{account},{contact},2026-03-03T08:00:00Z\n".encode() for account, contact in people]
    delivered = tmp_path / "sent.csv"
    delivered.write_bytes(
        b"account_id,contact_id,delivered_at\n"
        + good[0]
        + b'acct_x,"'
        + b"x" * 200_000
        + b'",2026-03-03T08:00:00Z\n'  # line 3: a field past csv's limit
        + good[1]
        + b"acct_\xff\xfe,c_1,2026-03-03T08:00:00Z\n"  # line 5: not UTF-8
        + good[2]
        + b"acct_y,c_2,"
        + b"9" * 3_000_000
        + b"\n"  # line 7: megabytes, skipped unread
        + good[3]
        + b'acct_z,"c_3\n'  # line 9: an unclosed quote runs to the next line ...
        + b'more"\n'  # ... which closes it: one record, refused at its last line
        + good[4]
    )
    report = import_delivered(precomputed, TENANT, CAMPAIGN, delivered, now=NOW)
    assert [p.line for p in report.problems] == [3, 5, 7, 10]
    assert all(p.file == str(delivered) for p in report.problems)
    for problem in report.problems:
        str(problem).encode("utf-8")  # printable: no lone surrogate
    assert report.written == 5
    for account, contact in people:
        assert ContactState.DELIVERED in _workflows(precomputed, account)[contact].states, account
