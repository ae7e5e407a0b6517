"""`welcomemat explain`: why an account sees what it sees (`cli.precompute_command`)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = sub.add_parser(
        "explain",
        help="why an account sees what it sees",
        description="Why an account sees what it sees: its identity, every fact with its trust decision and "
        "reason, every zone with its rung, reason (and what it means), text, cited facts and failed checks, "
        "the provider's note on a zone it wrote no draft for, a held draft with its layer and note, and each "
        "contact's workflow state (--json: `workflow`, a list of "
        "`{contact_id, states: {state: {first_ms, at_ms, detail}}}`).",
    )
    explain.add_argument("campaign", help="campaign.yaml, tenant/campaign, or a published campaign id")
    explain.add_argument("account", help="account id")
    explain.add_argument("--zones", default=None, help=argparse.SUPPRESS)
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")
    explain.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.precompute_command import run_explain

    return run_explain(args.campaign, args.account, as_json=args.json, zones=args.zones)
