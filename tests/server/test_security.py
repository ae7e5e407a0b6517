"""Security headers, trusted hosts, and the static rule that nothing marks record text safe."""

from __future__ import annotations

import re

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server.security import host_allowed
from tests.corpora import REPO_ROOT
from tests.server.conftest import BASE_URL, CAMPAIGN, renderer_app, renderer_settings
from welcomemat.campaign.contract import Campaign
from welcomemat.theme.folder import Theme
from welcomemat.theme.rules import ThemeProblem


def csp(response_headers: object) -> dict[str, str]:
    value = response_headers["content-security-policy"]  # type: ignore[index]
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] if " " in d else "" for d in value.split("; ")}


@pytest.mark.parametrize("path", [f"/c/{CAMPAIGN}", "/c/nope", "/q/garbage", "/healthz", "/nowhere"])
def test_every_response_has_the_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path, follow_redirects=False)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    policy = csp(response.headers)
    assert policy["default-src"] == "'none'"
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert re.fullmatch(r"'nonce-[A-Za-z0-9_-]{24}' 'strict-dynamic'", policy["script-src"])
    assert "unsafe-inline" not in response.headers["content-security-policy"]


@pytest.mark.parametrize("path", [f"/v1/zones?campaign={CAMPAIGN}", "/v1/zones", "/v1/nowhere"])
def test_json_api_answers_get_the_strictest_policy(client: TestClient, path: str) -> None:
    """Nothing under /v1/ is a document: no nonce, nothing may load, framing as configured."""
    response = client.get(path)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert response.headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"


def test_nonce_is_fresh_per_response(client: TestClient) -> None:
    nonces = {csp(client.get(f"/c/{CAMPAIGN}").headers)["script-src"] for _ in range(5)}
    assert len(nonces) == 5


def test_frame_ancestors_is_configurable(redis_client: redis.Redis, published: Campaign) -> None:
    app = renderer_app(
        renderer_settings(frame_ancestors="https://www.acmerevenue.example"), redis_client=redis_client
    )
    with TestClient(app, base_url=BASE_URL) as client:
        response = client.get(f"/c/{CAMPAIGN}")
    assert csp(response.headers)["frame-ancestors"] == "https://www.acmerevenue.example"
    assert "x-frame-options" not in response.headers


def test_https_public_url_adds_hsts(client: TestClient) -> None:
    assert client.get(f"/c/{CAMPAIGN}").headers["strict-transport-security"].startswith("max-age=")


def test_unknown_host_is_refused_but_probes_are_not(client: TestClient) -> None:
    assert client.get(f"/c/{CAMPAIGN}", headers={"Host": "evil.example"}).status_code == 400
    assert client.get("/q/anything", headers={"Host": "evil.example"}).status_code == 400
    for path in ("/healthz", "/metrics"):
        assert client.get(path, headers={"Host": "10.0.0.12:8000"}).status_code == 200


def test_a_refused_host_is_told_which_setting_lets_it_in_without_its_host_echoed(
    client: TestClient,
) -> None:
    refused = client.get(f"/c/{CAMPAIGN}", headers={"Host": "evil<script>.example"})
    assert refused.status_code == 400
    assert "WELCOMEMAT_ALLOWED_HOSTS" in refused.text and "WELCOMEMAT_PUBLIC_URL" in refused.text
    assert "evil" not in refused.text and refused.headers["content-type"].startswith("text/plain")


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
def test_a_renderer_configured_from_the_environment_serves_at_loopback_names(
    redis_client: redis.Redis, published: Campaign, host: str
) -> None:
    from welcomemat.settings import Settings

    env = {"WELCOMEMAT_PUBLIC_URL": "https://wm.example.com", "WELCOMEMAT_SECRET": "s" * 40}
    allowed = Settings.from_env(env).allowed_hosts
    app = renderer_app(renderer_settings(allowed_hosts=allowed), redis_client=redis_client)
    with TestClient(app, base_url=BASE_URL) as local:
        assert local.get(f"/c/{CAMPAIGN}", headers={"host": host}).status_code == 200
        assert local.get(f"/c/{CAMPAIGN}", headers={"host": "wm.example.com"}).status_code == 200
        assert local.get(f"/c/{CAMPAIGN}", headers={"host": "localhost.evil.example"}).status_code == 400


