"""A themed page in Chromium: the theme's look applies, its files load under the page's CSP, and a
theme stylesheet that tries to take a zone's reserved space (or the zone) away changes nothing.

The stylesheet below passes every theme rule (no `!important`, nothing that hides a zone: a
`display: none` or `visibility: hidden` here is refused by `welcomemat validate`, see
tests/welcomemat/theme/test_theme_css.py), so it is published; what keeps the zones' reserved space
is the cascade: the renderer's unlayered rules outrank the theme's `@layer theme`, whatever
its selectors' specificity.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
import redis

from server.render import check_campaign_theme
from tests.browser.conftest import PageWatch
from tests.corpora import REPO_ROOT
from tests.server.conftest import CAMPAIGN, example_inputs, publish_config
from welcomemat.theme.folder import Theme, load_theme

pytestmark = pytest.mark.browser

HOSTILE_CSS = """
html body main.wm-main section.wm-hero h1.wm-zone.wm-zone--hero_headline,
html body main.wm-main section.wm-hero p.wm-zone,
html body main.wm-main section.wm-hero a.wm-zone {
  min-height: 0; height: 0;
}
.wm-zone--hero_support { min-height: 0; }
"""
ZONES = ("hero_headline", "hero_support", "proof", "cta")
# The renderer's reserved space per zone (templates/static/welcomemat.css), in em.
RESERVED_EM = {"hero_headline": 2.4, "hero_support": 4.5, "proof": 3.0, "cta": 2.75}


def hostile_theme() -> Theme:
    theme = load_theme(REPO_ROOT / "examples" / "theme")
    base = theme.base_html.replace(
        '<link rel="stylesheet" href="{{ theme_url }}acme.css">',
        '<link rel="stylesheet" href="{{ theme_url }}acme.css">\n'
        '<link rel="stylesheet" href="{{ theme_url }}hostile.css">',
    )
    return Theme.of(base, {**theme.files, "hostile.css": HOSTILE_CSS.encode()})


def test_theme_restyles_the_page_but_not_the_zones_reserved_space(
    redis_client: redis.Redis, renderer_url: str, watch: PageWatch
) -> None:
    campaign, zone_contracts = example_inputs()
    theme = hostile_theme()
    check_campaign_theme(
        theme, REPO_ROOT / "examples" / "theme", campaign, zone_contracts
    )  # validate accepts it
    publish_config(redis_client, campaign, zone_contracts, theme)

    page = watch.page
    page.goto(f"{renderer_url}/c/{CAMPAIGN}")
    page.wait_for_load_state("networkidle")
    watch.settle()

    styles = cast(
        dict[str, Any],
        page.evaluate(
            """(ids) => {
              const out = {};
              for (const id of ids) {
                const el = document.querySelector(`[data-wm-zone="${id}"]`);
                const s = getComputedStyle(el);
                out[id] = {display: s.display, visibility: s.visibility, minHeight: parseFloat(s.minHeight),
                           fontSize: parseFloat(s.fontSize), height: el.getBoundingClientRect().height};
              }
              const logo = document.querySelector(".acme-logo");
              out.logoWidth = logo.naturalWidth;
              out.bodyFont = getComputedStyle(document.body).fontFamily;
              out.ctaBackground = getComputedStyle(document.querySelector(".wm-cta")).backgroundColor;
              return out;
            }""",
            list(ZONES),
        ),
    )
    for zone_id in ZONES:
        style = styles[zone_id]
        assert style["display"] != "none" and style["visibility"] == "visible", (zone_id, style)
        reserved = RESERVED_EM[zone_id] * style["fontSize"]
        assert style["minHeight"] == pytest.approx(reserved, rel=0.01), (zone_id, style)
        assert style["height"] >= reserved - 0.5, (zone_id, style)
    # The theme's look does apply: its fonts and colours outrank the renderer's.
    assert "Palatino" in styles["bodyFont"]
    assert styles["ctaBackground"] == "rgb(228, 87, 46)"  # --acme-accent
    assert styles["logoWidth"] > 0, "the theme's SVG logo did not load"
    assert not watch.csp_violations, watch.csp_violations
    assert not watch.console_errors, watch.console_errors
    strangers = [url for url in watch.requests if not url.startswith(f"{renderer_url}/")]
    assert not strangers, strangers
    assert f"{renderer_url}/c/{CAMPAIGN}/theme/hostile.css" in watch.requests
