"""`welcomemat link` and `welcomemat serve` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import redis

from tests.corpora import REPO_ROOT
from tests.server.conftest import CAMPAIGN, SECRET, TENANT, example_inputs, publish_config
from welcomemat.tokens import TokenKind, TokenSigner

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def run(*args: str, env: dict[str, str] | None = None, home: Path) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    full_env.update({"WELCOMEMAT_HOME": str(home), **(env or {})})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=60
    )


def test_link_prints_a_signed_personal_link(tmp_path: Path) -> None:
    result = run(
        "link",
        f"{TENANT}/{CAMPAIGN}",
        "acct_dymaxa",
        "--contact",
        "c_joram",
        env={"WELCOMEMAT_SECRET": SECRET},
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    url = urlsplit(result.stdout.strip())
    assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:8000", f"/c/{CAMPAIGN}")
    claims = TokenSigner([SECRET]).verify(
        TokenKind.LINK, parse_qs(url.query)["wm"][0], tenant=TENANT, campaign=CAMPAIGN
    )
    assert (claims.account, claims.contact) == ("acct_dymaxa", "c_joram")
    assert claims.expires_at - claims.issued_at == 30 * 86400


def test_link_qr_uses_the_public_url_and_ttl(tmp_path: Path) -> None:
    env = {"WELCOMEMAT_SECRET": SECRET, "WELCOMEMAT_PUBLIC_URL": "https://go.acme.example"}
    result = run(
        "link", "examples/campaign.yaml", "acct_dymaxa", "--qr", "--ttl", "10", env=env, home=tmp_path
    )
    assert result.returncode == 0, result.stderr
    url = urlsplit(result.stdout.strip())
    assert url.netloc == "go.acme.example" and url.path.startswith("/q/")
    claims = TokenSigner([SECRET]).verify(TokenKind.QR, url.path[3:], tenant=TENANT, campaign=CAMPAIGN)
    assert claims.expires_at - claims.issued_at == 10 * 86400


def test_link_by_campaign_id_reads_the_published_index(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    env = {"WELCOMEMAT_SECRET": SECRET, "REDIS_URL": redis_url}
    result = run("link", CAMPAIGN, "acct_dymaxa", env=env, home=tmp_path)
    assert result.returncode == 0, result.stderr
    result = run("link", "no-such-campaign", "acct_dymaxa", env=env, home=tmp_path)
    assert result.returncode == 2 and "no published campaign" in result.stderr


def test_link_without_a_secret_is_exit_2_with_a_clear_message(tmp_path: Path) -> None:
    result = run("link", f"{TENANT}/{CAMPAIGN}", "acct_dymaxa", home=tmp_path)
    assert result.returncode == 2
    assert "WELCOMEMAT_SECRET is not set" in result.stderr and result.stdout == ""


def test_link_refuses_bad_ids_and_ttls(tmp_path: Path) -> None:
    env = {"WELCOMEMAT_SECRET": SECRET}
    assert run("link", f"{TENANT}/{CAMPAIGN}", "not an id", env=env, home=tmp_path).returncode == 2
    assert run("link", f"{TENANT}/{CAMPAIGN}", "a", "--ttl", "400", env=env, home=tmp_path).returncode == 2
    assert run("link", f"{TENANT}/{CAMPAIGN}", "a", "--ttl", "0", env=env, home=tmp_path).returncode == 2


def test_serve_runs_the_renderer(tmp_path: Path, redis_url: str, redis_client: redis.Redis) -> None:
    campaign, zones = example_inputs()
    publish_config(redis_client, campaign, zones)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update({"REDIS_URL": redis_url, "WELCOMEMAT_SECRET": SECRET, "WELCOMEMAT_HOME": str(tmp_path)})
    process = subprocess.Popen(
        [WELCOMEMAT, "serve", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/c/{CAMPAIGN}", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.1)
        assert response.status_code == 200 and 'data-wm-zone="hero_headline"' in response.text
        assert "server" not in response.headers  # no version banner
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_serve_refuses_bad_settings_with_exit_2(tmp_path: Path) -> None:
    result = run("serve", env={"WELCOMEMAT_PUBLIC_URL": "not a url"}, home=tmp_path)
    assert result.returncode == 2 and "WELCOMEMAT_PUBLIC_URL" in result.stderr
