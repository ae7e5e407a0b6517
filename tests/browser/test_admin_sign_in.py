"""A reviewer in Chromium: signs in from the link `welcomemat admin invite` prints, approves a held
draft with its button, and sees it live; another origin's form posting to the same button is refused."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from precompute.policy import build_policy
from precompute.run import PrecomputeRun
from server.tuning import RendererTuning
from tests.browser.conftest import PageWatch
from tests.browser.dom import zones_in
from tests.corpora import REPO_ROOT
from tests.llm_server import LLMTestServer
from tests.ports import free_port
from tests.precompute.test_openai_provider import example_rows, provider_for
from tests.server.conftest import CAMPAIGN, SECRET, TENANT, example_inputs, renderer_app, renderer_settings
from tests.server.uvicorn_thread import serve_in_thread
from welcomemat import keys
from welcomemat.records.audit import AuditAction, read_entries
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.zones.review import list_queue
from welcomemat.zones.store import ZoneSetStore

pytestmark = pytest.mark.browser

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
DYMAXA = "acct_dymaxa"
RITA = "rita@acme.example"
HELD_ZONE = "hero_support"


@dataclass(frozen=True)
class Renderer:
    url: str
    app: Starlette


@pytest.fixture
def held_draft(tmp_path: Path, redis_client: redis.Redis, llm_server: LLMTestServer) -> str:
    """Dymaxa published (tier 2) with its support line held by the model's self-review: the draft.

    Precomputed at the wall clock's time: the sign-in link the command line signs is too, and the
    renderer checks both with that clock."""
    now = datetime.now(UTC)
    campaign, zone_contracts = example_inputs()
    llm_server.reset()
    llm_server.set_mode("well", review_reject=[HELD_ZONE], review_note="not sure the facts say this")
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text(json.dumps(example_rows(now.date())[0]) + "\n")
    provider = provider_for(llm_server)
    try:
        PrecomputeRun(
            client=redis_client,
            campaign=campaign,
            zones=zone_contracts,
            policy=build_policy(campaign, None),
            provider=provider,
            now=now,
        ).run(accounts)
    finally:
        provider.close()
    held = [
        h for item in list_queue(redis_client, TENANT, CAMPAIGN) for h in item.held if h.zone_id == HELD_ZONE
    ]
    assert len(held) == 1, "the model's self-review held no draft"
    return held[0].draft


@pytest.fixture
def renderer(redis_client: redis.Redis) -> Iterator[Renderer]:
    """The renderer on a port chosen first: its public URL (the origin forms must come from) names it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = renderer_settings(allowed_hosts=("127.0.0.1",), public_url=url, admin_token=None)
    app = renderer_app(
        settings, redis_client=redis_client, tuning=RendererTuning(watcher_poll_s=0.05, redis_timeout_s=5.0)
    )
    with serve_in_thread(app, port=port) as served:
        assert served == url
        yield Renderer(url, app)


def invite_link(redis_url: str, home: Path, public_url: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update(
        {
            "REDIS_URL": redis_url,
            "WELCOMEMAT_HOME": str(home),
            "WELCOMEMAT_SECRET": SECRET,
            "WELCOMEMAT_PUBLIC_URL": public_url,
        }
    )
    done = subprocess.run(
        [WELCOMEMAT, "admin", "invite", RITA, "--tenant", TENANT, "--role", "reviewer", "--by", "ops"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def other_origin_page(action: str, fields: dict[str, str]) -> Starlette:
    """Another origin (same host, another port: the same site to a browser, so the session cookie
    goes along) with a form that posts to `action`."""
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())

    async def page(request: object) -> HTMLResponse:
        return HTMLResponse(
            '<!doctype html><link rel="icon" href="data:,">'
            f'<form method="post" action="{action}">{inputs}<button>Win</button></form>'
        )

    return Starlette(routes=[Route("/", page)])


def test_a_reviewer_signs_in_from_the_link_and_approves_a_held_draft_with_its_button(
    held_draft: str,
    renderer: Renderer,
    redis_client: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    watch: PageWatch,
) -> None:
    page = watch.page
    link = invite_link(redis_url, tmp_path, renderer.url)
    assert link.startswith(f"{renderer.url}/admin/sign-in/")

    opened = page.goto(link)
    assert opened is not None and opened.status == 200
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()
    assert page.url == f"{renderer.url}/admin"
    assert RITA in page.locator(".wm-admin-who").inner_text()
    cookie = next(c for c in page.context.cookies() if c["name"] == "wm-admin")
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/admin")

    version = ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, DYMAXA).version  # type: ignore[union-attr]
    watch.clear()
    queue = page.goto(f"{renderer.url}/admin/review/{CAMPAIGN}")
    assert queue is not None and queue.status == 200
    with page.expect_navigation() as decided:
        page.get_by_role("button", name=f"Approve the {HELD_ZONE} draft").click()
    assert decided.value is not None and decided.value.status == 200  # after the 303
    assert page.get_by_role("status").inner_text() == f"Approved {DYMAXA}: now at v{version + 1}."
    watch.settle()
    assert (watch.console_errors, watch.page_errors, watch.csp_violations) == ([], [], [])

    token = TokenSigner([SECRET]).sign(
        TokenKind.LINK, tenant=TENANT, campaign=CAMPAIGN, account=DYMAXA, ttl_s=3600
    )
    for _ in range(50):  # the renderer's zone cache hears of the change within its poll
        live = page.goto(f"{renderer.url}/c/{CAMPAIGN}?wm={token}")
        assert live is not None and live.status == 200
        shown = zones_in(page)[HELD_ZONE]
        if shown.rung == "personal":
            break
        page.wait_for_timeout(100)
    assert shown.rung == "personal" and " ".join(shown.text.split()) == " ".join(held_draft.split())

    # Another origin's page posts the queue's form, even with the session's own CSRF token: refused.
    stored = redis_client.get(keys.admin_session_key(hashlib.sha256(cookie["value"].encode()).hexdigest()))
    assert stored is not None
    rollback = f"{renderer.url}/admin/review/{CAMPAIGN}/{DYMAXA}/rollback"
    approve = f"{renderer.url}/admin/review/{CAMPAIGN}/{DYMAXA}/approve"
    csrf = json.loads(stored)["csrf"]
    for action, fields in (
        (approve, {"csrf": csrf, "version": str(version + 1)}),
        (rollback, {"csrf": csrf, "reason": "undo"}),
    ):
        with serve_in_thread(other_origin_page(action, fields)) as other:
            assert other != renderer.url
            page.goto(other)
            with page.expect_navigation() as refused:
                page.get_by_role("button", name="Win").click()
        assert refused.value is not None and refused.value.status == 403
    metrics = renderer.app.state.renderer.metrics
    assert metrics.admin_refusals.labels("review_approve", "cross_origin")._value.get() == 1
    assert metrics.admin_refusals.labels("review_rollback", "cross_origin")._value.get() == 1
    assert ZoneSetStore(redis_client).get(TENANT, CAMPAIGN, DYMAXA).version == version + 1  # type: ignore[union-attr]
    decisions = [
        (e.action, e.actor)
        for e in read_entries(redis_client, TENANT, account=DYMAXA)
        if e.action in (AuditAction.APPROVE, AuditAction.ROLLBACK)
    ]
    assert decisions == [(AuditAction.APPROVE, RITA)]
