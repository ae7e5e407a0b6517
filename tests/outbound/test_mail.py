"""`welcomemat mail`: the vendor file, QR codes that scan to the page they promise, a proof per piece.

Real Redis, a real renderer over HTTP (uvicorn on a loopback port), ZXing decoding the PNGs
and pypdf reading the proof back.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import redis
import zxingcpp
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from pypdf import PdfReader

from cli.arg_types import iso_day
from cli.main import main
from tests.event_stream import stream_events
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.server.conftest import (
    CAMPAIGN,
    PUBLIC_URL,
    SECRET,
    TENANT,
    example_inputs,
    renderer_app,
    renderer_settings,
)
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat.records.account_records import iter_account_records
from welcomemat.records.accounts import PostalAddress
from welcomemat.zones.store import ZoneSetStore

ACCOUNTS = 40
BROWSER = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"
ADDRESS = {"line1": "Keizersgracht 62", "city": "Amsterdam", "postal_code": "1015 CS", "country": "NL"}


def mailable_accounts(path: Path, *, bad_contact: str | None = None) -> tuple[Path, int]:
    """Example accounts whose contacts have an address and whose facts allow print.

    `bad_contact` (an account id): its first contact's address holds template syntax.
    Returns the file and the number of contacts with an email (the records keep those).
    """
    write_example_accounts(path, ACCOUNTS)
    lines = []
    contacts = 0
    for raw in path.read_text().splitlines():
        account = json.loads(raw)
        for fact in account.get("facts", []):
            fact["surfaces"] = [*fact.get("surfaces", ["web"]), "print"]
        for n, contact in enumerate(account.get("contacts", [])):
            contact["address"] = dict(ADDRESS)
            if account["account_id"] == bad_contact and n == 0:
                contact["address"]["line2"] = "{{7*7}}"
            contacts += bool(contact.get("email"))
        lines.append(json.dumps(account))
    path.write_text("\n".join(lines) + "\n")
    return path, contacts


def precompute(client: redis.Redis, accounts: Path, *, without_continuation: bool = False) -> None:
    campaign, _ = example_inputs()
    if without_continuation:
        pages = {k: v for k, v in campaign.pages.items() if k != "continuation"}
        campaign = campaign.model_copy(update={"pages": pages})
    precompute_offline(client, accounts, campaign)


@pytest.fixture
def renderer(redis_client: redis.Redis) -> Iterator[str]:
    app = renderer_app(renderer_settings(), redis_client=redis_client)
    with serve_in_thread(app) as url:
        yield url


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("WELCOMEMAT_SECRET", SECRET)
    monkeypatch.setenv("WELCOMEMAT_PUBLIC_URL", PUBLIC_URL)


def mail(out: Path, renderer: str, *extra: str) -> int:
    return main(["mail", f"{TENANT}/{CAMPAIGN}", "--out", str(out), "--renderer-url", renderer, *extra])


def read_rows(out: Path) -> list[dict[str, str]]:
    with open(out / "recipients.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.usefixtures("env")
def test_every_contact_with_an_address_gets_a_piece_whose_code_scans_to_its_page(
    tmp_path: Path, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts, contacts = mailable_accounts(tmp_path / "accounts.jsonl")
    precompute(redis_client, accounts)
    out = tmp_path / "mail"
    with serve_in_thread(renderer_app(renderer_settings(), redis_client=redis_client)) as renderer:
        assert mail(out, renderer, "--json") == 0
        one = urlsplit(read_rows(out)[0]["qr_url"]).path
        person = httpx.get(f"{renderer}{one}", headers={"host": "wm.example.com", "user-agent": BROWSER})
        assert person.status_code == 303
    # The renderer has stopped (its event queue flushed): the preflight's scans and page views
    # were checks, not engagement (no seller alert, no record); a person's scan of the same code is.
    entries = stream_events(redis_client, TENANT)
    assert [fields[b"type"] for _, fields in entries] == [b"qr_scan"]
    report = json.loads(capsys.readouterr().out)
    rows = read_rows(out)
    assert len(rows) == report["recipients"] == contacts > ACCOUNTS
    assert report["preflight"]["decode_rate"] == 1.0 and report["preflight"]["failures"] == []
    assert {r["status"] for r in rows} >= {"ok", "pending_review"}  # tier 1 waits: its fallback, printed
    personal = [r for r in rows if r["rung"] == "personal"]
    assert personal and all(
        r["fact"] and r["fact_url"].startswith("https://") and r["fact_date"] for r in personal
    )
    assert all(not r["fact"] for r in rows if r["rung"] != "personal")
    for row in rows:
        assert row["line"] and row["address_line1"] == ADDRESS["line1"] and row["country"] == "NL"
        assert row["qr_url"].startswith(f"{PUBLIC_URL}/q/")
        with Image.open(out / row["qr_image"]) as image:
            assert [b.text for b in zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)] == [
                row["qr_url"]
            ]
    # Every piece written is its contact's `printed` state, with what was printed.
    records = {r.account_id: r for r in iter_account_records(redis_client, TENANT)}
    for row in rows:
        printed = records[row["account_id"]].workflow[CAMPAIGN][row["contact_id"]]["printed"]
        assert printed.detail == {"rung": row["rung"], "status": row["status"], "file": str(out)}
    proof = PdfReader(out / "proof.pdf")
    assert len(proof.pages) == len(rows)
    first = proof.pages[rows.index(personal[0])].extract_text()
    assert personal[0]["fact_url"] in first and personal[0]["fact_date"] in first


@pytest.mark.usefixtures("env")
def test_a_claim_stale_by_the_in_home_date_is_printed_as_the_fallback(
    tmp_path: Path, redis_client: redis.Redis, renderer: str
) -> None:
    accounts, _ = mailable_accounts(tmp_path / "accounts.jsonl")
    precompute(redis_client, accounts)
    assert mail(tmp_path / "soon", renderer) == 0
    soon = {(r["account_id"], r["contact_id"]): r for r in read_rows(tmp_path / "soon")}
    store = ZoneSetStore(redis_client)
    expiring = {}
    for (account, _contact), row in soon.items():
        zone_set = store.get(TENANT, CAMPAIGN, account)
        if row["rung"] == "personal" and zone_set is not None and zone_set.valid_until is not None:
            expiring[account] = zone_set.valid_until
    assert expiring, "the offline composer dates some claims"
    account, until = min(expiring.items(), key=lambda item: item[1])
    late = until.date() + timedelta(days=1)
    assert mail(tmp_path / "late", renderer, "--in-home-date", late.isoformat()) == 0
    rows = {(r["account_id"], r["contact_id"]): r for r in read_rows(tmp_path / "late")}
    assert rows.keys() == soon.keys()
    for key, row in rows.items():
        if key[0] == account:
            assert row["status"] == "expires_before_in_home" and row["rung"] != "personal" and not row["fact"]
            assert row["line"] != soon[key]["line"]


@pytest.mark.usefixtures("env")
def test_codes_for_a_campaign_without_a_continuation_page_block_the_file(
    tmp_path: Path, redis_client: redis.Redis, renderer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts, contacts = mailable_accounts(tmp_path / "accounts.jsonl")
    precompute(redis_client, accounts, without_continuation=True)
    out = tmp_path / "mail"
    assert mail(out, renderer) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [accounts]  # no temporary folder left either
    failed = [line for line in capsys.readouterr().err.splitlines() if "preflight failed:" in line]
    assert len(failed) == contacts
    assert all("answered 404 to the QR URL" in line for line in failed)


@pytest.mark.usefixtures("env")
def test_one_bad_address_degrades_only_its_own_piece(
    tmp_path: Path, redis_client: redis.Redis, renderer: str
) -> None:
    clean, _ = mailable_accounts(tmp_path / "clean.jsonl")
    bad_account = json.loads(clean.read_text().splitlines()[1])["account_id"]
    precompute(redis_client, clean)
    assert mail(tmp_path / "clean", renderer) == 0
    accounts, _ = mailable_accounts(tmp_path / "accounts.jsonl", bad_contact=bad_account)
    precompute(redis_client, accounts)
    assert mail(tmp_path / "bad", renderer) == 0
    before = {(r["account_id"], r["contact_id"]): r for r in read_rows(tmp_path / "clean")}
    after = {(r["account_id"], r["contact_id"]): r for r in read_rows(tmp_path / "bad")}
    assert after.keys() == before.keys()
    changed = [k for k in after if {**after[k], "qr_url": ""} != {**before[k], "qr_url": ""}]
    assert len(changed) == 1 and changed[0][0] == bad_account
    row = after[changed[0]]
    assert row["status"] == "refused_cell" and row["address_line2"] == "" and "{{" not in json.dumps(row)


@pytest.mark.usefixtures("env")
def test_bad_input_is_exit_2_and_writes_nothing(tmp_path: Path, renderer: str) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("x")
    assert mail(taken, renderer) == 2
    with pytest.raises(SystemExit) as bad_day:
        mail(tmp_path / "new", renderer, "--in-home-date", "2028-02-30")
    assert bad_day.value.code == 2
    assert mail(tmp_path / "new", renderer, "--in-home-date", "2000-01-01") == 2  # before today
    assert mail(tmp_path / "new", renderer, "--base-url", "https://wm.example.com/path") == 2  # not an origin
    assert not (tmp_path / "new").exists()
    assert not (tmp_path / "new").exists()


def test_an_address_is_one_line_per_part_and_a_country_code() -> None:
    assert PostalAddress.model_validate(ADDRESS).line2 is None
    for bad in ({**ADDRESS, "country": "Netherlands"}, {**ADDRESS, "line1": "a\nb"}, {**ADDRESS, "city": ""}):
        with pytest.raises(ValueError):
            PostalAddress.model_validate(bad)


def test_in_home_deadline_is_the_end_of_that_day() -> None:
    from outbound.mail_plan import in_home_deadline

    end = in_home_deadline(date(2028, 2, 29))
    assert (
        end.tzinfo is UTC
        and end.date() == date(2028, 2, 29)
        and end + timedelta(microseconds=1) == datetime(2028, 3, 1, tzinfo=UTC)
    )


@given(day=st.dates())
def test_an_in_home_date_reads_back_as_written(day: date) -> None:
    if 2000 <= day.year <= 2100:  # the years every stored date keeps (welcomemat.bounded_time)
        assert iso_day(day.isoformat()) == day
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="years 2000 to 2100"):
            iso_day(day.isoformat())  # years before 1000 are written with four digits too


@given(text=st.text(max_size=12))
def test_anything_but_a_day_is_refused_as_an_in_home_date(text: str) -> None:
    try:
        parsed = date.fromisoformat(text) if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text) else None
    except ValueError:
        parsed = None
    if parsed is None or not 2000 <= parsed.year <= 2100:
        with pytest.raises(argparse.ArgumentTypeError):
            iso_day(text)
    else:
        assert iso_day(text) == parsed
