"""A campaign theme's files as the renderer serves them: bytes, Content-Type and ETag.

Prepared once per published config version (`welcomemat.campaign.view` builds them with the
view), so serving a file is a dictionary lookup. A stylesheet is wrapped in `@layer theme
{ … }` after declaring the layer order `welcomemat, theme`: the theme outranks the
renderer's look (in `@layer welcomemat`), and the renderer's unlayered rules, which
reserve each zone's space, outrank the theme whatever its selectors. The Content-Type comes
from the file's suffix (`welcomemat.theme.rules.ASSET_TYPES`; the bytes were checked to
match at load). `theme_url` is where the renderer serves them (`server.theme.assets`), the
prefix a theme's base.html links them with.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from welcomemat.theme.folder import Theme
from welcomemat.theme.rules import ASSET_TYPES

__all__ = ["ThemeFile", "theme_files", "theme_url"]

_CSS_HEAD = b"@layer welcomemat, theme;\n@layer theme {\n"
_CSS_TAIL = b"\n}\n"


@dataclass(frozen=True, slots=True)
class ThemeFile:
    """One theme file as served: its bytes, Content-Type and ETag."""

    body: bytes
    content_type: str
    etag: str


def theme_url(campaign_id: str) -> str:
    """Where the renderer serves a campaign's theme files (`{{ theme_url }}name` in a theme's base.html)."""
    return f"/c/{campaign_id}/theme/"


def theme_files(theme: Theme) -> Mapping[str, ThemeFile]:
    """Every file of the theme, ready to serve."""
    out = {}
    for name, data in theme.files.items():
        suffix = PurePath(name).suffix.lower()
        body = _CSS_HEAD + data + _CSS_TAIL if suffix == ".css" else data
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        out[name] = ThemeFile(body, ASSET_TYPES[suffix], etag)
    return out
