"""Receivers that try to hurt the sender: `welcomemat sync` against hostile servers on real sockets.

Each class of hostile receiver (a gzip bomb, a trickle, endless headers or body, a reset,
redirects, a 503 storm asking for an hour's wait) answers both the CRM webhook and the
seller-alert webhook. Whatever it does, the run ends (within the per-request deadline), its
memory stays bounded, the change or alert stays in the outbox for the next run, SIGTERM ends
`sync` within seconds, and no output carries the secret parts of the receiver's URL.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from cli.sync_command import webhook_config
from outbound.alert_sender import AlertChannel, AlertSender
from outbound.receiver_http import RESPONSE_BODY_MAX_BYTES
from outbound.seller_alert import SellerAlert
from outbound.sync import Syncer, SyncOptions
from outbound.webhook import WebhookConfig, WebhookSender
from tests.corpora import REPO_ROOT
from tests.outbound.hostile_receiver import (
    HostileReceiver,
    answer,
    endless_chunked_body,
    gzip_bomb,
    huge_headers,
    reset_connection,
    serve_hostile,
    trickle_body,
    trickle_headers,
)
from tests.outbound.sync_helpers import TENANT, emit, make_events, wait_for
from welcomemat import keys
from welcomemat.errors import ConfigError
from welcomemat.settings import Settings

WELCOMEMAT = str(Path(sys.executable).with_name("welcomemat"))
CAMPAIGN = "q4-expansion"
SECRET = "h" * 40
# The parts of a receiver's URL that are its credentials: never in any output.
SECRET_PATH = "sekret-path-5f2a9c"
API_KEY = "sk_live_7d41e0b3"
TARGETS = ("crm", "alert")
DEADLINE_S = 2.0
# A `sync --once` here peaks around 70 MiB; a sender that decompressed the 400 MiB bomb, or held
# the endless body, would pass this many times over.
PEAK_RSS_MAX_MIB = 200
BODY_CAP_REASON = f"body over {RESPONSE_BODY_MAX_BYTES} bytes"
RUN_TIMEOUT_S = 90  # generous: a run that ends at all ends within the deadline of each attempt
SIGTERM_WAIT_S = 15
FAR_FUTURE_HTTP_DATE = "Fri, 31 Dec 2100 23:59:59 GMT"  # a Retry-After about a century away


# -- what is queued, and where it waits -------------------------------------------------------------


def seed(client: redis.Redis, target: str) -> None:
    """One CRM change (4 events of one account, folded by the run) or one queued seller alert."""
    client.hset(keys.campaigns_index_key(), f"{TENANT}/{CAMPAIGN}", CAMPAIGN)
    if target == "crm":
        emit(client, make_events(4, accounts=1))
        return
    alert = SellerAlert(
        tenant=TENANT,
        campaign=CAMPAIGN,
        account_id="acct_0",
        account_name="Dymaxa B.V.",
        domain="dymaxa.com",
        tier=1,
        contact=None,
        action="visit",
        zone=None,
        occurred_at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        day=date(2026, 11, 30),
        page_id="home",
        page_url="https://go.acmerevenue.example/p/home",
        rung="personal",
        claim=None,
        next_step="Call within one working day.",
        next_step_url=None,
    )
    client.xadd(
        keys.seller_alert_outbox_key(TENANT),
        {"dest": "slack", "account": "acct_0", "alert": alert.model_dump_json()},
    )


def seed_queued(client: redis.Redis, target: str) -> None:
    """`seed`, with the CRM change already queued (folded here, as a run of `sync` would)."""
    seed(client, target)
    if target == "crm":
        Syncer(
            client,
            SyncOptions(name="s1", tenants=(TENANT,), once=True, block_ms=50, outbox=True),
            log=lambda _: None,
        ).run()


def waiting(client: redis.Redis, target: str) -> int:
    """Entries still in the target's outbox (none dead-lettered: asserted here too)."""
    if target == "crm":
        return int(client.xlen(keys.webhook_outbox_key(TENANT)))
    assert client.xlen(keys.seller_alert_dead_letter_key(TENANT)) == 0
    return int(client.xlen(keys.seller_alert_outbox_key(TENANT)))


def hook_url(origin: str) -> str:
    return f"{origin}/hooks/{SECRET_PATH}?api_key={API_KEY}"


def sync_env(
    redis_url: str, tmp_path: Path, target: str, url: str, deadline_s: float = DEADLINE_S
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "WEBHOOK" not in k}
    env.update(
        REDIS_URL=redis_url,
        WELCOMEMAT_HOME=str(tmp_path / "home"),
        WELCOMEMAT_RECEIVER_DEADLINE_S=f"{deadline_s:g}",
    )
    if target == "crm":
        env.update(WELCOMEMAT_CRM_WEBHOOK_URL=url, WELCOMEMAT_CRM_WEBHOOK_SECRET=SECRET)
    else:
        env.update(WELCOMEMAT_ALERT_WEBHOOK_URL=url)
    return env


