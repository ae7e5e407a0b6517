"""Data-subject requests end to end on a real Redis: precompute, visits, sync, then `welcomemat erase`.

Every key, hash field, set member and stream entry that names the subject is counted before and
after, by a scan of the whole database that knows nothing of the key schema. After an erasure
only the audit log (who did what: ids) and the erasure list (the revocation) may name an
account, and nothing may hold a person's address. The renderer, running through all of it,
then shows the old e-mail link the anonymous page and sets no cookie from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from outbound.sync import Syncer, SyncOptions
from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from tests.event_stream import event_count
from tests.precompute.test_pipeline import dymaxa
from tests.server.conftest import (
    BASE_URL,
    SECRET,
    example_inputs,
    renderer_app,
    renderer_settings,
    tuning_for_tests,
)
from welcomemat.arms import Arm, assign_arm
from welcomemat.records.account_records import read_account_record
from welcomemat.records.audit import AuditAction, Auditor, Via, read_entries
from welcomemat.records.subject_requests import EVENT_ACCOUNT_FIELD, EVENT_CONTACT_FIELD
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.zones.review import decide
from welcomemat.zones.store import ZoneSetStore

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
TENANT, CAMPAIGN, ACCOUNT, CONTACT, EMAIL = (
    "acme",
    "q4-pipeline",
    "acct_dymaxa",
    "c_joram",
    "joram@dymaxa.com",
)
OTHER = "acct_00002"  # Kinkaquo: another account, untouched by Dymaxa's erasure


def cli(*args: str, redis_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    env.pop("WELCOMEMAT_OPERATOR", None)
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def holding(client: redis.Redis, needle: str) -> Counter[str]:
    """Per kind of key (its name past the hash tag, ids masked): keys whose name holds `needle`
    (1 each), else hash fields, members, elements and stream entries holding it."""
    found: Counter[str] = Counter()
    raw = needle.encode()
    for key in client.scan_iter(count=1000):
        kind = key.decode().split("}", 1)[-1].lstrip(":").replace(needle, "<id>")
        if raw in key:
            found[kind] += 1
            continue
        kind_of = client.type(key)
        if kind_of == b"string":
            found[kind] += int(raw in (client.get(key) or b""))
        elif kind_of == b"hash":
            found[kind] += sum(raw in f or raw in v for f, v in client.hgetall(key).items())
        elif kind_of in (b"set", b"zset"):
            members = client.smembers(key) if kind_of == b"set" else client.zrange(key, 0, -1)
            found[kind] += sum(raw in m for m in members)  # type: ignore[union-attr]
        elif kind_of == b"list":
            found[kind] += sum(raw in e for e in client.lrange(key, 0, -1))  # type: ignore[union-attr]
        elif kind_of == b"stream":
            found[kind] += sum(
                any(raw in f or raw in v for f, v in fields.items())
                for _, fields in client.xrange(key)  # type: ignore[union-attr]
            )
    return Counter({k: n for k, n in found.items() if n})


def accounts_file(tmp_path: Path) -> Path:
    rows = [dymaxa(datetime.now(UTC).date(), tier=1)]
    rows += [
        json.loads(line) for line in (REPO_ROOT / "examples" / "accounts.jsonl").read_text().splitlines()[2:3]
    ]
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def precompute(client: redis.Redis, path: Path) -> Any:
    campaign, zones = example_inputs()
    return PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
    ).run(path)


def link(contact: str | None = CONTACT, *, kind: TokenKind = TokenKind.LINK, ahead_s: float = 0) -> str:
    signer = TokenSigner([SECRET], clock=lambda: time.time() + ahead_s)
    return signer.sign(kind, tenant=TENANT, campaign=CAMPAIGN, account=ACCOUNT, contact=contact, ttl_s=3600)


def rungs(page: str) -> set[str]:
    return {part.split('"', 1)[0] for part in page.split('data-wm-rung="')[1:]}


def sync(client: redis.Redis) -> None:
    Syncer(client, SyncOptions(name="s", tenants=(TENANT,), once=True, outbox=True), log=lambda _: None).run()


def wait_for(condition: Any, what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def served(tmp_path: Path, redis_client: redis.Redis) -> Iterator[TestClient]:
    """Dymaxa precomputed and approved, a renderer on the same Redis, visits by link, cookie and QR,
    folded by sync into the records (with queued CRM changes)."""
    assert assign_arm(TENANT, CAMPAIGN, ACCOUNT, example_inputs()[0].holdout_fraction) is Arm.PERSONAL
    precompute(redis_client, accounts_file(tmp_path))
    reviewer = Auditor("rita", Via.CLI, lambda: datetime.now(UTC))
    assert decide(redis_client, TENANT, CAMPAIGN, ACCOUNT, approve=True, auditor=reviewer).applied
    app = renderer_app(
        renderer_settings(), redis_client=redis_client, tuning=tuning_for_tests(watcher_poll_s=0.02)
    )
    with TestClient(app, base_url=BASE_URL) as client:
        first = client.get(f"/c/{CAMPAIGN}", params={"wm": link()})
        assert "personal" in rungs(first.text) and "Series A" in first.text
        assert client.cookies.get(f"wm_{CAMPAIGN}")  # the link set the identification cookie
        client.get(f"/c/{CAMPAIGN}")  # a return visit, by cookie
        client.get(f"/q/{link(kind=TokenKind.QR)}", follow_redirects=False)
        client.get(f"/c/{CAMPAIGN}", params={"wm": link(None)})  # the account's own link, no contact
        wait_for(lambda: event_count(redis_client, TENANT) >= 4, "the visits' events")
        sync(redis_client)
        yield client


def test_erasing_an_account_leaves_nothing_but_its_audit_trail_and_revokes_its_links(
    served: TestClient, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    client = served
    before = {needle: holding(redis_client, needle) for needle in (ACCOUNT, EMAIL, CONTACT)}
    other_before = holding(redis_client, OTHER)
    old_cookie = client.cookies.get(f"wm_{CAMPAIGN}")
    old_link, old_qr = link(), link(kind=TokenKind.QR)  # in the e-mail and on the mailer already

    erased = cli(
        "erase", ACCOUNT, "--tenant", TENANT, "--reason", "GDPR art. 17 #4411", "--by", "dpo", "--json",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert erased.returncode == 0, erased.stderr
    removed = json.loads(erased.stdout)["removed"]
    after = {needle: holding(redis_client, needle) for needle in (ACCOUNT, EMAIL, CONTACT)}
    print_figures("account", before, after, removed)

    # Only the audit log (publish, approve, erase: ids) and the erasure list name the account.
    assert set(after[ACCOUNT]) == {"audit", "erased"} and after[ACCOUNT]["erased"] == 1
    assert after[EMAIL] == Counter() and after[CONTACT] == Counter()
    assert holding(redis_client, OTHER) == other_before  # another account keeps everything
    assert removed["zone sets"] == 1 and removed["account records"] == 1 and removed["events"] >= 4
    [entry] = [
        e for e in read_entries(redis_client, TENANT, account=ACCOUNT) if e.action is AuditAction.ERASE
    ]
    assert (entry.actor, entry.reason, entry.via) == ("dpo", "GDPR art. 17 #4411", Via.CLI)

    # The renderer got the erasure's change message: the old link, cookie and QR code are anonymous.
    state = client.app.state.renderer.campaigns.cached(CAMPAIGN)  # type: ignore[attr-defined]
    wait_for(lambda: state.revocations.revoked(ACCOUNT, CONTACT, int(time.time()) - 5), "the revocation")
    client.cookies.clear()
    by_link = client.get(f"/c/{CAMPAIGN}", params={"wm": old_link})
    assert "personal" not in rungs(by_link.text) and "Series A" not in by_link.text
    assert "set-cookie" not in by_link.headers  # no fresh cookie from a revoked link
    client.cookies.set(f"wm_{CAMPAIGN}", old_cookie or "")
    assert "personal" not in rungs(client.get(f"/c/{CAMPAIGN}").text)
    client.cookies.clear()
    qr = client.get(f"/q/{old_qr}", follow_redirects=False)
    assert qr.status_code == 303 and "set-cookie" not in qr.headers
    # ... and a fresh app (no watcher history) agrees.
    fresh_app = renderer_app(renderer_settings(), redis_client=redis_client)
    with TestClient(fresh_app, base_url=BASE_URL) as fresh:
        assert "personal" not in rungs(fresh.get(f"/c/{CAMPAIGN}", params={"wm": old_link}).text)
    time.sleep(0.3)  # the event writer's batch
    sync(redis_client)  # the visits after the erasure were anonymous: nothing brings the record back
    assert read_account_record(redis_client, TENANT, ACCOUNT) is None
    assert holding(redis_client, EMAIL) == Counter()

    # Erasing again: exit 0, nothing left.
    again = cli("erase", ACCOUNT, "--tenant", TENANT, "--by", "dpo", redis_url=redis_url, tmp_path=tmp_path)
    assert (
        again.returncode == 0
        and again.stdout.strip() == f"erased account {ACCOUNT} of {TENANT}: nothing left"
    )

    # The same accounts file does not publish it again...
    report = precompute(redis_client, accounts_file(tmp_path))
    assert (report.suppressed, report.accounts) == (1, 2)
    assert ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, ACCOUNT) is None
    assert read_account_record(redis_client, TENANT, ACCOUNT) is None
    # ... until the operator re-admits it deliberately; the old link stays revoked, a new one works.
    unreasoned = cli(
        "erase", ACCOUNT, "--tenant", TENANT, "--readmit", redis_url=redis_url, tmp_path=tmp_path
    )
    assert unreasoned.returncode == 2 and "readmit needs a reason" in unreasoned.stderr
    readmitted = cli(
        "erase", ACCOUNT, "--tenant", TENANT, "--readmit", "--reason", "customer again",
        redis_url=redis_url, tmp_path=tmp_path,
    )  # fmt: skip
    assert readmitted.returncode == 0 and readmitted.stdout.startswith("readmitted")
    assert precompute(redis_client, accounts_file(tmp_path)).suppressed == 0
    decide(
        redis_client,
        TENANT,
        CAMPAIGN,
        ACCOUNT,
        approve=True,
        auditor=Auditor("rita", Via.CLI, lambda: datetime.now(UTC)),
    )
    with TestClient(renderer_app(renderer_settings(), redis_client=redis_client), base_url=BASE_URL) as later:
        assert "personal" not in rungs(later.get(f"/c/{CAMPAIGN}", params={"wm": old_link}).text)
        assert "personal" in rungs(later.get(f"/c/{CAMPAIGN}", params={"wm": link(ahead_s=2)}).text)


def test_erasing_a_person_keeps_their_account_and_exports_what_was_held(
    served: TestClient, redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    client = served
    exported = cli("subject-export", EMAIL, "--by", "dpo", redis_url=redis_url, tmp_path=tmp_path)
    assert exported.returncode == 0, exported.stderr
    [held] = json.loads(exported.stdout)["held"]
    assert (held["account_id"], held["contact_id"], held["profile"]["email"]) == (ACCOUNT, CONTACT, EMAIL)
    assert held["engagement"][CAMPAIGN]["views"] >= 2 and held["engagement"][CAMPAIGN]["qr_scans"] == 1
    assert held["events"] and all(e["contact"] == CONTACT for e in held["events"])
    assert "record" not in held  # the account's own data is the account's, not the person's

    before = {needle: holding(redis_client, needle) for needle in (EMAIL, CONTACT)}
    old_link, old_account_link = link(), link(None)
    erased = cli(
        "erase",
        EMAIL.upper(),
        "--reason",
        "request by e-mail",
        "--json",
        redis_url=redis_url,
        tmp_path=tmp_path,
    )
    assert erased.returncode == 0, erased.stderr
    removed = json.loads(erased.stdout)["removed"]
    after = {needle: holding(redis_client, needle) for needle in (EMAIL, CONTACT)}
    print_figures("contact", before, after, removed)
    assert after[EMAIL] == Counter()  # the list holds the address's digest, never the address
    assert set(after[CONTACT]) == {"audit", "erased"}  # the erase and export entries; the p: mark

    record = read_account_record(redis_client, TENANT, ACCOUNT)
    assert record is not None and record.contacts == [] and record.contacts_engagement == {}
    assert record.engagement[CAMPAIGN].views >= 3  # the account's own counts stay
    state = client.app.state.renderer.campaigns.cached(CAMPAIGN)  # type: ignore[attr-defined]
    wait_for(lambda: state.revocations.revoked(ACCOUNT, CONTACT, int(time.time()) - 5), "the revocation")
    client.cookies.clear()
    assert "personal" not in rungs(client.get(f"/c/{CAMPAIGN}", params={"wm": old_link}).text)
    assert "personal" in rungs(client.get(f"/c/{CAMPAIGN}", params={"wm": old_account_link}).text)

    # Precompute from the same file leaves the person out; a second erasure finds nothing left.
    report = precompute(redis_client, accounts_file(tmp_path))
    assert (report.suppressed, report.contacts_suppressed) == (0, 1)
    assert read_account_record(redis_client, TENANT, ACCOUNT).contacts == []  # type: ignore[union-attr]
    again = cli("erase", EMAIL, redis_url=redis_url, tmp_path=tmp_path)
    assert again.returncode == 0 and "nothing left" in again.stdout
    actions = [e.action for e in read_entries(redis_client, TENANT, contact=CONTACT)]
    assert actions == [AuditAction.SUBJECT_EXPORT, AuditAction.ERASE, AuditAction.ERASE]
    unknown = cli("erase", "nobody@nowhere.example", redis_url=redis_url, tmp_path=tmp_path)
    assert unknown.returncode == 0 and unknown.stdout.strip() == "nothing held about nobody@nowhere.example"


def print_figures(
    what: str, before: dict[str, Counter[str]], after: dict[str, Counter[str]], removed: dict[str, int]
) -> None:
    """The figures the erasure is judged by (shown with `pytest -s`)."""
    print(f"\n== erasing the {what}: keys/fields/entries naming the subject, before -> after")
    for needle in before:
        kinds = sorted(set(before[needle]) | set(after[needle]))
        cells = ", ".join(f"{k} {before[needle][k]}->{after[needle][k]}" for k in kinds)
        print(f"  {needle}: {sum(before[needle].values())} -> {sum(after[needle].values())} ({cells})")
    print("  erase reported: " + ", ".join(f"{k} {n}" for k, n in removed.items() if n))


def test_erase_reads_the_event_fields_the_renderer_writes() -> None:
    from server.engagement.events import _FIELDS  # the writer's field list: one place, read here on purpose

    assert {EVENT_ACCOUNT_FIELD, EVENT_CONTACT_FIELD} <= set(_FIELDS)
