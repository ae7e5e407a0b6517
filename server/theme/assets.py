"""`GET /c/{campaign}/theme/{file}`: a theme's stylesheets, images and fonts, from the published config.

The files come from the campaign config the renderer already holds (`CampaignView.theme_files`,
prepared once per config version by `welcomemat.theme.files`): a file name is a key in that
map, never a path, so there is nothing to traverse, and anything not in it is 404. Each is
served with the Content-Type its suffix names (`welcomemat.theme.rules.ASSET_TYPES`; the
bytes were checked to match at load), an ETag and `Cache-Control: public, no-cache` (a
browser revalidates, and a new theme shows at once). Same origin as the page, so the page's
CSP (`style-src 'self'`, `img-src 'self'`, `font-src 'self'`) lets them load.

A stylesheet is served inside `@layer theme { … }`, after declaring the layer order
`welcomemat, theme`: the theme outranks the renderer's look (in `@layer welcomemat`), and
the renderer's unlayered rules, which reserve each zone's space, outrank the theme whatever
its selectors (the file rules refuse `!important` and unbalanced braces, the two ways out).
An SVG gets its own CSP with `sandbox`: opened on its own it is an inert document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from server.redis_guard import RedisUnavailable
from welcomemat.errors import StoredValueError
from welcomemat.ids import is_valid_id
from welcomemat.theme.rules import ASSET_TYPES

if TYPE_CHECKING:
    from server.renderer_state import RendererState

__all__ = ["THEME_ROUTE", "theme_file"]

# Keep in step with welcomemat.theme.files.theme_url, which pages link the files with.
THEME_ROUTE = "/c/{campaign}/theme/{file}"
# An SVG opened as a document: nothing runs, nothing loads; its own inline styles may apply.
_SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'"


def _not_found() -> Response:
    return Response(
        b"Not Found", status_code=404, media_type="text/plain", headers={"cache-control": "no-store"}
    )


async def theme_file(request: Request) -> Response:
    """
    summary: A file of the campaign's theme (stylesheet, image or font).
    parameters:
      - {name: campaign, in: path, required: true, schema: {$ref: "#/components/schemas/Id"}}
      - {name: file, in: path, required: true, schema: {type: string}}
    responses:
      200:
        description: "The file, with its Content-Type and ETag."
        headers: {ETag: {required: true, schema: {type: string}}}
        content:
          text/css: {}
          image/svg+xml: {}
          image/png: {}
          image/jpeg: {}
          image/gif: {}
          image/webp: {}
          font/woff2: {}
      304: {description: "Not modified (If-None-Match)."}
      404: {description: "No such campaign, theme or file.", content: {text/plain: {schema: {type: string}}}}
    """
    renderer: RendererState = request.app.state.renderer
    campaigns = renderer.campaigns
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
