"""`?wm=` tokens the renderer must treat as no token at all: the visitor is anonymous."""

from __future__ import annotations

import time

from tests.server.conftest import OTHER_SECRET, SECRET, TENANT, link_token
from welcomemat.security.tokens import TokenKind, TokenSigner

__all__ = ["BAD_TOKEN_NAMES", "OTHER_CAMPAIGN", "OTHER_TENANT", "bad_token"]

OTHER_TENANT = "globex"
OTHER_CAMPAIGN = "q1-expansion"
BAD_TOKEN_NAMES = (
    "tampered-signature",
    "tampered-payload",
    "truncated",
    "expired",
    "unknown-key",
    "cookie-kind",
    "other-tenant",
    "other-campaign",
    "markup",
)


def _flip(token: str, index: int) -> str:
    char = token[index]
    return token[:index] + ("A" if char != "A" else "B") + token[index + 1 :]


def bad_token(name: str, campaign: str, account: str) -> str:
    """A token named in BAD_TOKEN_NAMES, aimed at `account` of `campaign` (tenant TENANT)."""
    genuine = link_token(account, campaign=campaign)
    if name == "tampered-signature":
        return _flip(genuine, -3)
    if name == "tampered-payload":
        return _flip(genuine, 5)
    if name == "truncated":
        return genuine[:-10]
    if name == "markup":
        return "<script>alert(1)</script>"
    if name == "cookie-kind":
        return link_token(account, campaign=campaign, kind=TokenKind.COOKIE)
    if name == "other-tenant":
        return link_token(account, campaign=campaign, tenant=OTHER_TENANT)
    if name == "other-campaign":
        return link_token(account, campaign=OTHER_CAMPAIGN)
    signer = {
        "expired": TokenSigner([SECRET], clock=lambda: time.time() - 7200),
        "unknown-key": TokenSigner([OTHER_SECRET]),
    }[name]
    return signer.sign(TokenKind.LINK, tenant=TENANT, campaign=campaign, account=account, ttl_s=3600)
