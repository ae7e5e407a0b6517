"""Theme stylesheets read as a browser reads them (tinycss2), and rules that would hide a zone refused.

The corpora are data (`theme_css/hostile.jsonl`, `theme_css/accepted.jsonl`: name, why, the
stylesheet, and for a hostile one what the refusal says and on which line). Each hostile
stylesheet, added to a copy of the example theme as `extra.css`, makes `welcomemat validate`
exit 2 naming `extra.css` and the line; the escape, form-feed and comment tricks among them
passed the regex rules this check replaced. Each accepted one validates, and
`tests/browser/test_theme_css.py` shows every zone visible under it in Chromium.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import tinycss2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from tests.corpora import REPO_ROOT
from welcomemat.theme.css import custom_properties, stylesheet_problem
from welcomemat.theme.frame import zone_frame
from welcomemat.theme.rules import theme_problem

CORPUS = Path(__file__).parent / "theme_css"
EXAMPLE_THEME = REPO_ROOT / "examples" / "theme"
BASE_HTML = (EXAMPLE_THEME / "base.html").read_text()
EXAMPLE_FILES = {p.name: p.read_bytes() for p in EXAMPLE_THEME.iterdir() if p.name != "base.html"}
EXTRA_LINK = '<link rel="stylesheet" href="{{ theme_url }}acme.css">'


def corpus(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / f"{name}.jsonl").read_text().splitlines() if line]


HOSTILE = corpus("hostile")
ACCEPTED = corpus("accepted")


def themed_base(entry: dict[str, Any]) -> str:
    """The example base.html, linking extra.css, with the entry's change to the frame (if any)."""
    base = BASE_HTML.replace(
        EXTRA_LINK, EXTRA_LINK + '\n<link rel="stylesheet" href="{{ theme_url }}extra.css">'
    )
    if "base" in entry:
        old, new = entry["base"]
        assert old in base
        base = base.replace(old, new)
    return base


def write_campaign(tmp_path: Path, entry: dict[str, Any]) -> tuple[Path, Path]:
    """A copy of the example campaign and theme with the entry's stylesheet: (campaign.yaml, extra.css)."""
    shutil.copy(REPO_ROOT / "examples" / "campaign.yaml", tmp_path / "campaign.yaml")
    theme = tmp_path / "theme"
    shutil.copytree(EXAMPLE_THEME, theme)
    (theme / "base.html").write_text(themed_base(entry))
    (theme / "extra.css").write_bytes(entry["css"].encode())
    return tmp_path / "campaign.yaml", theme / "extra.css"


def test_the_corpora_are_big_enough_and_named_once() -> None:
    assert len(HOSTILE) >= 60 and len(ACCEPTED) >= 20
    names = [e["name"] for e in HOSTILE + ACCEPTED]
    assert len(names) == len(set(names))
    assert all(e["why"] for e in HOSTILE + ACCEPTED)


@pytest.mark.parametrize("entry", HOSTILE, ids=[e["name"] for e in HOSTILE])
def test_validate_refuses_each_hostile_stylesheet_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: dict[str, Any]
) -> None:
    campaign, css = write_campaign(tmp_path, entry)
    code = main(["validate", str(campaign), "--zones", str(REPO_ROOT / "zones")])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2, text
    assert f"{css}:{entry['line']}: " in text and entry["says"] in text, text
    assert "Traceback" not in text


@pytest.mark.parametrize("entry", ACCEPTED, ids=[e["name"] for e in ACCEPTED])
def test_accepted_stylesheets_keep_every_rule(entry: dict[str, Any]) -> None:
    assert theme_problem(themed_base(entry), {**EXAMPLE_FILES, "extra.css": entry["css"].encode()}) is None


def test_the_example_theme_validates_and_precompute_refuses_a_hostile_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zones = str(REPO_ROOT / "zones")
    assert main(["validate", str(REPO_ROOT / "examples" / "campaign.yaml"), "--zones", zones]) == 0
    capsys.readouterr()
    entry = next(e for e in HOSTILE if e["name"] == "opacity-font-size-body")
    campaign, css = write_campaign(tmp_path, entry)
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text('{"account_id": "a1", "name": "A", "domain": "a.com", "segment": "saas-mid"}\n')
    code = main(["precompute", str(campaign), str(accounts), "--zones", zones])
    assert code == 2 and f"{css}:1: sets opacity" in capsys.readouterr().err


FRAME = zone_frame(BASE_HTML)
NAMES = frozenset({"acme.css", "logo.svg"})


def check(css: str) -> tuple[int, str] | None:
    return stylesheet_problem(css, NAMES, FRAME, custom_properties([css]))


def test_what_the_frame_holds_comes_from_the_themes_base_html() -> None:
    """The elements around a zone are the theme's: its wrapper class counts, its footer does not."""
    wrapped = zone_frame(
        BASE_HTML.replace('<main class="wm-main">', '<div class="acme-wrap"><main class="wm-main">')
    )
    rule = ".acme-wrap { display: none }"
    assert check(rule) is None
    assert stylesheet_problem(rule, NAMES, wrapped, {}) is not None
    assert check(".acme-footer p { display: none }") is None
    assert check(".acme-footer p, main p { display: none }") is not None
    assert check("header + main .wm-zone--proof { display: none }") is not None
    assert check(".wm-zone::after { display: none }") is None  # a pseudo-element is not the zone


