"""`welcomemat precompute-status`: progress of an enqueued run (`cli.worker_command`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = sub.add_parser(
        "precompute-status",
        help="progress of an enqueued run (processed/total, by outcome, by worker); QA verdict when complete",
        description="A `precompute --enqueue` run's progress, from any machine: accounts processed of the "
        "total, by outcome and by worker; once the run is complete, its report and QA verdict.",
    )
    status.add_argument("campaign", help="tenant/campaign, a campaign id, or campaign.yaml")
    status.add_argument("--run", default=None, help="run id (default: the campaign's latest)")
    status.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    status.add_argument("--json", action="store_true", help="print progress and report as JSON")
    status.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.worker_command import run_precompute_status

    return run_precompute_status(args.campaign, run_id=args.run, as_json=args.json, zones=args.zones)
