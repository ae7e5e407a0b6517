"""The results page's daily series counts a view once and a click once per view and zone, as the
fold does: a view token replayed from many addresses is one visit and one CTA click."""

from __future__ import annotations

from datetime import UTC, datetime

import redis

from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.lift.comparison import AccountOutcome
from welcomemat.lift.daily import daily_counts

TENANT, CAMPAIGN = "acme", "q4-pipeline"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TS_MS = int(datetime(2026, 11, 29, 9, 0, tzinfo=UTC).timestamp() * 1000)


def add(client: redis.Redis, n: int, kind: str, view_id: str, account: str, zone: str | None = None) -> None:
    fields = {
        "event_id": f"e{n}",
        "type": kind,
        "tenant": TENANT,
        "campaign": CAMPAIGN,
        "view_id": view_id,
        "ts": str(TS_MS + n),
        "account": account,
    }
    if zone is not None:
        fields["zone"] = zone
    client.xadd(keys.events_stream_key(TENANT), fields, id=f"{TS_MS + n}-0")  # type: ignore[arg-type]


def test_replays_of_one_view_token_count_one_visit_and_one_click(redis_client: redis.Redis) -> None:
    for n in range(120):  # one view token replayed 120 times: its view, and a click on the CTA
        add(redis_client, 2 * n, "view", "-one_view", "acct_a")
        add(redis_client, 2 * n + 1, "click", "-one_view", "acct_a", "cta")
    add(redis_client, 300, "view", "other_view", "acct_a")  # a second, genuine view
    add(redis_client, 301, "click", "other_view", "acct_a", "cta")
    add(redis_client, 302, "click", "b_view", "acct_b", "cta")  # a holdout account's own click
    outcomes = [AccountOutcome("acct_a", Arm.PERSONAL), AccountOutcome("acct_b", Arm.HOLDOUT)]
    series = daily_counts(redis_client, TENANT, CAMPAIGN, outcomes, frozenset({"cta"}), now=NOW, days=1)
    today = {(c.arm, c.variant): c for c in series}
    personal, holdout = today[(Arm.PERSONAL, None)], today[(Arm.HOLDOUT, None)]
    assert (personal.visits, personal.cta_clicks, personal.reached_accounts) == (2, 2, 1)
    assert (holdout.visits, holdout.cta_clicks) == (0, 1)
