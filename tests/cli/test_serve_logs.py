"""`welcomemat serve`'s logs never carry a credential: link, QR, click and invite tokens are
redacted from every access line, whatever the stack or the number of workers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import httpx
import pytest
import redis
from hypothesis import example, given
from hypothesis import strategies as st

from server.log_redaction import REDACTED, redacted_target
from tests.corpora import REPO_ROOT
from tests.ports import free_port
from tests.serve_process import serve_env, wait_until_answering
from tests.server.conftest import CAMPAIGN, SECRET, example_inputs, publish_config

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
# Each looks like nothing else in a log: if any part of one shows, a token leaked.
SECRETS = {
    f"/c/{CAMPAIGN}?wm=SECRETLINKzq1": f"/c/{CAMPAIGN}?{REDACTED}",
    "/q/SECRETQRzq2": f"/q/{REDACTED}",
    "/r/SECRETCLICKzq3?u=SECRETQUERYzq4": f"/r/{REDACTED}?{REDACTED}",
    "/admin/sign-in/SECRETINVITEzq5": f"/admin/sign-in/{REDACTED}",
    f"/c/{CAMPAIGN}/continue?wm=SECRETLINKzq6&utm=x": f"/c/{CAMPAIGN}/continue?{REDACTED}",
}


@pytest.mark.parametrize(
    "flags", [(), ("--http", "h11"), ("--workers", "2")], ids=["fast", "h11", "2-workers"]
)
def test_no_token_reaches_the_access_log(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis, flags: tuple[str, ...]
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    port = free_port()
    env = serve_env(tmp_path, REDIS_URL=redis_url, WELCOMEMAT_SECRET=SECRET)
    process = subprocess.Popen(
        [WELCOMEMAT, "serve", "--port", str(port), *flags],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until_answering(process, f"http://127.0.0.1:{port}/healthz")
        for target in SECRETS:
            for _ in range(3):  # with two workers, each may take some
                httpx.get(f"http://127.0.0.1:{port}{target}", timeout=5)
    finally:
        process.terminate()
        out = process.communicate(timeout=20)[0].decode()
    assert f'"GET /q/{REDACTED} HTTP/1.1"' in out  # the lines are there, the tokens are not
    for shown in SECRETS.values():
        assert f'"GET {shown} HTTP/1.1"' in out
    assert "SECRET" not in out and "zq" not in out


# A path segment as a token is one: no separator, no percent sign (tokens are base64url).
_SEGMENT = st.text(st.characters(blacklist_characters="/?#%", blacklist_categories=("Cs",)), min_size=1)


@given(
    prefix=st.sampled_from(["/q/", "/r/", "/admin/sign-in/"]), token=_SEGMENT, rest=st.text(), query=st.text()
)
def test_a_path_token_and_any_query_are_replaced_and_nothing_else(
    prefix: str, token: str, rest: str, query: str
) -> None:
    tail = "/" + rest.replace("?", "") if rest else ""
    shown = redacted_target(f"{prefix}{token}{tail}?{query}")
    assert shown == f"{prefix}{REDACTED}{unquote(tail)}?{REDACTED}"  # shown decoded, as routed


@example(path="/c/q4%2Fcontinue")
@given(path=st.text().map(lambda t: "/" + t.replace("?", "")))
def test_other_paths_keep_their_path_and_lose_only_their_query(path: str) -> None:
    if path.startswith(("/q/", "/r/", "/admin/sign-in/")):
        return
    if unquote(path).startswith(("/q/", "/r/", "/admin/sign-in/")):
        return  # an encoded token route: the test above
    assert redacted_target(path) == unquote(path)
    assert redacted_target(path + "?wm=abc") == f"{unquote(path)}?{REDACTED}"


@given(prefix=st.sampled_from(["/q/", "/r/", "/admin/sign-in/"]), token=_SEGMENT)
def test_a_percent_encoded_route_is_redacted_as_the_router_reads_it(prefix: str, token: str) -> None:
    encoded = "".join(f"%{ord(c):02X}" if c.isalpha() else c for c in prefix)
    assert redacted_target(f"{encoded}{token}") == f"{prefix}{REDACTED}"
