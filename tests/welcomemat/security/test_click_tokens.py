"""Click tokens (`TokenSigner.click_template`, `verify_click`): what a hosted CTA's link carries.

A click token says what its view token would, plus the zone and CTA id; it is signed under a
salt of its own, so it never passes as a view token nor a view token as a click token; it is
the documented format's compact JSON (docs/reference/tokens.md), expires with its clock,
and every other token text is refused with a `TokenError`, never anything else.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.welcomemat.security import token_reference as reference
from welcomemat.arms import Arm
from welcomemat.errors import InputError, TokenBadSignature, TokenError, TokenExpired
from welcomemat.security.tokens import DEFAULT_CLICK_TTL_S, MAX_TOKEN_CHARS, TokenSigner

SECRET = "click-token-test-secret-0123456789abcdef"
NOW = 1_800_000_000.0
ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", fullmatch=True)


def signer(now: float = NOW) -> TokenSigner:
    return TokenSigner([SECRET], clock=lambda: now)


@settings(max_examples=200, deadline=None)
@given(
    tenant=ids,
    campaign=ids,
    zone=ids,
    cta=ids,
    account=st.none() | ids,
    contact=st.none() | ids,
    version=st.none() | st.integers(1, 10**9),
    variant=st.none() | ids,
    arm=st.sampled_from(list(Arm)),
    rung=st.sampled_from(["personal", "segment", "default", "plain"]),
    view_id=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
)
def test_a_click_token_says_what_it_was_signed_with_and_nothing_else_verifies_it(
    tenant: str,
    campaign: str,
    zone: str,
    cta: str,
    account: str | None,
    contact: str | None,
    version: int | None,
    variant: str | None,
    arm: Arm,
    rung: str,
    view_id: str,
) -> None:
    fields: dict[str, Any] = {
        "tenant": tenant,
        "campaign": campaign,
        "arm": arm,
        "rung": rung,
        "account": account,
        "contact": contact,
        "zone_set_version": version,
        "variant": variant,
    }
    token = signer().click_template(zone=zone, cta=cta, **fields).sign(view_id)
    assert len(token) <= MAX_TOKEN_CHARS
    claims = signer().verify_click(token, tenant=tenant, campaign=campaign)
    assert (claims.zone, claims.cta, claims.view_id, claims.arm, claims.rung) == (
        zone,
        cta,
        view_id,
        arm,
        rung,
    )
    assert (claims.account, claims.contact, claims.zone_set_version, claims.variant) == (
        account,
        contact,
        version,
        variant,
    )
    assert claims.expires_at - claims.issued_at == DEFAULT_CLICK_TTL_S
    # The documented format, under the click salt.
    loaded = reference.read(token, kind="click", keys=[SECRET])
    assert loaded["z"] == zone and loaded["k"] == cta and loaded["w"] == view_id
    # A view token of the same view is not a click token, nor the click token a view token.
    view = signer().sign_view(view_id=view_id, **fields)
    with pytest.raises(TokenBadSignature):
        signer().verify_click(view, tenant=tenant, campaign=campaign)
    with pytest.raises(TokenBadSignature):
        signer().verify_view(token, tenant=tenant, campaign=campaign)
    with pytest.raises(TokenBadSignature):
        signer().verify_click(token, tenant=tenant + "x", campaign=campaign)


def test_a_click_token_expires_on_its_clock() -> None:
    token = (
        signer()
        .click_template(zone="cta", cta="go", tenant="t", campaign="c", arm=Arm.PERSONAL, rung="personal")
        .sign("v1")
    )
    assert signer(NOW + DEFAULT_CLICK_TTL_S - 1).verify_click(token, tenant="t", campaign="c").zone == "cta"
    with pytest.raises(TokenExpired):
        signer(NOW + DEFAULT_CLICK_TTL_S).verify_click(token, tenant="t", campaign="c")


def test_ids_a_token_cannot_carry_are_refused_naming_the_field() -> None:
    for field, kwargs in (("zone", {"zone": "a b", "cta": "go"}), ("cta", {"zone": "cta", "cta": "x@y"})):
        with pytest.raises(InputError) as raised:
            signer().click_template(**kwargs, tenant="t", campaign="c", arm=Arm.PERSONAL, rung="personal")
        assert raised.value.field == field


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=600) | st.from_regex(r"\.?[A-Za-z0-9_-]{1,200}\.[A-Za-z0-9_-]{43}", fullmatch=True)
)
def test_any_other_text_is_a_token_error(text: str) -> None:
    with pytest.raises(TokenError):
        signer().verify_click(text, tenant="t", campaign="c")


def test_a_forged_payload_under_the_same_signature_is_refused() -> None:
    token = (
        signer()
        .click_template(zone="cta", cta="go", tenant="t", campaign="c", arm=Arm.HOLDOUT, rung="segment")
        .sign("v1")
    )
    body, _, signature = token.rpartition(".")
    forged = json.dumps(
        {
            "t": "t",
            "c": "c",
            "w": "v1",
            "m": "personal",
            "r": "personal",
            "z": "cta",
            "k": "go",
            "i": 1,
            "e": 2**40,
        },
        separators=(",", ":"),
    )
    forged_body = base64.urlsafe_b64encode(forged.encode()).decode().rstrip("=")
    with pytest.raises(TokenBadSignature):
        signer().verify_click(f"{forged_body}.{signature}", tenant="t", campaign="c")
    assert body != forged_body


# -- remembered templates ------------------------------------------------------------------------


def _click(signing: TokenSigner, **changes: Any) -> str:
    fields: dict[str, Any] = {
        "zone": "hero_cta",
        "cta": "book",
        "tenant": "acme",
        "campaign": "q4",
        "arm": Arm.PERSONAL,
        "rung": "personal",
        "account": "acct_1",
        "contact": "ct_1",
        "zone_set_version": 3,
    }
    fields.update(changes)
    return signing.click_template(**fields).sign("view-1")


def test_a_remembered_template_signs_what_a_fresh_signer_signs_for_every_field() -> None:
    """A returning visitor's click links come from a remembered template: each field still
    lands in its token, and two visitors never share one."""
    warm = signer()
    for changes in (
        {},
        {"contact": "ct_2"},
        {"account": "acct_2"},
        {"zone": "other_zone"},
        {"cta": "call"},
        {"arm": Arm.HOLDOUT},
        {"rung": "segment"},
        {"zone_set_version": 4},
        {"variant": "b"},
        {"ttl_s": 60},
        {"campaign": "q1"},
    ):
        first, again = _click(warm, **changes), _click(warm, **changes)
        assert first == again == _click(signer(), **changes), changes
    assert len({_click(warm, contact=f"ct_{n}") for n in range(5)}) == 5


def test_a_value_equal_to_a_remembered_one_but_not_an_id_is_still_refused() -> None:
    """`True == 1` and hashes alike: a remembered version-1 template does not let a boolean
    version through; an unhashable id is refused as any bad id is."""
    warm = signer()
    _click(warm, zone_set_version=1, ttl_s=1)
    with pytest.raises(InputError) as bad_version:
        _click(warm, zone_set_version=True)
    assert bad_version.value.field == "zone_set_version"
    with pytest.raises(InputError) as bad_ttl:
        _click(warm, zone_set_version=1, ttl_s=True)
    assert bad_ttl.value.field == "ttl_s"
    with pytest.raises(InputError) as unhashable:
        _click(warm, contact=["ct_1"])
    assert unhashable.value.field == "contact"


def test_a_signer_remembers_a_bounded_number_of_templates() -> None:
    warm = signer()
    for n in range(5000):
        _click(warm, zone=f"zone_{n}")
    assert len(warm._template_parts) == 4096
