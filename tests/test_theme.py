"""A campaign's theme folder: `welcomemat validate` (and precompute) refuse every broken rule,
naming the file and line; the example theme keeps them all."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli.validate import validate_inputs
from precompute.inputs import load_campaign_inputs
from server.render import check_campaign_theme
from tests.corpora import REPO_ROOT
from welcomemat.errors import ContractError, InputError
from welcomemat.theme.folder import Theme, load_theme
from welcomemat.theme.rules import MAX_ASSET_BYTES, MAX_THEME_BYTES, MAX_THEME_FILES, ThemeProblem

EXAMPLES = REPO_ROOT / "examples"
ZONES = str(REPO_ROOT / "zones")
MAIN = '<main class="wm-main">'  # a line of examples/theme/base.html
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def themed_campaign(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the example campaign and its theme: (campaign.yaml, theme folder)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / "campaign.yaml", tmp_path / "campaign.yaml")
    shutil.copytree(EXAMPLES / "theme", tmp_path / "theme")
    return tmp_path / "campaign.yaml", tmp_path / "theme"


def inject(theme: Path, text: str) -> int:
    """Put `text` on a line of its own before the <main> line of base.html; its line number."""
    base = theme / "base.html"
    lines = base.read_text().split("\n")
    at = lines.index(MAIN)
    lines.insert(at, text)
    base.write_text("\n".join(lines))
    return at + 1


def refusal(campaign: Path) -> InputError:
    """The one problem precompute's loader (and so `validate`) finds with the campaign's theme."""
    with pytest.raises(ContractError) as caught:
        load_campaign_inputs(campaign, ZONES, None, check_campaign_theme)
    (problem,) = getattr(caught.value, "problems", (caught.value,))
    return problem


def test_example_theme_validates() -> None:
    report = validate_inputs(EXAMPLES / "campaign.yaml", None, zones=ZONES, tenant_policy=None)
    assert report.ok and report.check.campaign is not None and report.check.campaign.theme == "./theme"
    theme = report.check.theme
    assert theme is not None and sorted(theme.files) == ["acme.css", "logo.svg"]
    assert report.as_dict()["theme"] == {"folder": "./theme", "files": ["base.html", "acme.css", "logo.svg"]}


# (text put on its own line of base.html, what the refusal says)
TEMPLATE_BREAKS = [
    ("<p>{{ title|safe }}</p>", "uses |safe, which themes may not"),
    ("<p>{{ title | safe }}</p>", "uses |safe, which themes may not"),
    ("{% filter safe %}<b>x</b>{% endfilter %}", "uses {% filter safe %}, which themes may not"),
    ("<p>{{ Markup(title) }}</p>", "uses Markup(, which themes may not"),
    ("{% autoescape false %}{{ title }}{% endautoescape %}", "autoescape, which is always on"),
    ("<p>{{ title.__html__() }}</p>", "marks text safe"),
    ("<script>alert(1)</script>", "has a <script>, which themes may not"),
    ('<script nonce="{{ csp_nonce }}" src="/x.js"></script>', "has a <script>"),
    ("<style>body { color: red }</style>", "has a <style> element"),
    ('<p style="color: red">x</p>', "has a style attribute"),
    ('<img src="{{ theme_url }}logo.svg" onerror="alert(1)">', "event handler attribute"),
    ('<a href="javascript:alert(1)">x</a>', "javascript: URL"),
    ('{% include "_zone.html" %}', "pulls in another template"),
    ('{% import "x.html" as x %}', "pulls in another template"),
    ('<p data-n="{{ csp_nonce }}"></p>', "uses csp_nonce, which themes may not (no scripts in a theme)"),
    ("<p>{{ zones }}</p>", "uses zones, which themes may not"),
    ("<p>{{ title|urlize }}</p>", "uses |urlize, which themes may not"),
    ("{% for x in [1, 2] %}<p>x</p>{% endfor %}", "uses {% for %}, which themes may not"),
    ("{% set x = 1 %}", "uses {% set %}, which themes may not"),
    ("<p>{{ title.upper() }}</p>", "which themes may not"),
    ("<p>{{ lipsum() }}</p>", "uses a call"),
    ("<p>{{ title[0] }}</p>", "uses item access"),
    ("<{{ arm }} class=x>", "builds a tag or attribute name from {{ }}"),
    ('<p {{ arm }}="x">', "builds a tag or attribute name from {{ }}"),
    ("<p class={{ arm }}>", "unquoted attribute value"),
    ('<iframe src="#top"></iframe>', "has <iframe>, which themes may not"),
    ('<form action="#x"></form>', "has <form>, which themes may not"),
    ('<base href="#x">', "has <base>, which themes may not"),
    ('<meta http-equiv="refresh" content="0">', "has <meta http-equiv>"),
    ('<link rel="preload" href="{{ theme_url }}acme.css">', "themes link"),
    ('<a href="https://evil.example/">x</a>', "the campaign's URL gate refuses (host_not_allowlisted)"),
    ('<a href="http://www.acmerevenue.example/">x</a>', "the campaign's URL gate refuses"),
    (
        '<img src="https://www.acmerevenue.example/logo.png">',
        'has src="https://www.acmerevenue.example/logo.png"',
    ),
    ('<img src="{{ theme_url }}missing.png">', 'has src="{{ theme_url }}missing.png"'),
    ('<a href="{{ title }}">x</a>', 'has href="{{ title }}"'),
    ('<img srcset="{{ theme_url }}logo.svg 1x">', "has srcset"),
    ("{% if %}", "is not a valid template"),
]


@pytest.mark.parametrize(("text", "says"), TEMPLATE_BREAKS, ids=[t for t, _ in TEMPLATE_BREAKS])
def test_validate_refuses_a_template_break_with_file_and_line(tmp_path: Path, text: str, says: str) -> None:
    campaign, theme = themed_campaign(tmp_path)
    line = inject(theme, text)
    error = refusal(campaign)
    assert (error.file, error.line) == (str(theme / "base.html"), line), str(error)
    assert says in error.message
    assert str(error).startswith(f"{theme}/base.html:{line}: ")


def test_validate_refuses_a_theme_without_its_content_block(tmp_path: Path) -> None:
    campaign, theme = themed_campaign(tmp_path)
    base = theme / "base.html"
    base.write_text(base.read_text().replace("{% block content %}{% endblock %}", ""))
    error = refusal(campaign)
    assert error.file == str(base) and "has no {% block content %}" in error.message


def test_validate_refuses_zones_that_do_not_always_render(tmp_path: Path) -> None:
    campaign, theme = themed_campaign(tmp_path)
    base = theme / "base.html"
    text = base.read_text()
    line = text[: text.index("{% block content %}")].count("\n") + 1
    base.write_text(
        text.replace(
            "{% block content %}{% endblock %}",
            '{% if arm == "personal" %}{% block content %}{% endblock %}{% endif %}',
        )
    )
    error = refusal(campaign)
    assert (error.file, error.line) == (str(base), line) and "inside {% if %}" in error.message


def test_validate_renders_the_pages_and_finds_every_zone(tmp_path: Path) -> None:
    """A content block whose zones no browser would show (text of a <title>) is caught by the render."""
    campaign, theme = themed_campaign(tmp_path)
    base = theme / "base.html"
    block = "{% block content %}{% endblock %}"
    base.write_text(base.read_text().replace(block, f"<title>{block}</title>"))
    error = refusal(campaign)
    assert error.file == str(base)
    assert "the landing page renders without its zone 'hero_headline'" in error.message


def test_validate_requires_the_renderers_stylesheet(tmp_path: Path) -> None:
    campaign, theme = themed_campaign(tmp_path)
    base = theme / "base.html"
    base.write_text(base.read_text().replace('<link rel="stylesheet" href="{{ stylesheet }}">\n', ""))
    error = refusal(campaign)
    assert error.file == str(base) and "does not link the renderer's stylesheet" in error.message


# (file name, content, line or None, what the refusal says)
FILE_BREAKS: list[tuple[str, bytes, int | None, str]] = [
    ("landing.html", b"<p>x</p>", None, "a theme overrides base.html only"),
    ("_zone.html", b"<p>x</p>", None, "a theme overrides base.html only"),
    ("notes.txt", b"x", None, "is not a file a theme may hold"),
    ("logo.bmp", b"BM", None, "is not a file a theme may hold"),
    ("x.css", b"body { color: red !important; }", 1, "uses !important"),
    ("x.css", b"\n@import url(acme.css);", 2, "uses @import"),
    (
        "x.css",
        b"body {\n  background: url(https://cdn.example/bg.png);\n}",
        2,
        "url(https://cdn.example/bg.png)",
    ),
    ("x.css", b"@font-face { src: url('brand.woff2'); }", 1, "url(brand.woff2) is not a file of this theme"),
    ("x.css", b"a { color: red; }\n}\n.wm-zone { min-height: 0 }", 2, "closes a block that was never opened"),
    ("x.css", b"a { color: red;\n", 1, "never closed"),  # the line the block opens on
    ("x.css", b'a { content: "}" }\n/* open', 2, "a comment is never closed"),
    ("x.css", b"a { width: expression(alert(1)) }", 1, "script-like CSS"),
    ("x.css", b"\xff\xfe", None, "is not UTF-8"),
    ("x.svg", b"<svg>\n<script>alert(1)</script></svg>", 2, "has a <script>"),
    ("x.svg", b'<svg onload="alert(1)"></svg>', 1, "event handler"),
    ("x.svg", b'<svg><image href="https://evil.example/x.png"/></svg>', 1, "links outside the file"),
    ("x.svg", b'<svg><use xlink:href="other.svg#a"/></svg>', 1, "links outside the file"),
    ("x.svg", b"<!DOCTYPE svg [<!ENTITY x 'y'>]><svg></svg>", 1, "DOCTYPE or entities"),
    ("x.svg", b"<svg><foreignObject><p>x</p></foreignObject></svg>", 1, "foreignObject"),
    ("x.svg", b"<html></html>", None, "is not an SVG image"),
    ("x.png", b"GIF89a....", None, "is not a PNG file"),
    ("x.jpg", PNG, None, "is not a JPG file"),
    ("x.woff2", b"wOFF....", None, "is not a WOFF2 file"),
    ("x.webp", b"RIFF\0\0\0\0WAVE", None, "is not a WEBP file"),
    ("big.png", PNG + b"\0" * MAX_ASSET_BYTES, None, f"at most {MAX_ASSET_BYTES}"),
]


@pytest.mark.parametrize(
    ("name", "content", "line", "says"), FILE_BREAKS, ids=[f"{b[0]}-{b[3]}" for b in FILE_BREAKS]
)
def test_validate_refuses_a_broken_theme_file(
    tmp_path: Path, name: str, content: bytes, line: int | None, says: str
) -> None:
    campaign, theme = themed_campaign(tmp_path)
    (theme / name).write_bytes(content)
    error = refusal(campaign)
    assert (error.file, error.line) == (str(theme / name), line), str(error)
    assert says in error.message


def test_good_files_of_every_kind_load(tmp_path: Path) -> None:
    _, theme = themed_campaign(tmp_path)
    (theme / "brand.woff2").write_bytes(b"wOF2" + b"\0" * 16)
    (theme / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 16)
    (theme / "mark.webp").write_bytes(b"RIFF\0\0\0\0WEBPVP8 ")
    (theme / "mark.gif").write_bytes(b"GIF89a" + b"\0" * 8)
    (theme / "fonts.css").write_text(
        '@font-face { font-family: Brand; src: url("brand.woff2") format("woff2"); }\n'
        "/* a } in a comment and a { in a string do not count */\n"
        '.acme-footer::after { content: "{"; background: url(mark.gif); }\n'
        "@media (min-width: 40rem) { .acme-header { background-image: url(photo.jpg); } }\n"
    )
    (theme / "icon.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><use href="#a"/></svg>')
    (theme / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")  # ignored, like any dotfile
    loaded = load_theme(theme)
    assert sorted(loaded.files) == sorted(
        ["acme.css", "logo.svg", "brand.woff2", "photo.jpg", "mark.webp", "mark.gif", "fonts.css", "icon.svg"]
    )


def test_the_theme_as_a_whole_is_limited(tmp_path: Path) -> None:
    campaign, theme = themed_campaign(tmp_path)
    chunk = PNG + b"\0" * (MAX_ASSET_BYTES - len(PNG))
    for i in range(MAX_THEME_BYTES // MAX_ASSET_BYTES):
        (theme / f"photo{i}.png").write_bytes(chunk)
    error = refusal(campaign)
    assert error.file == str(theme) and f"at most {MAX_THEME_BYTES}" in error.message

    campaign, theme = themed_campaign(tmp_path / "many")
    for i in range(MAX_THEME_FILES):
        (theme / f"dot{i}.png").write_bytes(PNG)
    error = refusal(campaign)
    assert error.file == str(theme) and f"at most {MAX_THEME_FILES} files" in error.message


def test_a_theme_is_one_flat_folder_of_plain_files(tmp_path: Path) -> None:
    campaign, theme = themed_campaign(tmp_path)
    (theme / "fonts").mkdir()
    error = refusal(campaign)
    assert error.file == str(theme / "fonts") and "no subfolders" in error.message

    campaign, theme = themed_campaign(tmp_path / "linked")
    (theme / "secret.css").symlink_to(REPO_ROOT / "pyproject.toml")
    error = refusal(campaign)
    assert error.file == str(theme / "secret.css") and "no subfolders or links" in error.message

    campaign, theme = themed_campaign(tmp_path / "bare")
    (theme / "base.html").unlink()
    error = refusal(campaign)
    assert error.file == str(theme) and "holds its own base.html" in error.message


def test_a_missing_theme_folder_is_the_campaign_files_problem(tmp_path: Path) -> None:
    campaign, theme = themed_campaign(tmp_path)
    shutil.rmtree(theme)
    text = campaign.read_text()
    line = text[: text.index("theme: ./theme")].count("\n") + 1
    error = refusal(campaign)
    assert (error.file, error.line, error.field) == (str(campaign), line, "theme")
    assert "theme folder './theme' not found" in error.message


def test_stored_theme_is_checked_again_when_decoded() -> None:
    """The renderer decodes the stored theme through the same model: the file rules run again."""
    stored = load_theme(EXAMPLES / "theme").model_dump(mode="json")
    assert Theme.model_validate(stored) == load_theme(EXAMPLES / "theme")
    stored["files"]["evil.svg"] = base64.b64encode(b"<svg><script>alert(1)</script></svg>").decode()
    with pytest.raises(ThemeProblem, match=r"evil\.svg:1: has a <script>"):
        Theme.model_validate(stored)


def test_digest_changes_with_any_file() -> None:
    theme = load_theme(EXAMPLES / "theme")
    other = Theme.of(theme.base_html, {**theme.files, "acme.css": theme.files["acme.css"] + b"\n"})
    assert theme.digest() != other.digest() and re.fullmatch(r"[0-9a-f]{16}", theme.digest())


def test_validate_and_precompute_refuse_on_the_command_line(tmp_path: Path) -> None:
    """Exit 2 and the file:line message, before anything is published (no Redis needed)."""
    campaign, theme = themed_campaign(tmp_path)
    line = inject(theme, '<p data-n="{{ csp_nonce }}"></p>')  # a rule only the renderer's check knows
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text('{"account_id": "a1", "name": "A", "domain": "a.com", "segment": "saas-mid"}\n')
    env = {
        "PATH": "/usr/bin:/bin",
        "WELCOMEMAT_HOME": str(tmp_path / "home"),
        "REDIS_URL": "redis://127.0.0.1:9/0",
    }
    for args in (["validate", str(campaign)], ["precompute", str(campaign), str(accounts)]):
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", *args, "--zones", ZONES],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env=env,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert f"{theme}/base.html:{line}: uses csp_nonce, which themes may not" in result.stderr


def test_documented_refusals_are_what_validate_says(tmp_path: Path) -> None:
    """Own branding (docs/campaigns.md) shows two refusals: each is reproduced on the example theme."""
    doc = (REPO_ROOT / "docs" / "campaigns.md").read_text()
    shown = re.findall(r"^examples/theme/(\S+?):(\d+): (.+)$", doc, flags=re.MULTILINE)
    assert len(shown) == 2
    for name, line, message in shown:
        campaign, theme = themed_campaign(tmp_path / name)
        path = theme / name
        lines = path.read_text().split("\n")
        at = int(line) - 1
        if name.endswith(".html"):  # the first {{ variable }} on that line, marked |safe
            lines[at] = lines[at].replace(" }}", "|safe }}", 1)
        else:  # the first declaration on that line, marked !important
            lines[at] = lines[at].replace(";", " !important;", 1)
        path.write_text("\n".join(lines))
        assert str(refusal(campaign)) == f"{path}:{line}: {message}"
