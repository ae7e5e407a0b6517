"""The sequencer export: one row per contact, every cell filled, the very copy `/v1/zones` serves."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from outbound.export import ExportSummary, export_rows, write_export
from tests.corpora import REPO_ROOT
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.server.conftest import (
    BASE_URL,
    CAMPAIGN,
    PUBLIC_URL,
    SECRET,
    TENANT,
    example_inputs,
    make_zone_set,
    renderer_app,
    renderer_settings,
    signer,
)
from welcomemat.campaign.view import load_campaign_view
from welcomemat.errors import InputError
from welcomemat.outreach.export_cells import export_cell
from welcomemat.outreach.sequencer_row import FILLABLE_COLUMNS, parse_fill
from welcomemat.records.account_records import iter_account_records, write_profile
from welcomemat.records.accounts import Account
from welcomemat.security.links import signed_url
from welcomemat.security.markup_scan import find_template_marker
from welcomemat.spreadsheet import spreadsheet_safe
from welcomemat.zones.store import ZoneSetStore

EXAMPLE_ACCOUNTS = 150
HEADER = (
    "email,first_name,last_name,title,company,account_id,contact_id,arm,zone_set_version,variant,rung,"
    "hero_headline,hero_support,proof,cta,cta_url,continuation_headline,fact,fact_url,fact_date,page_url,status,"
    "rung_hero_headline,rung_hero_support,rung_proof,rung_cta,rung_continuation_headline"
).split(",")
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def link_for(account_id: str, contact_id: str) -> str:
    return signed_url(
        signer(),
        PUBLIC_URL,
        tenant=TENANT,
        campaign=CAMPAIGN,
        account=account_id,
        contact=contact_id,
        qr=False,
        ttl_s=3600,
    )


@pytest.fixture
def precomputed(tmp_path: Path, redis_client: redis.Redis) -> redis.Redis:
    """The example campaign precomputed (offline composer) for freshly dated example accounts."""
    precompute_offline(redis_client, write_example_accounts(tmp_path / "accounts.jsonl", EXAMPLE_ACCOUNTS))
    return redis_client


def exported(client: redis.Redis) -> tuple[tuple[str, ...], list[dict[str, str]]]:
    header, rows = export_rows(
        client, load_campaign_view(client, TENANT, CAMPAIGN), link_for, now=datetime.now(UTC)
    )
    return header, list(rows)


def test_every_row_is_what_the_zones_api_serves_that_contact(precomputed: redis.Redis) -> None:
    header, rows = exported(precomputed)
    assert list(header) == HEADER
    store = ZoneSetStore(precomputed)
    in_campaign = set(store.iter_account_ids(TENANT, CAMPAIGN))
    contacts = {
        (r.account_id, c.contact_id)
        for r in iter_account_records(precomputed, TENANT)
        if r.account_id in in_campaign
        for c in r.contacts
    }
    assert {(row["account_id"], row["contact_id"]) for row in rows} == contacts
    assert len(rows) == len(contacts) > 100
    assert {row["arm"] for row in rows} == {"personal", "holdout"}
    assert {row["rung"] for row in rows} >= {"personal", "segment"}

    app = renderer_app(renderer_settings(), redis_client=precomputed)
    zone_columns = ["hero_headline", "hero_support", "proof", "cta", "continuation_headline"]
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.9", 40000)) as client:
        for row in rows:
            assert row["page_url"].startswith(f"{PUBLIC_URL}/c/{CAMPAIGN}?wm=")
            token = parse_qs(urlsplit(row["page_url"]).query)["wm"][0]
            served = client.get("/v1/zones", params={"campaign": CAMPAIGN, "wm": token}).json()
            assert served["arm"] == row["arm"]
            assert {z: served["zones"][z]["text"] for z in zone_columns} == {z: row[z] for z in zone_columns}
            assert served["zones"]["cta"]["href"] == row["cta_url"]
            assert {z: served["zones"][z]["rung"] for z in zone_columns} == {
                z: row[f"rung_{z}"] for z in zone_columns
            }
            assert row["rung"] == row["rung_hero_headline"]  # the headline's


OPTIONAL = ("first_name", "last_name", "title", "variant", "fact", "fact_url", "fact_date")
ZONES = ("hero_headline", "hero_support", "proof", "cta", "continuation_headline")


def test_copy_cells_are_never_empty_and_the_rep_columns_follow_the_rung(precomputed: redis.Redis) -> None:
    _, rows = exported(precomputed)
    statuses = {row["status"] for row in rows}
    assert statuses == {"ok", "pending_review"}  # tier 1 waits for a person: its fallback, not no row
    for row in rows:
        for column, cell in row.items():
            assert cell.strip() or column in OPTIONAL, (row["account_id"], column)
            assert cell != "none", (row["account_id"], column)
            assert find_template_marker(cell) is None, (row["account_id"], column, cell)
        assert re.fullmatch(r"[1-9][0-9]*", row["zone_set_version"])
        if row["status"] == "pending_review":
            assert row["rung"] == "segment" and row["fact"] == ""
        if row["fact"]:
            assert row["arm"] == "personal" and "personal" in {row[f"rung_{z}"] for z in ZONES}
            assert row["fact_url"].startswith("https://")
            assert datetime.fromisoformat(row["fact_date"])
            assert " " in row["fact"]  # words, not an id
        else:
            assert (row["fact"], row["fact_url"], row["fact_date"]) == ("", "", "")
    assert any(row["fact"] for row in rows)
    holdout = [row for row in rows if row["arm"] == "holdout"]
    assert holdout and all(row["rung"] == "segment" for row in holdout)


def test_csv_and_jsonl_from_the_command_line(
    precomputed: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    _, rows = exported(precomputed)
    out = tmp_path / "sequence.csv"
    result = run(
        "export",
        f"{TENANT}/{CAMPAIGN}",
        "--format",
        "csv",
        "--out",
        str(out),
        redis_url=redis_url,
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert f"{len(rows)} rows from" in result.stderr and "to " + str(out) in result.stderr
    raw = out.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf") and raw.count(b"\r\n") == len(rows) + 1
    table = list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert list(table[0]) == HEADER
    assert all(row["hero_headline"] and row["status"] for row in table)
    by_contact = {(r["account_id"], r["contact_id"]): r for r in rows}
    for row in table:
        expected = by_contact[(row["account_id"], row["contact_id"])]
        for column in HEADER:
            if column != "page_url":  # signed per run: another expiry, another token
                assert row[column] == spreadsheet_safe(expected[column])

    jsonl = run("export", CAMPAIGN, "--format", "jsonl", redis_url=redis_url, home=tmp_path)
    assert jsonl.returncode == 0, jsonl.stderr
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(lines) == len(rows) and all(list(line) == HEADER for line in lines)


def test_export_needs_the_secret_and_a_published_campaign(redis_url: str, tmp_path: Path) -> None:
    no_secret = run("export", f"{TENANT}/{CAMPAIGN}", redis_url=redis_url, home=tmp_path, secret=None)
    assert no_secret.returncode == 2 and "WELCOMEMAT_SECRET" in no_secret.stderr
    unknown = run("export", f"{TENANT}/nothing-here", redis_url=redis_url, home=tmp_path)
    assert unknown.returncode == 2 and "acme/nothing-here is not published" in unknown.stderr
    bad_format = run("export", CAMPAIGN, "--format", "xlsx", redis_url=redis_url, home=tmp_path)
    assert bad_format.returncode == 2 and "xlsx" in bad_format.stderr


def test_a_template_marker_gives_that_account_its_fallback_rows_and_the_file_is_written(
    precomputed: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    store = ZoneSetStore(precomputed)
    before = {(r["account_id"], r["contact_id"]): r for r in exported(precomputed)[1]}
    personal = next(r for r in before.values() if r["rung"] == "personal")["account_id"]
    current = store.get(TENANT, CAMPAIGN, personal)
    assert current is not None
    broken = make_zone_set(
        personal, texts={"hero_headline": "Congrats on the {round}, {{first_name}}"}, segment=current.segment
    )
    store.publish(broken.model_copy(update={"input_hash": "input-hash-broken"}))
    summary = ExportSummary()
    view = load_campaign_view(precomputed, TENANT, CAMPAIGN)
    _, rows = export_rows(precomputed, view, link_for, now=datetime.now(UTC), summary=summary)
    after = {(r["account_id"], r["contact_id"]): r for r in rows}
    assert after.keys() == before.keys()
    for key, row in after.items():
        if key[0] != personal:
            assert row | {"page_url": ""} == before[key] | {"page_url": ""}  # signed per call
            continue
        assert row["status"] == "refused_cell" and row["rung"] == "segment" and row["fact"] == ""
        assert {row[f"rung_{z}"] for z in ZONES} == {"segment"}
        assert "{" not in row["hero_headline"] and row["hero_headline"]
    assert {p.status for p in summary.problems} == {"refused_cell", "pending_review"}
    [problem] = [p for p in summary.problems if p.status == "refused_cell"]
    assert (problem.account_id, problem.status) == (personal, "refused_cell")
    assert "'hero_headline' refused: template_in_text" in problem.detail

    out = tmp_path / "sequence.csv"
    out.write_text("yesterday's export\n")
    result = run("export", CAMPAIGN, "--out", str(out), "--json", redis_url=redis_url, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"fallback: account {personal}: refused_cell: column 'hero_headline'" in result.stderr
    report = json.loads(result.stdout)
    assert report["rows"] == len(before) and report["by_status"]["refused_cell"] == problem.rows
    assert [p["account_id"] for p in report["problems"] if p["status"] == "refused_cell"] == [personal]
    table = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    assert len(table) == len(before)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".sequence")) == []


def test_json_needs_out_and_an_unwritable_file_is_exit_2(redis_url: str, tmp_path: Path) -> None:
    no_out = run("export", CAMPAIGN, "--json", redis_url=redis_url, home=tmp_path)
    assert no_out.returncode == 2 and "--json" in no_out.stderr


def test_missing_and_hostile_profile_values(redis_client: redis.Redis) -> None:
    campaign, zones = example_inputs()
    from tests.server.conftest import publish_config

    publish_config(redis_client, campaign, zones)
    zone_set = make_zone_set("acct_formula", segment="saas-mid")
    ZoneSetStore(redis_client).publish(zone_set)
    account = Account.model_validate(
        {
            "account_id": "acct_formula",
            "name": '=HYPERLINK("https://evil.example","click")',
            "domain": "formula.example",
            "segment": "saas-mid",
            "contacts": [
                {"contact_id": "c_bare", "email": "bare@formula.example"},
                {
                    "contact_id": "c_plus",
                    "email": "+31@formula.example",
                    "first_name": " ",
                    "title": "-Head of Sales",
                },
            ],
        }
    )
    write_profile(redis_client, TENANT, account)
    header, rows = exported(redis_client)
    by_contact = {row["contact_id"]: row for row in rows}
    bare = by_contact["c_bare"]
    # Missing: an empty column for the sequencer's own fallback, never a word standing in.
    assert (bare["first_name"], bare["last_name"], bare["title"]) == ("", "", "")
    assert by_contact["c_plus"]["first_name"] == ""
    out = io.StringIO()
    write_export(header, rows, out, "csv")
    table = {r["contact_id"]: r for r in csv.DictReader(io.StringIO(out.getvalue()))}
    assert table["c_bare"]["last_name"] == "" and table["c_plus"]["email"] == "'+31@formula.example"
    assert table["c_plus"]["title"] == "'-Head of Sales"
    assert table["c_bare"]["company"] == '\'=HYPERLINK("https://evil.example","click")'
    jsonl = io.StringIO()
    write_export(header, rows, jsonl, "jsonl")
    assert json.loads(jsonl.getvalue().splitlines()[0])["company"].startswith("=HYPERLINK")


def test_fill_empty_writes_its_text_into_empty_contact_cells_only(
    redis_client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """For a sequencer with no fallback syntax: `--fill-empty` fills what is empty, nothing else."""
    campaign, zones = example_inputs()
    from tests.server.conftest import publish_config

    publish_config(redis_client, campaign, zones)
    ZoneSetStore(redis_client).publish(make_zone_set("acct_fill", segment="saas-mid"))
    contacts = [
        {"contact_id": "c_bare", "email": "bare@fill.example"},
        {"contact_id": "c_named", "email": "ada@fill.example", "first_name": "Ada", "title": "CRO"},
    ]
    account = {"account_id": "acct_fill", "name": "Fill", "domain": "fill.example", "segment": "saas-mid"}
    write_profile(redis_client, TENANT, Account.model_validate({**account, "contacts": contacts}))
    out = tmp_path / "sequence.csv"
    fills = ("--fill-empty", "first_name=there", "--fill-empty", "title=your team")
    result = run("export", CAMPAIGN, "--out", str(out), *fills, redis_url=redis_url, home=tmp_path)
    assert result.returncode == 0, result.stderr
    table = {r["contact_id"]: r for r in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")))}
    bare, named = table["c_bare"], table["c_named"]
    assert (bare["first_name"], bare["last_name"], bare["title"]) == ("there", "", "your team")
    assert (named["first_name"], named["title"]) == ("Ada", "CRO")
    assert bare["fact"] == named["fact"]  # never filled: text standing in for a fact would be a claim
    template = tmp_path / "step1.txt"
    template.write_text("Hi {{ first_name }}, {{ title }}\n", encoding="utf-8")
    preview = ("preview", "email", CAMPAIGN, "acct_fill", "--template", str(template), "--contact", "c_bare")
    unfilled = run(*preview, redis_url=redis_url, home=tmp_path)
    assert unfilled.returncode == 1 and "{{ first_name }}: empty, and no default" in unfilled.stdout
    filled = run(*preview, *fills, redis_url=redis_url, home=tmp_path)  # the preview fills as the export
    assert filled.returncode == 0 and filled.stdout.count("Hi there, your team\n") == 3, filled.stdout

    for spec, why in [
        ("fact=recent news", "COLUMN one of first_name, last_name, title"),
        ("first_name", "COLUMN=TEXT"),
        ("title=", "1-80 characters"),
        ("first_name=<b>there</b>", "first_name:"),
        ("first_name={{name}}", "first_name:"),
    ]:
        refused = run("export", CAMPAIGN, "--fill-empty", spec, redis_url=redis_url, home=tmp_path)
        assert refused.returncode == 2 and "--fill-empty" in refused.stderr and why in refused.stderr, spec
        assert "Traceback" not in refused.stderr


@given(st.sampled_from(FILLABLE_COLUMNS), st.text(max_size=120))
def test_parse_fill_returns_only_text_a_cell_may_hold(column: str, text: str) -> None:
    try:
        parsed_column, cell = parse_fill(f"{column}={text}")
    except InputError as exc:
        assert exc.field == "--fill-empty"
        return
    assert parsed_column == column and cell.strip() and len(text) <= 80
    assert export_cell(cell) == cell and find_template_marker(cell) is None


@given(st.text())
def test_spreadsheet_safe_never_starts_a_formula(cell: str) -> None:
    safe = spreadsheet_safe(cell)
    assert not safe.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert safe.removeprefix("'") == cell or safe == cell


@pytest.mark.parametrize(
    "text",
    [
        "Hi {{first_name}}",
        "{% if x %}",
        "[[company]]",
        "Dear %FIRST_NAME%",
        "Congrats on the {round}",
        "${name}",
    ],
)
def test_template_markers_are_found(text: str) -> None:
    assert find_template_marker(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Congrats on the Series A last Thursday, Dymaxa",
        "Mid-size SaaS teams cut SDR ramp time from 90 to 45 days (50%)",
        "https://dymaxa.com/press/%E2%80%99series-a",
    ],
)
def test_ordinary_copy_is_not_a_marker(text: str) -> None:
    assert find_template_marker(text) is None


def run(
    *args: str, redis_url: str, home: Path, secret: str | None = SECRET
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(home), "WELCOMEMAT_PUBLIC_URL": PUBLIC_URL})
    if secret is not None:
        env["WELCOMEMAT_SECRET"] = secret
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_fact_column_holds_the_cited_facts_statement_from_publish(
    precomputed: redis.Redis, tmp_path: Path
) -> None:
    """The rep reads the research answer itself, not the page's wording, before any visit."""
    from welcomemat.records.account_records import cited_facts

    statements = {
        json.loads(line)["account_id"]: {f["id"]: f for f in json.loads(line)["facts"]}
        for line in (tmp_path / "accounts.jsonl").read_text().splitlines()
    }
    personal = [r for r in exported(precomputed)[1] if r["rung"] == "personal"]
    assert personal
    for row in personal:
        zone_set = ZoneSetStore(precomputed).get(TENANT, CAMPAIGN, row["account_id"])
        assert zone_set is not None
        cited = {f.fact_id for f in cited_facts(zone_set)}
        source = [statements[row["account_id"]][fact_id] for fact_id in cited]
        assert row["fact"] in {f["statement"] for f in source}, row
        assert row["fact_date"] in {f["published_at"] for f in source}, row
