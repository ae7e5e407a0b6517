"""`welcomemat link`: print a signed personal link (`?wm=`) or a QR continuation URL (`/q/…`).

URLs start with `WELCOMEMAT_PUBLIC_URL`; tokens are signed by `welcomemat.tokens` with the
first key of `WELCOMEMAT_SECRET`. No secret: exit 2 before anything else happens.

`--qr-image FILE` (implies `--qr`) also writes the QR code, SVG or PNG by the file's
suffix, with segno. The image is written whole or not at all (a temporary file renamed
into place), so a print shop never picks up half a code.

A QR code is printed once and scanned for months, so `--qr` is refused (exit 2) for a
campaign without a continuation page, where every scan would land on a 404: checked in
campaign.yaml when CAMPAIGN is that file, else in the campaign as published, when a Redis
that holds it already runs (this command never starts one just to look).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from welcomemat import keys
from welcomemat.campaign import CONTINUATION_PAGE_ID
from welcomemat.errors import ContractError, InputError, StoreError
from welcomemat.ids import is_valid_id
from welcomemat.settings import Settings
from welcomemat.tokens import DEFAULT_TTL_S, MAX_TTL_S, TokenKind, TokenSigner

__all__ = [
    "QR_IMAGE_KINDS",
    "check_qr_continuation",
    "check_qr_image_path",
    "published_pages",
    "resolve_campaign_ref",
    "run_link",
    "signed_url",
    "write_qr_image",
]

_DAY_S = 24 * 60 * 60
# File suffix -> segno's writer.
QR_IMAGE_KINDS = {".svg": "svg", ".png": "png"}
# Pixels per module and the quiet zone (modules) the QR standard asks for around a code.
QR_SCALE = 10
QR_BORDER = 4


def _is_campaign_file(ref: str) -> bool:
    path = Path(ref)
    return path.suffix in (".yaml", ".yml") or path.is_file()


def resolve_campaign_ref(ref: str, settings: Settings) -> tuple[str, str]:
    """(tenant, campaign) from `tenant/campaign`, a campaign.yaml, or an id published before."""
    path = Path(ref)
    if _is_campaign_file(ref):
        from welcomemat.campaign import load_campaign

        campaign = load_campaign(path)
        return campaign.tenant, campaign.campaign
    if "/" in ref:
        tenant, _, campaign_id = ref.partition("/")
        if not (is_valid_id(tenant) and is_valid_id(campaign_id)):
            raise InputError(f"{ref!r} is not tenant/campaign (two opaque ids)", field="CAMPAIGN")
        return tenant, campaign_id
    if not is_valid_id(ref):
        raise InputError(f"{ref!r} is not a campaign id, tenant/campaign or campaign.yaml", field="CAMPAIGN")
    from welcomemat.connection import connect, resolve_redis

    client = connect(resolve_redis(settings))
    try:
        index: dict[bytes, bytes] = client.hgetall(keys.campaigns_index_key())  # type: ignore[assignment]
    finally:
        client.close()
    tenants = sorted(t for t, _, c in (k.decode().partition("/") for k in index) if c == ref)
    if not tenants:
        raise InputError(
            f"no published campaign {ref!r}; use tenant/campaign or run `welcomemat precompute` first",
            field="CAMPAIGN",
        )
    if len(tenants) > 1:
        raise InputError(f"campaign id {ref!r} is published by {', '.join(tenants)}; use tenant/campaign")
    return tenants[0], ref


def published_pages(settings: Settings, tenant: str, campaign: str) -> frozenset[str] | None:
    """The page ids of the campaign as published; None when not published or no Redis runs.

    `REDIS_URL`, else the embedded server only if it already runs: a QR check is not worth
    leaving a Redis server behind.
    """
    import redis

    from welcomemat.connection import RedisTarget, connect
    from welcomemat.embedded_redis import EmbeddedRedis

    if settings.redis_url:
        target = RedisTarget(settings.redis_url, embedded=False)
    else:
        status = EmbeddedRedis().status(settings.home)
        if not status.running:
            return None
        target = RedisTarget(status.url, embedded=True)
    try:
        client = connect(target)
    except StoreError:
        return None
    try:
        raw = client.get(keys.campaign_config_key(tenant, campaign))
    except redis.RedisError:  # a Redis that stops answering now: nothing to check against
        return None
    finally:
        client.close()
    try:
        pages = json.loads(raw)["campaign"]["pages"] if isinstance(raw, bytes) else None
    except (ValueError, KeyError, TypeError):
        return None
    return frozenset(pages) if isinstance(pages, dict) else None


def check_qr_continuation(ref: str, tenant: str, campaign: str, settings: Settings) -> None:
    """Refuse (InputError, exit 2) a QR code for a campaign with no continuation page to land on."""
    why = f"no {CONTINUATION_PAGE_ID!r} page, so a QR scan would land on a 404"
    fix = f"add pages.{CONTINUATION_PAGE_ID} (template continuation.html), or leave out --qr"
    if _is_campaign_file(ref):
        from welcomemat.campaign import load_campaign
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
    kind = TokenKind.QR if qr else TokenKind.LINK
    token = signer.sign(kind, tenant=tenant, campaign=campaign, account=account, contact=contact, ttl_s=ttl_s)
    return f"{public_url}/q/{token}" if qr else f"{public_url}/c/{campaign}?wm={token}"


def check_qr_image_path(path: Path) -> str:
    """segno's writer for `path`; `InputError` naming the file unless it is a `.svg` or `.png`
    in a folder that exists."""
    kind = QR_IMAGE_KINDS.get(path.suffix.lower())
    if kind is None:
        raise InputError(
            f"a QR image must be .svg or .png, not {path.suffix or 'a file without a suffix'!r}",
            file=path,
            field="--qr-image",
        )
    if not path.parent.is_dir():
        raise InputError(f"folder {str(path.parent)!r} does not exist", file=path, field="--qr-image")
    return kind


def write_qr_image(url: str, path: Path) -> None:
    """Write `url` as a QR code (error correction M or better) to `path`, atomically."""
    import segno

    kind = check_qr_image_path(path)
    code = segno.make(url, error="m", micro=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            if kind == "svg":
                code.save(out, kind="svg", scale=QR_SCALE, border=QR_BORDER, xmldecl=True, title=url)
            else:
                code.save(out, kind="png", scale=QR_SCALE, border=QR_BORDER)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_link(
    campaign: str,
    account: str,
    *,
    contact: str | None,
    qr: bool,
    ttl_days: int | None,
    qr_image: str | None = None,
) -> int:
    image = Path(qr_image) if qr_image is not None else None
    if image is not None:
        check_qr_image_path(image)  # refused before anything is signed or printed
        qr = True
    settings = Settings.from_env()
    signer = TokenSigner.from_setting(settings.require_secret())
    kind = TokenKind.QR if qr else TokenKind.LINK
    ttl_s = DEFAULT_TTL_S[kind] if ttl_days is None else ttl_days * _DAY_S
    if ttl_s > MAX_TTL_S:
        raise InputError(f"--ttl {ttl_days} days is over the maximum of {MAX_TTL_S // _DAY_S}", field="--ttl")
    tenant, campaign_id = resolve_campaign_ref(campaign, settings)
    if qr:
        check_qr_continuation(campaign, tenant, campaign_id, settings)
    url = signed_url(
        signer,
        settings.public_url,
        tenant=tenant,
        campaign=campaign_id,
        account=account,
        contact=contact,
        qr=qr,
        ttl_s=ttl_s,
    )
    if image is not None:
        try:
            write_qr_image(url, image)
        except OSError as exc:
            raise InputError(f"cannot write the QR image: {exc.strerror or exc}", file=image) from None
    print(url, file=sys.stdout)
    if image is not None:
        print(f"QR code written to {image}", file=sys.stderr)
    return 0