# -- running the real command -----------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mib: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_sync(env: dict[str, str], *args: str, timeout_s: float = RUN_TIMEOUT_S) -> Run:
    """`welcomemat sync` to its end, and its own peak RSS.

    The peak is the child's VmHWM from /proc, read while it runs: its high-water mark since its
    exec. Not wait4's ru_maxrss, which Linux starts from the forking parent's own peak (in a
    whole-suite run, pytest's hundreds of MiB), whatever the child itself used.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([WELCOMEMAT, "sync", *args], cwd=REPO_ROOT, env=env, stdout=out, stderr=err)
        ends_at = time.monotonic() + timeout_s
        peak_kib = 0
        while True:
            peak_kib = max(peak_kib, _high_water_kib(proc.pid))
            pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > ends_at:
                proc.kill()
                proc.returncode = os.waitstatus_to_exitcode(os.wait4(proc.pid, 0)[1])  # reaped here
                out.seek(0)
                err.seek(0)
                raise AssertionError(
                    f"sync did not end within {timeout_s} s\n{out.read().decode()}{err.read().decode()}"
                )
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode(), err.read().decode(), peak_kib / 1024)


def _high_water_kib(pid: int) -> int:
    """The process's peak resident set so far (VmHWM, KiB); 0 once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) if match else 0


def assert_kept_for_later(run: Run, client: redis.Redis, target: str, reason: str) -> None:
    """The run ended cleanly, said why, kept the delivery queued and printed no secret."""
    assert run.returncode == 0, run.output
    assert reason in run.stderr, run.output
    assert "Traceback" not in run.output and "Task was destroyed" not in run.output
    assert waiting(client, target) == 1, run.output
    assert "1 waiting in the outbox" in run.stdout, run.output
    assert_no_secret(run.output)


def assert_no_secret(output: str) -> None:
    for secret in (SECRET_PATH, API_KEY, "api_key", SECRET):
        assert secret not in output, output


def run_against(
    behaviour: object, target: str, redis_url: str, tmp_path: Path, client: redis.Redis
) -> tuple[Run, HostileReceiver]:
    seed(client, target)
    with serve_hostile(behaviour) as (origin, receiver):  # type: ignore[arg-type]
        run = run_sync(sync_env(redis_url, tmp_path, target, hook_url(origin)), "--once", "--block-ms", "50")
    assert receiver.requests, run.output
    return run, receiver


# -- each class of hostile receiver -----------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_a_gzip_bomb_costs_its_compressed_bytes_never_what_it_expands_to(
    target: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # 400 MiB of zeros in about 400 KiB of gzip, with a 200: read raw, cut at the cap, retried later.
    run, _ = run_against(gzip_bomb(200, expands_to_mib=400), target, redis_url, tmp_path, redis_client)
    assert_kept_for_later(run, redis_client, target, BODY_CAP_REASON)
    assert run.peak_rss_mib < PEAK_RSS_MAX_MIB, run.peak_rss_mib


