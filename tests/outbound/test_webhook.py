"""The CRM webhook against a real receiver on a socket: signed, retried, each change applied once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from cli.sync_command import webhook_config
from outbound.sync import Syncer, SyncOptions
from outbound.webhook import (
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookConfig,
    WebhookSender,
    crm_change,
    sign,
    verify_signature,
)
from tests.corpora import REPO_ROOT
from tests.outbound.http_receiver import serve_http
from tests.outbound.sync_helpers import TENANT, emit, make_events, wait_for
from welcomemat import keys
from welcomemat.errors import ConfigError
from welcomemat.records.account_records import iter_account_records, read_account_record, write_profile
from welcomemat.records.accounts import Account
from welcomemat.settings import Settings

SECRET = "s" * 40
WELCOMEMAT = str(Path(sys.executable).with_name("welcomemat"))


@dataclass
class Receiver:
    """A CRM endpoint: checks signatures, fails on schedule, applies each idempotency key once."""

    fail_every: int = 0  # fail every n-th request (0: never)
    down: bool = False  # answer every request with 503
    retry_after: str | None = None
    requests: int = 0
    refused_signatures: int = 0
    failures: int = 0
    applied: dict[str, bytes] = field(default_factory=dict)  # idempotency key -> body applied
    replays: int = 0  # requests whose key was applied before (answered 200, not applied again)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)  # account -> latest body applied
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, headers: Any, body: bytes) -> tuple[int, dict[str, str]]:
        with self.lock:
            self.requests += 1
            if not verify_signature(
                SECRET, headers.get(TIMESTAMP_HEADER), body, headers.get(SIGNATURE_HEADER)
            ):
                self.refused_signatures += 1
                return 401, {}
            if self.down or (self.fail_every and self.requests % self.fail_every == 0):
                self.failures += 1
                extra = {"Retry-After": self.retry_after} if self.retry_after else {}
                return (429 if self.retry_after else 503), extra
            key = headers[IDEMPOTENCY_HEADER]
            if key in self.applied:
                assert self.applied[key] == body, "the same key came with another body"
                self.replays += 1
                return 200, {}
            self.applied[key] = body
            change = json.loads(body)
            current = self.state.get(change["account_id"])
            if current is None or change["revision"] > current["revision"]:
                self.state[change["account_id"]] = change
            return 200, {}


@contextmanager
def serve(receiver: Receiver) -> Iterator[str]:
    with serve_http(lambda _path, headers, body: receiver.handle(headers, body)) as origin:
        yield f"{origin}/crm"


def config(url: str, **overrides: Any) -> WebhookConfig:
    values: dict[str, Any] = {
        "url": url,
        "secret": SECRET,
        "timeout_s": 5.0,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
        "reset_after_s": 0.3,
        "claim_idle_ms": 200,
    }
    values.update(overrides)
    return WebhookConfig(**values)


def sync_with_outbox(client: redis.Redis) -> None:
    Syncer(
        client,
        SyncOptions(name="s1", tenants=(TENANT,), once=True, block_ms=50, outbox=True),
        log=lambda _: None,
    ).run()


def crm_view_of_redis(client: redis.Redis) -> dict[str, dict[str, Any]]:
    return {
        r.account_id: json.loads(crm_change(r).model_dump_json())
        for r in iter_account_records(client, TENANT)
    }


def test_every_change_reaches_a_receiver_failing_every_third_request_once_in_effect(
    redis_client: redis.Redis,
) -> None:
    receiver = Receiver(fail_every=3)
    events = make_events(900, accounts=12)
    with serve(receiver) as url:
        sender = WebhookSender(redis_client, config(url), name="w1", log=lambda _: None)
        # Three rounds of engagement, each synced and pushed: changes keep coming while sending.
        for start in (0, 300, 600):
            emit(redis_client, events[start : start + 300])
            sync_with_outbox(redis_client)
            assert redis_client.xlen(keys.webhook_outbox_key(TENANT)) == 12  # one queued change per account
            while sender.queued([TENANT]):
                assert sender.run_pass([TENANT]) > 0
        sender.close()
    assert receiver.failures >= 10 and receiver.refused_signatures == 0
    assert sender.stats.delivered == len(receiver.applied) == 36  # 3 rounds x 12 accounts, each once
    assert receiver.state == crm_view_of_redis(redis_client)  # the CRM holds what the records hold
    assert redis_client.xlen(keys.webhook_outbox_key(TENANT)) == 0


def test_nothing_is_lost_while_the_receiver_is_down_and_the_breaker_opens_then_closes(
    redis_client: redis.Redis,
) -> None:
    receiver = Receiver(down=True)
    emit(redis_client, make_events(200, accounts=8))
    sync_with_outbox(redis_client)
    with serve(receiver) as url:
        sender = WebhookSender(redis_client, config(url, failure_threshold=3), name="w1", log=lambda _: None)
        assert sender.run_pass([TENANT]) == 0
        assert sender.breaker.state == "open" and sender.breaker.openings == 1
        requests_while_open = receiver.requests
        assert requests_while_open == 3  # the breaker stopped the pass: no request per queued change
        assert sender.run_pass([TENANT]) == 0 and receiver.requests == requests_while_open
        assert sender.queued([TENANT]) == 8  # every change still waits in the outbox

        receiver.down = False
        time.sleep(0.35)  # past reset_after_s: the next pass may probe
        assert sender.run_pass([TENANT]) == 8
        assert sender.breaker.state == "closed"
        sender.close()
    assert sender.queued([TENANT]) == 0
    assert receiver.state == crm_view_of_redis(redis_client)


def test_a_sender_stopped_mid_pass_leaves_its_changes_to_another(redis_client: redis.Redis) -> None:
    emit(redis_client, make_events(60, accounts=5))
    sync_with_outbox(redis_client)
    receiver = Receiver()
    with serve(receiver) as url:
        # "dead" read every change and stopped before sending any.
        redis_client.xgroup_create(keys.webhook_outbox_key(TENANT), keys.WEBHOOK_CONSUMER_GROUP, id="0")
        redis_client.xreadgroup(keys.WEBHOOK_CONSUMER_GROUP, "dead", {keys.webhook_outbox_key(TENANT): ">"})
        time.sleep(0.25)  # idle past claim_idle_ms
        sender = WebhookSender(redis_client, config(url), name="w2", log=lambda _: None)
        assert sender.run_pass([TENANT]) == 5 and sender.stats.claimed == 5
        sender.close()
    assert receiver.state == crm_view_of_redis(redis_client)


def test_retry_after_is_honoured(redis_client: redis.Redis) -> None:
    emit(redis_client, make_events(4, accounts=1))
    sync_with_outbox(redis_client)
    receiver = Receiver(fail_every=1, retry_after="2")
    waits: list[float] = []
    with serve(receiver) as url:
        sender = WebhookSender(redis_client, config(url), name="w1", sleep=waits.append, log=lambda _: None)
        assert sender.run_pass([TENANT]) == 0
        sender.close()
    assert waits == [2.0, 2.0]  # 3 attempts, the receiver's wait between each
    assert sender.queued([TENANT]) == 1


def test_an_already_delivered_revision_is_not_sent_again(redis_client: redis.Redis) -> None:
    emit(redis_client, make_events(10, accounts=1))
    sync_with_outbox(redis_client)
    receiver = Receiver()
    with serve(receiver) as url:
        sender = WebhookSender(redis_client, config(url), name="w1", log=lambda _: None)
        assert sender.run_pass([TENANT]) == 1
        # A stale copy of the same change (e.g. queued twice around a crash): covered, no request.
        redis_client.xadd(keys.webhook_outbox_key(TENANT), {"account": "acct_0", "rev": "3"})
        before = receiver.requests
        assert sender.run_pass([TENANT]) == 0
        assert receiver.requests == before and sender.stats.covered == 1
        sender.close()


def test_the_body_carries_engagement_and_facts_never_internal_fields(redis_client: redis.Redis) -> None:
    account = Account.model_validate(
        {
            "account_id": "acct_0",
            "name": "Dymaxa",
            "domain": "dymaxa.com",
            "segment": "saas-mid",
            "contacts": [{"contact_id": "c_1", "email": "c1@dymaxa.com"}],
            "facts": [
                {
                    "id": "f1",
                    "type": "funding",
                    "statement": "S",
                    "evidence": "EVIDENCE",
                    "confidence": "high",
                }
            ],
        }
    )
    write_profile(redis_client, TENANT, account)
    emit(redis_client, make_events(6, accounts=1))
    sync_with_outbox(redis_client)
    record = read_account_record(redis_client, TENANT, "acct_0")
    assert record is not None
    body = json.loads(crm_change(record).model_dump_json())
    assert set(body) == {
        "tenant",
        "account_id",
        "name",
        "domain",
        "revision",
        "updated_ms",
        "campaigns",
        "contacts",
    }
    assert body["campaigns"]["q4-expansion"]["views"] == 4
    assert body["contacts"]["q4-expansion"]["c_1"]["email"] == "c1@dymaxa.com"
    text = json.dumps(body)
    for internal in ("EVIDENCE", "confidence", "wh_rev", "wh_pending", "segment"):
        assert internal not in text


@given(secret=st.text(min_size=32, max_size=64), body=st.binary(max_size=300), flip=st.integers(0, 299))
def test_signatures_verify_and_any_change_breaks_them(secret: str, body: bytes, flip: int) -> None:
    now = 1_800_000_000
    signature = sign(secret, now, body)
    assert verify_signature(secret, str(now), body, signature, now=now)
    if body:
        i = flip % len(body)
        tampered = body[:i] + bytes([body[i] ^ 1]) + body[i + 1 :]
        assert not verify_signature(secret, str(now), tampered, signature, now=now)
    assert not verify_signature(secret + "x", str(now), body, signature, now=now)
    assert not verify_signature(secret, str(now + 1), body, signature, now=now)  # timestamp is signed
    assert not verify_signature(secret, str(now), body, signature, now=now + 301)  # a replay, too late


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"WELCOMEMAT_CRM_WEBHOOK_URL": "https://crm.example/h"}, "WELCOMEMAT_CRM_WEBHOOK_SECRET is not"),
        (
            {"WELCOMEMAT_CRM_WEBHOOK_URL": "https://crm.example/h", "WELCOMEMAT_CRM_WEBHOOK_SECRET": "short"},
            "at least 32",
        ),
        (
            {"WELCOMEMAT_CRM_WEBHOOK_URL": "ftp://crm.example/h", "WELCOMEMAT_CRM_WEBHOOK_SECRET": SECRET},
            "http",
        ),
    ],
)
def test_bad_webhook_settings_name_the_variable(env: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        webhook_config(Settings.from_env(env))
    assert webhook_config(Settings.from_env({})) is None


def cli_env(redis_url: str, tmp_path: Path, url: str) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "WELCOMEMAT_CRM_WEBHOOK_URL": url,
        "WELCOMEMAT_CRM_WEBHOOK_SECRET": SECRET,
    }


def test_cli_once_folds_and_delivers_then_exits(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    redis_client.hset(keys.campaigns_index_key(), f"{TENANT}/q4-expansion", "q4-expansion")
    emit(redis_client, make_events(400, accounts=9))
    receiver = Receiver(fail_every=3)
    with serve(receiver) as url:
        done = subprocess.run(
            [WELCOMEMAT, "sync", "--once", "--block-ms", "50"],
            cwd=REPO_ROOT,
            env=cli_env(redis_url, tmp_path, url),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert "400 events folded" in done.stdout and "9 changes delivered" in done.stdout
    assert "0 waiting in the outbox" in done.stdout
    assert receiver.state == crm_view_of_redis(redis_client)


def test_cli_follows_the_stream_and_pushes_changes_until_sigterm(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    receiver = Receiver(fail_every=3)
    events = make_events(300, accounts=6)
    with serve(receiver) as url:
        proc = subprocess.Popen(
            [WELCOMEMAT, "sync", "--tenant", TENANT, "--block-ms", "100", "--consumer", "follower"],
            cwd=REPO_ROOT,
            env=cli_env(redis_url, tmp_path, url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            for start in (0, 150):  # events keep arriving while it follows
                emit(redis_client, events[start : start + 150])
                views = sum(1 for e in events[: start + 150] if e.type.value == "view")
                wait_for(
                    lambda views=views: (  # type: ignore[misc]
                        receiver.state == crm_view_of_redis(redis_client)
                        and sum(c["views"] for a in receiver.state.values() for c in a["campaigns"].values())
                        == views
                    ),
                    60,
                    "the receiver to hold what the records hold",
                )
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    assert "300 events folded" in out


def test_the_documented_receiver_check_accepts_our_signature_and_refuses_a_replay() -> None:
    page = (REPO_ROOT / "docs" / "outbound.md").read_text()
    text = page.split("## Engagement sync and the CRM webhook", 1)[1]
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/outbound.md", "exec"), namespace)  # the example as a reader would paste it
    body = b'{"account_id": "acct_dymaxa"}'
    now = int(time.time())
    headers = {TIMESTAMP_HEADER: str(now), SIGNATURE_HEADER: sign(SECRET, now, body)}
    assert namespace["verified"](SECRET, headers, body)
    assert not namespace["verified"](SECRET, headers, body + b" ")
    old = now - 301
    assert not namespace["verified"](
        SECRET, {TIMESTAMP_HEADER: str(old), SIGNATURE_HEADER: sign(SECRET, old, body)}, body
    )
