"""`welcomemat mail CAMPAIGN --out DIR`: the direct-mail folder (`outbound.mail`), run and reported.

What the run did goes to stderr: the recipients, their statuses and the preflight's figures,
then each record that does not decode and each recipient that failed the preflight, and
where the folder went (or that nothing was written). `--json` prints the same report as JSON
on stdout. Exit 0 when DIR was written, 1 when the preflight failed.
"""

from __future__ import annotations

import json
import sys
from datetime import date, datetime

from cli.command_output import counts_in_words
from outbound.mail import MailResult, write_mail
from outbound.mail_files import PROOF_FILE, VENDOR_FILE
from outbound.mail_plan import QR_FOLDER

__all__ = ["print_mail_report", "run_mail"]


def run_mail(
    campaign_ref: str,
    out: str,
    *,
    in_home: date | None,
    base_url: str | None,
    renderer_url: str | None,
    zone: str | None,
    now: datetime,
    as_json: bool = False,
) -> int:
    """`welcomemat mail`: 0 when the folder was written, 1 when the preflight failed (nothing written)."""
    result = write_mail(
        campaign_ref, out, in_home=in_home, base_url=base_url, renderer_url=renderer_url, zone=zone, now=now
    )
    if result.not_marked is not None:
        print(
            f"welcomemat: the pieces were written but not marked printed ({result.not_marked})",
            file=sys.stderr,
        )
    print_mail_report(result)
    if as_json:
        print(json.dumps(result.as_json(), indent=2))
    return 0 if result.written else 1


def print_mail_report(result: MailResult) -> None:
    """The run on stderr: counts and preflight figures, each unreadable record and failure, the outcome."""
    plan, report, day = result.plan, result.preflight, result.in_home.isoformat()
    statuses = counts_in_words(plan.by_status)
    per_1000 = report.seconds * 1000 / report.checked if report.checked else 0.0
    print(
        f"mail {result.campaign}: {len(plan.recipients)} recipients from {plan.accounts} accounts "
        f"({plan.contacts_without_address} contacts without an address), in home {day}; "
        f"by status: {statuses}; preflight: {report.decoded}/{report.checked} QR codes decoded, "
        f"{report.resolved} landed on their page, {report.seconds:.2f} s ({per_1000:.1f} s per 1,000)",
        file=sys.stderr,
    )
    for unreadable in plan.unreadable_records:
        print(f"welcomemat: no recipients (record does not decode): {unreadable}", file=sys.stderr)
    for failure in report.failures:
        print(f"welcomemat: preflight failed: {failure}", file=sys.stderr)
    if report.failures:
        print(
            f"welcomemat: preflight failed for {len(report.failures)} recipient(s); "
            f"nothing written to {result.out}",
            file=sys.stderr,
        )
    else:
        print(f"written to {result.out}: {VENDOR_FILE}, {PROOF_FILE}, {QR_FOLDER}/", file=sys.stderr)
