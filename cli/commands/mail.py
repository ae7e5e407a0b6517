"""`welcomemat mail`: the direct-mail folder, checked end to end before it is written (`outbound.mail`)."""

from __future__ import annotations

import argparse
from datetime import date

from cli.arg_types import iso_day

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mail = sub.add_parser(
        "mail",
        help="direct mail: the print vendor's file, a QR code per recipient, a PDF proof, after a preflight",
        description="One recipient per contact with a postal address: the line the print surface may show, "
        "the QR URL and its image, and a PDF proof page each (line, QR, the claim's source and date). "
        "Preflight: every QR image decodes (ZXing) to its URL and every URL lands, through the running "
        "renderer, on a continuation page that shows that account's copy; a claim that expires before the "
        "in-home date gets the fallback. Only then are recipients.csv, qr/ and proof.pdf written into DIR. "
        "Exit 0 when DIR was written, 1 when the preflight failed (nothing "
        "written; each recipient and why on stderr), 2 on bad input. Needs WELCOMEMAT_SECRET.",
    )
    mail.add_argument("campaign", help="tenant/campaign, campaign.yaml, or a published campaign id")
    mail.add_argument(
        "--out", required=True, metavar="DIR", help="a new or empty folder, written whole or not at all"
    )
    mail.add_argument(
        "--in-home-date",
        type=iso_day,
        default=None,
        metavar="YYYY-MM-DD",
        help="the day the mail lands (default: today); a claim no longer true then gets the fallback",
    )
    mail.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="start of the QR URLs (default: WELCOMEMAT_PUBLIC_URL)",
    )
    mail.add_argument(
        "--renderer-url",
        default=None,
        metavar="URL",
        help="where the preflight reaches the running renderer (default: the QR URLs' own origin)",
    )
    mail.add_argument(
        "--zone",
        default=None,
        help="the zone whose copy is the printed line (default: the continuation page's first)",
    )
    mail.add_argument("--json", action="store_true", help="print the run's report as JSON on stdout")
    mail.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from cli.mail_command import run_mail

    in_home: date | None = args.in_home_date
    return run_mail(
        args.campaign,
        args.out,
        in_home=in_home,
        base_url=args.base_url,
        renderer_url=args.renderer_url,
        zone=args.zone,
        now=datetime.now(UTC),
        as_json=args.json,
    )
