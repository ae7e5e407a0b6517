"""Identity resolution: one test per reason code, plus the free-mail list and IDN agreement."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precompute.context import IdentityConfidence, IdentityReason
from precompute.identity import FREEMAIL_DOMAINS, is_freemail, resolve_identity
from welcomemat.records.accounts import Account


def account(domain: str, *emails: str | None) -> Account:
    contacts: list[dict[str, Any]] = [
        {"contact_id": f"c{i}", **({"email": email} if email is not None else {})}
        for i, email in enumerate(emails)
    ]
    return Account.model_validate(
        {
            "account_id": "acct_x",
            "name": "X B.V.",
            "domain": domain,
            "segment": "saas-mid",
            "contacts": contacts,
        }
    )


@pytest.mark.parametrize(
    "domain",
    [
        "gmail.com",
        "googlemail.com",
        "outlook.com",
        "hotmail.com",
        "yahoo.com",
        "icloud.com",
        "proton.me",
        "protonmail.com",
        "gmx.de",
        "web.de",
    ],
)
def test_common_personal_domains_are_free_mail(domain: str) -> None:
    assert domain in FREEMAIL_DOMAINS
    assert is_freemail(domain.upper())


def test_free_mail_covers_subdomains_and_the_supplement_but_not_employers() -> None:
    assert is_freemail("mail.gmail.com")
    assert is_freemail("tutanota.com")  # from the supplement: missing from the package
    assert not is_freemail("dymaxa.com")
    assert not is_freemail("google.com")  # the package lists docs.google.com, not google.com


def test_reason_domain_confirmed() -> None:
    identity = resolve_identity(account("dymaxa.com", "joram@dymaxa.com", "eve@gmail.com", "bob@other.io"))
    assert identity.reason is IdentityReason.DOMAIN_CONFIRMED
    assert identity.confidence is IdentityConfidence.HIGH
    assert identity.claims_allowed
    assert identity.registrable_domain == "dymaxa.com"
    assert dict(identity.contact_matches) == {"c0": True, "c1": False, "c2": False}


def test_reason_domain_only() -> None:
    for emails in [(), ("eve@gmail.com", "sam@outlook.com"), (None,)]:
        identity = resolve_identity(account("dymaxa.com", *emails))
        assert identity.reason is IdentityReason.DOMAIN_ONLY, emails
        assert identity.confidence is IdentityConfidence.MEDIUM
        assert identity.claims_allowed
        assert not any(identity.contact_matches.values())


def test_reason_contacts_disagree() -> None:
    identity = resolve_identity(account("dymaxa.com", "eve@globex.com", "sam@gmail.com"))
    assert identity.reason is IdentityReason.CONTACTS_DISAGREE
    assert identity.confidence is IdentityConfidence.LOW
    assert not identity.claims_allowed


def test_reason_freemail_domain() -> None:
    identity = resolve_identity(account("gmail.com", "eve@gmail.com"))
    assert identity.reason is IdentityReason.FREEMAIL_DOMAIN
    assert identity.confidence is IdentityConfidence.NONE
    assert not identity.claims_allowed


def test_reason_no_registrable_domain() -> None:
    for domain in ["co.uk", "192.0.2.1", "github.io"]:
        identity = resolve_identity(account(domain, f"joram@{domain}"))
        assert identity.reason is IdentityReason.NO_REGISTRABLE_DOMAIN, domain
        assert identity.confidence is IdentityConfidence.NONE
        assert not identity.claims_allowed
        assert identity.registrable_domain is None


def test_every_reason_code_has_its_test() -> None:
    tested = {name.removeprefix("test_reason_") for name in globals() if name.startswith("test_reason_")}
    assert tested == {reason.value for reason in IdentityReason}


def test_agreement_is_by_registrable_domain() -> None:
    identity = resolve_identity(account("eu.dymaxa.co.uk", "joram@mail.dymaxa.co.uk"))
    assert identity.reason is IdentityReason.DOMAIN_CONFIRMED
    assert identity.registrable_domain == "dymaxa.co.uk"
    # Same label, other registrable domain: not the same company.
    assert (
        resolve_identity(account("dymaxa.co.uk", "joram@dymaxa.com")).reason
        is IdentityReason.CONTACTS_DISAGREE
    )


def test_unicode_and_punycode_forms_agree() -> None:
    identity = resolve_identity(account("bücher.de", "anna@xn--bcher-kva.de"))
    assert identity.reason is IdentityReason.DOMAIN_CONFIRMED
    assert identity.registrable_domain == "bücher.de"


EMAIL_DOMAINS = st.sampled_from(
    ["dymaxa.com", "gmail.com", "globex.com", "sub.dymaxa.com", "co.uk", "[192.0.2.1]"]
)


@given(
    st.sampled_from(["dymaxa.com", "gmail.com", "co.uk", "x.github.io", "bücher.de"]), st.lists(EMAIL_DOMAINS)
)
def test_claims_are_allowed_only_for_an_employer_domain_nobody_contradicts(
    domain: str, mail: list[str]
) -> None:
    identity = resolve_identity(account(domain, *(f"p{i}@{m}" for i, m in enumerate(mail))))
    assert len(identity.contact_matches) == len(mail)
    if identity.claims_allowed:
        assert identity.reason in (IdentityReason.DOMAIN_CONFIRMED, IdentityReason.DOMAIN_ONLY)
        assert not is_freemail(domain)
    if any(identity.contact_matches.values()):
        assert identity.reason is IdentityReason.DOMAIN_CONFIRMED
