"""Property: whatever the theme checks accept, a browser's parse of the served page holds nothing
outside the theme allowlists (`server.theme.html_check`).

Hypothesis builds snippets from valid theme bits and hostile ones (forbidden tags in any case,
handlers, styles, `<meta>` variants, comment and CDATA openers, odd separators, entities,
`{% if 'Congrats' in title %}`), puts one into the example theme, and runs the checks a theme
meets before its pages are served: `welcomemat validate`'s (`check_campaign_theme`) and
precompute's check of a personal page (`account_page_check`). For every theme both accept,
the page the renderer serves for a personal visitor and an anonymous one is parsed with
html5lib's full tree builder (the HTML5 parsing algorithm, tree construction included: what a
browser's DOM holds) and every node is checked against the allowlists.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from xml.etree import ElementTree

import html5lib
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from server.metrics import RendererMetrics
from server.render import PageRenderer, account_page_check, check_campaign_theme, template_environment
from server.theme.html_check import ELEMENTS, META_NAMES, attribute_allowed
from tests.corpora import REPO_ROOT
from tests.server.conftest import example_inputs, make_zone_set
from welcomemat.arms import Arm
from welcomemat.campaign.view import campaign_view
from welcomemat.errors import ContractError
from welcomemat.security.urlgate import gate_link
from welcomemat.theme.folder import Theme, load_theme
from welcomemat.theme.rules import ThemeProblem

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
MAIN = '<main class="wm-main">'
EXAMPLE = load_theme(REPO_ROOT / "examples" / "theme")
CAMPAIGN, ZONE_CONTRACTS = example_inputs()
PERSONAL = make_zone_set(texts={"hero_headline": "Congrats on the Series A, Dymaxa"})

_TAG_NAMES = [
    "p", "a", "img", "div", "span", "b", "table", "td", "title", "meta", "link", "form", "script", "svg",
    "math", "noscript", "template", "iframe", "style", "object", "base", "textarea", "x-y", "plaintext",
]  # fmt: skip
_ATTRIBUTE_NAMES = [
    "class", "href", "src", "alt", "rel", "title", "target", "data-x", "name", "content", "charset",
    "onerror", "onclick", "style", "http-equiv", "referrerpolicy", "hidden", "srcset", "ping",
    "http&#45;equiv", "data-wm-zone",
]  # fmt: skip
_VALUES = [
    "x", "#top", "https://www.acmerevenue.example/", "https://other.example/", "javascript:alert(1)",
    "java&#x09;script:x", "refresh", "referrer", "unsafe-url", "viewport", "utf-8", "stylesheet",
    "0;url=http://other.example/", "{{ title }}", "{{ theme_url }}logo.svg", "{{ stylesheet }}",
    "{{ title|upper }}", "&colon;",
]  # fmt: skip
_LOOSE = [
    "<!--", "-->", "--!>", "<!-->", "<![CDATA[", "]]>", "<?", "</ ", "<!x", ">", "<", "&", "&amp;",
    "text", "{{ title }}", "{{ arm }}", "{{ title|truncate(9) }}", '"', "'", "=",
]  # fmt: skip

_name = st.sampled_from(_TAG_NAMES).flatmap(lambda n: st.sampled_from([n, n.upper(), n.title()]))
_attribute = st.builds(
    lambda sep, name, quote, value: f"{sep}{name}={quote}{value}{quote}" if value else f"{sep}{name}",
    st.sampled_from([" ", " ", "\t", "\n", "/", "\f"]),
    st.sampled_from(_ATTRIBUTE_NAMES),
    st.sampled_from(['"', '"', "'", ""]),
    st.sampled_from(["", *_VALUES]),
)
_start_tag = st.builds(
    lambda name, attributes, end: f"<{name}{''.join(attributes)}{end}>",
    _name,
    st.lists(_attribute, max_size=3),
    st.sampled_from(["", "", "/", " /"]),
)
# Valid theme bits, so that many generated themes pass and their pages get read.
_good_tag = st.builds(
    lambda name, attributes: f"<{name}{''.join(attributes)}>",
    st.sampled_from(["p", "div", "span", "b", "a", "img", "td", "small"]),
    st.lists(
        st.sampled_from(
            [
                ' class="x"', ' title="{{ title }}"', ' data-x="y"', ' href="#top"', ' alt=""',
                ' href="https://www.acmerevenue.example/"', ' lang="en"', ' title="{{ title|upper }}"',
            ]
        ),
        max_size=3,
        unique=True,
    ),
)  # fmt: skip
_piece = st.one_of(
    _good_tag,
    _good_tag,
    st.sampled_from(["text", "{{ title }}", "</p>", "</div>", "</a>"]),
    _start_tag,
    _name.map(lambda n: f"</{n}>"),
    st.sampled_from(_LOOSE),
)
_snippet = st.builds(
    lambda pieces, personal: (
        "{% if 'Congrats' in title %}" + "".join(pieces) + "{% endif %}" if personal else "".join(pieces)
    ),
    st.lists(_piece, max_size=8),
    st.booleans(),
)


def _accepted(snippet: str) -> Theme | None:
    """The theme with `snippet`, if validate and precompute's personal-page check both accept it."""
    try:
        theme = Theme.of(EXAMPLE.base_html.replace(MAIN, snippet + "\n" + MAIN), EXAMPLE.files)
        check_campaign_theme(theme, Path("theme"), CAMPAIGN, ZONE_CONTRACTS)
    except (ThemeProblem, ContractError, ValueError):
        return None
    _, check = account_page_check(theme, CAMPAIGN, ZONE_CONTRACTS)
    return theme if check(PERSONAL, NOW) is None else None


