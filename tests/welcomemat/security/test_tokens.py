"""Invariant 6: signed, bound, expiring, rotatable tokens (welcomemat.security.tokens)."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import re
import string
import time
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.welcomemat.security import token_reference as reference
from welcomemat.arms import Arm
from welcomemat.errors import (
    ConfigError,
    InputError,
    TokenBadSignature,
    TokenError,
    TokenExpired,
    TokenFromFuture,
    TokenMalformed,
)
from welcomemat.ids import ID_PATTERN
from welcomemat.security import tokens as tokens_module
from welcomemat.security.tokens import (
    CLOCK_SKEW_S,
    DEFAULT_COOKIE_TTL_S,
    DEFAULT_LINK_TTL_S,
    DEFAULT_QR_TTL_S,
    DEFAULT_TTL_S,
    DEFAULT_VIEW_TTL_S,
    MAX_TOKEN_CHARS,
    MAX_TTL_S,
    MAX_VIEW_TOKEN_CHARS,
    MAX_ZONE_SET_VERSION,
    MIN_SECRET_CHARS,
    TokenClaims,
    TokenKind,
    TokenSigner,
    ViewClaims,
    claimed_scope,
)

KEY_OLD = "old-secret-" + "o" * 40
KEY_NEW = "new-secret-" + "n" * 40
KEY_GONE = "retired-secret-" + "r" * 40
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
TENANT, CAMPAIGN, ACCOUNT, CONTACT = "acme", "q4-expansion", "acct_dymaxa", "c_joram"
TOKEN_CHARS = re.compile(r"[A-Za-z0-9_.-]+")
B64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"


class Clock:
    """A settable clock (Unix seconds)."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def signer(clock: Clock) -> TokenSigner:
    return TokenSigner([KEY_NEW], clock=clock)


def sign(signer: TokenSigner, kind: TokenKind = TokenKind.LINK, **overrides: Any) -> str:
    args: dict[str, Any] = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "account": ACCOUNT,
        "contact": CONTACT,
        "ttl_s": DEFAULT_TTL_S[kind],
    }
    args.update(overrides)
    return signer.sign(kind, **args)


def verify(signer: TokenSigner, token: str, kind: TokenKind = TokenKind.LINK) -> TokenClaims:
    return signer.verify(kind, token, tenant=TENANT, campaign=CAMPAIGN)


def forge(payload: Any, *, kind: str = TokenKind.LINK, key: str = KEY_NEW, compress: bool = True) -> str:
    """A correctly signed token around an arbitrary payload (as if our key had signed it), written
    by the documented format's own code (docs/reference/tokens.md)."""
    return reference.forge(payload, kind=kind, key=key, compress=compress)


def read_back(token: str, kind: str = TokenKind.LINK, key: str = KEY_NEW) -> Any:
    """A token's payload as the documented format's own code reads it under `key`."""
    return reference.read(token, kind=kind, keys=[key])


# -- round trip ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(TokenKind))
def test_round_trip_each_kind(signer: TokenSigner, kind: TokenKind) -> None:
    token = sign(signer, kind)
    claims = verify(signer, token, kind)
    assert claims == TokenClaims(
        kind=kind,
        tenant=TENANT,
        campaign=CAMPAIGN,
        account=ACCOUNT,
        contact=CONTACT,
        issued_at=T0,
        expires_at=T0 + DEFAULT_TTL_S[kind],
    )
    assert TOKEN_CHARS.fullmatch(token)
    assert len(token) <= MAX_TOKEN_CHARS


def test_contact_is_optional(signer: TokenSigner) -> None:
    without = sign(signer, contact=None)
    assert verify(signer, without).contact is None
    with_contact = sign(signer)
    assert verify(signer, with_contact).contact == CONTACT
    assert len(without) < len(with_contact)


def test_typical_link_token_is_compact(signer: TokenSigner) -> None:
    token = sign(signer)
    assert len(token) <= 170, len(token)  # 161 characters today; QR codes must stay small


def test_default_ttls() -> None:
    assert DEFAULT_TTL_S == {
        TokenKind.LINK: DEFAULT_LINK_TTL_S,
        TokenKind.QR: DEFAULT_QR_TTL_S,
        TokenKind.COOKIE: DEFAULT_COOKIE_TTL_S,
    }
    assert DEFAULT_QR_TTL_S == 120 * 86_400
    assert DEFAULT_COOKIE_TTL_S == 90 * 86_400
    assert CLOCK_SKEW_S == 60


def test_payload_carries_only_ids_and_times(signer: TokenSigner) -> None:
    """No kind, no names, no e-mail: exactly the opaque ids and two integers."""
    payload = read_back(sign(signer))
    assert payload == {
        "t": TENANT,
        "c": CAMPAIGN,
        "a": ACCOUNT,
        "p": CONTACT,
        "i": T0,
        "e": T0 + DEFAULT_LINK_TTL_S,
    }


# -- tampering, truncation, garbage --------------------------------------------------------


def _replace(token: str, index: int) -> str:
    original = token[index]
    replacement = "A" if original != "A" else "B"
    return token[:index] + replacement + token[index + 1 :]


def test_every_single_character_change_is_refused(signer: TokenSigner) -> None:
    token = sign(signer)
    payload_end = token.rindex(".")
    for index in range(len(token)):
        tampered = _replace(token, index)
        if index < payload_end and token[index] != ".":
            # A payload character changed: the signature no longer matches.
            with pytest.raises(TokenBadSignature):
                verify(signer, tampered)
        else:
            with pytest.raises(TokenError):
                verify(signer, tampered)


def test_flipped_signature_character_is_refused(signer: TokenSigner) -> None:
    token = sign(signer)
    body, _, sig = token.rpartition(".")
    flipped = sig[:5] + ("x" if sig[5] != "x" else "y") + sig[6:]
    with pytest.raises(TokenBadSignature):
        verify(signer, f"{body}.{flipped}")


