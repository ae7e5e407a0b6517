"""`welcomemat export CAMPAIGN --format csv|jsonl [--out FILE] [--json]`: the sequencer export, run.

The rows and their fallbacks are `outbound.export`'s; this module picks where they go (FILE,
written atomically, or stdout as they come), shows a progress bar on a terminal, and says
what was written on stderr: the counts by arm, rung and status, each record that got its
fallback and each record that does not decode. `--json` prints the same report as JSON on
stdout, so it needs `--out`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import redis

from cli.command_output import counts_in_words
from cli.progress_bar import progress_bar
from outbound.export import EXPORT_FORMATS, ExportError, ExportSummary, export_campaign
from welcomemat.campaign.ref import resolve_campaign_ref
from welcomemat.campaign.view import load_campaign_view
from welcomemat.errors import InputError
from welcomemat.security.links import contact_links
from welcomemat.security.tokens import TokenSigner
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis

__all__ = ["print_export_report", "run_export"]


def run_export(
    campaign_ref: str,
    fmt: str,
    out: str | None,
    *,
    as_json: bool = False,
    fill: Mapping[str, str] | None = None,
) -> int:
    """`welcomemat export`: write the campaign's rows to `out` (atomically) or stdout.

    Exit 0 when the file was written, whatever records got their fallback (listed on stderr,
    and with `as_json` in the JSON report on stdout); `ExportError` (exit 1) when it could
    not be produced at all, leaving `out` untouched.
    """
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}", field="--format")
    if as_json and out is None:
        raise InputError(
            "--json prints the report on stdout, where the rows go without --out", field="--json"
        )
    settings = Settings.from_env()
    signer = TokenSigner.from_setting(settings.require_secret())
    client = connect(resolve_redis(settings))
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        view = load_campaign_view(client, tenant, campaign)
        link_for = contact_links(signer, settings.public_url, tenant=tenant, campaign=campaign)
        advance, close = progress_bar(None)
        try:
            summary = export_campaign(
                client,
                view,
                link_for,
                fmt,
                sys.stdout if out is None else Path(out),
                now=datetime.now(UTC),
                fill=fill,
                on_account=lambda: advance(1),
            )
        except redis.RedisError as exc:
            raise ExportError(
                f"export {tenant}/{campaign}: Redis failed while reading the campaign ({exc}); "
                + ("nothing was written" if out is not None else "stdout holds a partial file")
            ) from exc
        finally:
            close()
    finally:
        client.close()
    print_export_report(summary, f"{tenant}/{campaign}", out)
    if as_json:
        print(json.dumps({"campaign": f"{tenant}/{campaign}", "out": out, **summary.as_json()}, indent=2))
    return 0


def print_export_report(summary: ExportSummary, campaign: str, out: str | None) -> None:
    """What was written, on stderr: the counts in words, then each fallback and unreadable record."""
    arms, rungs = counts_in_words(summary.by_arm), counts_in_words(summary.by_rung)
    statuses = counts_in_words(summary.by_status)
    print(
        f"export {campaign}: {summary.rows} rows from {summary.accounts} accounts "
        f"({summary.accounts_without_contacts} without contacts) to {out or 'stdout'}; "
        f"rows by arm: {arms}; by rung: {rungs}; by status: {statuses}",
        file=sys.stderr,
    )
    for problem in summary.problems:
        print(f"welcomemat: fallback: {problem}", file=sys.stderr)
    for unreadable in summary.unreadable_records:
        print(f"welcomemat: no rows (record does not decode): {unreadable}", file=sys.stderr)
