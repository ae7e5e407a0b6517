"""Every input path survives hostile input: each parser accepts a document or refuses it with
its named error (`InputError`, `ContractError`; a 4xx over HTTP), never another exception,
a 5xx or a logged traceback.

The documents come from `tests/hostile.py`. Each property runs a fixed number of examples
(`EXAMPLES`), and each test checks that number were tried, so the figure is the one stated
here: ten input paths, 2,400 hostile documents in all (each import's 100 files hold 500 lines).
"""

from __future__ import annotations

import itertools
import json
import logging
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from cli.delivered_import import import_delivered
from tests.corpora import REPO_ROOT
from tests.hostile import (
    corpus_strings,
    hostile_bytes,
    hostile_json,
    json_with_hostile_field,
    yaml_with_hostile_value,
)
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    SECRET,
    TENANT,
    example_inputs,
    publish_config,
    renderer_app,
    renderer_settings,
)
from tests.welcomemat.records.test_accounts import GOOD
from welcomemat.arms import Arm
from welcomemat.campaign.contract import load_campaign
from welcomemat.campaign.tenant_policy import load_tenant_policy
from welcomemat.errors import ContractError, InputError
from welcomemat.records.accounts import read_accounts
from welcomemat.records.conversions import import_conversions, parse_conversion
from welcomemat.security.tokens import TokenSigner
from welcomemat.zones.contract import load_zone_contract, load_zone_contracts

EXAMPLES = {
    "accounts.jsonl": 500,
    "campaign.yaml": 150,
    "zones/*.yaml": 150,
    "tenant.yaml": 150,
    "conversion JSON": 400,
    "conversions import (files of 5 lines)": 100,
    "delivered import (CSV files of 5 lines)": 100,
    "POST /v1/events": 300,
    "POST /v1/conversions": 250,
    "POST /admin/review/.../approve": 300,
}
TRIED: Counter[str] = Counter()
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

ADMIN_TOKEN = "admin-token-for-hostile-tests-0123456789"
CRM_TOKEN = "crm-token-for-hostile-tests-0123456789"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
CONVERSION = {
    "campaign": CAMPAIGN,
    "account_id": "acct_dymaxa",
    "type": "meeting_booked",
    "conversion_id": "crm-1",
    "occurred_at": "2026-12-02T15:30:00+01:00",
    "value": 12000,
}


