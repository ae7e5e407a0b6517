"""`welcomemat conversions import FILE.jsonl`: record CRM outcomes from a file, for the lift report.

One `POST /v1/conversions` body a line, a goal (`positive_reply`, `meeting_booked`, ...) or a
negative outcome (`unsubscribe`, `spam_complaint`); each is recorded by `welcomemat.records.conversions`
(the store the API uses too: idempotent per conversion id, a conflicting repeat refused). Bad
lines are reported with their line number and field and skipped; the rest are recorded.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path

from cli.command_output import finish_import
from welcomemat.campaign.ref import resolve_campaign_ref
from welcomemat.campaign.view import load_campaign_view
from welcomemat.errors import InputError
from welcomemat.records.conversions import import_conversions
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis

__all__ = ["run_conversions_import"]


def run_conversions_import(path: str) -> int:
    """`welcomemat conversions import FILE.jsonl`: exit 2 when any line was bad (the rest are recorded)."""
    settings = Settings.from_env()
    client = connect(resolve_redis(settings))

    @functools.cache
    def target(campaign_id: str) -> tuple[str, float]:
        try:
            tenant, campaign = resolve_campaign_ref(campaign_id, client=client)
            view = load_campaign_view(client, tenant, campaign)
        except InputError as exc:
            raise InputError(exc.message, field="campaign") from None
        return tenant, view.campaign.holdout_fraction

    try:
        report = import_conversions(client, Path(path), target, now=datetime.now(UTC))
    finally:
        client.close()
    return finish_import(
        report.problems,
        f"conversions {path}: {report.recorded} recorded, {report.repeated} already recorded, "
        f"{len(report.problems)} bad lines skipped",
    )
