"""The example accounts generator (`examples/make_accounts.py`), loaded for tests."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from types import ModuleType

import redis

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign


@cache
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_accounts", REPO_ROOT / "examples" / "make_accounts.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_example_accounts(path: Path, count: int, today: date | None = None) -> Path:
    """`count` example accounts dated from `today` (default: today's UTC date, precompute's `as_of`)."""
    generator().write(path, today or datetime.now(UTC).date(), count)
    return path


def committed_today(record: dict[str, object] | None = None) -> date:
    """The day `examples/accounts.jsonl` (or Dymaxa's `record` from it) was generated for.

    Read off Dymaxa's first SDR posting, whose age on that day the generator fixes.
    """
    if record is None:
        record = json.loads((REPO_ROOT / "examples" / "accounts.jsonl").read_text().split("\n", 1)[0])
    facts = record["facts"]
    assert isinstance(facts, list)
    sdr = next(f for f in facts if f["id"] == "dymaxa-sdr-1")
    return date.fromisoformat(sdr["published_at"]) + timedelta(days=generator().ROLE_AGES_DAYS[0])


def precompute_offline(
    client: redis.Redis, accounts: Path, campaign: Campaign | None = None, *, now: datetime | None = None
) -> None:
    """Precompute `accounts` for the example campaign (or `campaign`, with its zones) with the offline
    composer, as the demo does; `now` is the run's instant (default: the clock's)."""
    from precompute.policy import build_policy
    from precompute.providers.offline import OfflineComposer
    from precompute.run import PrecomputeRun
    from tests.server.conftest import example_inputs

    example, zones = example_inputs()
    campaign = campaign or example
    PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=build_policy(campaign, None),
        provider=OfflineComposer(),
        now=now,
    ).run(accounts)
