"""Near-name cases in the shapes real company names take: which facts are the account's.

Each family is one account and the companies research confuses it with: a longer legal
name holding the account's, a holding or parent, a namesake sharing the first word, a
name with `&`, accents, initials or hyphens. Every family's facts come in the shapes
research writes them: with and without `subject`, sourced on the account's own domain, on
the other company's domain and on news sites, with the name at the start of a sentence,
after an opener, mid-sentence, possessive, in a headline.

`CASES` lists them all, each marked `ours` (a fact about the account: it must be used) or
not (a fact about another company: it must never be). The expectations are what a person
reading the fact would say, not what the code does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from precompute.company_names import names_match

__all__ = ["CASES", "FAMILIES", "CorpusCase", "Family"]


@dataclass(frozen=True)
class Family:
    """One account, the ways research names it, and companies that are not it."""

    name: str  # the record's name
    domain: str
    written: tuple[str, ...]  # the account's full name as research spells it
    brand: str  # what people call it; on its own site that is enough
    others: tuple[tuple[str, str], ...]  # (another company's name, its domain)
    aliases: tuple[str, ...] = ()
    alias_written: tuple[str, ...] = ()  # names only its aliases make the account's
    place: str = "Rotterdam"


FAMILIES: tuple[Family, ...] = (
    Family(
        "Apex Cold Storage Ltd",
        "apexcoldstorage.com",
        ("Apex Cold Storage", "Apex Cold Storage Ltd", "APEX COLD STORAGE LTD.", "Apex Cold Storage Limited"),
        "Apex",
        (
            ("Apex Cold Storage Solutions Inc", "apexcoldstoragesolutions.com"),
            ("Apex Cold Storage Holdings Ltd", "apexholdings.com"),
            ("Apex Capital", "apexcapital.com"),
            ("Apex Cold Storage Solutions", "apexcoldstoragesolutions.com"),
        ),
        place="Dallas, Texas",
    ),
    Family(
        "Frostline Logistics B.V.",
        "frostlinelogistics.com",
        ("Frostline Logistics", "Frostline Logistics BV", "Frostline Logistics B.V."),
        "Frostline",
        (
            ("Frostline Capital", "frostlinecapital.com"),
            ("Frostline Media Group", "frostlinemedia.com"),
            ("Frostline Logistics Holding B.V.", "frostlineholding.nl"),
            ("Frostline Ventures", "frostline.vc"),
        ),
        aliases=("Frostline Cold Chain",),
        alias_written=("Frostline Cold Chain",),
    ),
    Family(
        "Smith & Sons Ltd",
        "smithandsons.co.uk",
        ("Smith & Sons", "Smith and Sons", "Smith & Sons Ltd", "SMITH & SONS"),
        "Smith & Sons",
        (
            ("Smith & Sons Removals Ltd", "smithsonsremovals.co.uk"),
            ("Smith Brothers Ltd", "smithbrothers.co.uk"),
            ("Smith & Sons Capital", "smithsonscapital.com"),
        ),
        place="Leeds",
    ),
    Family(
        "Nordvik A/S",
        "nordvik.dk",
        ("Nordvik", "Nordvik A/S", "NORDVIK"),
        "Nordvik",
        (("Nordvik Energi A/S", "nordvikenergi.dk"), ("Nordvik Holding A/S", "nordvikholding.dk")),
        place="Aarhus",
    ),
    Family(
        "Ørsted Analytics GmbH",
        "orsted-analytics.de",
        ("Ørsted Analytics", "Orsted Analytics", "ØRSTED ANALYTICS GMBH", "Ørsted Analytics GmbH"),
        "Ørsted",
        (("Ørsted Wind Power", "orstedwind.com"), ("Orsted Analytics Partners", "orstedpartners.com")),
        place="Hamburg",
    ),
    Family(
        "A.P. Lindqvist AB",
        "aplindqvist.se",
        ("A.P. Lindqvist", "AP Lindqvist", "A. P. Lindqvist AB"),
        "A.P. Lindqvist",
        (("A.P. Lindqvist Shipping AB", "lindqvistshipping.se"), ("Lindqvist Group", "lindqvistgroup.se")),
        place="Gothenburg",
    ),
    Family(
        "Blue Harbor Logistics Inc.",
        "blueharborlogistics.com",
        ("Blue Harbor Logistics", "Blue Harbor Logistics, Inc.", "Blue Harbor Logistics Inc"),
        "Blue Harbor",
        (
            ("Blue Harbor Capital Partners", "blueharborcapital.com"),
            ("Blue Harbor Ventures", "blueharbor.vc"),
            ("Blue Harbor Logistics Group", "bhlgroup.com"),
        ),
        place="Savannah",
    ),
    Family(
        "Pelto Oy",
        "pelto.fi",
        ("Pelto", "Pelto Oy"),
        "Pelto",
        (("Pelto Group Oy", "peltogroup.fi"), ("Pelto Media", "peltomedia.fi")),
        place="Tampere",
    ),
    Family(
        "Kavex sp. z o.o.",
        "kavex.pl",
        ("Kavex", "Kavex sp. z o.o.", "Kavex Sp. z o. o."),
        "Kavex",
        (("Kavex Media sp. z o.o.", "kavexmedia.pl"), ("Kavex Capital", "kavexcapital.pl")),
        place="Kraków",
    ),
    Family(
        "Summit Health Technologies, Inc.",
        "summithealthtech.com",
        ("Summit Health Technologies", "Summit Health Technologies Inc."),
        "Summit",
        (
            ("Summit Health Technologies Europe", "summithealth.eu"),
            ("Summit Capital", "summitcapital.com"),
            ("Summit Health Partners LLC", "summithealthpartners.com"),
        ),
        aliases=("Summit Health",),
        alias_written=("Summit Health",),
        place="Nashville",
    ),
    Family(
        "Greenfield Foods plc",
        "greenfieldfoods.co.uk",
        ("Greenfield Foods", "Greenfield Foods PLC", "Greenfield Foods plc"),
        "Greenfield",
        (
            ("Greenfield Foods Holdings plc", "greenfieldholdings.co.uk"),
            ("Greenfield Dairy", "greenfielddairy.ie"),
        ),
        place="Bristol",
    ),
    Family(
        "Castle & Reed LLP",
        "castlereed.com",
        ("Castle & Reed", "Castle and Reed", "Castle & Reed LLP"),
        "Castle & Reed",
        (("Castle & Reed Capital", "castlereedcapital.com"), ("Castle Rock & Reed", "castlerockreed.com")),
        place="Boston",
    ),
    Family(
        "Hartwell-Price Consulting Ltd",
        "hartwellprice.com",
        ("Hartwell-Price Consulting", "Hartwell Price Consulting", "Hartwell–Price Consulting Ltd"),
        "Hartwell-Price",
        (
            ("Hartwell-Price Recruitment Ltd", "hartwellpricerecruitment.com"),
            ("Hartwell Group", "hartwellgroup.com"),
        ),
        place="Manchester",
    ),
    Family(
        "Orion Data Systems LLC",
        "oriondatasystems.com",
        ("Orion Data Systems", "Orion Data Systems, LLC", "ORION DATA SYSTEMS"),
        "Orion",
        (
            ("Orion Data Systems International LLC", "odsinternational.com"),
            ("Orion Capital Management", "orioncap.com"),
        ),
        place="Denver",
    ),
    Family(
        "Dymaxa B.V.",
        "dymaxa.com",
        ("Dymaxa", "Dymaxa B.V.", "DYMAXA", "Dymaxá"),
        "Dymaxa",
        (("Dymaxa Holding B.V.", "dymaxaholding.nl"), ("Dymaxanet", "dymaxanet.com")),
        aliases=("Dymaxa Sales Cloud",),
        alias_written=("Dymaxa Sales Cloud",),
        place="Amsterdam",
    ),
    Family(
        "Zeta Bank AG",
        "zetabank.ch",
        ("Zeta Bank", "Zeta Bank AG"),
        "Zeta Bank",
        (("Zeta Bank Holding AG", "zetaholding.ch"), ("Zeta Bank of Zurich Ltd", "zetazurich.ch")),
        place="Zug",
    ),
    Family(
        "Redwood Software S.A.",
        "redwoodsoftware.es",
        ("Redwood Software", "Redwood Software SA", "Redwood Software S.A."),
        "Redwood",
        (("Redwood Software Ventures", "redwoodventures.com"), ("Redwood Media S.A.", "redwoodmedia.es")),
        place="Madrid",
    ),
    Family(
        "Tidewater Freight Co.",
        "tidewaterfreight.com",
        ("Tidewater Freight", "Tidewater Freight Co.", "Tidewater Freight Company"),
        "Tidewater",
        (
            ("Tidewater Freight Brokers Inc", "tidewaterbrokers.com"),
            ("Tidewater Marine", "tidewatermarine.com"),
        ),
        aliases=("Tidewater Freight Company",),
        place="Norfolk",
    ),
)

NEWS = ("https://www.reuters.example.com/business/{slug}", "https://techcrunch.example.com/2026/11/{slug}/")

# Sentences research writes about a company, {name} first or later; each names it once.
_SENTENCES = (
    "{name} opened a new hub in {place}",
    "{name} raised a Series B to expand its fleet",
    "Today, {name} announced a new distribution centre in {place}",
    "{name}'s board approved a second site in {place}",
    "After a record year, {name} is hiring twelve drivers in {place}",
    "The new {place} facility was opened by {name} on Monday",
    "According to its filing, {name} acquired a regional competitor",
    "In November {name} launched a cold-chain tracking product",
    "{name} said it will add 40 staff in {place} next year",
    "Customers in {place} can now order from {name} online",
)
# Headlines as a news site's title tag writes them.
_HEADLINES = ("{name} Opens New Hub In {place}", "{name} Raises $20M Series B")
# The account's own site speaking of itself, often without its name.
_OWN_SITE_UNNAMED = (
    "We opened a new hub in {place}",
    "The company raised a Series B to expand its fleet",
    "Opened a second warehouse in {place}",
)


@dataclass(frozen=True)
class CorpusCase:
    """One fact about a family's account (`ours`) or about another company (not `ours`)."""

    family: Family
    shape: str
    fact: dict[str, Any] = field(hash=False)
    ours: bool

    def account(self) -> dict[str, Any]:
        f = self.family
        record: dict[str, Any] = {
            "account_id": "acct_" + "".join(c for c in f.domain.split(".")[0] if c.isalnum()),
            "name": f.name,
            "domain": f.domain,
            "segment": "saas-mid",
            "contacts": [{"contact_id": "c1", "email": f"ops@{f.domain}"}],
            "facts": [self.fact],
        }
        if f.aliases:
            record["aliases"] = list(f.aliases)
        return record


