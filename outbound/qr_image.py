"""QR code images for print: one URL, one SVG or PNG file, written whole or not at all.

`welcomemat link --qr-image` and `welcomemat mail` write their codes here, with segno (pure
Python). Error correction M or better and the 4-module quiet zone the QR standard asks for,
so a code survives a print shop's trim and a little dirt. The file is written to a temporary
name beside it and renamed into place, so nobody picks up half a code.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from welcomemat.errors import InputError

__all__ = ["QR_BORDER", "QR_IMAGE_KINDS", "QR_SCALE", "check_qr_image_path", "write_qr_image"]

# File suffix -> segno's writer.
QR_IMAGE_KINDS = {".svg": "svg", ".png": "png"}
# Pixels per module and the quiet zone (modules) the QR standard asks for around a code.
QR_SCALE = 10
QR_BORDER = 4


def check_qr_image_path(path: Path, *, field: str = "--qr-image") -> str:
    """segno's writer for `path`; `InputError` naming the file unless it is a `.svg` or `.png`
    in a folder that exists."""
    kind = QR_IMAGE_KINDS.get(path.suffix.lower())
    if kind is None:
        raise InputError(
            f"a QR image must be .svg or .png, not {path.suffix or 'a file without a suffix'!r}",
            file=path,
            field=field,
        )
    if not path.parent.is_dir():
        raise InputError(f"folder {str(path.parent)!r} does not exist", file=path, field=field)
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