def _outside_the_allowlists(html: str) -> list[str]:
    """Every node of the browser's DOM of `html` that no theme may put on a page."""
    tree = html5lib.parse(html, namespaceHTMLElements=False)
    found = []
    for element in tree.iter():
        if not isinstance(element.tag, str):  # a comment (ElementTree.Comment) or the like
            found.append(f"comment {ElementTree.tostring(element)!r}")
            continue
        if element.tag not in ELEMENTS:
            found.append(f"<{element.tag}>")
        for name, value in element.attrib.items():
            if not attribute_allowed(element.tag, name, renderer_page=True):
                found.append(f"<{element.tag} {name}>")
            elif name in ("href", "src") and not (
                value.startswith(("#", "/")) or gate_link(value, CAMPAIGN_ALLOWLIST).allowed
            ):
                found.append(f"<{element.tag} {name}={value!r}>")
        if element.tag == "meta":
            names = set(element.attrib)
            if not (
                (names == {"charset"} and element.attrib["charset"].lower() == "utf-8")
                or (names == {"name", "content"} and element.attrib["name"].lower() in META_NAMES)
            ):
                found.append(f"<meta {element.attrib}>")
    return found


CAMPAIGN_ALLOWLIST = campaign_view(
    CAMPAIGN.tenant, CAMPAIGN.campaign, CAMPAIGN, ZONE_CONTRACTS, EXAMPLE, EXAMPLE.digest()
).allowlist


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_snippet)
def test_what_the_checks_accept_a_browser_parses_inside_the_allowlists(snippet: str) -> None:
    theme = _accepted(snippet)
    event("accepted" if theme is not None else "refused")
    if theme is None:
        return
    view = campaign_view(CAMPAIGN.tenant, CAMPAIGN.campaign, CAMPAIGN, ZONE_CONTRACTS, theme, theme.digest())
    renderer = PageRenderer(template_environment(), 8, RendererMetrics())
    for arm, zone_set in ((Arm.PERSONAL, PERSONAL), (Arm.ANONYMOUS, None)):
        for page_id in CAMPAIGN.pages:
            html = renderer.render(view, page_id, arm, zone_set, NOW).finish("nonce", "view")
            assert _outside_the_allowlists(html) == [], (snippet, html)


def test_the_property_sees_what_the_issue_hid() -> None:
    """The DOM walk itself finds the issue's refresh behind <!--> (what the checks must refuse)."""
    html = '<!doctype html><html><head><!--><meta http-equiv="refresh" content="0;url=http://other.example/">--></head></html>'
    found = _outside_the_allowlists(html)
    assert any("http-equiv" in f for f in found)