def _fact(n: int, statement: str, url: str, subject: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": f"f{n}",
        "type": "expansion",
        "statement": statement,
        "source_url": url,
        "published_at": "2026-11-20",
        "confidence": "high",
        "surfaces": ["web"],
        "location": "Rotterdam",
    }
    if subject is not None:
        out["subject"] = subject
    return out


def _news(i: int, slug: str) -> str:
    return NEWS[i % len(NEWS)].format(slug=slug)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:40] or "x"


def _own(family: Family, i: int) -> str:
    return f"https://{family.domain}/news/{i}"


def _ours(family: Family) -> list[tuple[str, str, str, str | None]]:
    """(shape, statement, url, subject) for facts about the account itself."""
    out: list[tuple[str, str, str, str | None]] = []
    sentences = _SENTENCES + _HEADLINES
    for i, written in enumerate(family.written):
        for j, sentence in enumerate(sentences):
            text = sentence.format(name=written, place=family.place)
            k = i * len(sentences) + j
            out.append(("full name, no subject, news site", text, _news(k, _slug(text)), None))
            out.append(("full name as subject, news site", text, _news(k + 1, _slug(text)), written))
            out.append(("full name, no subject, own site", text, _own(family, k), None))
    for j, sentence in enumerate(sentences):
        text = sentence.format(name=family.brand, place=family.place)
        out.append(("brand as subject, own site", text, _own(family, 100 + j), family.brand))
        out.append(("brand, no subject, own site", text, _own(family, 200 + j), None))
    for alias in family.alias_written:
        for j, sentence in enumerate(_SENTENCES):
            text = sentence.format(name=alias, place=family.place)
            out.append(("alias, no subject, news site", text, _news(j, _slug(text)), None))
            out.append(("alias as subject, news site", text, _news(j + 1, _slug(text)), alias))
    for j, sentence in enumerate(_OWN_SITE_UNNAMED):
        text = sentence.format(place=family.place)
        out.append(("unnamed, no subject, own site", text, _own(family, 300 + j), None))
        out.append(
            ("unnamed, full name as subject, news site", text, _news(j, _slug(text)), family.written[0])
        )
    return out


