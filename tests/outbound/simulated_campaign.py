"""A simulated campaign built through the real paths, for the lift report's known-answer tests.

2,000 accounts (by default) get their arm from the real stable hash (`welcomemat.arms`, a 50%
holdout so both arms are large), a published zone set each (`ZoneSetStore.publish_many`, as
precompute publishes), page views and CTA clicks folded into their records as `welcomemat sync` folds them
(`welcomemat.records.fold`), and goals and negative outcomes imported from a JSONL file by
`welcomemat.records.conversions.import_conversions` (what `welcomemat conversions import` runs). Who
visits, converts or unsubscribes is drawn from a seeded RNG, per arm, so each test plants one
effect and nothing else.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import redis

from tests.server.conftest import CAMPAIGN, TENANT, example_inputs, make_zone_set, publish_config
from welcomemat.arms import Arm, assign_arm
from welcomemat.records.conversions import import_conversions
from welcomemat.records.fold import FOLD_LUA, EventFold, fold_events
from welcomemat.zones.store import ZoneSetStore

HOLDOUT_FRACTION = 0.5
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
_VIEW_MS = 1_764_000_000_000  # 2025-11-24: any instant before NOW
_GOALS = ("positive_reply", "meeting_booked")  # both count as conversions by default


@dataclass(frozen=True)
class CampaignPlan:
    """What each arm does, as shares of the accounts ASSIGNED to it."""

    seed: int
    visit: Mapping[Arm, float]
    convert: Mapping[Arm, float]
    accounts: int = 2_000
    # Share of the accounts that visit which click the CTA (the same in both arms unless given).
    click: Mapping[Arm, float] = field(default_factory=lambda: {Arm.PERSONAL: 0.25, Arm.HOLDOUT: 0.25})
    # True: the accounts that convert are the keen ones, who visit in either arm; the others
    # visit at the rate that makes `visit` the arm's overall share.
    converters_visit: bool = False
    unsubscribe: Mapping[Arm, float] = field(default_factory=dict)
    spam_complaint: Mapping[Arm, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SimulatedCampaign:
    """What was planted, counted per arm (the report must find these numbers)."""

    assigned: dict[Arm, int]
    visited: dict[Arm, int]
    converted: dict[Arm, int]
    visited_and_converted: dict[Arm, int]
    unsubscribed: dict[Arm, int]
    complained: dict[Arm, int]


def simulate_campaign(client: redis.Redis, plan: CampaignPlan, tmp_path: Path) -> SimulatedCampaign:
    campaign, zones = example_inputs()
    publish_config(client, campaign.model_copy(update={"holdout_fraction": HOLDOUT_FRACTION}), zones)
    rng = random.Random(plan.seed)
    arms = (Arm.PERSONAL, Arm.HOLDOUT)
    counts: dict[str, dict[Arm, int]] = {
        name: dict.fromkeys(arms, 0)
        for name in ("assigned", "visited", "converted", "both", "unsubscribed", "complained")
    }
    accounts: list[str] = []
    views: list[EventFold] = []
    lines: list[str] = []

    def outcome(account: str, kind: str) -> None:
        lines.append(
            json.dumps(
                {
                    "campaign": CAMPAIGN,
                    "account_id": account,
                    "type": kind,
                    "conversion_id": f"{account}-{kind}",
                    "occurred_at": "2026-11-28T10:00:00Z",
                }
            )
        )

    for i in range(plan.accounts):
        account = f"sim{plan.seed}_{i}"
        arm = assign_arm(TENANT, CAMPAIGN, account, HOLDOUT_FRACTION)
        accounts.append(account)
        converts = rng.random() < plan.convert[arm]
        if plan.converters_visit:
            others = (plan.visit[arm] - plan.convert[arm]) / (1.0 - plan.convert[arm])
            visits = converts or rng.random() < others
        else:
            visits = rng.random() < plan.visit[arm]
        clicks = visits and rng.random() < plan.click[arm]
        unsubscribes = rng.random() < plan.unsubscribe.get(arm, 0.0)
        complains = rng.random() < plan.spam_complaint.get(arm, 0.0)
        counts["assigned"][arm] += 1
        if visits:
            counts["visited"][arm] += 1
            for n in range(1 + i % 3):  # one to three page views: reach counts the account once
                views.append(
                    EventFold(
                        tenant=TENANT,
                        account_id=account,
                        campaign=CAMPAIGN,
                        kind="views",
                        ts_ms=_VIEW_MS + len(views),
                        event_id=f"{account}-view-{n}",
                    )
                )
        if clicks:
            views.append(
                EventFold(
                    tenant=TENANT,
                    account_id=account,
                    campaign=CAMPAIGN,
                    kind="clicks",
                    ts_ms=_VIEW_MS + len(views),
                    event_id=f"{account}-click",
                    zone="cta",
                )
            )
        if converts:
            counts["converted"][arm] += 1
            counts["both"][arm] += visits
            outcome(account, _GOALS[i % 2])
        if unsubscribes:
            counts["unsubscribed"][arm] += 1
            outcome(account, "unsubscribe")
        if complains:
            counts["complained"][arm] += 1
            outcome(account, "spam_complaint")
    ZoneSetStore(client).publish_many([make_zone_set(a) for a in accounts])
    script = client.register_script(FOLD_LUA)
    for start in range(0, len(views), 500):
        replies = fold_events(script, client, views[start : start + 500], outbox=False)
        assert all(isinstance(r, int) and r > 0 for r in replies), replies
    path = tmp_path / "outcomes.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    imported = import_conversions(client, path, lambda _: (TENANT, HOLDOUT_FRACTION), now=NOW)
    assert imported.problems == [] and imported.recorded == len(lines)
    return SimulatedCampaign(
        assigned=counts["assigned"],
        visited=counts["visited"],
        converted=counts["converted"],
        visited_and_converted=counts["both"],
        unsubscribed=counts["unsubscribed"],
        complained=counts["complained"],
    )
