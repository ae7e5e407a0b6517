"""`GET /c/{campaign}/theme/{file}`: a theme's stylesheets, images and fonts, from the published config.

The files come from the campaign config the renderer already holds (`CampaignView.theme_files`,
prepared once per config version): a file name is a key in that map, never a path, so there is
nothing to traverse, and anything not in it is 404. Each is served with the Content-Type its
suffix names (`welcomemat.theme_rules.ASSET_TYPES`; the bytes were checked to match at load),
an ETag and `Cache-Control: public, no-cache` (a browser revalidates, and a new theme shows
at once). Same origin as the page, so the page's CSP (`style-src 'self'`, `img-src 'self'`,
`font-src 'self'`) lets them load.

A stylesheet is served inside `@layer theme { … }`, after declaring the layer order
`welcomemat, theme`: the theme outranks the renderer's look (in `@layer welcomemat`), and
the renderer's unlayered rules, which reserve each zone's space, outrank the theme whatever
its selectors (the file rules refuse `!important` and unbalanced braces, the two ways out).
An SVG gets its own CSP with `sandbox`: opened on its own it is an inert document.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from starlette.requests import Request
from starlette.responses import Response

from server.redis_guard import RedisUnavailable
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.theme import Theme
from welcomemat.theme_rules import ASSET_TYPES

__all__ = ["THEME_ROUTE", "ThemeFile", "theme_file", "theme_files", "theme_url"]

THEME_ROUTE = "/c/{campaign}/theme/{file}"
_CSS_HEAD = b"@layer welcomemat, theme;\n@layer theme {\n"
_CSS_TAIL = b"\n}\n"
# An SVG opened as a document: nothing runs, nothing loads; its own inline styles may apply.
_SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'"


@dataclass(frozen=True, slots=True)
class ThemeFile:
    """One theme file as served: its bytes, Content-Type and ETag."""

    body: bytes
    content_type: str
    etag: str


def _not_found() -> Response:
    return Response(
        b"Not Found", status_code=404, media_type="text/plain", headers={"cache-control": "no-store"}
    )


def theme_url(campaign_id: str) -> str:
    """Where a campaign's theme files are served (`{{ theme_url }}name` in a theme's base.html)."""
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


async def theme_file(request: Request) -> Response:
    """
    summary: A file of the campaign's theme (stylesheet, image or font).
    parameters:
      - {name: campaign, in: path, required: true, schema: {type: string}}
      - {name: file, in: path, required: true, schema: {type: string}}
    responses:
      200: {description: "The file, with its Content-Type and ETag."}
      304: {description: "Not modified (If-None-Match)."}
      404: {description: "No such campaign, theme or file."}
    """
    # The registry only (not the app state's type: `server.campaigns` imports this module).
    campaigns = request.app.state.renderer.campaigns
    campaign_id = request.path_params["campaign"]
    state = campaigns.cached(campaign_id)
    if state is None:
        if not is_valid_id(campaign_id):
            return _not_found()
        try:
            state = await campaigns.resolve(campaign_id)
        except (RedisUnavailable, StoredValueError):
            # A stylesheet is not worth an error page: the page it styles is served anyway.
            return _not_found()
        if state is None:
            return _not_found()
    found = state.view.theme_files.get(request.path_params["file"])
    if found is None:
        return _not_found()
    headers = {"etag": found.etag, "cache-control": "public, no-cache"}
    if found.content_type == ASSET_TYPES[".svg"]:
        headers["content-security-policy"] = _SVG_CSP
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.content_type, headers=headers)
