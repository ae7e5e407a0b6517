"""The example accounts: deterministic, the right mix, and Joram's record as the docs tell it."""

from __future__ import annotations

import json
from datetime import date

from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today, generator
from welcomemat.campaign.contract import load_campaign
from welcomemat.records.accounts import read_accounts
from welcomemat.security.urlgate import browser_view

ACCOUNTS = REPO_ROOT / "examples" / "accounts.jsonl"


def test_committed_file_is_what_the_script_makes() -> None:
    today = committed_today()
    lines = [json.dumps(a, ensure_ascii=False) for a in generator().generate(today)]
    assert ACCOUNTS.read_text(encoding="utf-8") == "\n".join(lines) + "\n", (
        f"regenerate with: python examples/make_accounts.py --today {today}"
    )


def test_same_day_same_accounts_other_day_shifted_dates() -> None:
    gen = generator()
    a, b = gen.generate(date(2027, 3, 4)), gen.generate(date(2027, 3, 4))
    assert a == b
    assert gen.generate(date(2027, 3, 5))[0]["facts"][0]["published_at"] != a[0]["facts"][0]["published_at"]


def looks_trusted(fact: dict, windows: dict[str, int], today: date, subject: str) -> bool:  # type: ignore[type-arg]
    url = fact.get("source_url") or ""
    view = browser_view(url)
    try:
        published = date.fromisoformat(fact.get("published_at") or "")
    except ValueError:
        return False
    return (
        view is not None
        and view[0] == "https"
        and published <= today
        and (today - published).days <= windows.get(fact["type"], 0)
        and fact.get("confidence") in ("medium", "high")
        and "web" in fact.get("surfaces", [])
        and fact.get("subject") == subject
    )


def test_mix_about_a_third_trusted_rest_stale_unsourced_or_none() -> None:
    report = read_accounts(ACCOUNTS)
    assert report.problems == [] and len(report.accounts) >= 1000
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml")
    today = committed_today()
    trusted = none = 0
    for account in report.accounts:
        facts = [f.model_dump() for f in account.facts]
        subject = account.name.split(" ")[0]
        if not facts:
            none += 1
        elif any(looks_trusted(f, campaign.signal_windows_days, today, subject) for f in facts):
            trusted += 1
        assert account.segment in campaign.segments
    share = trusted / len(report.accounts)
    assert 0.25 <= share <= 0.42, share
    assert 0.1 <= none / len(report.accounts) <= 0.35
    kinds = {f.get("confidence") for a in report.accounts for f in (x.model_dump() for x in a.facts)}
    assert "low" in kinds  # some research is low-confidence
    assert any(not f.source_url for a in report.accounts for f in a.facts)  # and some unsourced


def test_joram_at_dymaxa() -> None:
    report = read_accounts(ACCOUNTS)
    dymaxa = next(a for a in report.accounts if a.account_id == "acct_dymaxa")
    today = committed_today()
    assert dymaxa.name.startswith("Dymaxa") and dymaxa.domain == "dymaxa.com"
    assert dymaxa.model_dump()["city"] == "Amsterdam" and dymaxa.industry == "software"
    assert dymaxa.employee_count is not None and 50 <= dymaxa.employee_count <= 70
    (joram,) = dymaxa.contacts
    assert (joram.first_name, joram.title, joram.email) == ("Joram", "Head of Sales", "joram@dymaxa.com")
    funding = [f for f in dymaxa.facts if f.type == "funding"]
    assert len(funding) == 1 and "Series A" in funding[0].statement
    announced = date.fromisoformat(funding[0].published_at or "")
    assert announced.weekday() == 3 and 1 <= (today - announced).days <= 7  # last Thursday
    roles = [f for f in dymaxa.facts if f.type == "hiring"]
    assert len(roles) == 4
    assert all(
        "Sales Development Representative" in f.statement and "Amsterdam" in f.statement for f in roles
    )
    urls = {f.source_url for f in roles}
    assert len(urls) == 4 and all(u and u.startswith("https://dymaxa.com/") for u in urls)
