"""Hostile dates through every way in (issue 25): HTTP, JSONL, CSV, YAML, command-line arguments.

Every value of `tests.hostile_dates` is sent through each path. A value outside the years
2000-2100 (UTC, after its offset), or not a date at all, is refused naming its field (HTTP 4xx,
file:line: field: message, exit 2); a legal one is stored normalised to UTC. Nothing is a 5xx
or a traceback.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from cli.delivered_import import import_delivered
from cli.main import main
from precompute.context import FactReason
from tests.cli.test_validate import EXAMPLE_CAMPAIGN, line_of, replace, write_inputs
from tests.hostile_dates import HOSTILE_DAYS, HOSTILE_INSTANTS
from tests.precompute.facts.test_trust import account, decide, fact
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PERSONAL_ACCOUNT,
    TENANT,
    example_inputs,
    publish_config,
    renderer_app,
    renderer_settings,
)
from welcomemat import keys
from welcomemat.limits import CSV_LINE_MAX_BYTES
from welcomemat.records.conversions import import_conversions, iter_conversions

CRM = "crm-token-for-hostile-dates-0123456789"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BOUND = "2000-01-01T00:00:00Z and 2100-12-31T23:59:59Z"


def conversion(n: int, occurred_at: object) -> dict[str, Any]:
    return {
        "campaign": CAMPAIGN,
        "account_id": PERSONAL_ACCOUNT,
        "type": "meeting_booked",
        "conversion_id": f"hostile-{n}",
        "occurred_at": occurred_at,
    }


def stored_times(client: redis.Redis) -> dict[str, str]:
    """conversion id -> its stored occurred_at, as `iter_conversions` reads it."""
    return {c.conversion_id: c.occurred_at.isoformat() for c in iter_conversions(client, TENANT, CAMPAIGN)}


def legal() -> dict[str, str]:
    return {f"hostile-{n}": want for n, (_, want) in enumerate(HOSTILE_INSTANTS) if want is not None}


# -- HTTP: POST /v1/conversions -------------------------------------------------------------------


@pytest.fixture
def api(redis_client: redis.Redis) -> Iterator[TestClient]:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    app = renderer_app(renderer_settings(crm_token=CRM), redis_client=redis_client, clock=NOW.timestamp)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        yield client


def test_every_hostile_date_over_http_is_refused_naming_the_field_or_stored_in_utc(
    api: TestClient, redis_client: redis.Redis
) -> None:
    got: dict[int, int] = {}
    for n, (value, want) in enumerate(HOSTILE_INSTANTS):
        content = json.dumps(conversion(n, value), allow_nan=True)
        response = api.post(
            "/v1/conversions",
            content=content,
            headers={"authorization": f"Bearer {CRM}", "content-type": "application/json"},
        )
        got[n] = response.status_code
        if want is not None:
            assert response.status_code == 202, (value, response.text)
            continue
        assert response.status_code in (400, 413), (value, response.status_code, response.text)
        error = response.json()["error"]
        if response.status_code == 400 and value == value:  # NaN: refused by the JSON reader first
            assert "field 'occurred_at'" in error, (value, error)
    assert stored_times(redis_client) == legal()
    assert all(status < 500 for status in got.values())


def test_the_published_schema_still_says_date_time(api: TestClient) -> None:
    schema = api.get("/openapi.json").json()["components"]["schemas"]["ConversionIn"]
    assert schema["properties"]["occurred_at"]["format"] == "date-time"


# -- JSONL: welcomemat conversions import ---------------------------------------------------------


def test_every_hostile_date_in_a_jsonl_import_is_its_lines_problem(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    path = tmp_path / "conversions.jsonl"
    path.write_text(
        "".join(
            json.dumps(conversion(n, value), allow_nan=True) + "\n"
            for n, (value, _) in enumerate(HOSTILE_INSTANTS)
        )
    )
    report = import_conversions(redis_client, path, lambda _: (TENANT, 0.1), now=NOW)
    refused = {n + 1 for n, (_, want) in enumerate(HOSTILE_INSTANTS) if want is None}
    assert {p.line for p in report.problems} == refused
    for p in report.problems:
        value = HOSTILE_INSTANTS[(p.line or 0) - 1][0]
        long_line = isinstance(value, str) and len(value) > 4000
        if value == value and not long_line:  # NaN and an over-long line: the line, not a field
            assert p.field == "occurred_at" and str(p).startswith(f"{path}:{p.line}, field 'occurred_at'"), p
    assert report.recorded == len(legal())
    assert stored_times(redis_client) == legal()


# -- CSV: welcomemat delivered import -------------------------------------------------------------


def test_every_hostile_date_in_a_delivered_csv_is_its_lines_problem(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """Cells are trimmed (as the id cells are), so a value with spaces around it reads as without;
    an empty cell means "at the import". Everything else is as the corpus says."""
    from welcomemat.bounded_time import parse_instant

    account = "acct_dates"
    redis_client.hset(keys.account_record_key(TENANT, account), "updated_ms", "1")
    path = tmp_path / "sent.csv"
    cells = [str(value) for value, _ in HOSTILE_INSTANTS if value is not None]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["account_id", "contact_id", "delivered_at"])
        for n, cell in enumerate(cells):
            writer.writerow([account, f"c{n}", cell])
    report = import_delivered(redis_client, TENANT, CAMPAIGN, path, now=NOW)
    assert not any(p.line == 1 for p in report.problems)
    wanted: dict[str, int] = {}
    for n, cell in enumerate(cells):
        try:
            at = parse_instant(cell.strip()) if cell.strip() else NOW
            wanted[f"c{n}"] = int(at.timestamp() * 1000)
        except ValueError:
            pass
    stored = redis_client.hgetall(keys.account_record_key(TENANT, account))
    marks = {
        k.decode().split(":")[2]: json.loads(v)["at_ms"] for k, v in stored.items() if k.startswith(b"w:")
    }
    assert marks == wanted
    assert report.written == len(wanted)
    assert len(report.problems) == len(cells) - len(wanted)
    for p in report.problems:  # each names its line and, when the line could be read, the field
        assert p.file == str(path) and p.line is not None
        if p.field is None:
            assert "unreadable" in p.message or str(CSV_LINE_MAX_BYTES) in p.message, p
        else:
            assert p.field == "delivered_at", p


# -- YAML: campaign.yaml mail_in_home_date --------------------------------------------------------

# Written as YAML: a string double-quoted (JSON is YAML), plus the forms YAML reads as a date.
YAML_DAYS: list[tuple[str, str | None]] = [
    (json.dumps(value) if isinstance(value, str) else str(value), want) for value, want in HOSTILE_DAYS
] + [
    ("2026-12-08", "2026-12-08"),  # unquoted: YAML reads a date
    ("9999-12-31", None),
    ("0001-01-01", None),
    ("1999-12-31", None),
    ("2026-12-08T10:00:00Z", None),  # unquoted: YAML reads a datetime, not a day
    ("2026-12-08 10:00:00", None),
    ("[2026, 12, 8]", None),
    ("{year: 2026}", None),
    ("null", "None"),
]


@pytest.mark.parametrize(("written", "want"), YAML_DAYS, ids=[w[:30] for w, _ in YAML_DAYS])
def test_every_hostile_mail_in_home_date_is_refused_at_its_line_or_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str, want: str | None
) -> None:
    campaign = replace(
        EXAMPLE_CAMPAIGN, "holdout_fraction: 0.10", f"holdout_fraction: 0.10\nmail_in_home_date: {written}"
    )
    inputs = write_inputs(tmp_path, campaign=campaign)
    code = main(["validate", str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if want is not None:
        assert "mail_in_home_date" not in err, err  # (other inputs' problems are not this test's)
        from welcomemat.campaign.contract import load_campaign

        loaded = load_campaign(inputs.campaign)
        assert str(loaded.mail_in_home_date) == want
        return
    line = line_of(inputs.campaign, "mail_in_home_date")
    assert code == 2 and f"{inputs.campaign}:{line}: mail_in_home_date: " in err, err


# -- command-line days and times ------------------------------------------------------------------


@pytest.mark.parametrize(("value", "want"), [(v, w) for v, w in HOSTILE_DAYS if isinstance(v, str) and v])
def test_every_hostile_as_of_day_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, want: str | None
) -> None:
    inputs = write_inputs(tmp_path)
    args = ["validate", str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones)]
    try:
        code = main([*args, f"--as-of={value}"])
    except SystemExit as exc:  # argparse refuses an argument type by exiting 2
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if want is None:
        assert code == 2 and "--as-of" in err, err
    else:
        assert "--as-of" not in err, err


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:00:00-14:00", "1999-12-31"])
def test_audit_since_outside_the_years_is_exit_2(capsys: pytest.CaptureFixture[str], value: str) -> None:
    from cli.audit_table import parse_since
    from welcomemat.errors import InputError

    with pytest.raises(InputError, match="2000-01-01T00:00:00Z") as caught:
        parse_since(value)
    assert caught.value.field == "--since"


# -- JSONL: accounts' fact dates (the trust policy) ------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "9999-12-31",
        "0001-01-01",
        "1999-12-31",
        "2101-01-01",
        "9999-12-31T23:00:00-14:00",
        "0001-01-01T00:00:00+14:00",
        "1999-06-01T00:00:00Z",
    ],
)
def test_a_fact_dated_outside_the_years_is_a_bad_date_naming_the_bound(raw: str) -> None:
    trusted, decisions = decide(fact(published_at=raw))
    assert not trusted
    assert decisions[-1].reason is FactReason.BAD_DATE
    assert "years 2000 to 2100" in decisions[-1].detail and repr(raw) in decisions[-1].detail


@pytest.mark.parametrize(
    "value",
    [v for v, _ in HOSTILE_INSTANTS if isinstance(v, str)]
    + [v for v, _ in HOSTILE_DAYS if isinstance(v, str)],
)
def test_no_hostile_fact_date_is_trusted_outside_the_years_or_crashes(value: str) -> None:
    trusted, decisions = decide(fact(published_at=value))
    for t in trusted:
        assert 2000 <= t.published_at.year <= 2100 and t.published_at <= date(2026, 11, 29)
    assert decisions  # decided, never raised


def test_a_replay_set_with_facts_dated_past_any_calendar_replays_as_of_its_real_newest_day() -> None:
    """`guidelines propose` replays as of the day after the newest fact: one dated 9999-12-31
    put that day past any calendar (OverflowError); out of the years, it is not a day at all."""
    from precompute.guideline_replay import replay_day

    hostile = [
        "9999-12-31",
        "9999-12-31T23:00:00-14:00",
        "0001-01-01T00:00:00+14:00",
        "+275760-09-13",
        "2101-01-01",
    ]
    facts = [fact(id=f"f{n}", published_at=v) for n, v in enumerate(hostile)]
    one = account(*facts, fact(id="newest", published_at="2026-11-20"))
    assert replay_day({"set": (Path("set.jsonl"), [one])}) == date(2026, 11, 21)
