"""Tokens already issued keep working: token_vectors.json holds tokens signed by earlier versions
of the signer (every kind, compressed and not, under rotation lists, and tokens written by the
library that issued the first ones) and hostile variants of them, each with the verdict it got.

The signer makes byte for byte the same token from the same inputs, gives every vector the
same verdict and the same claims, and docs/reference/tokens.md's code agrees with both.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.corpora import REPO_ROOT
from tests.welcomemat.security import token_reference as reference
from welcomemat.arms import Arm
from welcomemat.errors import TokenBadSignature, TokenExpired, TokenFromFuture, TokenMalformed
from welcomemat.security.tokens import (
    DEFAULT_CLICK_TTL_S,
    DEFAULT_VIEW_TTL_S,
    ClickClaims,
    TokenClaims,
    TokenKind,
    TokenSigner,
    ViewClaims,
    claimed_scope,
)

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "token_vectors.json").read_text("utf-8"))
KEYS: dict[str, str] = VECTORS["keys"]
SIGNED: list[dict[str, Any]] = VECTORS["signed"]
VERIFIED: list[dict[str, Any]] = VECTORS["verified"]
ERRORS = {e.__name__: e for e in (TokenMalformed, TokenBadSignature, TokenExpired, TokenFromFuture)}
IDENTITY_KINDS = {kind.value for kind in TokenKind}
ALL_KINDS = IDENTITY_KINDS | {"view", "click"}


def name(vector: dict[str, Any]) -> str:
    return str(vector["name"])


def signer(vector: dict[str, Any]) -> TokenSigner:
    now = vector["now"]
    return TokenSigner([KEYS[key] for key in vector["keys"]], clock=lambda: now)


def sign(vector: dict[str, Any]) -> str:
    kind, args = vector["kind"], dict(vector["args"])
    if kind in IDENTITY_KINDS:
        return signer(vector).sign(TokenKind(kind), **args)
    view_id, args["arm"] = args.pop("view_id"), Arm(args["arm"])
    if kind == "view":
        return signer(vector).sign_view(view_id=view_id, **args)
    zone, cta = args.pop("zone"), args.pop("cta")
    return signer(vector).click_template(zone=zone, cta=cta, **args).sign(view_id)


def as_json(claims: TokenClaims | ViewClaims | ClickClaims) -> dict[str, Any]:
    """The claims as the vectors hold them (JSON values: a kind or arm as its string)."""
    if isinstance(claims, TokenClaims):
        return {**dataclasses.asdict(claims), "kind": claims.kind.value}
    return claims.model_dump(mode="json")


def verify(vector: dict[str, Any]) -> TokenClaims | ViewClaims | ClickClaims:
    kind, token, scope = vector["kind"], vector["token"], (vector["tenant"], vector["campaign"])
    if kind in IDENTITY_KINDS:
        return signer(vector).verify(TokenKind(kind), token, tenant=scope[0], campaign=scope[1])
    if kind == "view":
        return signer(vector).verify_view(token, tenant=scope[0], campaign=scope[1])
    return signer(vector).verify_click(token, tenant=scope[0], campaign=scope[1])


@pytest.mark.parametrize("vector", SIGNED, ids=name)
def test_the_same_inputs_make_the_same_token(vector: dict[str, Any]) -> None:
    assert sign(vector) == vector["token"]


@pytest.mark.parametrize("vector", VERIFIED, ids=name)
def test_every_token_gets_the_verdict_it_always_got(vector: dict[str, Any]) -> None:
    if vector["verdict"] == "ok":
        assert as_json(verify(vector)) == vector["claims"]
    else:
        with pytest.raises(ERRORS[vector["verdict"]]) as raised:
            verify(vector)
        assert type(raised.value).__name__ == vector["verdict"]  # not a subclass, not a sibling
    token = vector["token"]
    expected_scope = None if vector["claimed_scope"] is None else tuple(vector["claimed_scope"])
    assert (claimed_scope(token) if isinstance(token, str) else None) == expected_scope


def test_the_vectors_cover_every_kind_form_key_and_verdict() -> None:
    signed = Counter(
        (v["kind"], v["token"].startswith("."), len(v["keys"]) > 1) for v in SIGNED
    )  # kind, compressed, under a rotation list
    assert {kind for kind, _, _ in signed} == ALL_KINDS
    assert {kind for kind, compressed, _ in signed if compressed} == IDENTITY_KINDS
    assert {kind for kind, compressed, _ in signed if not compressed} == ALL_KINDS
    assert {kind for kind, _, rotation in signed if rotation} == ALL_KINDS
    verdicts = Counter((v["kind"], v["verdict"]) for v in VERIFIED)
    assert {(kind, verdict) for kind in ALL_KINDS for verdict in ["ok", *ERRORS]} <= set(verdicts)
    names = " | ".join(name(v) for v in VERIFIED)
    for case in (
        "verified as a",  # a token of one kind checked as another
        "signing key listed second",
        "signing key not listed",
        "character changed",
        "non-canonical last signature character",
        "itsdangerous-written",
        "513 characters",
        "decompression bomb",
    ):
        assert case in names, case


def _reference_payload(vector: dict[str, Any]) -> dict[str, Any]:
    """The payload the format says a signed vector carries, its keys in the documented order."""
    args, kind = vector["args"], vector["kind"]
    letters = {"tenant": "t", "campaign": "c", "account": "a", "contact": "p"}
    if kind not in IDENTITY_KINDS:
        letters = {
            "tenant": "t",
            "campaign": "c",
            "view_id": "w",
            "arm": "m",
            "rung": "r",
            **{"account": "a", "contact": "p", "zone_set_version": "v", "variant": "x"},
            **{"zone": "z", "cta": "k"},
        }
    payload = {letter: args[field] for field, letter in letters.items() if args.get(field) is not None}
    default_ttl = {"view": DEFAULT_VIEW_TTL_S, "click": DEFAULT_CLICK_TTL_S}.get(kind)
    issued_at = int(vector["now"])
    payload.update(i=issued_at, e=issued_at + args.get("ttl_s", default_ttl))
    return payload


@pytest.mark.parametrize("vector", SIGNED, ids=name)
def test_the_documented_format_writes_and_reads_the_same_tokens(vector: dict[str, Any]) -> None:
    kind = vector["kind"]
    compress = vector["args"].get("compress", kind == "qr") if kind in IDENTITY_KINDS else False
    payload, key = _reference_payload(vector), KEYS[vector["keys"][0]]
    assert reference.forge(payload, kind=kind, key=key, compress=compress) == vector["token"]
    assert reference.read(vector["token"], kind=kind, keys=[KEYS[k] for k in vector["keys"]]) == payload


@pytest.mark.parametrize("vector", [v for v in VERIFIED if v["verdict"] == "ok"], ids=name)
def test_the_documented_format_reads_every_accepted_token(vector: dict[str, Any]) -> None:
    payload = reference.read(vector["token"], kind=vector["kind"], keys=[KEYS[k] for k in vector["keys"]])
    claims = vector["claims"]
    assert (payload["t"], payload["c"], payload["i"], payload["e"]) == (
        claims["tenant"],
        claims["campaign"],
        claims["issued_at"],
        claims["expires_at"],
    )


OUT_OF_SCOPE = ("other tenant", "other campaign", "tenant differs in case")  # signed, for someone else


@pytest.mark.parametrize(
    "vector",
    [v for v in VERIFIED if v["verdict"] == "TokenBadSignature" and not name(v).endswith(OUT_OF_SCOPE)],
    ids=name,
)
def test_the_documented_format_refuses_what_no_key_signed(vector: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        reference.read(vector["token"], kind=vector["kind"], keys=[KEYS[k] for k in vector["keys"]])


def test_the_example_on_the_page_is_a_vector() -> None:
    text = reference.DOC.read_text(encoding="utf-8")
    example = next(v for v in SIGNED if v["name"] == "link, short ids, with contact, compress=None")
    qr = next(v for v in SIGNED if v["name"] == "qr, short ids, with contact, compress=None")
    assert example["token"] in text and qr["token"] in text
    assert KEYS["new"] in text
    assert reference.derive_key("welcomemat.link", KEYS["new"]).hex() in text


def test_nothing_in_the_five_packages_needs_itsdangerous() -> None:
    """Every module of the five packages imports with itsdangerous unavailable, and a token of
    the kind that library wrote still verifies there (it is no runtime dependency)."""
    vector = next(v for v in VERIFIED if v["name"].startswith("itsdangerous-written qr token"))
    script = f"""
import importlib, pathlib, sys
sys.modules["itsdangerous"] = None  # any import of it fails
root = pathlib.Path({str(REPO_ROOT)!r})
for top in ("welcomemat", "precompute", "server", "outbound", "cli"):
    for path in sorted((root / top).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
from welcomemat.security.tokens import TokenKind, TokenSigner
signer = TokenSigner([{KEYS["new"]!r}], clock=lambda: {vector["now"]!r})
print(signer.verify(TokenKind.QR, {vector["token"]!r}, tenant="acme", campaign="q4-expansion").account)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=os.environ.copy(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == vector["claims"]["account"]
