"""Precompute publishes; the renderer serves it: Dymaxa's visitor sees the Series A page."""

from __future__ import annotations

import json
from pathlib import Path

import redis
from starlette.testclient import TestClient

from precompute.policy import build_policy
from precompute.providers.offline import OfflineComposer
from precompute.run import PrecomputeRun
from tests.precompute.test_pipeline import NOW, dymaxa
from tests.server.conftest import BASE_URL, example_inputs, renderer_app, renderer_settings, signer
from welcomemat.arms import Arm, assign_arm
from welcomemat.security.tokens import TokenKind


def test_a_precomputed_account_is_served_by_ip_and_by_link(tmp_path: Path, redis_client: redis.Redis) -> None:
    campaign, zones = example_inputs()
    accounts = tmp_path / "accounts.jsonl"
    accounts.write_text(json.dumps(dymaxa(NOW.date(), tier=2)) + "\n")
    PrecomputeRun(
        client=redis_client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=NOW,
    ).run(accounts)

    app = renderer_app(renderer_settings(), redis_client=redis_client, clock=NOW.timestamp)
    holdout = assign_arm("acme", "q4-pipeline", "acct_dymaxa", campaign.holdout_fraction) is Arm.HOLDOUT
    expected_rung = "segment" if holdout else "personal"
    with TestClient(app, base_url=BASE_URL, client=("203.0.113.7", 50000)) as by_ip:
        page = by_ip.get("/c/q4-pipeline")
    assert page.status_code == 200
    assert f'data-wm-rung="{expected_rung}"' in page.text
    if not holdout:
        assert "Series A" in page.text and "Dymaxa" in page.text
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.250", 50000)) as by_link:
        token = signer(clock=NOW.timestamp).sign(
            TokenKind.LINK,
            tenant="acme",
            campaign="q4-pipeline",
            account="acct_dymaxa",
            contact="c_joram",
            ttl_s=3600,
        )
        linked = by_link.get("/c/q4-pipeline", params={"wm": token})
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.250", 50000)) as stranger:
        anonymous = stranger.get("/c/q4-pipeline")
    assert linked.status_code == 200 and f'data-wm-rung="{expected_rung}"' in linked.text
    assert anonymous.status_code == 200 and "Series A" not in anonymous.text
