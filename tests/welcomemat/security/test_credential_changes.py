"""Signing keys and bearer tokens changed between renderer starts: one audit entry per change."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import redis
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.server.conftest import renderer_app, renderer_settings
from welcomemat.records.audit import AuditAction, Auditor, Via, read_entries
from welcomemat.security.credential_changes import (
    describe_change,
    fingerprint,
    fingerprints,
    record_credentials,
)

OLD_KEY, NEW_KEY = "o" * 43, "n" * 43
RITA, SAM = "r" * 32, "s" * 40


def auditor() -> Auditor:
    return Auditor("renderer@test", Via.STARTUP, lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


def test_fingerprints_name_keys_by_position_and_tokens_by_name() -> None:
    found = fingerprints(f" {NEW_KEY} , {OLD_KEY} ", {"rita": RITA, "crm": None})
    assert found == {
        "key#1": fingerprint(NEW_KEY),
        "key#2": fingerprint(OLD_KEY),
        "token:rita": fingerprint(RITA),
    }
    assert fingerprint(NEW_KEY) != fingerprint(OLD_KEY) and len(fingerprint(NEW_KEY)) == 12


@given(st.text(min_size=32, max_size=80))
def test_a_fingerprint_never_shows_the_value(value: str) -> None:
    line = describe_change({}, fingerprints(value, {"admin": value}))
    assert value not in line and value[:16] not in line


def test_a_rotation_is_described_step_by_step() -> None:
    before = fingerprints(OLD_KEY, {"rita": RITA, "sam": SAM})
    added = fingerprints(f"{OLD_KEY},{NEW_KEY}", {"rita": RITA, "sam": SAM})
    assert describe_change(before, added) == f"keys added {fingerprint(NEW_KEY)}"
    swapped = fingerprints(f"{NEW_KEY},{OLD_KEY}", {"rita": "x" * 33})
    line = describe_change(added, swapped)
    assert line.startswith(f"signing key now {fingerprint(NEW_KEY)} (was {fingerprint(OLD_KEY)})")
    assert "token rita changed" in line and "token sam removed" in line
    done = fingerprints(NEW_KEY, {"rita": "x" * 33})
    assert describe_change(swapped, done) == f"keys retired {fingerprint(OLD_KEY)}"
    assert describe_change({}, done).startswith("credentials first recorded: signing key now")


def test_many_processes_starting_with_the_same_change_log_it_once(redis_client: redis.Redis) -> None:
    first = record_credentials(redis_client, fingerprints(OLD_KEY, {}), auditor())
    assert first is not None and first.detail is not None and "first recorded" in first.detail
    assert record_credentials(redis_client, fingerprints(OLD_KEY, {}), auditor()) is None  # unchanged
    rotated = fingerprints(f"{NEW_KEY},{OLD_KEY}", {})
    results: list[object] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        results.append(record_credentials(redis_client, rotated, auditor()))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is not None for r in results) == 1
    entries = read_entries(redis_client, None)
    assert [e.action for e in entries] == [AuditAction.SECRET_ROTATE] * 2
    assert entries[1].via is Via.STARTUP and "signing key now" in (entries[1].detail or "")


def test_a_renderer_started_with_a_new_key_audit_logs_it_without_the_key(redis_client: redis.Redis) -> None:
    def start(secret: str) -> None:
        app = renderer_app(renderer_settings(secret=secret), redis_client=redis_client)
        with TestClient(app):
            pass

    start(OLD_KEY)
    start(OLD_KEY)  # a restart with the same environment: nothing new
    start(f"{NEW_KEY},{OLD_KEY}")
    entries = read_entries(redis_client, None)
    assert len(entries) == 2 and entries[-1].actor.startswith("renderer@")
    new, old = fingerprint(NEW_KEY), fingerprint(OLD_KEY)
    assert entries[-1].detail == f"signing key now {new} (was {old}); keys added {new}"
    assert not any(secret in (e.detail or "") for e in entries for secret in (OLD_KEY, NEW_KEY))


def test_a_renderer_starts_when_redis_is_down() -> None:
    from server.redis_guard import renderer_redis_client

    dead = renderer_redis_client("redis://127.0.0.1:9/0")
    app = renderer_app(renderer_settings(secret=NEW_KEY), redis_client=dead)
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