def test_non_canonical_signature_encoding_is_refused(signer: TokenSigner) -> None:
    """The last base64 character of a 32-byte MAC has 2 spare bits that Python's decoder
    ignores; a variant differing only there decodes to the same MAC and must still fail."""
    token = sign(signer)
    last = token[-1]
    variant = token[:-1] + B64[B64.index(last) + 1]  # same top 4 bits, spare bit set
    with pytest.raises(TokenMalformed):
        verify(signer, variant)


def test_every_prefix_is_refused(signer: TokenSigner) -> None:
    for kind in TokenKind:
        token = sign(signer, kind)
        for length in range(len(token)):
            with pytest.raises((TokenMalformed, TokenBadSignature)):
                verify(signer, token[:length], kind)


def test_appended_or_wrapped_token_is_refused(signer: TokenSigner) -> None:
    token = sign(signer)
    for bad in (token + "A", token + ".", "." + token, token + "\n", " " + token, token + "=", token * 2):
        with pytest.raises(TokenError):
            verify(signer, bad)


@pytest.mark.parametrize(
    "garbage",
    ["", ".", "..", "...", "a", "a.b", "abc.def", "☃.☃", "\x00", "%2e", "a" * 43, "." + "A" * 43],
)
def test_garbage_is_malformed(signer: TokenSigner, garbage: str) -> None:
    with pytest.raises(TokenMalformed):
        verify(signer, garbage)


def test_well_formed_garbage_has_bad_signature(signer: TokenSigner) -> None:
    with pytest.raises(TokenBadSignature):
        verify(signer, "eyJ0IjoiYWNtZSJ9." + "A" * 43)


def test_huge_input_is_refused_before_any_work(signer: TokenSigner) -> None:
    token = sign(signer)
    with pytest.raises(TokenMalformed, match="512"):
        verify(signer, token + "A" * (MAX_TOKEN_CHARS - len(token) + 1))
    started = time.perf_counter()
    with pytest.raises(TokenMalformed):
        verify(signer, "A" * 50_000_000)
    assert time.perf_counter() - started < 0.5


def test_non_text_is_malformed(signer: TokenSigner) -> None:
    token = sign(signer)
    for bad in (None, token.encode(), 42):
        with pytest.raises(TokenMalformed):
            signer.verify(TokenKind.LINK, bad, tenant=TENANT, campaign=CAMPAIGN)  # type: ignore[arg-type]


# -- kind, tenant, campaign binding --------------------------------------------------------


@pytest.mark.parametrize("signed_as, verified_as", list(itertools.permutations(TokenKind, 2)))
def test_token_of_one_kind_never_verifies_as_another(
    signer: TokenSigner, signed_as: TokenKind, verified_as: TokenKind
) -> None:
    token = sign(signer, signed_as)
    with pytest.raises(TokenBadSignature):
        verify(signer, token, verified_as)


def test_other_tenant_refused(signer: TokenSigner) -> None:
    token = sign(signer)
    with pytest.raises(TokenBadSignature, match="tenant 'acme', not 'globex'"):
        signer.verify(TokenKind.LINK, token, tenant="globex", campaign=CAMPAIGN)


def test_other_campaign_refused(signer: TokenSigner) -> None:
    token = sign(signer)
    with pytest.raises(TokenBadSignature, match="campaign 'q4-expansion', not 'q1-renewal'"):
        signer.verify(TokenKind.LINK, token, tenant=TENANT, campaign="q1-renewal")


def test_expected_ids_are_compared_exactly(signer: TokenSigner) -> None:
    token = sign(signer)
    for tenant, campaign in [("ACME", CAMPAIGN), (TENANT + " ", CAMPAIGN), (TENANT, CAMPAIGN + "\n")]:
        with pytest.raises(TokenBadSignature):
            signer.verify(TokenKind.LINK, token, tenant=tenant, campaign=campaign)


# -- time ----------------------------------------------------------------------------------


def test_expiry(signer: TokenSigner, clock: Clock) -> None:
    token = sign(signer, ttl_s=3_600)
    clock.now = T0 + 3_599.999
    assert verify(signer, token).expires_at == T0 + 3_600
    clock.now = T0 + 3_600
    with pytest.raises(TokenExpired):
        verify(signer, token)
    clock.now = T0 + 10 * 365 * 86_400
    with pytest.raises(TokenExpired):
        verify(signer, token)


def test_per_token_ttl(signer: TokenSigner, clock: Clock) -> None:
    short = sign(signer, ttl_s=60)
    long = sign(signer, ttl_s=DEFAULT_QR_TTL_S)
    clock.now = T0 + 61
    with pytest.raises(TokenExpired):
        verify(signer, short)
    assert verify(signer, long).issued_at == T0


def test_future_dated_beyond_skew_refused(clock: Clock) -> None:
    ahead = Clock(T0 + CLOCK_SKEW_S + 1)
    token = sign(TokenSigner([KEY_NEW], clock=ahead))
    with pytest.raises(TokenFromFuture):
        verify(TokenSigner([KEY_NEW], clock=clock), token)


def test_future_dated_within_skew_accepted(clock: Clock) -> None:
    ahead = Clock(T0 + CLOCK_SKEW_S)
    token = sign(TokenSigner([KEY_NEW], clock=ahead))
    assert verify(TokenSigner([KEY_NEW], clock=clock), token).issued_at == T0 + CLOCK_SKEW_S


def test_issued_at_is_whole_seconds(clock: Clock) -> None:
    clock.now = T0 + 0.9
    signer = TokenSigner([KEY_NEW], clock=clock)
    assert verify(signer, sign(signer, ttl_s=10)).issued_at == T0


@pytest.mark.parametrize("ttl", [0, -1, MAX_TTL_S + 1, True, 1.5, "60"])
def test_bad_ttl_refused_at_sign(signer: TokenSigner, ttl: Any) -> None:
    with pytest.raises(InputError) as info:
        sign(signer, ttl_s=ttl)
    assert info.value.field == "ttl_s"


