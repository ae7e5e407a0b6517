"""`welcomemat precompute`: build, check and publish every account's zone set (`cli.precompute_command`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from cli.arg_types import positive_float, positive_int
from cli.operator import add_by_argument

if TYPE_CHECKING:
    from welcomemat.model_cost import RunBudget

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pre = sub.add_parser(
        "precompute",
        help="build, check and publish every account's zone set; QA verdict",
        description="Builds, checks and publishes every account's zone set: a progress bar on a terminal, "
        "then the summary, the QA verdict and the run's cost line (model calls, tokens in and out, cost). "
        "The accounts file may be part of the population: accounts not in it keep their zone sets and their "
        'IP ranges (the accounts in it replace their own; `"ip_ranges": []` removes them). Each new '
        "zone-set version is audit-logged (`publish`, as --by; a worker's as `worker:<consumer name>`). "
        "With --enqueue it validates, then puts the accounts on the campaign's Redis Stream for "
        "`welcomemat worker` processes on any machine and prints the run id. Exit 1 on a NO GO verdict or "
        "failed accounts (a run stopped by --budget exits as it would without it), 2 on bad input.",
    )
    pre.add_argument("campaign", help="path to campaign.yaml")
    pre.add_argument("accounts", help="path to accounts.jsonl")
    pre.add_argument(
        "--provider", default="offline", choices=["offline", "openai"], help="zone writer (default: offline)"
    )
    pre.add_argument(
        "--concurrency", type=positive_int, default=1, help="accounts assembled at once (default: 1)"
    )
    pre.add_argument("--resume", action="store_true", help="skip accounts a previous run already published")
    pre.add_argument(
        "--self-review",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="model providers: a second call per account that may drop a zone, never add one (default: on)",
    )
    pre.add_argument(
        "--deadline",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="model providers: stop calling the model after this long; the rest are deferred to the next run",
    )
    pre.add_argument(
        "--budget",
        type=_budget,
        default=None,
        metavar="LIMIT",
        help="model providers: start no more accounts once the run's model tokens (100000tokens) or cost "
        "($5, 5usd; WELCOMEMAT_MODEL_PRICES) reach LIMIT; the rest are deferred, not published, and done "
        "by the next run (exit code as without it)",
    )
    pre.add_argument(
        "--zones",
        default=None,
        help="zone contracts folder (default: zones/ beside the campaign, else ./zones, else its parent's)",
    )
    pre.add_argument(
        "--tenant-policy", default=None, help="tenant.yaml (default: tenant.yaml beside the campaign)"
    )
    pre.add_argument("--json", action="store_true", help="print the run report as JSON")
    pre.add_argument(
        "--enqueue",
        action="store_true",
        help="validate, then put the accounts on the campaign's Redis Stream for `welcomemat worker` "
        "processes (any machine) instead of processing here; prints the run id",
    )
    add_by_argument(pre)
    pre.set_defaults(handler=run)


def _budget(text: str) -> RunBudget:
    from welcomemat.model_cost import parse_budget  # here: it imports pydantic, which `--help` must not

    try:
        return parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from cli.operator import cli_auditor
    from cli.precompute_command import run_precompute
    from server.render import account_page_check, check_campaign_theme
    from welcomemat.records.audit import Via

    # The renderer's theme checks, handed to precompute: a theme it publishes is one the renderer serves.
    return run_precompute(
        args.campaign,
        args.accounts,
        provider=args.provider,
        concurrency=args.concurrency,
        as_json=args.json,
        resume=args.resume,
        zones=args.zones,
        tenant=args.tenant_policy,
        self_review=args.self_review,
        deadline_s=args.deadline,
        enqueue=args.enqueue,
        check_theme=check_campaign_theme,
        auditor=cli_auditor(args.by, via=Via.PRECOMPUTE),
        page_check=account_page_check,
        budget=args.budget,
    )
