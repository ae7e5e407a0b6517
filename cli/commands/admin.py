"""`welcomemat admin invite|revoke`: who may sign in to the admin pages (`cli/admin_people.py`)."""

from __future__ import annotations

import argparse

from cli.operator import add_by_argument

__all__ = ["register", "run"]

_ROLES = ("viewer", "reviewer", "admin")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    admin = sub.add_parser(
        "admin",
        help="invite a person to the admin pages (a one-time sign-in link), or revoke them",
        description="People sign in to the renderer's admin pages (`/admin/...`) with a link. `invite` "
        "prints a sign-in link for EMAIL in one tenant with a role (viewer reads; reviewer also approves, "
        "rejects and rolls back; admin also manages guidelines and experiments): WELCOMEMAT_PUBLIC_URL, "
        "signed with WELCOMEMAT_SECRET, usable once, within 15 minutes. `revoke` ends every session of "
        "EMAIL and removes their roles (in --tenant only, when given). Both are audit-logged as --by (else "
        "WELCOMEMAT_OPERATOR, else `login:<login name>`).",
    )
    verbs = admin.add_subparsers(dest="admin_command", metavar="VERB", required=True)
    invite = verbs.add_parser(
        "invite",
        help="print a one-time sign-in link for EMAIL (15 minutes)",
        description="Stores an invite for EMAIL to --tenant as --role and prints its sign-in link "
        "(WELCOMEMAT_PUBLIC_URL/admin/sign-in/TOKEN). Opening it shows a Sign in button; the first "
        "sign-in uses it up. Exit 2 without WELCOMEMAT_SECRET or with a bad address or tenant.",
    )
    invite.add_argument("email", metavar="EMAIL", help="the person's e-mail address")
    invite.add_argument("--tenant", required=True, help="the tenant whose campaigns they may open")
    invite.add_argument("--role", required=True, choices=_ROLES, help="what they may do there")
    add_by_argument(invite)
    invite.set_defaults(handler=run)
    revoke = verbs.add_parser(
        "revoke",
        help="end every admin session of EMAIL and remove their roles",
        description="Removes EMAIL's roles (in --tenant only, when given; else in every tenant) and ends "
        "their sessions there at once: their next request is refused.",
    )
    revoke.add_argument("email", metavar="EMAIL", help="the person's e-mail address")
    revoke.add_argument("--tenant", default=None, help="only in this tenant (default: every tenant)")
    add_by_argument(revoke)
    revoke.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.admin_people import run_invite, run_revoke
    from cli.operator import cli_auditor

    auditor = cli_auditor(args.by)
    if args.admin_command == "invite":
        return run_invite(args.email, tenant=args.tenant, role=args.role, auditor=auditor)
    return run_revoke(args.email, tenant=args.tenant, auditor=auditor)