def _theirs(family: Family) -> list[tuple[str, str, str, str | None]]:
    """(shape, statement, url, subject) for facts about another company."""
    out: list[tuple[str, str, str, str | None]] = []
    sentences = _SENTENCES + _HEADLINES
    for i, (other, other_domain) in enumerate(family.others):
        for j, sentence in enumerate(sentences):
            text = sentence.format(name=other, place=family.place)
            k = i * len(sentences) + j
            other_site = f"https://{other_domain}/press/{k}"
            out.append(("other company, no subject, its own site", text, other_site, None))
            out.append(("other company, no subject, news site", text, _news(k, _slug(text)), None))
            out.append(("other company, no subject, the account's site", text, _own(family, 400 + k), None))
            out.append(("other company as subject, news site", text, _news(k + 1, _slug(text)), other))
            out.append(("other company as subject, the account's site", text, _own(family, 500 + k), other))
            # Research that labelled it with our name: the statement still says whose it is.
            out.append(
                ("our name as subject, the statement names the other", text, other_site, family.written[0])
            )
        for j, sentence in enumerate(_OWN_SITE_UNNAMED):
            text = sentence.format(place=family.place)
            out.append(
                ("unnamed, no subject, the other's site", text, f"https://{other_domain}/about/{j}", None)
            )
    brand_is_full = any(names_match(family.brand, written) for written in (family.name, *family.aliases))
    for j, sentence in enumerate(() if brand_is_full else _SENTENCES):
        text = sentence.format(name=family.brand, place=family.place)
        # The brand alone, off the account's site: it may be any company of that name.
        out.append(("brand as subject, news site", text, _news(j, _slug(text)), family.brand))
        out.append(("brand, no subject, news site", text, _news(j + 1, _slug(text)), None))
    return out


def _cases() -> tuple[CorpusCase, ...]:
    out: list[CorpusCase] = []
    n = 0
    for family in FAMILIES:
        for ours, rows in ((True, _ours(family)), (False, _theirs(family))):
            for shape, statement, url, subject in rows:
                n += 1
                out.append(CorpusCase(family, shape, _fact(n, statement, url, subject), ours))
    return tuple(out)


CASES: tuple[CorpusCase, ...] = _cases()
