"""`welcomemat qa`: population QA of what is published (`cli.precompute_command`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    qa = sub.add_parser(
        "qa",
        help="population QA of what is published: verdict and findings",
        description="Scans 100% of what is published: counts by rung and zone reason, rates, invariant "
        "re-checks and a verdict, GO, GO WITH FIXES or NO GO; accounts, personal zones and failed checks per "
        "guideline version (and bundle hash) that wrote them; and a stratified sample to read. --findings "
        "groups failures across the population by reason, fact type, segment and guideline version, each a "
        "rate with its counts and the layer most likely at fault. Exit 1 on NO GO.",
    )
    qa.add_argument("campaign", help="campaign.yaml, tenant/campaign, or a published campaign id")
    qa.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    qa.add_argument("--json", action="store_true", help="print the QA report as JSON")
    qa.add_argument(
        "--findings",
        action="store_true",
        help="also group failures across the population (reason, fact type, segment, guideline "
        "version) and name the layer most likely at fault",
    )
    qa.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.precompute_command import run_qa_command

    return run_qa_command(args.campaign, as_json=args.json, zones=args.zones, findings=args.findings)