def test_host_verdicts_stay_right_after_many_unknown_hosts(client: TestClient) -> None:
    """Host verdicts are remembered in a bounded table: a flood of made-up Host headers
    neither lets one through nor locks the real host out."""
    for i in range(600):
        assert client.get(f"/c/{CAMPAIGN}", headers={"host": f"x{i}.evil.example"}).status_code == 400
    assert client.get(f"/c/{CAMPAIGN}").status_code == 200
    assert client.get(f"/c/{CAMPAIGN}", headers={"host": "x1.evil.example"}).status_code == 400
    assert client.get(f"/c/{CAMPAIGN}", headers={"host": "WM.EXAMPLE.COM:443"}).status_code == 200


def test_stylesheet_is_served_from_our_origin(client: TestClient) -> None:
    response = client.get("/static/welcomemat.css")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/css")
    assert ".wm-zone--hero_headline" in response.text


# -- static rules ---------------------------------------------------------------------------------

FORBIDDEN = [
    (re.compile(r"\|\s*safe\b"), "|safe"),
    (re.compile(r"\bMarkup\s*\("), "Markup("),
    (re.compile(r"autoescape\s*(?:=\s*)?false", re.IGNORECASE), "autoescape false"),
    (re.compile(r"\bautoescape\s*=\s*False"), "autoescape=False"),
    (re.compile(r"\|\s*safe_join|\bmark_safe\b|__html__"), "another way to mark text safe"),
    (re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write"), "HTML sinks in scripts"),
    (re.compile(r"\bstyle\s*="), "inline style (CSP: style-src 'self')"),
]


# Campaign themes (a folder a campaign.yaml names) are held to the same rules: the example's,
# and any other theme folder under examples/.
THEME_FOLDERS = sorted(
    p for p in (REPO_ROOT / "examples").rglob("*") if p.is_dir() and (p / "base.html").is_file()
)


def scanned_files() -> list[str]:
    files = sorted(
        str(p.relative_to(REPO_ROOT))
        for folder in ("templates", "server")
        for p in (REPO_ROOT / folder).rglob("*")
        if p.is_file() and p.suffix in (".html", ".py", ".js", ".txt", ".j2")
    )
    themes = sorted(
        str(p.relative_to(REPO_ROOT))
        for folder in THEME_FOLDERS
        for p in folder.iterdir()
        if p.is_file() and p.suffix in (".html", ".css", ".svg")
    )
    assert "templates/_zone.html" in files and "server/render.py" in files
    assert "examples/theme/base.html" in themes and "examples/theme/logo.svg" in themes
    return files + themes


@pytest.mark.parametrize("relative", scanned_files())
def test_nothing_marks_text_safe(relative: str) -> None:
    text = (REPO_ROOT / relative).read_text()
    for pattern, what in FORBIDDEN:
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            pytest.fail(f"{relative}:{line}: {what} is not allowed ({match.group(0)!r})")


SCAN_SAMPLES = [
    "{{ x|safe }}",
    "{{ x | safe }}",
    "Markup(text)",
    "{% autoescape false %}",
    "autoescape=False",
    "{{ x.__html__() }}",
    '<p style="color: red">',
]


def test_the_scan_catches_what_it_should() -> None:
    for sample in SCAN_SAMPLES:
        assert any(p.search(sample) for p, _ in FORBIDDEN), sample


@pytest.mark.parametrize("sample", SCAN_SAMPLES)
def test_a_theme_loaded_anywhere_is_refused_for_what_the_scan_refuses(sample: str) -> None:
    """The scan guards the repository; the theme rules guard what a campaign brings at load."""
    base = (REPO_ROOT / "examples" / "theme" / "base.html").read_text()
    with pytest.raises(ThemeProblem, match=r"^base\.html:\d+: "):
        Theme.of(base.replace("<main", f"{sample}\n<main"), {})


def test_jinja_autoescape_is_on_for_every_template(app: object) -> None:
    env = app.state.renderer.pages._env  # type: ignore[attr-defined]
    assert env.autoescape is True


_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
_NAME = st.lists(_LABEL, min_size=1, max_size=4).map(".".join)


@given(name=_NAME, other=_NAME, port=st.integers(1, 65535), upper=st.booleans())
def test_a_host_matches_with_or_without_its_port_in_any_case_and_nothing_else_does(
    name: str, other: str, port: int, upper: bool
) -> None:
    header = f"{name}:{port}" if port % 2 else name
    header = header.upper() if upper else header
    assert host_allowed(header.encode(), (name,))
    assert host_allowed(f"{other}:{port}".encode(), (name,)) == (other == name)
    assert host_allowed(f"{other}.{name}".encode(), (f"*.{name}",))
    assert not host_allowed(name.encode(), (f"*.{name}",))  # subdomains only
    assert not host_allowed(f"{name}:port".encode(), (name,))
