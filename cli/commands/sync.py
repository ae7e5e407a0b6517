"""`welcomemat sync`: fold engagement events into the shared account records (`cli.sync_command`)."""

from __future__ import annotations

import argparse

from cli.arg_types import positive_int

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Defaults mirror outbound.sync's constants (not imported here: `--help` stays fast).
    sync = sub.add_parser(
        "sync",
        help="fold engagement events into the shared account records; push changes to the CRM webhook",
        description="A consumer group on each tenant's events stream: every event folded into its "
        "account's record exactly once (first and last seen, views, CTA clicks by zone, QR scans, last "
        "arm, zone-set version and facts shown); entries of stopped consumers claimed back; an entry "
        "dead-lettered after --max-deliveries. With WELCOMEMAT_CRM_WEBHOOK_URL set, each changed record "
        "is POSTed, signed, to that URL; campaigns with `seller_alerts` get their seller alerts sent. "
        "--once drains and exits (for cron). Exit 1 when events were dead-lettered.",
    )
    sync.add_argument(
        "--once", action="store_true", help="drain the streams and the webhook outbox, then exit"
    )
    sync.add_argument("--consumer", default=None, help="consumer name in the group (default: host:pid)")
    sync.add_argument(
        "--tenant",
        action="append",
        default=[],
        help="a tenant to sync (repeatable; default: every tenant with a published campaign)",
    )
    sync.add_argument(
        "--block-ms",
        type=positive_int,
        default=2000,
        help="wait for new events per read, ms (default: 2000)",
    )
    sync.add_argument(
        "--claim-idle-ms",
        type=positive_int,
        default=60_000,
        help="take over entries unacknowledged this long on another consumer, ms (default: 60000)",
    )
    sync.add_argument(
        "--max-deliveries",
        type=positive_int,
        default=5,
        help="deliveries before an event goes to the dead-letter stream (default: 5)",
    )
    sync.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.sync_command import run_sync

    return run_sync(
        once=args.once,
        consumer=args.consumer,
        tenants=args.tenant,
        block_ms=args.block_ms,
        claim_idle_ms=args.claim_idle_ms,
        max_deliveries=args.max_deliveries,
    )
