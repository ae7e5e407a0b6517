"""The demo's "customer site": a page on a second origin that embeds the snippet.

It stands for the marketing site a customer already runs: its own copy in
`[data-wm-zone]` elements, and one `<script async src=".../snippet.js"
data-wm-campaign="…">` that swaps in the visitor's zones. A strict CSP allows scripts and
connections to the renderer's origin only, as a real site would have to.
"""

from __future__ import annotations

import html

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

__all__ = ["customer_site", "site_csp"]

# The customer's own copy, shown until (or unless) the snippet swaps a zone.
_OWN_COPY = (
    ("h1", "hero_headline", "Onboarding software for sales teams"),
    ("p", "hero_support", "Acme Revenue helps new sellers learn from your best reps."),
    ("p", "proof", "Trusted by sales teams in twelve countries."),
    ("a", "cta", "Talk to our team"),
)


def site_csp(renderer_origin: str) -> str:
    """Scripts and fetches from the renderer only; no inline script, no framing."""
    return (
        f"default-src 'none'; script-src {renderer_origin}; connect-src {renderer_origin}; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def _page(renderer_origin: str, campaign: str) -> str:
    zones = "\n".join(
        f'<{tag} data-wm-zone="{zone}"'
        + (' href="https://www.acmerevenue.example/contact"' if tag == "a" else "")
        + f">{html.escape(text)}</{tag}>"
        for tag, zone, text in _OWN_COPY
    )
    src, name = html.escape(f"{renderer_origin}/snippet.js"), html.escape(campaign)
    script = f'<script async src="{src}" data-wm-campaign="{name}"></script>'
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme Revenue (demo customer site)</title>
{script}
</head>
<body>
<main>
{zones}
</main>
<footer><p>A demo page on its own origin; the Welcomemat snippet personalises the zones above.</p></footer>
</body>
</html>
"""


def customer_site(renderer_origin: str, campaign: str) -> Starlette:
    """The site's app: `/` is the page (any `?wm=` is read by the snippet, not the site)."""
    body = _page(renderer_origin, campaign)
    headers = {
        "content-security-policy": site_csp(renderer_origin),
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        "referrer-policy": "strict-origin-when-cross-origin",
    }

    async def home(request: Request) -> Response:
        return HTMLResponse(body, headers=headers)

    return Starlette(routes=[Route("/", home, methods=["GET", "HEAD"])])
