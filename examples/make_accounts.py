#!/usr/bin/env python3
"""Write the example `accounts.jsonl`: a deterministic, realistic mix of B2B accounts.

    python examples/make_accounts.py [--today YYYY-MM-DD] [--count N] [--out PATH]

The same `--today` and `--count` always give the same bytes. Dates are relative to
`--today` (default: today's UTC date), so the demo's signals stay fresh. The mix: about a
third of accounts carry a trusted signal (sourced, recent, about them, allowed on the
web); the rest have stale, unsourced, low-confidence, off-surface, misattributed or
future-dated facts, or none. Record 1 is Dymaxa: Joram, Head of Sales at an Amsterdam
software company of ~60 people, with a Series A announced last Thursday (one to seven
days ago) and four open SDR roles in Amsterdam posted in the weeks before (8 to 16 days
ago), each with its own URL. The roles are always older than the round, so on every day of
the week the round is Dymaxa's newest signal and opens its page.

Addresses are from documentation ranges (RFC 5737, RFC 3849): they route nowhere.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

SEED = 20261129
DEFAULT_COUNT = 1200

SEGMENTS = {  # segment: (employee range, industries)
    "saas-smb": ((8, 49), ["software"]),
    "saas-mid": ((50, 500), ["software"]),
    "saas-enterprise": ((501, 12000), ["software"]),
    "fintech": ((20, 3000), ["fintech", "payments"]),
    "services": ((10, 2000), ["consulting", "agency", "legal services"]),
}
CITIES = [
    ("NL", "Amsterdam"),
    ("NL", "Rotterdam"),
    ("NL", "Utrecht"),
    ("DE", "Berlin"),
    ("DE", "Munich"),
    ("GB", "London"),
    ("GB", "Manchester"),
    ("FR", "Paris"),
    ("ES", "Barcelona"),
    ("SE", "Stockholm"),
    ("DK", "Copenhagen"),
    ("IE", "Dublin"),
    ("BE", "Brussels"),
    ("PT", "Lisbon"),
    ("PL", "Warsaw"),
]
TLDS = {
    "NL": ".nl",
    "DE": ".de",
    "GB": ".co.uk",
    "FR": ".fr",
    "ES": ".es",
    "SE": ".se",
    "DK": ".dk",
    "IE": ".ie",
    "BE": ".be",
    "PT": ".pt",
    "PL": ".pl",
}
SYLLABLES = [
    "bri",
    "ka",
    "lo",
    "vex",
    "tor",
    "mi",
    "na",
    "quo",
    "zen",
    "ra",
    "dal",
    "fy",
    "sol",
    "tek",
    "lum",
    "or",
    "vi",
    "sta",
    "ply",
    "ner",
    "go",
    "ax",
    "rel",
    "io",
    "mo",
    "kin",
    "the",
    "pha",
]
SUFFIXES = ["B.V.", "GmbH", "Ltd", "SAS", "S.L.", "AB", "ApS", "Inc.", "NV", "Lda", "sp. z o.o."]
FIRST = [
    "Anna",
    "Lars",
    "Sofia",
    "Tom",
    "Eva",
    "Noah",
    "Mila",
    "Lucas",
    "Emma",
    "Finn",
    "Julia",
    "Sam",
    "Nora",
    "Daan",
    "Lea",
    "Max",
    "Ines",
    "Olle",
    "Zoe",
    "Ruben",
    "Maja",
    "Hugo",
    "Ida",
    "Jonas",
]
LAST = [
    "de Vries",
    "Jansen",
    "Müller",
    "Schmidt",
    "Smith",
    "Dubois",
    "García",
    "Nilsson",
    "Hansen",
    "Murphy",
    "Peeters",
    "Silva",
    "Nowak",
    "Bakker",
    "Visser",
    "Weber",
    "Martin",
    "Berg",
]
TITLES = [
    "Head of Sales",
    "VP Sales",
    "Sales Director",
    "CRO",
    "Head of Revenue Operations",
    "SDR Manager",
    "Head of Growth",
    "CEO",
    "COO",
    "Head of Enablement",
]
FREEMAIL = ["gmail.com", "outlook.com", "yahoo.com", "hotmail.com", "proton.me"]
ROLES = [("Sales Development Representative", "SDR", "SDRs"), ("Account Executive", "AE", "AEs")]
ROUNDS = ["seed round", "Series A", "Series B", "Series C"]
# Ages of Dymaxa's four SDR postings. All older than "last Thursday" can be (7 days): were one
# newer than the round, the hiring fact would open Dymaxa's page on some weekdays and not others.
ROLE_AGES_DAYS = (8, 10, 13, 16)


def last_thursday(today: date) -> date:
    back = (today.weekday() - 3) % 7 or 7
    return today - timedelta(days=back)


def dymaxa(today: date) -> dict[str, object]:
    announced = last_thursday(today)
    roles = []
    for n, days_ago in enumerate(ROLE_AGES_DAYS, start=1):
        roles.append(
            {
                "id": f"dymaxa-sdr-{n}",
                "type": "hiring",
                "statement": "Dymaxa is hiring a Sales Development Representative in Amsterdam",
                "subject": "Dymaxa",
                "role": "Sales Development Representative",
                "role_short": "SDR",
                "role_plural": "SDRs",
                "location": "Amsterdam",
                "source_url": f"https://dymaxa.com/careers/sales-development-representative-amsterdam-{n}",
                "published_at": (today - timedelta(days=days_ago)).isoformat(),
                "confidence": "high",
                "surfaces": ["web", "email", "seller"],
                "evidence": f"Sales Development Representative (Amsterdam, opening {n} of 4). Join Dymaxa's "
                "growing sales team in Amsterdam.",
            }
        )
    return {
        "account_id": "acct_dymaxa",
        "name": "Dymaxa B.V.",
        "domain": "dymaxa.com",
        "segment": "saas-mid",
        "tier": 1,
        "industry": "software",
        "country": "NL",
        "city": "Amsterdam",
        "employee_count": 60,
        "ip_ranges": ["203.0.113.0/24", "2001:db8:d1a::/48"],
        "crm_owner": "sam@acmerevenue.example",
        "contacts": [
            {
                "contact_id": "c_joram",
                "email": "joram@dymaxa.com",
                "first_name": "Joram",
                "title": "Head of Sales",
            }
        ],
        "facts": [
            {
                "id": "dymaxa-series-a",
                "type": "funding",
                "statement": "Dymaxa raised a Series A",
                "subject": "Dymaxa",
                "round": "Series A",
                "source_url": "https://dymaxa.com/press/series-a",
                "published_at": announced.isoformat(),
                "confidence": "high",
                "surfaces": ["web", "email", "seller"],
                "evidence": "Amsterdam, "
                + announced.strftime("%d %B %Y").lstrip("0")
                + " - Dymaxa today announced its Series A to grow its sales team.",
            },
            *roles,
        ],
        "sources": [],
    }


def company_name(rng: random.Random, used: set[str]) -> str:
    while True:
        stem = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice([2, 2, 3]))).capitalize()
        if stem not in used and len(stem) >= 4:
            used.add(stem)
            return stem


def make_fact(
    rng: random.Random, today: date, stem: str, domain: str, kind: str, n: int, city: str, others: list[str]
) -> dict[str, object]:
    """One fact of the given quality kind (see the module docstring)."""
    ftype = rng.choice(["funding", "hiring", "hiring", "expansion", "leadership", "product_launch"])
    age = rng.randint(1, 30)
    fact: dict[str, object] = {"id": f"{stem.lower()}-{n}", "type": ftype, "subject": stem}
    if ftype == "funding":
        rnd = rng.choice(ROUNDS)
        fact |= {
            "statement": f"{stem} raised a {rnd}",
            "round": rnd,
            "source_url": f"https://{domain}/press/{rnd.lower().replace(' ', '-')}",
        }
    elif ftype == "hiring":
        role, short, plural = rng.choice(ROLES)
        fact |= {
            "statement": f"{stem} is hiring a {role} in {city}",
            "role": role,
            "role_short": short,
            "role_plural": plural,
            "location": city,
            "source_url": f"https://{domain}/careers/{short.lower()}-{city.lower()}-{n}",
        }
    elif ftype == "expansion":
        place = rng.choice([c for _, c in CITIES if c != city])
        fact |= {
            "statement": f"{stem} opened an office in {place}",
            "location": place,
            "source_url": f"https://{domain}/news/{place.lower()}-office",
        }
    elif ftype == "leadership":
        person = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        fact |= {
            "statement": f"{stem} appointed {person} as Chief Revenue Officer",
            "person": person,
            "source_url": f"https://{domain}/news/new-cro",
        }
    else:
        fact |= {
            "statement": f"{stem} launched a new analytics product",
            "source_url": f"https://{domain}/blog/launch",
        }
    fact |= {
        "published_at": (today - timedelta(days=age)).isoformat(),
        "confidence": "high",
        "surfaces": ["web", "email", "seller"],
    }
    if kind == "stale":
        fact["published_at"] = (today - timedelta(days=rng.randint(200, 900))).isoformat()
    elif kind == "unsourced":
        fact.pop("source_url")
    elif kind == "bad_url":
        fact["source_url"] = rng.choice(
            [
                "http://" + domain + "/news",
                "javascript:alert(1)",
                "https://evil.example\\@" + domain + "/",
                "not a url",
            ]
        )
    elif kind == "low_confidence":
        fact["confidence"] = "low"
    elif kind == "seller_only":
        fact["surfaces"] = ["seller"]
    elif kind == "misattributed":  # research that matched the wrong company
        other = rng.choice(others)
        fact["subject"] = other
        fact["statement"] = str(fact["statement"]).replace(stem, other, 1)
    elif kind == "future":
        fact["published_at"] = (today + timedelta(days=rng.randint(3, 60))).isoformat()
    elif kind == "bad_date":
        fact["published_at"] = rng.choice(["last week", "2026-13-45", "", "Q3"])
    return fact


def make_account(rng: random.Random, today: date, i: int, used: set[str]) -> dict[str, object]:
    segment = rng.choice(list(SEGMENTS))
    (lo, hi), industries = SEGMENTS[segment]
    country, city = rng.choice(CITIES)
    stem = company_name(rng, used)
    domain = stem.lower() + rng.choice([".com", ".io", TLDS[country]])
    employees = rng.randint(lo, hi)
    roll = rng.random()
    # ~35% trusted; the rest spread over the ways research goes wrong, or nothing at all.
    if roll < 0.35:
        kinds = ["trusted"] + rng.sample(["stale", "unsourced", "trusted"], rng.randint(0, 1))
    elif roll < 0.55:
        kinds = []
    else:
        kinds = [
            rng.choice(
                [
                    "stale",
                    "stale",
                    "unsourced",
                    "bad_url",
                    "low_confidence",
                    "seller_only",
                    "misattributed",
                    "future",
                    "bad_date",
                ]
            )
            for _ in range(rng.randint(1, 2))
        ]
    others = [o for o in ("Northwind", "Globex", "Initech", "Umbrella") if o != stem]
    facts = [make_fact(rng, today, stem, domain, k, n, city, others) for n, k in enumerate(kinds, 1)]
    contacts = []
    for c in range(rng.randint(1, 3)):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        local = f"{first}.{last}".lower().replace(" ", "").replace("ü", "u").replace("í", "i")
        mail_domain = domain if rng.random() > 0.08 else rng.choice(FREEMAIL)
        contacts.append(
            {
                "contact_id": f"c_{i:05d}_{c + 1}",
                "email": f"{local}@{mail_domain}",
                "first_name": first,
                "last_name": last,
                "title": rng.choice(TITLES),
            }
        )
    account: dict[str, object] = {
        "account_id": f"acct_{i:05d}",
        "name": f"{stem} {rng.choice(SUFFIXES)}",
        "domain": domain,
        "segment": segment,
        "tier": rng.choice([1, 2, 2, 3, 3, 3]),
        "industry": rng.choice(industries),
        "country": country,
        "city": city,
        "employee_count": employees,
        "ip_ranges": [],
        "contacts": contacts,
        "facts": facts,
        "sources": [],
    }
    if rng.random() < 0.4:
        account["ip_ranges"] = [f"2001:db8:{i:x}::/48"]
        if i < 48:  # 3 x /24 documentation blocks, cut into /28s
            block = ["192.0.2", "198.51.100", "203.0.113"][i // 16]
            if block != "203.0.113":  # Dymaxa owns 203.0.113.0/24
                account["ip_ranges"] = [f"{block}.{(i % 16) * 16}/28", f"2001:db8:{i:x}::/48"]
    return account


def generate(today: date, count: int = DEFAULT_COUNT) -> list[dict[str, object]]:
    rng = random.Random(SEED)
    used = {"Dymaxa"}
    return [dymaxa(today)] + [make_account(rng, today, i, used) for i in range(1, count)]


def write(out: Path, today: date, count: int = DEFAULT_COUNT) -> int:
    """Write the accounts file; returns how many accounts it holds."""
    lines = [json.dumps(a, ensure_ascii=False) for a in generate(today, count)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # The UTC date, as precompute's `as_of`: the local date can be a day off it.
    parser.add_argument("--today", type=date.fromisoformat, default=datetime.now(UTC).date())
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("accounts.jsonl"))
    args = parser.parse_args(argv)
    written = write(args.out, args.today, args.count)
    print(f"wrote {written} accounts to {args.out} (dates relative to {args.today})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