# -- key rotation --------------------------------------------------------------------------


def test_old_token_verifies_after_new_key_is_prepended(clock: Clock) -> None:
    token = sign(TokenSigner([KEY_OLD], clock=clock))
    rotated = TokenSigner([KEY_NEW, KEY_OLD], clock=clock)
    assert verify(rotated, token).account == ACCOUNT


def test_new_tokens_are_signed_by_the_first_key(clock: Clock) -> None:
    rotated = TokenSigner([KEY_NEW, KEY_OLD], clock=clock)
    token = sign(rotated)
    assert verify(TokenSigner([KEY_NEW], clock=clock), token).account == ACCOUNT
    with pytest.raises(TokenBadSignature):
        verify(TokenSigner([KEY_OLD], clock=clock), token)


def test_token_from_a_retired_key_is_refused(clock: Clock) -> None:
    token = sign(TokenSigner([KEY_GONE], clock=clock))
    with pytest.raises(TokenBadSignature):
        verify(TokenSigner([KEY_NEW, KEY_OLD], clock=clock), token)


def test_from_setting_first_signs_all_verify(clock: Clock) -> None:
    old_token = sign(TokenSigner([KEY_OLD], clock=clock))
    signer = TokenSigner.from_setting(f" {KEY_NEW} ,, {KEY_OLD},\n", clock=clock)
    assert verify(signer, old_token).account == ACCOUNT
    new_token = sign(signer)
    assert verify(TokenSigner([KEY_NEW], clock=clock), new_token).account == ACCOUNT


# -- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", " ", " , ,", ","])
def test_from_setting_without_a_secret(value: str | None) -> None:
    with pytest.raises(ConfigError, match="WELCOMEMAT_SECRET"):
        TokenSigner.from_setting(value)


def test_short_secret_refused_and_not_echoed() -> None:
    short = "s3cr3t-" + "x" * (MIN_SECRET_CHARS - 8)
    assert len(short) == 31
    with pytest.raises(ConfigError, match="at least 32 characters") as info:
        TokenSigner([KEY_NEW, short])
    assert short not in str(info.value)
    assert "#2" in str(info.value)
    with pytest.raises(ConfigError, match="at least 32 characters"):
        TokenSigner.from_setting(f"{KEY_NEW},{short}")
    TokenSigner(["x" * MIN_SECRET_CHARS])  # exactly 32 is enough


def test_a_secret_that_is_not_utf8_is_refused_and_not_echoed() -> None:
    """A byte that is not UTF-8 in the environment reaches Python as a lone surrogate: such a key
    has no UTF-8 form to derive a signing key from, so it is refused by position, not value."""
    undecodable = b"k" * 40 + b"\xff"
    key = undecodable.decode("utf-8", "surrogateescape")
    with pytest.raises(ConfigError, match="#2 is not valid UTF-8") as info:
        TokenSigner([KEY_NEW, key])
    assert key not in str(info.value) and "kkkk" not in str(info.value)
    # Any other text is a key, non-ASCII included (as UTF-8).
    TokenSigner(["schlüssel-ключ-鍵-" + "x" * MIN_SECRET_CHARS])


def test_empty_secret_list_refused() -> None:
    with pytest.raises(ConfigError):
        TokenSigner([])
    with pytest.raises(ConfigError):
        TokenSigner([""])


def test_a_bare_string_is_not_a_list_of_secrets() -> None:
    with pytest.raises(ConfigError, match="from_setting"):
        TokenSigner(KEY_NEW)


# -- opaque ids ----------------------------------------------------------------------------

BAD_IDS = [
    "joram@dymaxa.com",
    "Joram Smit",
    "",
    " acme",
    "-acme",
    ".acme",
    "a" * 65,
    "jöram",
    "acct_1\n",
    "acct/1",
    "acct%40x",
    "<b>",
]


@pytest.mark.parametrize("field", ["tenant", "campaign", "account", "contact"])
@pytest.mark.parametrize("bad", BAD_IDS)
def test_non_opaque_ids_refused_at_sign(signer: TokenSigner, field: str, bad: str) -> None:
    overrides: dict[str, Any] = {field: bad}
    with pytest.raises(InputError) as info:
        sign(signer, **overrides)
    assert info.value.field == field


def test_longest_id_accepted(signer: TokenSigner) -> None:
    longest = "a" * 64
    token = sign(signer, account=longest, contact=longest)
    assert verify(signer, token).account == longest


@pytest.mark.parametrize(
    "payload",
    [
        {"t": TENANT, "c": CAMPAIGN, "a": "joram@dymaxa.com", "i": T0, "e": T0 + 60},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "p": "Joram Smit", "i": T0, "e": T0 + 60},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": T0},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": T0, "e": T0 + 60, "email": "x@y.z"},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": True, "e": T0 + 60},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": T0, "e": "1769817600"},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": T0, "e": 1.5e9},
        {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": T0, "e": T0},
        {"t": TENANT, "c": CAMPAIGN, "a": 7, "i": T0, "e": T0 + 60},
        [TENANT, CAMPAIGN, ACCOUNT, T0, T0 + 60],
        "acme",
        None,
    ],
)
def test_signed_but_invalid_payload_is_malformed(signer: TokenSigner, payload: Any) -> None:
    """Even a payload under our own key is checked at verify (ids, fields, types)."""
    with pytest.raises(TokenMalformed):
        verify(signer, forge(payload))


def test_forged_payload_under_unknown_key_is_bad_signature(signer: TokenSigner) -> None:
    payload = {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "i": T0, "e": T0 + 60}
    assert verify(signer, forge(payload)).account == ACCOUNT  # control: our key works
    with pytest.raises(TokenBadSignature):
        verify(signer, forge(payload, key=KEY_GONE))


