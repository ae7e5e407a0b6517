"""Take the admin pages' screenshots in the docs, from a real renderer in headless Chromium.

Run it from the repository's root, with the test extras installed (playwright) and Debian's
Chromium at /usr/bin/chromium (`sh scripts/install-test-deps.sh`):

    .venv/bin/python scripts/admin_screenshots.py            # writes docs/admin-*.png
    .venv/bin/python scripts/admin_screenshots.py --out /tmp/shots

What it does, everything under a temporary WELCOMEMAT_HOME (nothing of yours is touched):

1. starts the embedded Redis (`welcomemat.storage.embedded_redis`);
2. writes the example accounts dated today (`examples/make_accounts.py`, as `welcomemat demo`
   does), precomputes the example campaign (`welcomemat precompute`, the offline composer), and
   approves Dymaxa, a tier-1 account, as the demo does; the other tier-1 accounts stay queued;
3. starts the renderer (`welcomemat serve`) and opens the pages of a few accounts through their
   signed links, so that the results page has visits to count;
4. invites a person (`welcomemat admin invite ... --role admin`), signs in with the link in
   headless Chromium (Playwright), and saves 1280x800 screenshots of the campaign overview,
   the review queue and the results page: docs/admin-overview.png, docs/admin-review-queue.png,
   docs/admin-results.png (made smaller with Pillow: 256 colours).

It stops the renderer and the embedded Redis, and removes the temporary folder, when done.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from welcomemat.records.audit import Auditor, Via  # noqa: E402
from welcomemat.security.tokens import TokenKind, TokenSigner  # noqa: E402
from welcomemat.storage.embedded_redis import EmbeddedRedis  # noqa: E402
from welcomemat.zones.review import decide  # noqa: E402
from welcomemat.zones.store import ZoneSetStore  # noqa: E402

__all__ = ["SHOTS", "VIEWPORT", "main"]

TENANT, CAMPAIGN, APPROVED = "acme", "q4-pipeline", "acct_dymaxa"
VIEWPORT = {"width": 1280, "height": 800}
# (file in the output folder, admin path): what the docs show.
SHOTS = (
    ("admin-overview.png", f"/admin/campaigns/{CAMPAIGN}"),
    ("admin-review-queue.png", f"/admin/review/{CAMPAIGN}"),
    ("admin-results.png", f"/admin/results/{CAMPAIGN}"),
)
VISITED_ACCOUNTS = 40  # accounts whose pages are opened once, so the results page counts visits
SECRET = "screenshot-secret-0123456789abcdef0123456789"
WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([WELCOMEMAT, *args], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"welcomemat {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def _write_accounts(out: Path) -> list[str]:
    """The example accounts dated from today (the signals must be current); their ids."""
    namespace: dict[str, object] = {"__name__": "welcomemat_example_accounts"}
    exec(compile((ROOT / "examples" / "make_accounts.py").read_text(), "make_accounts.py", "exec"), namespace)
    write = namespace["write"]
    assert callable(write)
    write(out, date.today())
    return [json.loads(line)["account_id"] for line in out.read_text().splitlines() if line.strip()]


@contextmanager
def _renderer(env: dict[str, str], port: int) -> Iterator[str]:
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [WELCOMEMAT, "serve", "--port", str(port), "--no-access-log"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the renderer did not start")
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)


def _visit(base: str, accounts: list[str]) -> None:
    """Open each account's page once through its signed link, as a visitor's browser does."""
    signer = TokenSigner([SECRET])
    for account in accounts:
        token = signer.sign(TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=account, ttl_s=3600)
        request = urllib.request.Request(
            f"{base}/c/{CAMPAIGN}?wm={token}",
            headers={"user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()


def _shrink(path: Path) -> None:
    """256 colours, losslessly compressed: a screenshot of text stays sharp at a fraction of the size."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def _screenshots(base: str, link: str, out: Path, viewport: dict[str, int]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
            page.goto(link)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{base}/admin")
            for name, path in SHOTS:
                answer = page.goto(f"{base}{path}")
                if answer is None or answer.status != 200:
                    raise SystemExit(f"{path}: {answer.status if answer else 'no answer'}")
                target = out / name
                page.screenshot(path=str(target))
                _shrink(target)
                written.append(target)
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs"), help="folder for the PNGs (default: docs/)")
    parser.add_argument(
        "--width",
        type=int,
        default=VIEWPORT["width"],
        help="the window's width in pixels (a narrower screen)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wm-shots-") as temporary:
        home = Path(temporary) / "home"
        embedded = EmbeddedRedis()
        redis_url = embedded.ensure_running(home)
        try:
            port = _free_port()
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("WELCOMEMAT_")},
                "REDIS_URL": redis_url,
                "WELCOMEMAT_HOME": str(home),
                "WELCOMEMAT_SECRET": SECRET,
                "WELCOMEMAT_PUBLIC_URL": f"http://127.0.0.1:{port}",
                "WELCOMEMAT_OPERATOR": "ops@acme.example",
            }
            accounts_file = Path(temporary) / "accounts.jsonl"
            accounts = _write_accounts(accounts_file)
            _run(env, "precompute", str(ROOT / "examples" / "campaign.yaml"), str(accounts_file))
            client = redis.Redis.from_url(redis_url)
            current = ZoneSetStore(client).get(TENANT, CAMPAIGN, APPROVED)
            if current is not None and current.status.value == "pending_review":
                decide(
                    client,
                    TENANT,
                    CAMPAIGN,
                    APPROVED,
                    approve=True,
                    auditor=Auditor("demo", Via.CLI, lambda: datetime.now(UTC)),
                    expected_version=current.version,
                )
            client.close()
            with _renderer(env, port) as base:
                _visit(base, accounts[:VISITED_ACCOUNTS])
                _run(env, "sync", "--once")
                link = _run(env, "admin", "invite", "ana@acme.example", "--tenant", TENANT, "--role", "admin")
                viewport = {**VIEWPORT, "width": args.width}
                for written in _screenshots(base, link.strip().splitlines()[-1], out, viewport):
                    print(f"{written} ({written.stat().st_size // 1024} KB)")
        finally:
            embedded.stop(home)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