@pytest.mark.parametrize("target", TARGETS)
def test_an_endless_chunked_body_is_cut_at_the_cap(
    target: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    run, receiver = run_against(
        endless_chunked_body(limit_mib=256), target, redis_url, tmp_path, redis_client
    )
    assert_kept_for_later(run, redis_client, target, BODY_CAP_REASON)
    assert run.peak_rss_mib < PEAK_RSS_MAX_MIB, run.peak_rss_mib
    assert receiver.hung_up, "the sender read the endless body to its (server-side) end"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("where", ["body", "headers"])
def test_an_answer_trickled_a_byte_a_second_is_cut_at_the_deadline(
    where: str, target: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    # Every read arrives within any per-read timeout; only a deadline on the whole request ends it.
    trickle = trickle_body(1.0) if where == "body" else trickle_headers(1.0)
    run, receiver = run_against(trickle, target, redis_url, tmp_path, redis_client)
    assert_kept_for_later(
        run, redis_client, target, f"no complete answer within the {DEADLINE_S:g} s deadline"
    )
    assert len(receiver.requests) == 3  # each of the pass's attempts cut at the deadline


@pytest.mark.parametrize("target", TARGETS)
def test_headers_that_never_end_are_refused(
    target: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    run, receiver = run_against(huge_headers(limit_mib=64), target, redis_url, tmp_path, redis_client)
    assert_kept_for_later(run, redis_client, target, "RemoteProtocolError")
    assert run.peak_rss_mib < PEAK_RSS_MAX_MIB, run.peak_rss_mib
    assert receiver.hung_up


@pytest.mark.parametrize("target", TARGETS)
def test_a_reset_connection_is_a_failed_attempt(
    target: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    run, _ = run_against(reset_connection(), target, redis_url, tmp_path, redis_client)
    assert_kept_for_later(run, redis_client, target, "not delivered")


@pytest.mark.parametrize("target", TARGETS)
def test_a_redirect_to_a_loopback_receiver_is_not_followed_by_the_command(
    target: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    with serve_hostile(answer(200)) as (elsewhere, other):
        run, _ = run_against(
            answer(307, {"Location": f"{elsewhere}/stolen"}), target, redis_url, tmp_path, redis_client
        )
    assert_kept_for_later(run, redis_client, target, "HTTP 307 from the receiver: redirects are not followed")
    assert other.requests == []


def sender_for(target: str, client: redis.Redis, url: str, logs: list[str]) -> WebhookSender | AlertSender:
    policy: dict[str, Any] = {"backoff_base_s": 0.01, "backoff_cap_s": 0.02, "timeout_s": DEADLINE_S}
    if target == "crm":
        return WebhookSender(
            client, WebhookConfig(url=url, secret=SECRET, **policy), name="w1", log=logs.append
        )
    return AlertSender(client, name="a1", channel=AlertChannel(url=url, **policy), crm=None, log=logs.append)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("to", ["another host", "a loopback host"])
def test_no_redirect_is_ever_followed(target: str, status: int, to: str, redis_client: redis.Redis) -> None:
    seed_queued(redis_client, target)
    logs: list[str] = []
    with serve_hostile(answer(200)) as (loopback, other):
        location = "https://crm.attacker.example/take" if to == "another host" else f"{loopback}/take"
        with serve_hostile(answer(status, {"Location": location})) as (origin, receiver):
            sender = sender_for(target, redis_client, hook_url(origin), logs)
            try:
                assert sender.run_pass([TENANT]) == 0
            finally:
                sender.close()
    assert len(receiver.requests) == 1  # refused, not retried within the pass
    assert other.requests == []
    assert waiting(redis_client, target) == 1
    assert any(f"HTTP {status} from the receiver: redirects are not followed" in line for line in logs), logs
    assert_no_secret("\n".join(logs))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("retry_after", ["3600", FAR_FUTURE_HTTP_DATE])
def test_a_retry_after_of_an_hour_or_a_century_waits_at_most_the_cap(
    target: str, retry_after: str, redis_client: redis.Redis
) -> None:
    seed_queued(redis_client, target)
    waits: list[float] = []
    with serve_hostile(answer(503, {"Retry-After": retry_after})) as (origin, receiver):
        url = hook_url(origin)
        if target == "crm":
            sender: WebhookSender | AlertSender = WebhookSender(
                redis_client,
                WebhookConfig(url=url, secret=SECRET),
                name="w1",
                log=lambda _: None,
                sleep=waits.append,
            )
        else:
            sender = AlertSender(
                redis_client,
                name="a1",
                channel=AlertChannel(url=url),
                crm=None,
                log=lambda _: None,
                sleep=waits.append,
            )
        try:
            assert sender.run_pass([TENANT]) == 0
        finally:
            sender.close()
    assert waits == [30.0, 30.0]  # ReceiverPolicy.retry_after_cap_s between the pass's 3 attempts
    assert len(receiver.requests) == 3
    assert waiting(redis_client, target) == 1


# -- SIGTERM ends sync within seconds, whatever the receiver asks ----------------------------------


@contextmanager
def running_sync(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [WELCOMEMAT, "sync", *args],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def sigterm_after_first_request(proc: subprocess.Popen[str], receiver: HostileReceiver) -> tuple[str, str]:
    wait_for(lambda: bool(receiver.requests), 60, "the first request")
    time.sleep(0.5)  # into the wait (Retry-After) or the request in flight
    assert proc.poll() is None, "sync ended before it was asked to"
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=SIGTERM_WAIT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"sync still running {SIGTERM_WAIT_S} s after SIGTERM") from None


@pytest.mark.parametrize(
    ("target", "mode", "retry_after"),
    [
        ("crm", "once", "3600"),
        ("alert", "once", FAR_FUTURE_HTTP_DATE),
        ("crm", "follow", FAR_FUTURE_HTTP_DATE),
        ("alert", "follow", "3600"),
    ],
)
def test_sigterm_ends_sync_within_seconds_during_a_503_storm(
    target: str, mode: str, retry_after: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    seed(redis_client, target)
    args = ["--once", "--block-ms", "50"] if mode == "once" else ["--tenant", TENANT, "--block-ms", "100"]
    storm = answer(503, {"Retry-After": retry_after})
    with serve_hostile(storm) as (origin, receiver):
        with running_sync(sync_env(redis_url, tmp_path, target, hook_url(origin)), *args) as proc:
            out, err = sigterm_after_first_request(proc, receiver)
    assert proc.returncode == 0, err
    assert waiting(redis_client, target) == 1, out + err
    assert "1 waiting in the outbox" in out, out + err
    assert_no_secret(out + err)


def test_sigterm_cancels_a_request_in_flight(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    seed(redis_client, "crm")
    with serve_hostile(trickle_body(0.5)) as (origin, receiver):
        env = sync_env(redis_url, tmp_path, "crm", hook_url(origin), deadline_s=120)
        with running_sync(env, "--once", "--block-ms", "50") as proc:
            out, err = sigterm_after_first_request(proc, receiver)
    assert proc.returncode == 0, err
    assert waiting(redis_client, "crm") == 1
    assert len(receiver.requests) == 1  # not retried once stopping


# -- the receiver's URL: admitted by one rule, printed as its host -----------------------------------


def test_a_good_run_names_the_crm_receiver_by_its_host_only(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    run, receiver = run_against(answer(200), "crm", redis_url, tmp_path, redis_client)
    assert run.returncode == 0, run.output
    assert "CRM webhook to 127.0.0.1" in run.stderr
    assert "1 changes delivered" in run.stdout and waiting(redis_client, "crm") == 0
    assert receiver.requests == [f"POST /hooks/{SECRET_PATH}?api_key={API_KEY} HTTP/1.1"]
    assert_no_secret(run.output)


REFUSED_CRM_URLS = [
    f"http://crm.example/hooks/{SECRET_PATH}?api_key={API_KEY}",  # plain http off loopback
    f"https://admin:{SECRET_PATH}@crm.example/hooks?api_key={API_KEY}",  # a password in the URL
    f"http://admin:{SECRET_PATH}@127.0.0.1:9/hooks?api_key={API_KEY}",  # even to loopback
    f"https://10.0.0.5/hooks/{SECRET_PATH}?api_key={API_KEY}",  # https to an IP literal
    f"ftp://crm.example/{SECRET_PATH}",
    f"crm.example/{SECRET_PATH}",
]


@pytest.mark.parametrize("url", REFUSED_CRM_URLS)
def test_a_crm_webhook_url_the_gate_refuses_stops_sync_naming_the_variable_never_its_value(
    url: str, redis_url: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="WELCOMEMAT_CRM_WEBHOOK_URL must be an https URL") as refused:
        webhook_config(
            Settings.from_env({"WELCOMEMAT_CRM_WEBHOOK_URL": url, "WELCOMEMAT_CRM_WEBHOOK_SECRET": SECRET})
        )
    assert_no_secret(str(refused.value))
    run = run_sync(sync_env(redis_url, tmp_path, "crm", url), "--once", timeout_s=60)
    assert run.returncode == 2, run.output
    assert "WELCOMEMAT_CRM_WEBHOOK_URL must be an https URL with a host name" in run.stderr
    assert "Traceback" not in run.output
    assert_no_secret(run.output)


@pytest.mark.parametrize(
    "url",
    ["https://crm.example/h?api_key=k", "http://127.0.0.1:8080/h", "http://localhost/h", "http://[::1]:9/h"],
)
def test_https_and_loopback_crm_urls_are_admitted(url: str) -> None:
    config = webhook_config(
        Settings.from_env({"WELCOMEMAT_CRM_WEBHOOK_URL": url, "WELCOMEMAT_CRM_WEBHOOK_SECRET": SECRET})
    )
    assert config is not None and config.describe() in url


@given(st.text(max_size=12))
def test_the_receiver_deadline_setting_is_seconds_in_range_or_refused_by_name(raw: str) -> None:
    try:
        settings = Settings.from_env({"WELCOMEMAT_RECEIVER_DEADLINE_S": raw})
    except ConfigError as exc:
        assert "WELCOMEMAT_RECEIVER_DEADLINE_S" in str(exc)
    else:
        assert 0.1 <= settings.receiver_deadline_s <= 300


def test_the_receiver_deadline_defaults_to_ten_seconds() -> None:
    assert Settings.from_env({}).receiver_deadline_s == 10.0
    assert Settings.from_env({"WELCOMEMAT_RECEIVER_DEADLINE_S": "2.5"}).receiver_deadline_s == 2.5
