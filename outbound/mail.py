"""`welcomemat mail CAMPAIGN --out DIR`: the print vendor's file, a QR code each, a proof sheet.

Who gets a piece and what it says is `outbound.mail_plan` (one recipient per contact with a
postal address, the line the `print` surface may show, true on the in-home date), the files
are `outbound.mail_files`, and the blocking check that every QR code decodes and lands on
its account's page is `outbound.mail_preflight`; this module runs them in order. Nothing
reaches DIR unless every recipient passes: the files are written in a temporary folder
beside it and renamed into place; a failure lists each recipient and why, and leaves DIR as
it was. Each piece written is its contact's `printed` mark.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from datetime import date, datetime
from pathlib import Path

import redis

from outbound.command_output import counts_in_words
from outbound.mail_files import PROOF_FILE, VENDOR_FILE, write_mail_folder
from outbound.mail_plan import QR_FOLDER, MailPlan, Recipient, mail_recipients
from outbound.mail_preflight import PreflightReport, preflight
from welcomemat.errors import InputError, WelcomematError
from welcomemat.records.contact_workflow import record_printed
from welcomemat.settings import Settings

__all__ = ["run_mail"]

# -- the command -----------------------------------------------------------------------------------


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError("exists and is not an empty folder; nothing was written", file=out, field="--out")
    if not out.parent.is_dir():
        raise InputError(f"folder {str(out.parent)!r} does not exist", file=out, field="--out")


def _publish(folder: Path, out: Path) -> None:
    """Move the checked folder into place (a rename on the same file system)."""
    if out.is_dir():
        out.rmdir()  # empty: checked before anything was written
    os.chmod(folder, 0o755)
    os.replace(folder, out)


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
    import json

    from welcomemat.campaign.ref import resolve_campaign_ref
    from welcomemat.campaign.view import load_campaign_view
    from welcomemat.security.links import contact_links
    from welcomemat.security.tokens import TokenSigner
    from welcomemat.settings import origin_url
    from welcomemat.storage.connection import connect, resolve_redis

    target = Path(out)
    _check_out(target)
    day = in_home or now.date()
    if day < now.date():
        raise InputError(
            f"{day.isoformat()} is before today ({now.date().isoformat()})", field="--in-home-date"
        )
    settings = Settings.from_env()
    public_url = origin_url(base_url, "--base-url") if base_url else settings.public_url
    renderer = origin_url(renderer_url, "--renderer-url") if renderer_url else public_url
    signer = TokenSigner.from_setting(settings.require_secret())
    client = connect(resolve_redis(settings))
    try:
        tenant, campaign = resolve_campaign_ref(campaign_ref, client=client)
        view = load_campaign_view(client, tenant, campaign)

        qr_for = contact_links(signer, public_url, tenant=tenant, campaign=campaign, qr=True)
        plan = mail_recipients(client, view, qr_for, now=now, in_home=day, zone=zone)
    except redis.RedisError as exc:
        raise WelcomematError(f"mail {campaign_ref}: Redis failed ({exc}); nothing was written") from exc
    finally:
        client.close()
    folder = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
    try:
        write_mail_folder(plan.recipients, folder)
        report = preflight(plan.recipients, folder, renderer, public_url)
        if not report.failures:
            _publish(folder, target)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not report.failures:
        _mark_printed(settings, tenant, campaign, plan.recipients, target, now)
    name = f"{tenant}/{campaign}"
    _report(name, target, day, plan, report)
    if as_json:
        summary = {
            "campaign": name,
            "out": str(target),
            "written": not report.failures,
            "in_home_date": day.isoformat(),
            "recipients": len(plan.recipients),
            "accounts": plan.accounts,
            "contacts_without_address": plan.contacts_without_address,
            "by_status": dict(sorted(plan.by_status.items())),
            "unreadable_records": plan.unreadable_records,
            "preflight": report.as_json(),
        }
        print(json.dumps(summary, indent=2))
    return 1 if report.failures else 0


def _mark_printed(
    settings: Settings, tenant: str, campaign: str, recipients: list[Recipient], out: Path, now: datetime
) -> None:
    """Each piece in the folder is its contact's `printed` mark (`welcomemat.records.contact_workflow`).

    The folder is already in place: a Redis failure here costs the marks, not the files, and
    is said on stderr (the exit code stays the folder's)."""
    from welcomemat.storage.connection import connect, resolve_redis

    marks = (
        (
            r.cells["account_id"],
            r.cells["contact_id"],
            {"rung": r.cells["rung"], "status": r.cells["status"], "file": str(out)},
        )
        for r in recipients
    )
    client = connect(resolve_redis(settings))
    try:
        record_printed(client, tenant, campaign, marks, now_ms=int(now.timestamp() * 1000))
    except redis.RedisError as exc:
        print(
            f"welcomemat: the pieces were written but not marked printed (Redis failed: {exc})",
            file=sys.stderr,
        )
    finally:
        client.close()


def _report(name: str, out: Path, day: date, plan: MailPlan, report: PreflightReport) -> None:
    statuses = counts_in_words(plan.by_status)
    per_1000 = report.seconds * 1000 / report.checked if report.checked else 0.0
    print(
        f"mail {name}: {len(plan.recipients)} recipients from {plan.accounts} accounts "
        f"({plan.contacts_without_address} contacts without an address), in home {day.isoformat()}; "
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
            f"welcomemat: preflight failed for {len(report.failures)} recipient(s); nothing written to {out}",
            file=sys.stderr,
        )
    else:
        print(f"written to {out}: {VENDOR_FILE}, {PROOF_FILE}, {QR_FOLDER}/", file=sys.stderr)
