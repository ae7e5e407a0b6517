"""`welcomemat link`: print a signed personal link or a QR continuation URL (`cli/link.py`)."""

from __future__ import annotations

import argparse

from cli.arg_types import positive_int

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    link = sub.add_parser(
        "link",
        help="print a signed personal link, or a QR continuation URL with --qr",
        description="Prints a signed personal link (`?wm=`) for an account (and a contact), or with --qr a "
        "QR continuation URL (`/q/...`). URLs start with WELCOMEMAT_PUBLIC_URL and are signed with the first "
        "key of WELCOMEMAT_SECRET (unset: exit 2 before anything else happens). --qr-image also writes the "
        "QR code, SVG or PNG by the file's suffix. --qr is refused (exit 2) for a campaign without a "
        "continuation page, where every scan would land on a 404.",
    )
    link.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    link.add_argument("account", help="account id")
    link.add_argument("--contact", default=None, help="contact id (the person the link is for)")
    link.add_argument("--qr", action="store_true", help="a /q/ URL for a direct-mail QR code")
    link.add_argument(
        "--ttl", type=positive_int, default=None, metavar="DAYS", help="lifetime (default: link 30, QR 120)"
    )
    link.add_argument(
        "--qr-image",
        default=None,
        metavar="FILE",
        help="also write the QR code to FILE, .svg or .png (implies --qr)",
    )
    link.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cli.link import run_link

    return run_link(
        args.campaign,
        args.account,
        contact=args.contact,
        qr=args.qr,
        ttl_days=args.ttl,
        qr_image=args.qr_image,
    )
