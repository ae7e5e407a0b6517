"""`welcomemat worker`: process enqueued precompute runs from Redis (`cli.worker_command`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.arg_types import positive_int

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Defaults mirror precompute.worker's constants (not imported here: `--help` stays fast).
    worker = sub.add_parser(
        "worker",
        help="process enqueued precompute runs from Redis (any number, any machine); SIGTERM: finish, exit",
        description="Consume `precompute --enqueue` runs from the campaigns' Redis Streams through one "
        "consumer group: at-least-once, entries of dead workers claimed back, an entry dead-lettered after "
        "--max-deliveries (its accounts journalled `failed`), idempotent publish; Redis outages are waited "
        "out. SIGTERM or Ctrl-C: the entry in hand is finished, then it exits. --once drains and exits 0 "
        "(1 when Redis stays unreachable for 120 s). "
        "Follow a run with `welcomemat precompute-status CAMPAIGN`.",
    )
    worker.add_argument(
        "--campaign", default=None, help="tenant/campaign or a campaign id (default: every enqueued run)"
    )
    worker.add_argument("--name", default=None, help="consumer name in the group (default: host:pid)")
    worker.add_argument(
        "--once", action="store_true", help="drain the streams (claiming dead workers' entries), then exit 0"
    )
    worker.add_argument(
        "--block-ms", type=positive_int, default=2000, help="wait for new work per read, ms (default: 2000)"
    )
    worker.add_argument(
        "--claim-idle-ms",
        type=positive_int,
        default=60_000,
        help="take over entries unacknowledged this long on another worker, ms (default: 60000)",
    )
    worker.add_argument(
        "--max-deliveries",
        type=positive_int,
        default=5,
        help="deliveries before an entry goes to the dead-letter stream (default: 5)",
    )
    worker.add_argument(
        "--heartbeat-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="touch PATH at every pass of the loop and after every entry, for a liveness probe "
        "(e.g. /tmp/welcomemat-worker.alive)",
    )
    worker.add_argument(
        "--check-alive",
        action="store_true",
        help="consume nothing: exit 0 when --heartbeat-file was touched within --max-age seconds, else 1 "
        "(the compose healthcheck and the Kubernetes liveness probe)",
    )
    worker.add_argument(
        "--max-age",
        type=positive_int,
        default=600,
        help="with --check-alive: the oldest heartbeat still alive, seconds (default: 600, longer than "
        "one entry of 50 accounts with a model)",
    )
    worker.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.worker_command import check_alive, run_worker

    if args.check_alive:
        return check_alive(args.heartbeat_file, max_age_s=args.max_age)
    from server.render import account_page_check

    # The renderer's check of each account's own pages in the theme, as a local run has it.
    return run_worker(
        page_check=account_page_check,
        campaign=args.campaign,
        name=args.name,
        once=args.once,
        block_ms=args.block_ms,
        claim_idle_ms=args.claim_idle_ms,
        max_deliveries=args.max_deliveries,
        heartbeat_file=args.heartbeat_file,
    )
