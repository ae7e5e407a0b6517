"""The five sample accounts `welcomemat init` writes: one per way the research can turn out.

Each shows a different outcome of the trust policy and the fallback ladder, so a new
campaign's first `precompute` and `explain` show what happens to a real export:

    account          research                                       the page it gets
    acct_brightwave  a sourced Series A, a few days old             personal, citing the round
    acct_fernhill    three sourced job posts for AEs in one city    personal, citing the posts
    acct_oakridge    one sourced fact, long past its window         segment copy (stale)
    acct_lumen       no research at all                             segment copy
    acct_quillmate   a fact about another company, one unsourced    segment copy (wrong subject,
                                                                    no source)

Dates are counted back from `today` (the caller's clock), so a campaign made today has
fresh signals, and the same `today` always gives the same bytes. The ages are chosen to
hold on every calendar day: the fresh facts sit well inside the scaffold's windows, the
stale one far outside any window a tenant may allow for its type. Domains are `.example`
names and addresses documentation ranges (RFC 2606, RFC 5737): they reach nobody.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

__all__ = [
    "FUNDING_AGE_DAYS",
    "HIRING_AGES_DAYS",
    "STALE_AGE_DAYS",
    "SampleAccount",
    "sample_accounts",
    "sample_accounts_jsonl",
]

# Days before `today`. Three days gives "on <weekday>" in the headline, true for four more
# days, and leaves 27 of the campaign's 30-day funding window.
FUNDING_AGE_DAYS = 3
# Three posts with the same role and city make one claim ("Hiring three AEs in Leeds?");
# the oldest is still a month inside the 45-day hiring window.
HIRING_AGES_DAYS = (4, 9, 15)
# Far past the scaffold's funding window (30 days) and the tenant's maximum for it (60 days):
# widening a window while trying things out does not make this fact fresh by accident.
STALE_AGE_DAYS = 400
# The misattributed and the unsourced facts are recent: their only fault is the one they show.
QUILLMATE_AGES_DAYS = (6, 11)


@dataclass(frozen=True)
class SampleAccount:
    """One sample record and, in words, what it shows after precompute."""

    account_id: str
    shows: str
    record: dict[str, Any]


def _day(today: date, days_ago: int) -> str:
    return (today - timedelta(days=days_ago)).isoformat()


def _contact(contact_id: str, first: str, last: str, title: str, domain: str) -> dict[str, str]:
    return {
        "contact_id": contact_id,
        "email": f"{first.lower()}.{last.lower()}@{domain}",
        "first_name": first,
        "last_name": last,
        "title": title,
    }


def _account(
    account_id: str, name: str, domain: str, segment: str, tier: int, employees: int, city: str
) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "name": name,
        "domain": domain,
        "segment": segment,
        "tier": tier,
        "industry": "software",
        "country": "GB",
        "city": city,
        "employee_count": employees,
        "ip_ranges": [],
    }


def _brightwave(today: date) -> SampleAccount:
    announced = today - timedelta(days=FUNDING_AGE_DAYS)
    record = _account(
        "acct_brightwave", "Brightwave Ltd", "brightwave.example", "mid-market", 2, 140, "Bristol"
    )
    record["ip_ranges"] = ["192.0.2.0/28"]
    record["contacts"] = [
        _contact("c_brightwave_1", "Alex", "Morgan", "Head of People", "brightwave.example")
    ]
    record["facts"] = [
        {
            "id": "brightwave-series-a",
            "type": "funding",
            "statement": "Brightwave raised a Series A",
            "subject": "Brightwave",
            "round": "Series A",
            "source_url": "https://brightwave.example/press/series-a",
            "published_at": announced.isoformat(),
            "confidence": "high",
            "surfaces": ["web", "email", "seller"],
            "evidence": f"Bristol, {announced.isoformat()}: Brightwave today announced its Series A "
            "to grow its team.",
        }
    ]
    return SampleAccount(
        "acct_brightwave", f"personal: a sourced Series A {FUNDING_AGE_DAYS} days ago", record
    )


def _fernhill(today: date) -> SampleAccount:
    record = _account("acct_fernhill", "Fernhill Ltd", "fernhill.example", "enterprise", 2, 900, "Leeds")
    record["contacts"] = [_contact("c_fernhill_1", "Sam", "Patel", "VP Sales", "fernhill.example")]
    record["facts"] = [
        {
            "id": f"fernhill-ae-{n}",
            "type": "hiring",
            "statement": "Fernhill is hiring an Account Executive in Leeds",
            "subject": "Fernhill",
            "role": "Account Executive",
            "role_short": "AE",
            "role_plural": "AEs",
            "location": "Leeds",
            "source_url": f"https://fernhill.example/careers/account-executive-leeds-{n}",
            "published_at": _day(today, days_ago),
            "confidence": "high",
            "surfaces": ["web", "email", "seller"],
        }
        for n, days_ago in enumerate(HIRING_AGES_DAYS, start=1)
    ]
    shows = f"personal: {len(HIRING_AGES_DAYS)} sourced job posts for AEs in Leeds"
    return SampleAccount("acct_fernhill", shows, record)


def _oakridge(today: date) -> SampleAccount:
    record = _account("acct_oakridge", "Oakridge Ltd", "oakridge.example", "mid-market", 3, 75, "Manchester")
    record["contacts"] = [_contact("c_oakridge_1", "Jamie", "Clarke", "COO", "oakridge.example")]
    record["facts"] = [
        {
            "id": "oakridge-seed",
            "type": "funding",
            "statement": "Oakridge raised a seed round",
            "subject": "Oakridge",
            "round": "seed round",
            "source_url": "https://oakridge.example/news/seed-round",
            "published_at": _day(today, STALE_AGE_DAYS),
            "confidence": "high",
            "surfaces": ["web", "email", "seller"],
        }
    ]
    shows = f"segment copy: its only fact is {STALE_AGE_DAYS} days old (stale)"
    return SampleAccount("acct_oakridge", shows, record)


def _lumen(today: date) -> SampleAccount:
    record = _account(
        "acct_lumen", "Lumen Health Group plc", "lumenhealth.example", "enterprise", 3, 2400, "London"
    )
    record["industry"] = "healthcare"
    record["contacts"] = [_contact("c_lumen_1", "Priya", "Shah", "Head of Operations", "lumenhealth.example")]
    record["facts"] = []
    return SampleAccount("acct_lumen", "segment copy: no research at all", record)


def _quillmate(today: date) -> SampleAccount:
    misattributed, unsourced = QUILLMATE_AGES_DAYS
    record = _account(
        "acct_quillmate", "Quillmate Ltd", "quillmate.example", "small-business", 3, 28, "Edinburgh"
    )
    record["contacts"] = [_contact("c_quillmate_1", "Robin", "Fraser", "Founder", "quillmate.example")]
    record["facts"] = [
        {  # the research tool matched the wrong company: this is Northwind's news, not Quillmate's
            "id": "quillmate-1",
            "type": "funding",
            "statement": "Northwind raised a Series B",
            "subject": "Northwind",
            "round": "Series B",
            "source_url": "https://northwind.example/press/series-b",
            "published_at": _day(today, misattributed),
            "confidence": "high",
            "surfaces": ["web", "email", "seller"],
        },
        {  # true or not, nobody can check it: no source link
            "id": "quillmate-2",
            "type": "expansion",
            "statement": "Quillmate opened an office in Glasgow",
            "subject": "Quillmate",
            "location": "Glasgow",
            "published_at": _day(today, unsourced),
            "confidence": "medium",
            "surfaces": ["web", "email", "seller"],
        },
    ]
    shows = "segment copy: one fact is about another company, the other has no source"
    return SampleAccount("acct_quillmate", shows, record)


def sample_accounts(today: date) -> list[SampleAccount]:
    """The five sample accounts, dated back from `today`."""
    return [maker(today) for maker in (_brightwave, _fernhill, _oakridge, _lumen, _quillmate)]


def sample_accounts_jsonl(today: date) -> str:
    """The sample accounts as `accounts.jsonl` text: one record a line, the same bytes for the same day."""
    return "".join(json.dumps(a.record, ensure_ascii=False) + "\n" for a in sample_accounts(today))
