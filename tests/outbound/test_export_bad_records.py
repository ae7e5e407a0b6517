"""One bad record never costs another contact its row, nor changes another row by a byte.

The population: the example accounts, plus four records as research and CRM exports
deliver them: facts whose statements carry template syntax (`{{7*7}}`), a script in an
account's name, facts allowed only on the web, and a tier-1 account waiting for review.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from outbound.export import ExportSummary, export_rows, write_export
from tests.example_accounts import generator, precompute_offline
from tests.outbound.test_export_cells import assert_clean
from tests.server.conftest import CAMPAIGN, TENANT
from welcomemat.campaign.view import load_campaign_view
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

CLEAN = 40
NOW = datetime.now(UTC)


def link_for(account_id: str, contact_id: str) -> str:
    """A stable link per contact: these rows are compared byte for byte across runs."""
    return f"https://wm.acme.example/c/{CAMPAIGN}?wm=token-{account_id}-{contact_id}"


def bad_records(accounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    template, script, web_only, pending = accounts[:4]
    for fact in template["facts"]:
        fact["statement"] = f"{template['name']} raised {{{{7*7}}}} million"
    script["name"] = f"<script>alert(1)</script>{script['name']}"
    for fact in web_only["facts"]:
        fact["surfaces"] = ["web"]
    pending["tier"] = 1
    return [template, script, web_only, pending]


def precompute(client: redis.Redis, path: Path, accounts: list[dict[str, Any]]) -> None:
    client.flushdb()
    path.write_text("".join(json.dumps(a) + "\n" for a in accounts), encoding="utf-8")
    precompute_offline(client, path)


def export_csv(
    client: redis.Redis,
) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], dict[str, str]], ExportSummary]:
    """Each contact's CSV line as written, its parsed cells, and the summary."""
    summary = ExportSummary()
    header, rows = export_rows(
        client, load_campaign_view(client, TENANT, CAMPAIGN), link_for, now=NOW, summary=summary
    )
    out = io.StringIO()
    write_export(header, rows, out, "csv")
    lines = out.getvalue().split("\r\n")[1:-1]
    parsed = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    assert len(lines) == len(parsed)
    keys = [(r["account_id"], r["contact_id"]) for r in parsed]
    assert len(set(keys)) == len(keys)  # one row per contact
    return dict(zip(keys, lines, strict=True)), dict(zip(keys, parsed, strict=True)), summary


def with_personal_pages(
    client: redis.Redis, path: Path, candidates: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The candidates that get a personal page citing a fact (so a bad record has something to lose)."""
    for candidate in candidates:
        candidate["tier"] = 2  # published without review
    precompute(client, path, candidates)
    store = ZoneSetStore(client)
    return [
        c
        for c in candidates
        if (z := store.get(TENANT, CAMPAIGN, c["account_id"])) is not None
        and any(zone.rung is Rung.PERSONAL and zone.facts for zone in z.zones)
    ]


def test_bad_records_get_fallback_rows_and_leave_every_other_row_byte_identical(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    accounts = [json.loads(a) for a in map(json.dumps, generator().generate(NOW.date(), CLEAN + 30))]
    personal = with_personal_pages(redis_client, tmp_path / "probe.jsonl", accounts[CLEAN:])
    clean, bad = accounts[:CLEAN], bad_records(personal)
    template, script, web_only, pending = (a["account_id"] for a in bad)

    precompute(redis_client, tmp_path / "clean.jsonl", clean)
    clean_lines, _, _ = export_csv(redis_client)
    precompute(redis_client, tmp_path / "all.jsonl", clean + bad)
    lines, rows, summary = export_csv(redis_client)

    # One row per contact of every account, the bad ones included.
    assert set(rows) == {(a["account_id"], c["contact_id"]) for a in clean + bad for c in a["contacts"]}
    # Every other row is the very line the clean run wrote.
    assert {k: v for k, v in lines.items() if k in clean_lines} == clean_lines
    # No bad cell anywhere.
    for row in rows.values():
        for cell in row.values():
            assert_clean(cell)
            assert "49" not in cell or row["account_id"] != template

    by_account: dict[str, list[dict[str, str]]] = {}
    for (account_id, _), row in rows.items():
        by_account.setdefault(account_id, []).append(row)
    # Template syntax in research: refused by the trust policy, the account gets what is left.
    assert all(r["status"] == "ok" and r["fact"] == "" for r in by_account[template])
    # A script in the name: the fallback row, the domain for a company, and why.
    script_domain = bad[1]["domain"]
    for row in by_account[script]:
        assert (row["status"], row["company"], row["fact"]) == ("refused_cell", script_domain, "")
        assert row["rung"] == "segment"
    # Web-only facts: the page may be personal, the e-mail never shows them.
    zone_set = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, web_only)
    assert zone_set is not None
    web_only_statements = {f["statement"] for f in bad[2]["facts"]}
    view = load_campaign_view(redis_client, TENANT, CAMPAIGN)
    page_only = {
        z.zone_id: z.text
        for z in zone_set.zones
        if z.rung is Rung.PERSONAL
        and z.facts
        and z.text != view.fallback_zone(zone_set.segment, z.zone_id).text
    }
    assert page_only  # the page has something the e-mail must not
    for row in by_account[web_only]:
        assert row["status"] == "ok" and row["fact"] == "" and row["fact"] not in web_only_statements
        assert all(row[zone] != text for zone, text in page_only.items())
    # Tier 1 waits for a person: its fallback, with the status saying so.
    assert all(r["status"] == "pending_review" and r["rung"] == "segment" for r in by_account[pending])

    listed = {(p.account_id, p.status.value) for p in summary.problems}
    assert {(script, "refused_cell"), (pending, "pending_review")} <= listed
    assert not {a for a, _ in listed} & {template, web_only}
    assert summary.rows == len(rows)
