"""`welcomemat link`: print a signed personal link (`?wm=`) or a QR continuation URL (`/q/…`).

URLs start with `WELCOMEMAT_PUBLIC_URL`; they are signed by `welcomemat.links` with the
first key of `WELCOMEMAT_SECRET`. No secret: exit 2 before anything else happens.

`--qr-image FILE` (implies `--qr`) also writes the QR code, SVG or PNG by the file's
suffix, with segno. The image is written whole or not at all (a temporary file renamed
into place), so a print shop never picks up half a code.

A QR code is printed once and scanned for months, so `--qr` is refused (exit 2) for a
campaign without a continuation page, where every scan would land on a 404
(`welcomemat.links.check_qr_continuation`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from welcomemat.campaign_ref import resolve_campaign_ref
from welcomemat.errors import InputError
from welcomemat.links import check_qr_continuation, signed_url
from welcomemat.settings import Settings
from welcomemat.tokens import DEFAULT_TTL_S, MAX_TTL_S, TokenKind, TokenSigner

__all__ = [
    "QR_IMAGE_KINDS",
    "check_qr_image_path",
    "run_link",
    "write_qr_image",
]

_DAY_S = 24 * 60 * 60
# File suffix -> segno's writer.
QR_IMAGE_KINDS = {".svg": "svg", ".png": "png"}
# Pixels per module and the quiet zone (modules) the QR standard asks for around a code.
QR_SCALE = 10
QR_BORDER = 4


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
