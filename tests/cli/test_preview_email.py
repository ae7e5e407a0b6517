"""`welcomemat preview email`: the template filled with the export's own rows, every branch."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from outbound.export import export_rows
from tests.example_accounts import precompute_offline, write_example_accounts
from tests.outbound.test_export import link_for, run
from tests.server.conftest import CAMPAIGN, TENANT
from welcomemat.campaign.view import load_campaign_view

TEMPLATE = (
    'Hi {{ first_name | default: "there" }},\n'
    "{{ hero_headline }}\n"
    "{{ fact }}\n"
    "See {{ page_url }} ({{ company }})\n"
)


@pytest.fixture
def personal_row(tmp_path: Path, redis_client: redis.Redis) -> dict[str, str]:
    """The example campaign precomputed; an exported row served as personal, with a fact."""
    precompute_offline(redis_client, write_example_accounts(tmp_path / "accounts.jsonl", 24))
    _, rows = export_rows(
        redis_client, load_campaign_view(redis_client, TENANT, CAMPAIGN), link_for, now=datetime.now(UTC)
    )
    return next(r for r in rows if r["rung"] == "personal" and r["fact"] and r["status"] == "ok")


def test_three_branches_are_the_exports_rows_and_a_missing_variable_is_flagged(
    personal_row: dict[str, str], redis_url: str, tmp_path: Path
) -> None:
    template = tmp_path / "step1.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    account, contact = personal_row["account_id"], personal_row["contact_id"]
    args = ("preview", "email", CAMPAIGN, account, "--template", str(template), "--contact", contact)
    result = run(*args, "--json", redis_url=redis_url, home=tmp_path)
    assert result.returncode == 1, result.stderr  # the segment and holdout branches have no fact
    branches = {b["branch"]: b for b in json.loads(result.stdout)}
    assert list(branches) == ["personal", "segment", "holdout"]
    personal = branches["personal"]
    first = personal_row["first_name"] or "there"
    assert personal["text"].startswith(
        f"Hi {first},\n{personal_row['hero_headline']}\n{personal_row['fact']}\n"
    )
    assert personal["rung"] == "personal" and personal["issues"] == []
    for name in ("segment", "holdout"):
        branch = branches[name]
        assert branch["rung"] == "segment" and branch["text"] != personal["text"]
        assert branch["issues"] == [{"line": 3, "variable": "fact", "kind": "empty"}]
        assert "{{" not in branch["text"]
    assert branches["segment"]["text"] == branches["holdout"]["text"]  # the same segment copy

    text = run(*args, redis_url=redis_url, home=tmp_path)
    assert text.returncode == 1
    assert "=== personal (rung personal, status ok) ===" in text.stdout
    assert "=== holdout (rung segment, status ok) ===" in text.stdout
    assert "!! line 3: {{ fact }}: empty, and no default" in text.stdout

    template.write_text("Hi {{ first_name | default: 'there' }}, {{ company }}\n", encoding="utf-8")
    clean = run(*args, redis_url=redis_url, home=tmp_path)
    assert clean.returncode == 0 and clean.stdout.count(f", {personal_row['company']}\n") == 3, clean.stdout

    template.write_text("Hi {{ firstName }}\n", encoding="utf-8")  # lemlist-style spelling
    unknown = run(*args, redis_url=redis_url, home=tmp_path)
    assert unknown.returncode == 1 and "{{ firstName }}: no such export column" in unknown.stdout


def test_a_bad_template_or_account_is_exit_2_naming_the_file_and_line(
    personal_row: dict[str, str], redis_url: str, tmp_path: Path
) -> None:
    template = tmp_path / "bad.html"
    template.write_text("<p>Hi</p>\n<p>{{ first_name | there }}</p>\n", encoding="utf-8")
    account = personal_row["account_id"]
    bad = run(
        "preview", "email", CAMPAIGN, account, "--template", str(template), redis_url=redis_url, home=tmp_path
    )
    assert bad.returncode == 2 and f"{template}:2, field 'first_name'" in bad.stderr, bad.stderr
    assert "unsupported filter 'there'" in bad.stderr and "Traceback" not in bad.stderr

    template.write_bytes(b"Hi\n\xff{{ first_name }}\n")
    assert (
        "bad.html:2: the template is not UTF-8"
        in run(
            "preview",
            "email",
            CAMPAIGN,
            account,
            "--template",
            str(template),
            redis_url=redis_url,
            home=tmp_path,
        ).stderr
    )
    template.write_text("{{ first_name }}", encoding="utf-8")
    nobody = run(
        "preview",
        "email",
        CAMPAIGN,
        "acct_nobody",
        "--template",
        str(template),
        redis_url=redis_url,
        home=tmp_path,
    )
    assert nobody.returncode == 2 and "no account record for 'acct_nobody'" in nobody.stderr
    missing = run(
        "preview",
        "email",
        CAMPAIGN,
        account,
        "--template",
        str(tmp_path / "none.txt"),
        redis_url=redis_url,
        home=tmp_path,
    )
    assert missing.returncode == 2 and "none.txt: cannot read the template" in missing.stderr
