"""`GET /snippet.js`: small, the same bytes for all, the hash the docs pin, nothing strict CSP forbids."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess

import pytest
from starlette.testclient import TestClient

from server.snippet import sri_hash
from tests.corpora import REPO_ROOT

SNIPPET_FILE = REPO_ROOT / "templates" / "static" / "snippet.js"
SNIPPET_DOC = REPO_ROOT / "docs" / "renderer.md"


def test_snippet_is_served_with_its_caching_and_cross_origin_headers(client: TestClient) -> None:
    response = client.get("/snippet.js")
    assert response.status_code == 200
    assert response.content == SNIPPET_FILE.read_bytes()
    assert response.headers["content-type"] == "text/javascript; charset=utf-8"
    assert response.headers["cache-control"] == "public, max-age=300"
    assert response.headers["cross-origin-resource-policy"] == "cross-origin"
    # `<script crossorigin="anonymous" integrity=...>` is a CORS fetch: it needs the grant, never credentials.
    assert response.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in response.headers
    assert "set-cookie" not in response.headers
    assert re.fullmatch(r'"[0-9a-f]{32}"', response.headers["etag"])


def test_the_same_bytes_whatever_the_request(client: TestClient) -> None:
    plain = client.get("/snippet.js")
    for headers in (
        {"accept-encoding": "gzip, br"},
        {"origin": "https://evil.example", "cookie": "wm_q4-pipeline=x"},
        {"user-agent": "Googlebot/2.1", "accept": "text/html"},
    ):
        other = client.get("/snippet.js", headers=headers)
        assert other.content == plain.content and other.headers["etag"] == plain.headers["etag"]
        assert "content-encoding" not in other.headers
    assert client.get("/snippet.js?v=2").content == plain.content


def test_a_matching_etag_is_304(client: TestClient) -> None:
    etag = client.get("/snippet.js").headers["etag"]
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        response = client.get("/snippet.js", headers={"if-none-match": header})
        assert response.status_code == 304 and response.content == b""
    assert client.get("/snippet.js", headers={"if-none-match": '"other"'}).status_code == 200


def test_the_docs_pin_the_hash_of_the_served_file(client: TestClient) -> None:
    served = client.get("/snippet.js").content
    integrity = sri_hash(served)
    doc = SNIPPET_DOC.read_text()
    assert f'integrity="{integrity}"' in doc, f"docs/renderer.md must show the snippet's hash {integrity}"
    embed = re.search(r"<script async src=\"[^\"]+/snippet\.js\"[^>]*>", doc)
    assert embed is not None
    for attribute in (f'integrity="{integrity}"', 'crossorigin="anonymous"', "data-wm-campaign="):
        assert attribute in embed.group(0)


def test_snippet_is_at_most_2_kb_gzipped() -> None:
    size = len(gzip.compress(SNIPPET_FILE.read_bytes(), compresslevel=9))
    assert size <= 2048, f"snippet.js is {size} bytes gzipped"


FORBIDDEN = [
    (r"\beval\s*\(", "eval"),
    (r"\bnew\s+Function\b|\bFunction\s*\(", "new Function"),
    (r"\binnerHTML\b|\bouterHTML\b", "innerHTML"),
    (r"\binsertAdjacentHTML\b|\bcreateContextualFragment\b", "insertAdjacentHTML"),
    (r"\bdocument\s*\.\s*write", "document.write"),
    (r"setAttribute\s*\(\s*[\"'](?:style|on)", "setAttribute style/on*"),
    (r"\.\s*cssText\b|\.\s*on[a-z]+\s*=", "inline style text or on* handler property"),
    (r"set(?:Timeout|Interval)\s*\(\s*[\"'`]", "a string timer (eval)"),
    (r"\bimport\s*\(|\brequire\s*\(", "module loading (no dependencies)"),
]


@pytest.mark.parametrize(("pattern", "what"), FORBIDDEN, ids=[w for _, w in FORBIDDEN])
def test_snippet_uses_nothing_a_strict_csp_or_safe_dom_forbids(pattern: str, what: str) -> None:
    source = SNIPPET_FILE.read_text()
    assert re.search(pattern, source) is None, f"snippet.js uses {what}"


def test_snippet_writes_text_only_through_textContent_and_hides_with_cssom() -> None:
    source = SNIPPET_FILE.read_text()
    assert "textContent" in source
    assert 'style.visibility = "hidden"' in source
    assert "navigator.sendBeacon" in source and '"text/plain"' in source
    assert "document.currentScript" in source


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_snippet_is_valid_javascript() -> None:
    node = shutil.which("node")
    assert node is not None
    result = subprocess.run([node, "--check", str(SNIPPET_FILE)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
