"""`welcomemat erase`: erase what is held about an account or a person (`cli.subject_requests`)."""

from __future__ import annotations

import argparse

from cli.operator import add_by_argument

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    erase = sub.add_parser(
        "erase",
        help="data-subject erasure: remove an account's or a person's data, revoke their links and cookies",
        description="Data-subject erasure of an account (SUBJECT an account id) or a person (an e-mail "
        "address, any case): removes their data from zone sets, explain records, journals, review queues, IP "
        "ranges, conversions, run records, account records, event streams, queued CRM changes and seller "
        "alerts, revokes their links, QR codes and cookies, and keeps precompute from publishing them again. "
        "Prints what it removed. Idempotent: a second run on an erased account says `nothing left` (and "
        "writes its audit entry), exit 0. An account id the tenant holds nothing about and never erased is "
        "refused, exit 1, nothing written, unless --force. --readmit --reason TEXT lifts an erased "
        "subject's suppression instead.",
    )
    erase.add_argument("subject", metavar="SUBJECT", help="an account id, or a person's e-mail address")
    erase.add_argument("--tenant", default=None, help="the tenant to erase in (default: every one)")
    erase.add_argument(
        "--campaign",
        default=None,
        help="erase in this campaign's tenant (tenant/campaign, .yaml, id)",
    )
    erase.add_argument("--reason", default=None, help="why (the request's reference), for the audit log")
    erase.add_argument(
        "--readmit",
        action="store_true",
        help="lift an erased subject's suppression: precompute may publish it again (needs --reason); "
        "its old links stay revoked",
    )
    erase.add_argument(
        "--force",
        action="store_true",
        help="erase an account id the tenant holds nothing about and never erased (refused otherwise, "
        "exit 1): writes its suppression mark, for an account that may arrive later",
    )
    erase.add_argument("--json", action="store_true", help="one JSON object per subject: what was removed")
    add_by_argument(erase)
    erase.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.operator import cli_auditor
    from cli.subject_requests import run_erase

    return run_erase(
        args.subject,
        tenant=args.tenant,
        campaign=args.campaign,
        reason=args.reason,
        auditor=cli_auditor(args.by),
        readmit_only=args.readmit,
        force=args.force,
        as_json=args.json,
    )