def run(name: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], None]) -> None:
    """Run `check` on `EXAMPLES[name]` documents from `strategy`; then that many were tried."""

    @settings(
        max_examples=EXAMPLES[name],
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(strategy)
    def prop(document: Any) -> None:
        TRIED[name] += 1
        check(document)

    before = TRIED[name]
    prop()
    tried = TRIED[name] - before
    print(f"\n{name}: {tried} hostile documents")
    assert tried >= EXAMPLES[name]


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not logged, logged[0].getMessage()


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


# -- files -------------------------------------------------------------------------------------


def test_accounts_lines(workdir: Path) -> None:
    path = workdir / "accounts.jsonl"
    documents = st.one_of(
        hostile_bytes(hostile_json()), hostile_bytes(json_with_hostile_field(GOOD | {"account_id": "a1"}))
    )

    def check(raw: bytes) -> None:
        path.write_bytes(raw + b"\n" + json.dumps(GOOD).encode() + b"\n")
        report = read_accounts(path)  # never raises for a line: each is an account or a problem
        assert report.accounts[-1].account_id == GOOD["account_id"]  # the line after is read
        for problem in report.problems:
            assert isinstance(problem, InputError) and problem.file == str(path) and problem.line
            str(problem).encode("utf-8")  # printable: no lone surrogate in what is shown
        for account in report.accounts:
            account.model_dump_json()  # what was accepted can be written out (no NaN, no surrogate)

    run("accounts.jsonl", documents, check)


ZONES = dict(load_zone_contracts(REPO_ROOT / "zones"))


@pytest.mark.parametrize(
    ("name", "example", "load"),
    [
        ("campaign.yaml", REPO_ROOT / "examples" / "campaign.yaml", lambda p: load_campaign(p, ZONES)),
        ("zones/*.yaml", REPO_ROOT / "zones" / "cta.yaml", load_zone_contract),
        ("tenant.yaml", REPO_ROOT / "cli" / "scaffold" / "tenant.yaml", load_tenant_policy),
    ],
)
def test_yaml_files(workdir: Path, name: str, example: Path, load: Callable[[Path], Any]) -> None:
    path = workdir / example.name

    def check(raw: bytes) -> None:
        path.write_bytes(raw)
        try:
            model = load(path)
        except ContractError as refused:
            assert refused.file == str(path)
            str(refused).encode("utf-8")
        else:
            model.model_dump_json()

    run(name, yaml_with_hostile_value(example.read_text()), check)


def test_conversion_json() -> None:
    documents = st.one_of(
        hostile_bytes(hostile_json()),
        json_with_hostile_field(CONVERSION).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )

    def check(raw: bytes) -> None:
        try:
            parse_conversion(raw).model_dump_json()
        except InputError as refused:
            str(refused).encode("utf-8")

    run("conversion JSON", documents, check)


def test_conversions_import(workdir: Path) -> None:
    path = workdir / "conversions.jsonl"
    lines = st.lists(
        st.one_of(hostile_bytes(hostile_json()), hostile_bytes(json_with_hostile_field(CONVERSION))),
        min_size=5,
        max_size=5,
    )

    def nowhere(campaign: str) -> tuple[str, float]:
        raise InputError(f"not recorded in this test: {campaign!r}", field="campaign")

    def check(raw: list[bytes]) -> None:
        path.write_bytes(b"\n".join(raw) + b"\n")
        report = import_conversions(None, path, nowhere, now=NOW)  # type: ignore[arg-type]
        assert report.recorded == report.repeated == 0
        for problem in report.problems:
            assert problem.file == str(path) and problem.line
            str(problem).encode("utf-8")

    run("conversions import (files of 5 lines)", lines, check)


CSV_PIECES = st.sampled_from(
    [
        b",",
        b'"',
        b'""',
        b"\r",
        b"\n",
        b"\r\n",
        b"\x00",
        b"\xff",
        b"\xed\xa0\x80",
        b"x" * 140_000,
        b"9" * 70_000,
    ]
)


def test_delivered_import(workdir: Path, redis_client: redis.Redis) -> None:
    path = workdir / "sent.csv"
    fields = st.one_of(
        hostile_bytes(hostile_json()),
        corpus_strings().map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.lists(st.one_of(CSV_PIECES, st.binary(max_size=20)), max_size=6).map(b"".join),
    )
    lines = st.lists(st.lists(fields, min_size=1, max_size=4).map(b",".join), min_size=5, max_size=5)

    def check(raw: list[bytes]) -> None:
        path.write_bytes(b"account_id,contact_id,delivered_at\n" + b"\n".join(raw) + b"\n")
        report = import_delivered(redis_client, TENANT, CAMPAIGN, path, now=NOW)
        assert report.written == 0  # no account has a record here
        for problem in report.problems:
            assert problem.file == str(path) and problem.line and problem.line >= 2
            str(problem).encode("utf-8")

    run("delivered import (CSV files of 5 lines)", lines, check)


# -- HTTP, in process ----------------------------------------------------------------------------


@pytest.fixture
def hostile_app(redis_client: redis.Redis) -> Starlette:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    # A clock that moves a second per reading: the per-client rate limit never stops the run.
    ticks = itertools.count(int(time.time()))
    settings_ = renderer_settings(admin_token=ADMIN_TOKEN, crm_token=CRM_TOKEN)
    return renderer_app(settings_, redis_client=redis_client, clock=lambda: float(next(ticks)))


def view_token(app: Starlette) -> str:
    return TokenSigner([SECRET], clock=app.state.renderer.clock).sign_view(  # type: ignore[no-any-return]
        tenant=TENANT,
        campaign=CAMPAIGN,
        view_id="view0000view0000",
        arm=Arm.PERSONAL,
        rung="personal",
        account="acct_dymaxa",
        contact=None,
        zone_set_version=1,
        ttl_s=30 * 86400,
    )


@pytest.mark.parametrize(
    ("name", "headers", "skeleton"),
    [
        ("POST /v1/events", {"content-type": "text/plain", "user-agent": BROWSER}, "beacon"),
        (
            "POST /v1/conversions",
            {"content-type": "application/json", "authorization": f"Bearer {CRM_TOKEN}"},
            "conversion",
        ),
        (
            "POST /admin/review/.../approve",
            {"content-type": "application/json", "authorization": f"Bearer {ADMIN_TOKEN}"},
            "decision",
        ),
    ],
)
def test_http_bodies(
    hostile_app: Starlette,
    caplog: pytest.LogCaptureFixture,
    name: str,
    headers: dict[str, str],
    skeleton: str,
) -> None:
    path = {
        "beacon": "/v1/events",
        "conversion": "/v1/conversions",
        "decision": f"/admin/review/{CAMPAIGN}/acct_dymaxa/approve",
    }[skeleton]
    with TestClient(hostile_app, base_url=BASE_URL) as client:
        valid: dict[str, object] = {
            "beacon": {
                "campaign": CAMPAIGN,
                "view": view_token(hostile_app),
                "event_id": "ev-1",
                "type": "view",
            },
            "conversion": CONVERSION,
            "decision": {"version": 1},
        }[skeleton]  # type: ignore[assignment]
        documents = st.one_of(
            hostile_bytes(hostile_json()),
            json_with_hostile_field(valid).map(lambda t: t.encode("utf-8", "surrogatepass")),
        )
        faults = hostile_app.state.renderer.metrics.faults

        def check(raw: bytes) -> None:
            answer = client.post(path, headers=headers, content=raw)
            assert answer.status_code < 500, answer.text
            if answer.status_code >= 400:
                assert answer.json()["error"]

        run(name, documents, check)
        assert sum(s.value for m in faults.collect() for s in m.samples if s.name.endswith("_total")) == 0
    no_tracebacks(caplog)