def test_a_payload_read_for_its_claimed_scope_does_not_vouch_for_a_forged_signature(
    signer: TokenSigner,
) -> None:
    """The payloads read last are remembered (a QR scan reads its token's scope, then verifies
    it): the same payload under a signature of an unknown key is still refused, and the
    genuine one still accepted, whichever was read first."""
    payload = {"t": TENANT, "c": CAMPAIGN, "a": ACCOUNT, "p": CONTACT, "i": T0, "e": T0 + 60}
    genuine, forged = forge(payload), forge(payload, key=KEY_GONE)
    assert genuine.rpartition(".")[0] == forged.rpartition(".")[0]  # the same payload part
    for first, second in ((forged, genuine), (genuine, forged)):
        assert claimed_scope(first) == (TENANT, CAMPAIGN)
        assert verify(signer, genuine).contact == CONTACT
        with pytest.raises(TokenBadSignature):
            verify(signer, forged)
        assert claimed_scope(second) == (TENANT, CAMPAIGN)


def test_claims_are_frozen_and_strict() -> None:
    fields: dict[str, Any] = {
        "kind": TokenKind.QR,
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "account": ACCOUNT,
        "contact": None,
        "issued_at": T0,
        "expires_at": T0 + 1,
    }
    claims = TokenClaims(**fields)
    with pytest.raises(dataclasses.FrozenInstanceError):
        claims.account = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        TokenClaims(**fields, email="x@y.z")  # type: ignore[call-arg]
    for field, bad in [
        ("account", "x@y.z"),
        ("tenant", ""),
        ("campaign", "a" * 65),
        ("contact", "Jane Doe"),
        ("account", None),
        ("account", 7),
        ("issued_at", True),
        ("issued_at", -1),
        ("expires_at", 1.5),
        ("expires_at", "1"),
        ("kind", "link"),
    ]:
        with pytest.raises(ValueError, match=f"^{field}: "):
            TokenClaims(**{**fields, field: bad})


@given(
    payload=st.fixed_dictionaries(
        {},
        optional={
            key: st.one_of(
                st.none(),
                st.booleans(),
                st.integers(min_value=-(2**70), max_value=2**70),
                st.floats(allow_nan=False),
                st.text(max_size=70),
                st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,70}", fullmatch=True),
                st.lists(st.integers(), max_size=2),
            )
            for key in ("t", "c", "a", "p", "i", "e", "x")
        },
    )
)
def test_a_payload_gives_claims_only_when_each_field_is_what_the_format_says(payload: dict[str, Any]) -> None:
    """A signed payload (whatever JSON it holds) becomes claims exactly when each field is of
    its kind: ids matching `ID_PATTERN`, an optional contact, times ints (not bools) with
    expiry after issue; anything else is TokenMalformed, never another exception."""
    ids_ok = all(
        isinstance(payload.get(key), str) and re.fullmatch(ID_PATTERN, payload[key]) is not None
        for key in ("t", "c", "a")
    )
    contact = payload.get("p")
    contact_ok = contact is None or (
        isinstance(contact, str) and re.fullmatch(ID_PATTERN, contact) is not None
    )
    times = payload.get("i"), payload.get("e")
    times_ok = all(type(t) is int and t >= 0 for t in times) and times[1] > times[0]  # type: ignore[operator]
    keys_ok = {"t", "c", "a", "i", "e"} <= payload.keys() <= {"t", "c", "a", "p", "i", "e"}
    if keys_ok and ids_ok and contact_ok and times_ok:
        claims = TokenSigner._claims(TokenKind.LINK, payload)
        assert (claims.tenant, claims.campaign, claims.account, claims.contact) == (
            payload["t"],
            payload["c"],
            payload["a"],
            contact,
        )
        assert (claims.issued_at, claims.expires_at) == times
    else:
        with pytest.raises(TokenMalformed):
            TokenSigner._claims(TokenKind.LINK, payload)


# -- reissue: a cookie for a verified link's subject ------------------------------------------


def test_reissue_is_the_token_sign_makes_for_the_same_subject(signer: TokenSigner, clock: Clock) -> None:
    link = verify(signer, sign(signer, TokenKind.LINK))
    clock.now = T0 + 90
    cookie = signer.reissue(link, TokenKind.COOKIE, ttl_s=DEFAULT_COOKIE_TTL_S)
    assert cookie == sign(signer, TokenKind.COOKIE)
    assert verify(signer, cookie, TokenKind.COOKIE) == TokenClaims(
        kind=TokenKind.COOKIE,
        tenant=TENANT,
        campaign=CAMPAIGN,
        account=ACCOUNT,
        contact=CONTACT,
        issued_at=T0 + 90,
        expires_at=T0 + 90 + DEFAULT_COOKIE_TTL_S,
    )
    with pytest.raises(TokenBadSignature):  # a cookie, not a link
        verify(signer, cookie, TokenKind.LINK)


def test_reissue_takes_only_verified_claims_and_a_valid_ttl(signer: TokenSigner) -> None:
    link = verify(signer, sign(signer, TokenKind.LINK))
    with pytest.raises(TypeError, match="TokenClaims"):
        signer.reissue(dataclasses.asdict(link), TokenKind.COOKIE, ttl_s=60)  # type: ignore[arg-type]
    view = signer.verify_view(
        signer.sign_view(view_id="v1", tenant=TENANT, campaign=CAMPAIGN, arm=Arm.PERSONAL, rung="personal"),
        tenant=TENANT,
        campaign=CAMPAIGN,
    )
    with pytest.raises(TypeError, match="TokenClaims"):
        signer.reissue(view, TokenKind.COOKIE, ttl_s=60)  # type: ignore[arg-type]
    for ttl_s in (0, -1, MAX_TTL_S + 1, True):
        with pytest.raises(InputError):
            signer.reissue(link, TokenKind.COOKIE, ttl_s=ttl_s)


