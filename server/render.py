"""Zones to HTML: Jinja2 templates and a cache of pages.

Which copy a page shows is decided by `server.zone_resolution` (the fallback ladder at
serve time), the same code `/v1/zones` and exports use; this module turns the resolved
zones into HTML.

Rendering is the costly step (Jinja2 alone costs about a third of a bare page's
throughput), and its result depends only on (campaign config, page, arm, segment or
zone-set version), so rendered pages are kept in a bounded LRU. Per-request values (the
CSP nonce, the view id) are written into the cached text through placeholders that are
random per process, so no stored text can contain one.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jinja2

from server.campaigns import CampaignView, ResolvedZone
from server.metrics import RendererMetrics
from server.zone_resolution import PLAIN_RUNG, RUNG_ORDER, best_rung, choose_variant, resolve_zones
from welcomemat.arms import Arm
from welcomemat.zoneset import ZoneSet

__all__ = [
    "PLAIN_RUNG",
    "TEMPLATES_DIR",
    "PageRenderer",
    "RenderedPage",
    "template_environment",
]

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
STYLESHEET_PATH = "/static/welcomemat.css"


def template_environment(directory: Path = TEMPLATES_DIR) -> jinja2.Environment:
    """Autoescape on for every template, whatever its name; undefined names are errors."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """A rendered page with placeholders for the per-request values."""

    html: str
    best_rung: str
    # (rung, number of zones served from it), for the zones-by-rung counter
    zone_rungs: tuple[tuple[str, int], ...]
    zone_set_version: int | None
    nonce_slot: str
    view_slot: str

    def finish(self, nonce: str, view_id: str) -> str:
        html = self.html
        if self.nonce_slot in html:
            html = html.replace(self.nonce_slot, nonce)
        if self.view_slot in html:
            html = html.replace(self.view_slot, view_id)
        return html


class PageRenderer:
    def __init__(self, env: jinja2.Environment, max_entries: int, metrics: RendererMetrics) -> None:
        self._env = env
        self._max = max_entries
        self._metrics = metrics
        self._cache: OrderedDict[Hashable, RenderedPage] = OrderedDict()
        # Random per process: cannot be guessed, so no zone text can smuggle one in.
        self._nonce_slot = f"wmnonce{secrets.token_hex(12)}"
        self._view_slot = f"wmview{secrets.token_hex(12)}"
        self._plain: RenderedPage | None = None

    # -- campaign pages ----------------------------------------------------------------------

    def render(
        self, view: CampaignView, page_id: str, arm: Arm, zone_set: ZoneSet | None, now: datetime
    ) -> RenderedPage:
        """The page for this arm and zone set (from the cache when it was rendered before)."""
        variant = choose_variant(arm, zone_set, now)
        key = (view.tenant, view.campaign_id, view.fingerprint, page_id, *variant.key)
        page = self._cache.get(key)
        if page is not None:
            self._metrics.pages.render_cache["hit"] += 1
            self._cache.move_to_end(key)
            return page
        self._metrics.pages.render_cache["miss"] += 1
        spec = view.page(page_id)
        zones = resolve_zones(view, spec.zones, variant) if spec is not None else []
        page = self._render_page(view, page_id, arm, zones, variant.zone_set_version)
        self._cache[key] = page
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return page

    def _render_page(
        self, view: CampaignView, page_id: str, arm: Arm, zones: list[ResolvedZone], version: int | None
    ) -> RenderedPage:
        spec = view.page(page_id)
        names = [spec.template] if spec is not None else []
        template = self._env.select_template([*names, f"{page_id}.html", "landing.html"])
        title_zone = next((z for z in zones if z.zone_id.endswith("headline")), zones[0] if zones else None)
        html = template.render(
            page_id=page_id,
            campaign_id=view.campaign_id,
            arm=arm.value,
            zones=zones,
            title=title_zone.text if title_zone is not None else "",
            stylesheet=STYLESHEET_PATH,
            csp_nonce=self._nonce_slot,
            view_id=self._view_slot,
        )
        # Lone surrogates (possible in stored text) cannot be encoded as UTF-8: the response
        # would fail. Replace them with U+FFFD once here, as a browser would.
        html = html.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        rungs = tuple(z.rung for z in zones)
        counts = tuple((rung.value, rungs.count(rung)) for rung in RUNG_ORDER if rung in rungs)
        return RenderedPage(html, best_rung(zones), counts, version, self._nonce_slot, self._view_slot)

    # -- pages without a campaign ---------------------------------------------------------------

    def plain(self) -> RenderedPage:
        """The fail-closed page: no campaign copy, no personal content, nothing that can break."""
        if self._plain is None:
            html = self._env.get_template("plain.html").render(
                stylesheet=STYLESHEET_PATH, csp_nonce=self._nonce_slot, view_id=self._view_slot
            )
            self._plain = RenderedPage(html, PLAIN_RUNG, (), None, self._nonce_slot, self._view_slot)
        return self._plain

    def error(self, status: int, message: str) -> str:
        """An error page: `{status}.html` if there is one, else `error.html`."""
        template = self._env.select_template([f"{status}.html", "error.html"])
        return template.render(status=status, message=message, stylesheet=STYLESHEET_PATH)
