"""`welcomemat experiment stop CAMPAIGN EXP --keep VARIANT`: end a copy experiment (`cli.experiment`)."""

from __future__ import annotations

import argparse

from cli.operator import add_by_argument

__all__ = ["register", "run_stop"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    experiment = sub.add_parser(
        "experiment",
        help="copy experiments: stop one and keep the winner",
        description="Copy experiments, declared in campaign.yaml: `stop` ends one and keeps a variant.",
    )
    actions = experiment.add_subparsers(dest="experiment", metavar="ACTION", required=True)
    stop = actions.add_parser(
        "stop",
        help="end the experiment: every personal account gets VARIANT "
        "(a new guideline version, audit-logged)",
        description="Ends the copy experiment EXP: VARIANT becomes every personal account's copy, as a new "
        "guideline version (--version: 1-64 letters, digits and `_.+-`) recorded as active with the current "
        "one as its previous (`welcomemat guidelines rollback` restarts the experiment) and audit-logged "
        "(`experiment_stop`). Accounts already on VARIANT keep their zone sets; the others get VARIANT at "
        "the next `welcomemat precompute`. An unknown file, experiment or variant is exit 2, naming it.",
    )
    stop.add_argument("campaign", help="the campaign's campaign.yaml")
    stop.add_argument("experiment_id", metavar="EXP", help="the experiment's id")
    stop.add_argument(
        "--keep", required=True, metavar="VARIANT", help="the variant every personal account gets"
    )
    stop.add_argument(
        "--version", default=None, help="the new guideline version (default: <current>+<EXP>-<VARIANT>)"
    )
    stop.add_argument("--reason", default=None, help="why, for the change record and the audit log")
    add_by_argument(stop)
    stop.set_defaults(handler=run_stop)


def run_stop(args: argparse.Namespace) -> int:
    from cli import experiment
    from cli.operator import cli_auditor

    return experiment.run_stop(
        args.campaign,
        args.experiment_id,
        keep=args.keep,
        version=args.version,
        reason=args.reason,
        auditor=cli_auditor(args.by),
    )
