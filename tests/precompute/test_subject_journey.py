"""The new user's journey: a namesake's fact never reaches a page, the brand on its own site does,
and plain `welcomemat qa` says why facts were refused and what would pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis

from precompute.facts.refusals import FactRefusalTally
from precompute.qa import run_qa
from tests.corpora import REPO_ROOT
from tests.example_accounts import precompute_offline
from tests.server.conftest import example_inputs
from welcomemat import keys
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def _fact(fid: str, kind: str, statement: str, source: str, days_ago: int, **fields: str) -> dict[str, Any]:
    published = (datetime.now(UTC).date() - timedelta(days=days_ago)).isoformat()
    return {
        "id": fid,
        "type": kind,
        "statement": statement,
        "source_url": source,
        "published_at": published,
        "confidence": "high",
        "surfaces": ["web", "email", "seller"],
        **fields,
    }


def _account(account_id: str, name: str, domain: str, facts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "name": name,
        "domain": domain,
        "segment": "saas-mid",
        "contacts": [{"contact_id": f"c_{account_id}", "email": f"ops@{domain}", "first_name": "Sam"}],
        "facts": facts,
    }


ACCOUNTS = [
    _account(
        "acct_apex",
        "Apex Cold Storage Ltd",
        "apexcoldstorage.com",
        [
            _fact(
                "apex-dallas",
                "expansion",
                "Apex Cold Storage Solutions Inc opened a new hub in Dallas, Texas",
                "https://apexcoldstoragesolutions.com/news/dallas-hub",
                3,
                location="Dallas",
            )
        ],
    ),
    _account(
        "acct_frostline",
        "Frostline Logistics B.V.",
        "frostlinelogistics.com",
        [
            _fact(
                "frostline-a",
                "funding",
                "Frostline raised a Series A",
                "https://frostlinelogistics.com/press/series-a",
                2,
                subject="Frostline",
                round="Series A",
            )
        ],
    ),
    _account(
        "acct_nordhaven",
        "Nordhaven Freight AB",
        "nordhavenfreight.se",
        [
            _fact(
                "nordhaven-a",
                "funding",
                "Nordhaven raised a Series A",
                "https://news.example.com/nordhaven",
                2,
                subject="Nordhaven",
                round="Series A",
            )
        ],
    ),
]


def test_only_the_accounts_own_facts_reach_a_page_and_qa_says_why(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    path = tmp_path / "accounts.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in ACCOUNTS), encoding="utf-8")
    campaign, zones = example_inputs()
    precompute_offline(redis_client, path, now=datetime.now(UTC))

    store = ZoneSetStore(redis_client)
    apex = store.get(campaign.tenant, campaign.campaign, "acct_apex")
    frostline = store.get(campaign.tenant, campaign.campaign, "acct_frostline")
    assert apex is not None and frostline is not None
    # The namesake's hub never reaches Apex: no zone cites it, no zone mentions Dallas.
    assert all(not z.facts and z.rung is not Rung.PERSONAL for z in apex.zones)
    assert not any("Dallas" in z.text for z in apex.zones)
    # Frostline's brand on its own site is Frostline's: its Series A is on its page.
    personal = [z for z in frostline.zones if z.rung is Rung.PERSONAL]
    assert any("Series A" in z.text for z in personal), [z.text for z in frostline.zones]

    explain = json.loads(
        redis_client.get(keys.explain_key(campaign.tenant, campaign.campaign, "acct_apex")) or "{}"
    )
    assert [(f["id"], f["reason"]) for f in explain["facts"]] == [("apex-dallas", "other_company")]

    facts = FactRefusalTally(redis_client, campaign.tenant, campaign.campaign)
    report = run_qa(store, campaign, zones, facts=facts)
    assert [(r.reason, r.facts) for r in report.fact_refusals] == [("other_company", 1), ("wrong_subject", 1)]
    assert (
        "acct_nordhaven nordhaven-a: 'Nordhaven' is not 'Nordhaven Freight AB'; use the account's name, "
        in (report.fact_refusals[1].example)
    )

    # Plain `qa`, as a user runs it, names them with what would pass.
    env = {**os.environ, "REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path / "home")}
    qa = subprocess.run(
        [WELCOMEMAT, "qa", "examples/campaign.yaml"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "facts refused: 2; top reasons" in qa.stdout, qa.stdout + qa.stderr
    assert "other_company 1 facts, 1 accounts; e.g. acct_apex apex-dallas: the statement names " in qa.stdout
    assert "or source it from nordhavenfreight.se" in qa.stdout
