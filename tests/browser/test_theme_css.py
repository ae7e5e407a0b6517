"""Every accepted theme stylesheet leaves every zone visible in Chromium.

The accepted corpus (`tests/welcomemat/theme_css/accepted.jsonl`) holds ordinary themes and
tricky-but-allowed ones: a page-wide overlay at the highest z-index a theme may use, a
pseudo-element laid over a zone, zero heights, hidden elements of the theme's own. Each is
validated as `welcomemat validate` does, published, and the landing page loaded: every zone
has a box, nothing on the way up from it is faded, hidden or skipped, its text is readable
size, and the zone is what a visitor's click at its centre lands on.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
import redis

from server.render import check_campaign_theme
from tests.browser.conftest import PageWatch
from tests.corpora import REPO_ROOT
from tests.server.conftest import example_inputs, publish_config
from tests.welcomemat.theme.test_theme_css import ACCEPTED, EXAMPLE_FILES, themed_base
from welcomemat.theme.folder import Theme

pytestmark = pytest.mark.browser

MIN_FONT_PX = 9.0
ZONE_REPORT = """() => [...document.querySelectorAll('[data-wm-zone]')].map((zone) => {
  zone.scrollIntoView({block: 'center'});
  const box = zone.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  const chain = [];
  for (let el = zone; el; el = el.parentElement) {
    const s = getComputedStyle(el);
    chain.push({tag: el.tagName, display: s.display, opacity: parseFloat(s.opacity),
                visibility: s.visibility, contentVisibility: s.contentVisibility});
  }
  const s = getComputedStyle(zone);
  return {zone: zone.dataset.wmZone, width: box.width, height: box.height, text: zone.innerText.trim(),
          fontSize: parseFloat(s.fontSize), color: s.color, onTop: !!hit && zone.contains(hit), chain};
})"""


@pytest.mark.parametrize("entry", ACCEPTED, ids=[e["name"] for e in ACCEPTED])
def test_every_zone_is_visible_under_an_accepted_stylesheet(
    redis_client: redis.Redis, renderer_url: str, watch: PageWatch, entry: dict[str, Any]
) -> None:
    campaign, zone_contracts = example_inputs()
    campaign_id = f"css-{entry['name']}"[:40]
    campaign = campaign.model_copy(update={"campaign": campaign_id})
    theme = Theme.of(themed_base(entry), {**EXAMPLE_FILES, "extra.css": entry["css"].encode()})
    check_campaign_theme(
        theme, REPO_ROOT / "examples" / "theme", campaign, zone_contracts
    )  # validate's checks
    publish_config(redis_client, campaign, zone_contracts, theme)

    page = watch.page
    page.goto(f"{renderer_url}/c/{campaign_id}")
    page.wait_for_load_state("networkidle")
    watch.settle()
    assert f"{renderer_url}/c/{campaign_id}/theme/extra.css" in watch.requests  # the theme applied
    zones = cast(list[dict[str, Any]], page.evaluate(ZONE_REPORT))
    assert len(zones) == 4, zones
    for zone in zones:
        assert zone["width"] > 0 and zone["height"] > 0 and zone["text"], zone
        assert zone["fontSize"] >= MIN_FONT_PX, zone
        assert zone["onTop"], zone  # nothing of the theme's covers it
        assert not zone["color"].endswith(", 0)") and zone["color"] != "transparent", zone
        for el in zone["chain"]:
            assert el["display"] != "none" and el["opacity"] > 0, (zone["zone"], el)
            assert el["visibility"] == "visible" and el["contentVisibility"] == "visible", (zone["zone"], el)
    assert not watch.csp_violations, watch.csp_violations
    assert not watch.page_errors, watch.page_errors
