"""Zones to HTML: Jinja2 templates and a cache of pages.

Which copy a page shows is decided by `welcomemat.zones.resolution` (the fallback ladder at
serve time), the same code `/v1/zones` and exports use; this module turns the resolved
zones into HTML.

Rendering is the costly step (Jinja2 alone is a large share of a bare page's cost; see
bench/README.md), and its result depends only on (campaign config, page, arm, segment or
zone-set version), so rendered pages are kept in a bounded LRU. Per-request values (the
CSP nonce, the view id) are written into the cached text through placeholders that are
random per process, so no stored text can contain one.

A campaign with a theme renders in the theme's environment (`server.theme.templates`): built
once per campaign config version, after the theme's template rules and a render of each of
the campaign's pages for each arm have shown every zone in place. A stored theme that fails
them (a renderer upgrade changed a page, or a config written by hand) is logged and counted,
and the campaign's pages use the built-in `base.html`: a plain page beats a broken one.
`check_campaign_theme` runs the same checks for `welcomemat validate` and precompute.

A theme can make one visitor's page differ from another's (`{% if 'x' in title %}`), so the
checks of the default copy are not the end of it:

- precompute renders every account's own pages with the theme (`account_page_check`); an
  account whose page fails is published with `theme_refused` (the theme's digest) and its
  pages use the built-in frame while the campaign keeps that theme;
- at serve time every themed render is bounded (`server.theme.output`: no more than
  `MAX_THEMED_PAGE_BYTES`, filters included), and one in `THEMED_PAGE_CHECK_EVERY` is read by
  the rendered-page check; a page that fails either, or does not render, is rendered again
  in the built-in frame and counted (`welcomemat_theme_page_fallbacks`).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jinja2
import markupsafe

from server.metrics import RendererMetrics
from server.theme.output import ThemeOutputTooLarge, render_bounded
from server.theme.templates import check_rendered_page, check_theme_template, theme_environment
from welcomemat.arms import Arm
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.view import CampaignView, ResolvedZone, campaign_view
from welcomemat.errors import ContractError
from welcomemat.security.tokens import PageClickTemplates
from welcomemat.surfaces import Surface
from welcomemat.theme.files import theme_url
from welcomemat.theme.folder import Theme
from welcomemat.theme.rules import THEME_TEMPLATE
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.resolution import (
    PLAIN_RUNG,
    RUNG_ORDER,
    Variant,
    best_rung,
    choose_variant,
    resolve_zones,
)
from welcomemat.zones.zoneset import ZoneSet

__all__ = [
    "PLAIN_RUNG",
    "TEMPLATES_DIR",
    "THEMED_PAGE_CHECK_EVERY",
    "CtaSlot",
    "PageRenderer",
    "RenderedPage",
    "account_page_check",
    "check_campaign_theme",
    "template_environment",
]

log = logging.getLogger(__name__)

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
STYLESHEET_PATH = "/static/welcomemat.css"
# Theme environments kept (one per campaign config version with a theme): a handful are live.
_THEMED_ENVIRONMENTS = 64
# At serve time, one themed page render in this many (the first included) is read by the
# rendered-page check (html5lib, a few milliseconds): precompute already checked every
# account's pages, so this is a sample that catches what changed since, at a small cost
# (renders are cached, so this is 1 in N cache misses, not requests).
THEMED_PAGE_CHECK_EVERY = 8


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


# (placeholder href, zone id, CTA id, gated href) of one CTA link on a rendered page.
CtaSlot = tuple[str, str, str, str]


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
    # The copy variant of the zone set served as personal (for the view event), if any.
    variant: str | None = None
    # The page's CTA links: (placeholder href, zone id, CTA id, the CTA's gated href), in page order.
    clicks: tuple[CtaSlot, ...] = ()
    # `html` cut at every placeholder, once: the text around them, and for each gap the index
    # of its value (0 the nonce, 1 the view id, 2 + i the i-th CTA's link). A request then
    # joins the pieces once; a `str.replace` per placeholder copied the whole page each time
    # (~2.5 µs each on a 5 kB page; bench/README.md).
    _pieces: tuple[str, ...] = dataclasses.field(init=False, repr=False, compare=False)
    _fills: tuple[int, ...] = dataclasses.field(init=False, repr=False, compare=False)
    _hrefs: tuple[str, ...] = dataclasses.field(init=False, repr=False, compare=False)
    # The click-token templates of its CTAs for any visitor, by (tenant, campaign, arm value),
    # with the signer that made them: worked out on the page's first view (`server.pages`) and
    # kept with the page, so a new visitor's view only adds their ids.
    click_templates: dict[tuple[str, str, str], tuple[object, PageClickTemplates | None]] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for i, slot in enumerate((self.nonce_slot, self.view_slot, *(c[0] for c in self.clicks))):
            index.setdefault(slot, i)
        # Longest first: no placeholder is another's prefix, but the match must not depend on it.
        pattern = re.compile("|".join(re.escape(slot) for slot in sorted(index, key=len, reverse=True)))
        pieces: list[str] = []
        fills: list[int] = []
        at = 0
        for match in pattern.finditer(self.html):
            pieces.append(self.html[at : match.start()])
            fills.append(index[match.group()])
            at = match.end()
        pieces.append(self.html[at:])
        object.__setattr__(self, "_pieces", tuple(pieces))
        object.__setattr__(self, "_fills", tuple(fills))
        object.__setattr__(self, "_hrefs", tuple(str(markupsafe.escape(c[3])) for c in self.clicks))

    def finish(self, nonce: str, view_id: str, click_links: Sequence[str | None] = ()) -> str:
        """The page for one request. `click_links`: the link each CTA gets, in page order (the
        click redirect, `server.engagement.click_redirect`); a CTA without one, or given None,
        links to its own (gated) href."""
        values = [nonce, view_id, *self._hrefs]
        for i, link in enumerate(click_links):
            if link is not None:
                values[2 + i] = link
        pieces = self._pieces
        out = [pieces[0]]
        for fill, piece in zip(self._fills, pieces[1:], strict=True):
            out.append(values[fill])
            out.append(piece)
        return "".join(out)


class PageRenderer:
    def __init__(
        self,
        env: jinja2.Environment,
        max_entries: int,
        metrics: RendererMetrics,
        templates_dir: Path = TEMPLATES_DIR,
    ) -> None:
        self._env = env
        self._max = max_entries
        self._metrics = metrics
        self._templates_dir = templates_dir
        self._cache: OrderedDict[Hashable, RenderedPage] = OrderedDict()
        # campaign config fingerprint -> the environment its pages render in
        self._themed: dict[str, jinja2.Environment] = {}
        # Random per process: cannot be guessed, so no zone text can smuggle one in.
        self._nonce_slot = f"wmnonce{secrets.token_hex(12)}"
        self._view_slot = f"wmview{secrets.token_hex(12)}"
        # CTA hrefs until a request fills them in: `/r/` so a theme's page check reads a
        # same-origin path, then the slot, the link's index and a terminator (no slot is
        # another's prefix).
        self._click_slot = f"/r/wmclick{secrets.token_hex(12)}"
        self._plain: RenderedPage | None = None
        self._themed_renders = 0  # themed renders so far, for the 1-in-N serve-time check

    def __len__(self) -> int:
        """Rendered pages cached."""
        return len(self._cache)

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
        zones = resolve_zones(view, spec.zones, variant, Surface.WEB) if spec is not None else []
        env = self._environment(view)
        if env is self._env:
            page = self._render_page(env, view, page_id, arm, zones, variant.zone_set_version)
        else:
            page = self._render_themed(env, view, page_id, arm, zones, variant, zone_set)
        if variant.copy_variant is not None:
            page = dataclasses.replace(page, variant=variant.copy_variant)
        self._cache[key] = page
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return page

    def _environment(self, view: CampaignView) -> jinja2.Environment:
        """The built-in environment, or the campaign's theme's (built and checked once per config)."""
        if view.theme is None:
            return self._env
        env = self._themed.get(view.fingerprint)
        if env is None:
            try:
                env = self.themed_environment(view, where="theme")
            except ContractError as exc:
                self._metrics.stored_value_errors.inc()
                log.error(
                    "campaign %s/%s: theme refused, its pages use the built-in base.html: %s",
                    view.tenant,
                    view.campaign_id,
                    exc,
                )
                env = self._env
            if len(self._themed) >= _THEMED_ENVIRONMENTS:
                self._themed.clear()
            self._themed[view.fingerprint] = env
        return env

    def _render_themed(
        self,
        env: jinja2.Environment,
        view: CampaignView,
        page_id: str,
        arm: Arm,
        zones: list[ResolvedZone],
        variant: Variant,
        zone_set: ZoneSet | None,
    ) -> RenderedPage:
        """The page in the theme, or in the built-in frame (counted) when it may not be shown."""
        version = variant.zone_set_version
        reason: str | None = None
        theme = view.theme
        if (  # any arm: a holdout of the account sees its segment's copy, checked with it
            zone_set is not None
            and zone_set.theme_refused is not None
            and theme is not None
            and zone_set.theme_refused == theme.digest()
        ):
            reason = "precompute"
        else:
            try:
                page = self._render_page(env, view, page_id, arm, zones, version)
            except ThemeOutputTooLarge:
                reason = "size"
            except Exception:  # the sandbox's refusals, a comparison of a str with an int, …
                log.exception("campaign %s/%s: themed page does not render", view.tenant, view.campaign_id)
                reason = "error"
            else:
                self._themed_renders += 1
                if (self._themed_renders - 1) % THEMED_PAGE_CHECK_EVERY != 0:
                    return page
                try:
                    self.check_page(view, page_id, page.html)
                    return page
                except ContractError as exc:
                    log.error("campaign %s/%s: themed page refused: %s", view.tenant, view.campaign_id, exc)
                    reason = "check"
        self._metrics.theme_fallbacks.labels(reason).inc()
        return self._render_page(self._env, view, page_id, arm, zones, version)

    def check_page(self, view: CampaignView, page_id: str, html: str, *, where: Path | str = "theme") -> None:
        """The rendered-page check of one themed page: ContractError naming `where`/base.html."""
        spec = view.page(page_id)
        assets = {theme_url(view.campaign_id) + name for name in (view.theme.files if view.theme else ())}
        zone_ids = spec.zones if spec is not None else []
        # The CTA placeholders the renderer itself writes (a request turns them into click links).
        assets |= {self._click_href(i) for i in range(len(zone_ids))}
        check_rendered_page(
            html, page_id, zone_ids, STYLESHEET_PATH, where=where, allowlist=view.allowlist, assets=assets
        )

    def account_page_problem(
        self, view: CampaignView, env: jinja2.Environment, zone_set: ZoneSet, now: datetime, seen: set[int]
    ) -> str | None:
        """Why this account's pages may not be shown in the theme (None: they may).

        Every page of the campaign for every arm, as the account would get it; `seen`
        holds the hashes of pages already found good (shared copy is checked once a run).
        """
        for page_id, spec in view.campaign.pages.items():
            for arm in Arm:
                variant = choose_variant(arm, zone_set, now)
                zones = resolve_zones(view, spec.zones, variant, Surface.WEB)
                try:
                    page = self._render_page(env, view, page_id, arm, zones, variant.zone_set_version)
                except Exception as exc:  # over the size limit, a filter's or comparison's failure
                    return f"its {page_id} page ({arm.value}) does not render in the theme: {exc}"
                digest = hash(page.html)
                if digest in seen:
                    continue
                try:
                    self.check_page(view, page_id, page.html)
                except ContractError as exc:
                    return f"its {page_id} page ({arm.value}) fails the theme check: {exc}"
                seen.add(digest)
        return None

    def themed_environment(self, view: CampaignView, *, where: Path | str) -> jinja2.Environment:
        """The theme's environment, once its template keeps the rules and every page shows every zone.

        Raises ContractError naming `where`/base.html (and the line) otherwise.
        """
        theme = view.theme
        if theme is None:
            return self._env
        env = theme_environment(theme, self._templates_dir)
        check_theme_template(theme, env, view.allowlist, where=where)
        for page_id, spec in view.campaign.pages.items():
            default = [view.default_zones[z] for z in spec.zones if z in view.default_zones]
            # Every arm with the default copy, and each segment's copy as a holdout sees it.
            copies = [(arm, default) for arm in Arm] + [
                (
                    Arm.HOLDOUT,
                    [zone for z in spec.zones if (zone := view.fallback_zone(segment, z)) is not None],
                )
                for segment in sorted(view.segment_zones)
            ]
            for arm, zones in copies:
                try:
                    page = self._render_page(env, view, page_id, arm, zones, None)
                except Exception as exc:  # the sandbox's refusals, `{% if title > 3 %}`, …
                    line = getattr(exc, "lineno", None)
                    file = Path(where) / THEME_TEMPLATE
                    raise ContractError(
                        f"the {page_id} page does not render: {exc}", file=file, line=line
                    ) from None
                self.check_page(view, page_id, page.html, where=where)
        return env

    def _render_page(
        self,
        env: jinja2.Environment,
        view: CampaignView,
        page_id: str,
        arm: Arm,
        zones: list[ResolvedZone],
        version: int | None,
    ) -> RenderedPage:
        spec = view.page(page_id)
        names = [spec.template] if spec is not None else []
        template = env.select_template([*names, f"{page_id}.html", "landing.html"])
        title_zone = next((z for z in zones if z.zone_id.endswith("headline")), zones[0] if zones else None)
        clicks: list[CtaSlot] = []
        for zone in zones:
            if zone.href is not None and zone.cta_id is not None:
                clicks.append((self._click_href(len(clicks)), zone.zone_id, zone.cta_id, zone.href))
        context = {
            "page_id": page_id,
            "campaign_id": view.campaign_id,
            "arm": arm.value,
            "zones": zones,
            "title": title_zone.text if title_zone is not None else "",
            "stylesheet": STYLESHEET_PATH,
            "theme_url": theme_url(view.campaign_id),
            "csp_nonce": self._nonce_slot,
            "view_id": self._view_slot,
            # zone id -> the placeholder its CTA links to (`RenderedPage.finish` fills it in)
            "click_slots": {zone_id: slot for slot, zone_id, _, _ in clicks},
        }
        # A theme's page stops at the size limit as it is built (ThemeOutputTooLarge).
        html = template.render(**context) if env is self._env else render_bounded(template, context)
        # Lone surrogates (possible in stored text) cannot be encoded as UTF-8: the response
        # would fail. Replace them with U+FFFD once here, as a browser would.
        html = html.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        rungs = tuple(z.rung for z in zones)
        counts = tuple((rung.value, rungs.count(rung)) for rung in RUNG_ORDER if rung in rungs)
        return RenderedPage(
            html, best_rung(zones), counts, version, self._nonce_slot, self._view_slot, clicks=tuple(clicks)
        )

    def _click_href(self, index: int) -> str:
        return f"{self._click_slot}x{index}z"

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


def check_campaign_theme(
    theme: Theme, folder: Path, campaign: Campaign, zones: Mapping[str, ZoneContract]
) -> None:
    """The renderer's checks of a theme for a campaign, before it is published (a `ThemeCheck`).

    The same code the renderer runs when it loads the config: ContractError names the file
    in `folder` and the line.
    """
    view = campaign_view(campaign.tenant, campaign.campaign, campaign, zones, theme, theme.digest())
    renderer = PageRenderer(template_environment(), 1, RendererMetrics())
    renderer.themed_environment(view, where=folder)


# An account's published zone set (and the run's clock) -> why its pages may not be shown in
# the campaign's theme, or None. Precompute calls it for every account (`account_page_check`).
_PageCheck = Callable[[ZoneSet, datetime], "str | None"]


def account_page_check(
    theme: Theme, campaign: Campaign, zones: Mapping[str, ZoneContract]
) -> tuple[str, _PageCheck]:
    """The theme's digest, and the check precompute runs on each account's own pages.

    The theme must have passed `check_campaign_theme`; pages shared by many accounts
    (segment and default copy) are checked once per run.
    """
    view = campaign_view(campaign.tenant, campaign.campaign, campaign, zones, theme, theme.digest())
    renderer = PageRenderer(template_environment(), 1, RendererMetrics())
    env = theme_environment(theme, TEMPLATES_DIR)
    seen: set[int] = set()

    def check(zone_set: ZoneSet, now: datetime) -> str | None:
        return renderer.account_page_problem(view, env, zone_set, now, seen)

    return theme.digest(), check
