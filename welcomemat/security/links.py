"""Signed links to a campaign's pages: the personal link and the QR continuation URL.

A personal link is `<public url>/c/<campaign>?wm=<token>`; a QR code carries
`<public url>/q/<token>`, which the renderer verifies and redirects to the continuation page.
Tokens are signed by `welcomemat.security.tokens` (bound to tenant, campaign, account and optional
contact; they expire). `welcomemat link`, the sequencer export and the demo all sign here, so
a link in an email and one on a printed card are the same link.

A QR code is printed once and scanned for months, so one is refused for a campaign without
a continuation page (every scan would land on a 404): checked in campaign.yaml when the
campaign is given as that file, else in the campaign as published, when a Redis that holds
it already runs (`published_pages`: this never starts one just to look).
"""

from __future__ import annotations

from collections.abc import Callable

from welcomemat import keys
from welcomemat.campaign.config import decode_campaign_config
from welcomemat.campaign.contract import CONTINUATION_PAGE_ID
from welcomemat.campaign.ref import is_campaign_file
from welcomemat.errors import ContractError, InputError, StoredValueError
from welcomemat.security.tokens import DEFAULT_TTL_S, TokenKind, TokenSigner
from welcomemat.settings import Settings

__all__ = ["PREFLIGHT_USER_AGENT", "check_qr_continuation", "contact_links", "published_pages", "signed_url"]

# The user agent `welcomemat mail`'s preflight follows every printed QR URL with. Its requests
# are a check, not a visit: the renderer logs no `qr_scan` or `view` for them (no seller alert,
# no engagement in the records), and still answers exactly as it would a person.
PREFLIGHT_USER_AGENT = "WelcomematMailPreflight/1"


def published_pages(settings: Settings, tenant: str, campaign: str) -> frozenset[str] | None:
    """The page ids of the campaign as published; None when not published or no Redis runs.

    `REDIS_URL`, else the embedded server only if it already runs: a QR check is not worth
    leaving a Redis server behind.
    """
    import redis

    from welcomemat.storage.connection import connect_running

    client = connect_running(settings)
    if client is None:
        return None
    try:
        raw = client.get(keys.campaign_config_key(tenant, campaign))
    except redis.RedisError:  # a Redis that stops answering now: nothing to check against
        return None
    finally:
        client.close()
    if not isinstance(raw, bytes):
        return None
    try:
        stored = decode_campaign_config(tenant, campaign, raw)
    except StoredValueError:
        return None
    return frozenset(stored.campaign.pages)


def check_qr_continuation(ref: str, tenant: str, campaign: str, settings: Settings) -> None:
    """Refuse (InputError, exit 2) a QR code for a campaign with no continuation page to land on."""
    why = f"no {CONTINUATION_PAGE_ID!r} page, so a QR scan would land on a 404"
    fix = f"add pages.{CONTINUATION_PAGE_ID} (template continuation.html), or leave out --qr"
    if is_campaign_file(ref):
        from welcomemat.campaign.contract import load_campaign
        from welcomemat.yamlfile import line_of_field

        if not load_campaign(ref).issues_qr_links():
            raise ContractError(f"{why}: {fix}", file=ref, line=line_of_field(ref, ("pages",)), field="pages")
        return
    pages = published_pages(settings, tenant, campaign)
    if pages is not None and CONTINUATION_PAGE_ID not in pages:
        raise InputError(
            f"{tenant}/{campaign} as published has {why}: {fix}, and precompute again", field="CAMPAIGN"
        )


def signed_url(
    signer: TokenSigner,
    public_url: str,
    *,
    tenant: str,
    campaign: str,
    account: str,
    contact: str | None,
    qr: bool,
    ttl_s: int,
) -> str:
    """The personal link (`/c/<campaign>?wm=`) or, with `qr`, the QR continuation URL (`/q/<token>`)."""
    kind = TokenKind.QR if qr else TokenKind.LINK
    token = signer.sign(kind, tenant=tenant, campaign=campaign, account=account, contact=contact, ttl_s=ttl_s)
    return f"{public_url}/q/{token}" if qr else f"{public_url}/c/{campaign}?wm={token}"


def contact_links(
    signer: TokenSigner,
    public_url: str,
    *,
    tenant: str,
    campaign: str,
    qr: bool = False,
    ttl_s: int | None = None,
) -> Callable[[str, str], str]:
    """(account id, contact id) -> that contact's signed link (or QR URL): one per export row,
    mail piece or preview. `ttl_s`: the kind's default lifetime unless given."""
    if ttl_s is None:
        ttl_s = DEFAULT_TTL_S[TokenKind.QR if qr else TokenKind.LINK]

    def link_for(account_id: str, contact_id: str) -> str:
        return signed_url(
            signer,
            public_url,
            tenant=tenant,
            campaign=campaign,
            account=account_id,
            contact=contact_id,
            qr=qr,
            ttl_s=ttl_s,
        )

    return link_for
