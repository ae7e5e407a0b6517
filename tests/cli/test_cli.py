"""The `welcomemat` command as a user runs it: output, exit codes, no Redis left behind."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today
from tests.ports import free_port
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.storage.embedded_redis import EmbeddedRedis

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
SECRET = "s" * 40


def run(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "WELCOMEMAT_SECRET")}
    full_env.update({"WELCOMEMAT_HOME": str(home), **(env or {})})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=120
    )


def test_help_lists_the_commands(tmp_path: Path) -> None:
    result = run("--help", home=tmp_path)
    assert result.returncode == 0
    for command in ("demo", "validate", "redis"):
        assert command in result.stdout


def test_no_command_is_bad_usage(tmp_path: Path) -> None:
    assert run(home=tmp_path).returncode == 2


def printed_links(out: str) -> dict[str, str]:
    """`  Label   http://...` lines of the demo's output: label -> URL."""
    found = re.findall(r"^  ([A-Z][A-Za-z ]+?)\s{2,}(http://\S+)", out, flags=re.MULTILINE)
    links: dict[str, str] = {}
    for label, url in found:
        links.setdefault(label, url)
        if label == "Customer site" and "?wm=" in url:
            links["Customer site link"] = url
    return links


def test_demo_precomputes_serves_checks_every_printed_link_and_stops(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port, site_port = free_port(), free_port()
    args = ("demo", "--port", str(port), "--site-port", str(site_port))
    result = run(*args, home=home, env={"WELCOMEMAT_SECRET": SECRET})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    out = result.stdout
    assert "AOF yes" in out and "embedded Redis" in out
    assert "1200 read" in out and "0 lines skipped" in out
    assert "Dymaxa B.V." in out and "Joram, Head of Sales" in out and "Series A" in out
    assert "The demo approves v1 as a reviewer would" in out

    links = printed_links(out)
    base, site = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{site_port}"
    personal = urlsplit(links["Personal link"])
    assert (f"{personal.scheme}://{personal.netloc}", personal.path) == (base, "/c/q4-pipeline")
    claims = TokenSigner([SECRET]).verify(
        TokenKind.LINK, parse_qs(personal.query)["wm"][0], tenant="acme", campaign="q4-pipeline"
    )
    assert (claims.account, claims.contact) == ("acct_dymaxa", "c_joram")
    assert links["QR link"].startswith(f"{base}/q/")
    assert links["Anonymous link"] == f"{base}/c/q4-pipeline"
    assert links["Customer site link"] == f"{site}/?{personal.query}"
    assert links["Admin preview"] == f"{base}/admin/preview/q4-pipeline/acct_dymaxa"
    token = (home / "demo" / "admin-token").read_text().strip()
    assert f"Admin token     {token}" in out

    # One line per link, fetched over HTTP from the running servers, saying what it showed.
    checks = {line.split()[2]: line for line in out.splitlines() if line.startswith(("  ok ", "  FAIL"))}
    assert all(line.startswith("  ok ") for line in checks.values()), checks
    assert "200  personal link      hero_headline (personal): “Congrats on the Series A" in checks["personal"]
    assert "200  anonymous link     hero_headline (default): “New sellers" in checks["anonymous"]
    assert f"303  QR link            -> {base}/c/q4-pipeline/continue" in checks["QR"]
    assert "continuation_headline (personal)" in checks["QR"]
    assert "200  customer site" in checks["customer"]
    # The example campaign's theme: its stylesheet and logo served, its footer on the page.
    assert "200  theme" in checks["theme"] and "a footer" in checks["theme"]
    assert "acme.css (200 text/css)" in checks["theme"] and "logo.svg (200 image/svg+xml)" in checks["theme"]
    assert "200  admin" in checks["admin"] and "(personal)" in checks["admin"]
    # The snippet as the customer site's browser fetches it, and its zones for Dymaxa's visitor.
    assert "200  snippet.js" in checks["snippet.js"]
    assert "200  snippet zones" in checks["snippet"]
    assert "hero_headline for the site's Dymaxa visitor: “Congrats" in checks["snippet"]
    assert "Run `welcomemat demo --serve` to keep them serving" in out

    # Stopped: both ports are free again, and the Redis the demo started is gone.
    for p in (port, site_port):
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))
    assert not EmbeddedRedis().status(home).running, "the demo stops the Redis it started"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_demo_serve_keeps_serving_until_ctrl_c_or_kill(tmp_path: Path, stop: signal.Signals) -> None:
    home = tmp_path / "home"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "WELCOMEMAT_SECRET")}
    env.update({"WELCOMEMAT_HOME": str(home), "WELCOMEMAT_SECRET": SECRET})
    process = subprocess.Popen(
        [WELCOMEMAT, "demo", "--port", str(port), "--site-port", "0", "--serve"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell running the tests in the background starts them with SIGINT ignored, and a
        # Python child keeps an inherited "ignore": give the demo the default, as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("Serving until Ctrl-C"):
                break
        out = "".join(lines)
        assert "Serving until Ctrl-C" in out, out[-2000:]
        links = printed_links(out)
        with httpx.Client(timeout=10) as client:
            personal = client.get(links["Personal link"])
            anonymous = client.get(links["Anonymous link"])
            qr = client.get(links["QR link"])
            site = client.get(links["Customer site link"])
            token = (home / "demo" / "admin-token").read_text().strip()
            queue = client.get(links["Admin review"], headers={"authorization": f"Bearer {token}"})
            refused = client.get(links["Admin review"])
        assert personal.status_code == 200
        assert 'data-wm-rung="personal"' in personal.text and "Congrats on the Series A" in personal.text
        assert anonymous.status_code == 200 and "Congrats" not in anonymous.text
        assert 'data-wm-zone="hero_headline" data-wm-rung="default"' in anonymous.text
        assert (
            qr.status_code == 303
            and qr.headers["location"] == f"http://127.0.0.1:{port}/c/q4-pipeline/continue"
        )
        assert site.status_code == 200
        assert (
            f'<script async src="http://127.0.0.1:{port}/snippet.js" data-wm-campaign="q4-pipeline">'
            in site.text
        )
        assert f"script-src http://127.0.0.1:{port}" in site.headers["content-security-policy"]
        assert queue.status_code == 200 and refused.status_code == 401
    finally:
        process.send_signal(stop)
        try:
            rest, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # Kill it and read its pipes to the end, so a failure here leaves nothing behind
            # for later tests (a stray server, unclosed pipes).
            process.kill()
            process.communicate()
            raise
    assert process.returncode == 0 and "Stopping." in rest
    assert not EmbeddedRedis().status(home).running


def test_demo_refuses_a_taken_port_before_doing_anything(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("demo", "--port", str(port), home=tmp_path / "home", env={"WELCOMEMAT_SECRET": SECRET})
    assert result.returncode == 2 and result.stdout == ""
    assert f"port {port} on 127.0.0.1 is taken" in result.stderr and "--port" in result.stderr
    assert not (tmp_path / "home" / "demo").exists()


def test_validate_exit_codes(tmp_path: Path) -> None:
    today = committed_today().isoformat()
    # The example research is a realistic mix: some facts will not be used (exit 1), nothing is malformed.
    unused = run(
        "validate", "examples/campaign.yaml", "examples/accounts.jsonl", "--as-of", today, home=tmp_path
    )
    assert unused.returncode == 1, unused.stderr
    assert "1200 read, 0 lines skipped" in unused.stdout
    assert f"\nfacts as of {today}: " in unused.stdout and "\n  stale: " in unused.stderr
    assert " problems in " not in unused.stderr and "Traceback" not in unused.stderr
    ok = run("validate", "examples/campaign.yaml", home=tmp_path)
    assert ok.returncode == 0, ok.stderr

    accounts = tmp_path / "a.jsonl"
    accounts.write_text(
        '{"account_id": "a1", "name": "A", "domain": "a.com", "segment": "saas-mid"}\n{oops\n'
    )
    some_bad = run("validate", "examples/campaign.yaml", str(accounts), home=tmp_path)
    assert some_bad.returncode == 2  # a bad accounts line is bad input, like any other
    assert f"{accounts}:2: not valid JSON" in some_bad.stderr
    assert "1 read, 1 lines skipped" in some_bad.stdout

    campaign = tmp_path / "campaign.yaml"
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    campaign.write_text(text.replace("https://meet.acmerevenue.example/ramp-review", "https://evil.example/"))
    refused = run("validate", str(campaign), "--zones", "zones", home=tmp_path)
    assert refused.returncode == 2
    assert f"{campaign}:" in refused.stderr and ": ctas.0.href: CTA 'book_ramp_review'" in refused.stderr


@pytest.mark.parametrize("missing", ["nope.yaml"])
def test_missing_campaign_file_is_bad_input(tmp_path: Path, missing: str) -> None:
    result = run("validate", missing, "--zones", "zones", home=tmp_path)
    assert result.returncode == 2 and "not found" in result.stderr


def test_redis_start_status_stop(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert run("redis", "status", home=home).returncode == 1
    assert run("redis", "start", home=home).returncode == 0
    status = run("redis", "status", home=home)
    assert status.returncode == 0 and "running" in status.stdout
    assert "stopped" in run("redis", "stop", home=home).stdout
    assert run("redis", "status", home=home).returncode == 1