def test_a_signer_on_hmacs_own_construction_reads_and_writes_the_same_tokens(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where `hmac` cannot use OpenSSL's HMAC for SHA-256 it builds its own, with no OpenSSL
    state to keep (`_prepared_macs` then keeps the `hmac.HMAC`): the same tokens both ways."""
    openssl = TokenSigner([KEY_NEW, KEY_OLD], clock=clock)
    monkeypatch.setattr(tokens_module.hmac.HMAC, "_init_hmac", tokens_module.hmac.HMAC._init_old)
    fallback = TokenSigner([KEY_NEW, KEY_OLD], clock=clock)
    assert isinstance(fallback._macs[TokenKind.LINK][0], tokens_module.hmac.HMAC)
    assert not isinstance(openssl._macs[TokenKind.LINK][0], tokens_module.hmac.HMAC)
    for kind in TokenKind:
        assert sign(fallback, kind) == sign(openssl, kind)
        assert verify(fallback, sign(openssl, kind), kind) == verify(openssl, sign(fallback, kind), kind)
    view = {"tenant": TENANT, "campaign": CAMPAIGN, "arm": Arm.PERSONAL, "rung": "personal"}
    assert fallback.sign_view(view_id="v1", **view) == openssl.sign_view(view_id="v1", **view)


# -- properties ----------------------------------------------------------------------------

ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", fullmatch=True)
# A view token's own fields, as the renderer fills them in.
view_ids = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)
rungs = st.sampled_from(["personal", "segment", "default", "plain"])
versions = st.none() | st.integers(min_value=1, max_value=MAX_ZONE_SET_VERSION)


@given(
    kind=st.sampled_from([TokenKind.LINK, TokenKind.QR]),
    tenant=ids,
    campaign=ids,
    account=ids,
    contact=st.none() | ids,
    ttl_s=st.integers(min_value=1, max_value=MAX_TTL_S),
    now=st.integers(min_value=0, max_value=4_000_000_000),
)
def test_reissue_signs_what_sign_signs_for_any_verified_subject(
    kind: TokenKind, tenant: str, campaign: str, account: str, contact: str | None, ttl_s: int, now: int
) -> None:
    signer = TokenSigner([KEY_NEW], clock=Clock(now))
    subject = {"tenant": tenant, "campaign": campaign, "account": account, "contact": contact}
    claims = signer.verify(kind, signer.sign(kind, ttl_s=60, **subject), tenant=tenant, campaign=campaign)
    cookie = signer.reissue(claims, TokenKind.COOKIE, ttl_s=ttl_s)
    assert cookie == signer.sign(TokenKind.COOKIE, ttl_s=ttl_s, **subject)


@given(
    kind=st.sampled_from(TokenKind),
    tenant=ids,
    campaign=ids,
    account=ids | st.from_regex(r"a{20,64}", fullmatch=True),  # long runs: compression pays
    contact=st.none() | ids,
    ttl_s=st.integers(min_value=1, max_value=MAX_TTL_S),
    now=st.integers(min_value=0, max_value=4_000_000_000),
)
def test_round_trip_preserves_claims(
    kind: TokenKind,
    tenant: str,
    campaign: str,
    account: str,
    contact: str | None,
    ttl_s: int,
    now: int,
) -> None:
    signer = TokenSigner([KEY_NEW, KEY_OLD], clock=Clock(now))
    token = signer.sign(kind, tenant=tenant, campaign=campaign, account=account, contact=contact, ttl_s=ttl_s)
    assert TOKEN_CHARS.fullmatch(token)
    assert len(token) <= MAX_TOKEN_CHARS
    claims = signer.verify(kind, token, tenant=tenant, campaign=campaign)
    assert (claims.kind, claims.tenant, claims.campaign, claims.account, claims.contact) == (
        kind,
        tenant,
        campaign,
        account,
        contact,
    )
    assert (claims.issued_at, claims.expires_at) == (now, now + ttl_s)
    # Signed and read with keys derived once: the documented format, byte for byte
    # (compressed payloads too, as tokens issued before this default were), so they keep working.
    payload: dict[str, Any] = {"t": tenant, "c": campaign, "a": account}
    if contact is not None:
        payload["p"] = contact
    payload.update({"i": now, "e": now + ttl_s})
    if kind is TokenKind.QR:  # printed: compressed by default when that is shorter
        assert token == forge(payload, kind=kind)
    else:  # links and cookies: plain by default, never a zlib stream to read
        assert not token.startswith(".") and read_back(token, kind) == payload
    for compress in (True, False):  # either form on request, read by the same verifier
        either = signer.sign(
            kind,
            tenant=tenant,
            campaign=campaign,
            account=account,
            contact=contact,
            ttl_s=ttl_s,
            compress=compress,
        )
        if compress:
            assert either == forge(payload, kind=kind)
        else:
            assert not either.startswith(".") and read_back(either, kind) == payload
        assert signer.verify(kind, either, tenant=tenant, campaign=campaign) == claims
    older = forge(payload, kind=kind, key=KEY_OLD)  # signed by the previous key
    assert signer.verify(kind, older, tenant=tenant, campaign=campaign).account == account


def test_a_qr_token_is_compressed_and_a_link_token_is_not() -> None:
    """Long ids: the QR token (printed) is the shorter, zlib form, the link token the plain one."""
    signer = TokenSigner([KEY_NEW], clock=Clock())
    qr, link = (
        signer.sign(
            kind,
            tenant=TENANT,
            campaign=CAMPAIGN,
            account="acct_00000123456",
            contact="contact_0000001234567890",
            ttl_s=3600,
        )
        for kind in (TokenKind.QR, TokenKind.LINK)
    )
    assert qr.startswith(".") and not link.startswith(".")
    assert len(qr) < len(link) - 20


def _check_only_token_errors(token: str, kind: TokenKind) -> TokenClaims | None:
    signer = TokenSigner([KEY_NEW, KEY_OLD], clock=Clock())
    try:
        return signer.verify(kind, token, tenant=TENANT, campaign=CAMPAIGN)
    except TokenError:
        return None


@given(token=st.text(max_size=700), kind=st.sampled_from(TokenKind))
def test_verify_arbitrary_text_raises_only_token_errors(token: str, kind: TokenKind) -> None:
    assert _check_only_token_errors(token, kind) is None


@given(
    token=st.text(alphabet=B64 + ".", max_size=300)
    | st.from_regex(r"\.?[A-Za-z0-9_-]{1,200}\.[A-Za-z0-9_-]{43}", fullmatch=True),
    kind=st.sampled_from(TokenKind),
)
def test_verify_token_shaped_text_raises_only_token_errors(token: str, kind: TokenKind) -> None:
    assert _check_only_token_errors(token, kind) is None


@given(data=st.data(), kind=st.sampled_from(TokenKind))
def test_mutated_tokens_are_refused(data: st.DataObject, kind: TokenKind) -> None:
    signer = TokenSigner([KEY_NEW], clock=Clock())
    token = sign(signer, kind)
    start = data.draw(st.integers(min_value=0, max_value=len(token)))
    end = data.draw(st.integers(min_value=start, max_value=len(token)))
    insert = data.draw(st.text(alphabet=B64 + ".", max_size=8))
    mutated = token[:start] + insert + token[end:]
    if mutated == token:
        assert verify(signer, mutated, kind).account == ACCOUNT
    else:
        with pytest.raises(TokenError):
            verify(signer, mutated, kind)


EVERY_KIND = [*TokenKind, "view", "click"]


def verify_any(signer: TokenSigner, kind: str, token: str) -> object:
    """Verify `token` as a token of `kind` (an identity kind, `view` or `click`)."""
    if kind == "view":
        return signer.verify_view(token, tenant=TENANT, campaign=CAMPAIGN)
    if kind == "click":
        return signer.verify_click(token, tenant=TENANT, campaign=CAMPAIGN)
    return signer.verify(TokenKind(kind), token, tenant=TENANT, campaign=CAMPAIGN)


@st.composite
def any_token(draw: st.DrawFn) -> tuple[str, str]:
    """(kind, a genuine token of it under KEY_NEW issued at T0): any kind, ids, compression."""
    kind = draw(st.sampled_from(EVERY_KIND))
    signer = TokenSigner([KEY_NEW, KEY_OLD], clock=Clock())
    account = draw(ids | st.from_regex(r"a{20,64}", fullmatch=True))
    contact = draw(st.none() | ids)
    if kind in ("view", "click"):
        fields: dict[str, Any] = {"tenant": TENANT, "campaign": CAMPAIGN, "arm": Arm.PERSONAL}
        fields.update(rung="personal", account=account, contact=contact)
        # Short enough that every field at once fits in MAX_TOKEN_CHARS.
        view_id = draw(st.from_regex(r"[A-Za-z0-9_-]{1,32}", fullmatch=True))
        if kind == "view":
            return kind, signer.view_template(**fields).sign(view_id)
        short = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,15}", fullmatch=True)
        return kind, signer.click_template(zone=draw(short), cta=draw(short), **fields).sign(view_id)
    token = signer.sign(
        TokenKind(kind),
        tenant=TENANT,
        campaign=CAMPAIGN,
        account=account,
        contact=contact,
        ttl_s=3600,
        compress=draw(st.none() | st.booleans()),
    )
    return kind, token


@settings(deadline=None)
@given(signed=any_token(), data=st.data())
def test_any_single_character_change_is_refused(signed: tuple[str, str], data: st.DataObject) -> None:
    """Whatever the kind, ids or compression, a token with any one character replaced (by any
    character at all) is refused with a token error, and the genuine one still verifies."""
    kind, token = signed
    signer = TokenSigner([KEY_NEW, KEY_OLD], clock=Clock())
    assert verify_any(signer, kind, token)
    index = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    replacement = data.draw(st.characters().filter(lambda c: c != token[index]))
    with pytest.raises(TokenError):
        verify_any(signer, kind, token[:index] + replacement + token[index + 1 :])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
payload_like = st.dictionaries(st.sampled_from(list("tcawmrpvxzkie")), json_values | ids, max_size=12)


@settings(deadline=None)
@given(
    kind=st.sampled_from(EVERY_KIND),
    payload=payload_like | json_values,
    raw=st.none() | st.binary(max_size=300),
    compress=st.booleans(),
)
def test_hostile_payloads_under_a_genuine_signature_raise_only_token_errors(
    kind: str, payload: Any, raw: bytes | None, compress: bool
) -> None:
    """Even our own key's signature over any JSON value, or any bytes (raw or zlib-compressed),
    yields claims or a token error, never another exception."""
    if raw is None:
        token = forge(payload, kind=kind, compress=compress)
    else:
        body = zlib.compress(raw) if compress else raw
        encoded = base64.urlsafe_b64encode(body).decode().rstrip("=")
        token = reference.seal(("." if compress else "") + encoded, kind=kind, key=KEY_NEW)
    try:
        verify_any(TokenSigner([KEY_NEW], clock=Clock()), kind, token)
    except TokenError:
        pass
    claimed_scope(token)  # a routing hint: None or a scope, never an exception


# -- view tokens (the snippet's beacons) ------------------------------------------------------


def sign_view(signer: TokenSigner, **overrides: Any) -> str:
    args: dict[str, Any] = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "view_id": "Vw_-123abc",
        "arm": Arm.PERSONAL,
        "rung": "personal",
        "account": ACCOUNT,
        "contact": CONTACT,
        "zone_set_version": 7,
    }
    args.update(overrides)
    return signer.sign_view(**args)


def test_view_token_round_trip_binds_what_was_served(signer: TokenSigner) -> None:
    claims = signer.verify_view(sign_view(signer), tenant=TENANT, campaign=CAMPAIGN)
    assert claims == ViewClaims(
        tenant=TENANT,
        campaign=CAMPAIGN,
        view_id="Vw_-123abc",
        arm=Arm.PERSONAL,
        rung="personal",
        account=ACCOUNT,
        contact=CONTACT,
        zone_set_version=7,
        issued_at=T0,
        expires_at=T0 + DEFAULT_VIEW_TTL_S,
    )


def test_anonymous_view_token_names_no_account(signer: TokenSigner) -> None:
    token = sign_view(
        signer, arm=Arm.ANONYMOUS, rung="default", account=None, contact=None, zone_set_version=None
    )
    claims = signer.verify_view(token, tenant=TENANT, campaign=CAMPAIGN)
    assert (claims.arm, claims.account, claims.contact, claims.zone_set_version) == (
        Arm.ANONYMOUS,
        None,
        None,
        None,
    )


def test_view_and_identity_tokens_never_cross(signer: TokenSigner) -> None:
    view = sign_view(signer)
    for kind in TokenKind:
        with pytest.raises(TokenBadSignature):
            signer.verify(kind, view, tenant=TENANT, campaign=CAMPAIGN)
        with pytest.raises(TokenBadSignature):
            signer.verify_view(sign(signer, kind), tenant=TENANT, campaign=CAMPAIGN)


def test_view_token_is_bound_to_tenant_and_campaign_and_expires(signer: TokenSigner, clock: Clock) -> None:
    token = sign_view(signer)
    with pytest.raises(TokenBadSignature, match="tenant"):
        signer.verify_view(token, tenant="globex", campaign=CAMPAIGN)
    with pytest.raises(TokenBadSignature, match="campaign"):
        signer.verify_view(token, tenant=TENANT, campaign="other")
    clock.now = T0 + DEFAULT_VIEW_TTL_S
    with pytest.raises(TokenExpired):
        signer.verify_view(token, tenant=TENANT, campaign=CAMPAIGN)


def test_view_token_from_the_future_is_refused(clock: Clock) -> None:
    future = TokenSigner([KEY_NEW], clock=Clock(T0 + CLOCK_SKEW_S + 5))
    with pytest.raises(TokenFromFuture):
        TokenSigner([KEY_NEW], clock=clock).verify_view(sign_view(future), tenant=TENANT, campaign=CAMPAIGN)


def test_view_token_survives_key_rotation(clock: Clock) -> None:
    token = sign_view(TokenSigner([KEY_OLD], clock=clock))
    rotated = TokenSigner([KEY_NEW, KEY_OLD], clock=clock)
    assert rotated.verify_view(token, tenant=TENANT, campaign=CAMPAIGN).account == ACCOUNT
    with pytest.raises(TokenBadSignature):
        TokenSigner([KEY_NEW], clock=clock).verify_view(token, tenant=TENANT, campaign=CAMPAIGN)
    # The first key signs: a token of the rotated signer verifies once the old key is retired.
    fresh = sign_view(rotated)
    assert (
        TokenSigner([KEY_NEW], clock=clock).verify_view(fresh, tenant=TENANT, campaign=CAMPAIGN).account
        == ACCOUNT
    )


def test_a_view_template_signs_each_view_when_it_is_served(signer: TokenSigner, clock: Clock) -> None:
    """A template (kept for a returning visitor) makes the token `sign_view` makes for the
    same view at the same moment, and issues each one at the time it is signed."""
    template = signer.view_template(
        tenant=TENANT,
        campaign=CAMPAIGN,
        arm=Arm.PERSONAL,
        rung="personal",
        account=ACCOUNT,
        zone_set_version=4,
    )
    first = template.sign("view-1")
    assert first == signer.sign_view(
        tenant=TENANT,
        campaign=CAMPAIGN,
        view_id="view-1",
        arm=Arm.PERSONAL,
        rung="personal",
        account=ACCOUNT,
        zone_set_version=4,
    )
    clock.now = T0 + DEFAULT_VIEW_TTL_S  # the first token has just expired
    later = signer.verify_view(template.sign("view-2"), tenant=TENANT, campaign=CAMPAIGN)
    assert (later.view_id, later.issued_at, later.expires_at) == (
        "view-2",
        T0 + DEFAULT_VIEW_TTL_S,
        T0 + 2 * DEFAULT_VIEW_TTL_S,
    )
    assert (later.account, later.arm, later.rung, later.zone_set_version) == (
        ACCOUNT,
        Arm.PERSONAL,
        "personal",
        4,
    )
    with pytest.raises(TokenExpired):
        signer.verify_view(first, tenant=TENANT, campaign=CAMPAIGN)
    with pytest.raises(InputError) as caught:
        template.sign("not a view id")
    assert caught.value.field == "view_id"


@pytest.mark.parametrize(
    "field, value",
    [
        ("view_id", "has space"),
        ("view_id", ""),
        ("arm", "winner"),
        ("rung", "bespoke"),
        ("account", "x@y.z"),
        ("zone_set_version", 0),
        ("zone_set_version", True),
        ("ttl_s", MAX_TTL_S + 1),
    ],
)
def test_sign_view_refuses_bad_values_naming_the_field(signer: TokenSigner, field: str, value: Any) -> None:
    with pytest.raises(InputError) as caught:
        sign_view(signer, **{field: value})
    assert caught.value.field == field


def test_forged_view_payloads_are_malformed() -> None:
    signer = TokenSigner([KEY_NEW], clock=Clock())
    base = {"t": TENANT, "c": CAMPAIGN, "w": "v1", "m": "personal", "r": "personal", "i": T0, "e": T0 + 60}
    # The documented format: a token its code writes for a good payload verifies.
    assert signer.verify_view(forge(base, kind="view"), tenant=TENANT, campaign=CAMPAIGN).view_id == "v1"
    for payload in (
        {**base, "x": 1},
        {k: v for k, v in base.items() if k != "m"},
        {**base, "m": "winner"},
        {**base, "r": "bespoke"},
        {**base, "e": T0},
        {**base, "v": "7"},
        [base],
    ):
        with pytest.raises(TokenMalformed):
            signer.verify_view(forge(payload, kind="view"), tenant=TENANT, campaign=CAMPAIGN)


@settings(deadline=None)
@given(
    tenant=ids,
    campaign=ids,
    account=st.none() | ids,
    contact=st.none() | ids,
    view_id=view_ids,
    arm=st.sampled_from(Arm),
    rung=rungs,
    version=versions,
)
def test_view_round_trip_property(
    tenant: str,
    campaign: str,
    account: str | None,
    contact: str | None,
    view_id: str,
    arm: Arm,
    rung: str,
    version: int | None,
) -> None:
    signer = TokenSigner([KEY_NEW], clock=Clock())
    token = signer.sign_view(
        tenant=tenant,
        campaign=campaign,
        view_id=view_id,
        arm=arm,
        rung=rung,
        account=account,
        contact=contact,
        zone_set_version=version,
    )
    assert TOKEN_CHARS.fullmatch(token) and len(token) <= MAX_TOKEN_CHARS
    # Byte for byte what the documented format makes of the same payload, uncompressed (compact
    # JSON, base64url, HMAC under the view salt's key), and what it reads back.
    payload = read_back(token, "view")
    assert list(payload)[:5] == ["t", "c", "w", "m", "r"] and list(payload)[-2:] == ["i", "e"]
    assert token == forge(payload, kind="view", compress=False)
    claims = signer.verify_view(token, tenant=tenant, campaign=campaign)
    assert (
        claims.view_id,
        claims.arm,
        claims.rung,
        claims.account,
        claims.contact,
        claims.zone_set_version,
    ) == (
        view_id,
        arm,
        rung,
        account,
        contact,
        version,
    )


any_id = ids | st.sampled_from(["", "x@y.z", "Jane Doe", "a" * 65, "-lead"])


@settings(deadline=None)
@given(
    clicks=st.lists(st.tuples(any_id, any_id), max_size=4),
    account=st.none() | any_id,
    contact=st.none() | any_id,
    view_id=view_ids,
    arm=st.sampled_from(Arm),
    rung=rungs,
    version=versions,
    variant=st.none() | ids,
)
def test_a_pages_click_templates_are_the_ones_click_template_makes(
    clicks: list[tuple[str, str]],
    account: str | None,
    contact: str | None,
    view_id: str,
    arm: Arm,
    rung: str,
    version: int | None,
    variant: str | None,
) -> None:
    """What a page's templates give a visitor is, CTA by CTA, what `click_template` gives for
    the same fields: the same token for the same view; None where it refuses the zone or CTA
    id; a bad account or contact refused (InputError), as `click_template` refuses it."""
    signer = TokenSigner([KEY_NEW], clock=Clock())
    fields: dict[str, Any] = {
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "arm": arm,
        "rung": rung,
        "zone_set_version": version,
        "variant": variant,
    }
    page = signer.page_click_templates(clicks, **fields)
    expected: list[str | None | type[InputError]] = []
    for zone, cta in clicks:
        try:
            template = signer.click_template(zone=zone, cta=cta, account=account, contact=contact, **fields)
        except InputError as exc:
            expected.append(InputError if exc.field in ("account", "contact") else None)
        else:
            expected.append(template.sign(view_id))
    if InputError in expected:
        with pytest.raises(InputError):
            page.for_visitor(account, contact)
        return
    try:
        found = [None if t is None else t.sign(view_id) for t in page.for_visitor(account, contact)]
    except InputError as exc:  # a bad visitor on a page whose CTAs are all refused anyway
        assert exc.field in ("account", "contact") and expected == [None] * len(clicks)
        return
    assert found == expected


def test_a_pages_click_templates_refuse_a_bad_field_of_the_page() -> None:
    signer = TokenSigner([KEY_NEW], clock=Clock())
    fields: dict[str, Any] = {"tenant": TENANT, "campaign": CAMPAIGN, "arm": Arm.PERSONAL, "rung": "personal"}
    for field, bad in [("tenant", "x@y.z"), ("campaign", ""), ("rung", "bespoke"), ("zone_set_version", 0)]:
        for clicks in ([("cta", "book")], []):
            with pytest.raises(InputError) as raised:
                signer.page_click_templates(clicks, **{**fields, field: bad})
            assert raised.value.field == field


@settings(deadline=None)
@given(token=st.text(max_size=700))
def test_verify_view_on_arbitrary_text_raises_only_token_errors(token: str) -> None:
    with pytest.raises(TokenError):
        TokenSigner([KEY_NEW], clock=Clock()).verify_view(token, tenant=TENANT, campaign=CAMPAIGN)


def test_the_longest_view_and_click_tokens_sign_and_verify() -> None:
    """Every id at its longest (64 characters), the highest version: the renderer signs such a
    view token on every /v1/zones answer and a click token per CTA, so signing must not fail
    (it raised on ids of 40 characters when view tokens shared the identity tokens' bound)."""
    longest = "L" * 64
    signer = TokenSigner([KEY_NEW], clock=Clock())
    fields: dict[str, Any] = {
        "tenant": "T" * 64,
        "campaign": "C" * 64,
        "arm": Arm.PERSONAL,
        "rung": "personal",
        "account": longest,
        "contact": "P" * 64,
        "zone_set_version": MAX_ZONE_SET_VERSION,
        "variant": "X" * 64,
    }
    view = signer.view_template(**fields).sign("v" * 64)
    click = signer.click_template(zone="Z" * 64, cta="K" * 64, **fields).sign("v" * 64)
    assert MAX_TOKEN_CHARS < len(view) <= len(click) <= MAX_VIEW_TOKEN_CHARS
    assert (
        signer.verify_view(view, tenant="T" * 64, campaign="C" * 64).zone_set_version == MAX_ZONE_SET_VERSION
    )
    assert signer.verify_click(click, tenant="T" * 64, campaign="C" * 64).cta == "K" * 64
    with pytest.raises(TokenMalformed):
        signer.verify_view(
            view + "A" * (MAX_VIEW_TOKEN_CHARS - len(view) + 1), tenant="T" * 64, campaign="C" * 64
        )
    with pytest.raises(InputError):
        signer.view_template(**{**fields, "zone_set_version": MAX_ZONE_SET_VERSION + 1})