def test_a_var_is_read_as_every_value_the_theme_gives_it() -> None:
    assert check(":root { --ink: #14213d } .wm-zone { color: var(--ink) }") is None
    assert (
        check(":root { --ink: #14213d } .x { --ink: transparent } .wm-zone { color: var(--ink) }") is not None
    )
    assert check(".wm-zone { color: var(--unset, rgb(0 0 0 / 0.1)) }") is not None
    assert check(".wm-zone { color: var(--never-set) }") is None  # unset: inherits a checked colour
    loop = ":root { --a: var(--b); --b: var(--a) } .wm-zone { opacity: var(--a) }"
    assert check(loop) is not None


# Fragments a stylesheet is made of, hostile ones included: random soups of them.
FRAGMENTS = [
    "a",
    ".wm-zone",
    "main",
    ".acme-x",
    "*",
    ":is(",
    ":where(",
    "::before",
    "&",
    ">",
    "+",
    "~",
    ",",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ":",
    "!",
    "important",
    "!important",
    "\\69mportant",
    "/*",
    "*/",
    '"',
    "'",
    "\f",
    "\r",
    "\n",
    " ",
    "\\",
    "@import",
    "@\\69mport",
    "@media",
    "@layer",
    "url(",
    "u\\72l(",
    "acme.css",
    "https://x.example/a.png",
    "opacity",
    "0",
    "1",
    "display",
    "none",
    "font-size",
    "var(--x)",
    "--x",
    "image-set(",
    "src(",
    "@font-face",
    "@keyframes",
    "-9999px",
    "#0000",
]


def _accepted_tokens_are_safe(css: str) -> None:
    """What the check accepts: closed blocks, no decoded !important or @import, no foreign url."""
    served = tinycss2.parse_stylesheet("@layer theme {\n" + css + "\n}\nwm-after{}", skip_whitespace=True)
    kinds = [(type(r).__name__, getattr(r, "lower_at_keyword", None)) for r in served]
    assert kinds == [("AtRule", "layer"), ("QualifiedRule", None)], kinds  # nothing stepped out

    def walk(tokens: list[Any]) -> None:
        previous = None
        for t in tokens:
            if t.type in ("whitespace", "comment"):
                continue
            assert not (t.type == "at-keyword" and t.lower_value == "import")
            assert not (t.type == "ident" and t.lower_value == "important" and previous == "!")
            if t.type == "url":
                assert t.value in NAMES
            if t.type == "function" and t.lower_name in ("url", "src"):
                assert [a.value for a in t.arguments if a.type == "string"] in (["acme.css"], ["logo.svg"])
            previous = t.value if t.type == "literal" else None
            inner = getattr(t, "arguments", None) or getattr(t, "content", None)
            if isinstance(inner, list):
                walk(inner)

    walk(tinycss2.parse_component_value_list(css))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_random_token_soups_never_crash_and_what_passes_is_safe(css: str) -> None:
    problem = check(css)
    if problem is None:
        _accepted_tokens_are_safe(css)
    else:
        line, message = problem
        assert 1 <= line <= css.count("\n") + css.count("\r") + css.count("\f") + 2 and message


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_never_crashes_the_check(css: str) -> None:
    problem = check(css)
    if problem is None:
        _accepted_tokens_are_safe(css)


def test_deep_or_wide_shapes_are_refused_or_read_without_blowing_up() -> None:
    """Nesting past the limits is refused by name (it once raised RecursionError); wide input stays cheap."""
    deep_css = "a { b: " + "(" * 5000 + ")" * 5000 + " }"
    assert check(deep_css) == (1, "nests blocks, brackets or functions more than 32 deep")
    assert check(":is(" * 3000 + "main" + ")" * 3000 + " { display: none }") is not None
    assert check(":is(" * 30 + "main" + ")" * 30 + " { display: none }") is not None  # once exponential
    assert check(":is(" * 30 + ".acme-x" + ")" * 30 + " { display: none }") is None
    deep_base = BASE_HTML.replace('<main class="wm-main">', "<div>" * 3000 + '<main class="wm-main">')
    problem = theme_problem(deep_base, {**EXAMPLE_FILES, "extra.css": b".acme-x { color: red }"})
    assert problem is not None and problem.file == "base.html" and "more than 48 elements" in problem.message
    # `{{ … }}` in a class is read as any text, without a backtracking pattern (once minutes long).
    wild = zone_frame(BASE_HTML.replace('<main class="wm-main">', '<main class="{{ a }}{{ b }}{{ c }}x">'))
    assert stylesheet_problem("." + "a" * 5000 + " { display: none }", NAMES, wild, {}) is None
    assert stylesheet_problem("." + "a" * 5000 + "x { display: none }", NAMES, wild, {}) is not None


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<div>",
                "</div>",
                "<b class='k'>",
                "</b>",
                "<p>",
                "</p>",
                "<table>",
                "<td>",
                "{{ x }}",
                "{% if a %}",
                "{% endif %}",
                "<main class='{{ y }}k'>",
                "{% block content %}{% endblock %}",
                "<!--",
                "-->",
                "<svg>",
                "<select>",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_any_base_html_frames_without_crashing(base: str) -> None:
    frame = zone_frame(base)
    assert frame.paths, "the zones are always somewhere in the frame"
    assert stylesheet_problem("* { opacity: 0 }", NAMES, frame, {}) is not None
    stylesheet_problem(".k { display: none }", NAMES, frame, {})
