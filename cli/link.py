"""`welcomemat link`: print a signed personal link (`?wm=`) or a QR continuation URL (`/q/…`).

URLs start with `WELCOMEMAT_PUBLIC_URL`; they are signed by `welcomemat.security.links` with the
first key of `WELCOMEMAT_SECRET`. No secret: exit 2 before anything else happens.

`--qr-image FILE` (implies `--qr`) also writes the QR code, SVG or PNG by the file's
suffix (`outbound.qr_image`, written whole or not at all).

A QR code is printed once and scanned for months, so `--qr` is refused (exit 2) for a
campaign without a continuation page, where every scan would land on a 404
(`welcomemat.security.links.check_qr_continuation`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from outbound.qr_image import QR_IMAGE_KINDS, check_qr_image_path, write_qr_image
from welcomemat.campaign.ref import resolve_campaign_ref
from welcomemat.errors import InputError
from welcomemat.security.links import check_qr_continuation, signed_url
from welcomemat.security.tokens import DEFAULT_TTL_S, MAX_TTL_S, TokenKind, TokenSigner
from welcomemat.settings import Settings

__all__ = [
    "QR_IMAGE_KINDS",
    "check_qr_image_path",
    "run_link",
    "write_qr_image",
]

_DAY_S = 24 * 60 * 60


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
