"""The folder `welcomemat mail CAMPAIGN --out DIR` writes: the print vendor's file, a QR code each, a proof.

Who gets a piece and what it says is `outbound.mail_plan` (one recipient per contact with a
postal address, the line the `print` surface may show, true on the in-home date), the files
are `outbound.mail_files`, and the blocking check that every QR code decodes and lands on
its account's page is `outbound.mail_preflight`; this module runs them in order and returns
what happened (`MailResult`; `cli.mail_command` says it). Nothing reaches DIR unless every
recipient passes: the files are written in a temporary folder beside it and renamed into
place; a failure names each recipient and why, and leaves DIR as it was. Each piece written
is its contact's `printed` mark.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import redis

from outbound.mail_files import write_mail_folder
from outbound.mail_plan import MailPlan, Recipient, mail_recipients
from outbound.mail_preflight import PreflightReport, preflight
from welcomemat.errors import InputError, WelcomematError
from welcomemat.records.contact_workflow import record_printed
from welcomemat.settings import Settings

__all__ = ["MailResult", "write_mail"]


@dataclass(frozen=True)
class MailResult:
    """What one `write_mail` did: the recipients, the preflight, whether DIR was written and marked."""

    campaign: str  # tenant/campaign
    out: Path
    in_home: date
    plan: MailPlan
    preflight: PreflightReport
    # Why the written pieces are not marked `printed` (Redis failed after the folder was in place).
    not_marked: str | None = None

    @property
    def written(self) -> bool:
        return not self.preflight.failures

    def as_json(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "out": str(self.out),
            "written": self.written,
            "in_home_date": self.in_home.isoformat(),
            "recipients": len(self.plan.recipients),
            "accounts": self.plan.accounts,
            "contacts_without_address": self.plan.contacts_without_address,
            "by_status": dict(sorted(self.plan.by_status.items())),
            "unreadable_records": self.plan.unreadable_records,
            "preflight": self.preflight.as_json(),
        }


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


def write_mail(
    campaign_ref: str,
    out: str,
    *,
    in_home: date | None,
    base_url: str | None,
    renderer_url: str | None,
    zone: str | None,
    now: datetime,
) -> MailResult:
    """The folder written to `out` when every recipient passes the preflight, else nothing written."""
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
    not_marked = None
    if not report.failures:
        not_marked = _mark_printed(settings, tenant, campaign, plan.recipients, target, now)
    return MailResult(f"{tenant}/{campaign}", target, day, plan, report, not_marked)


def _mark_printed(
    settings: Settings, tenant: str, campaign: str, recipients: list[Recipient], out: Path, now: datetime
) -> str | None:
    """Each piece in the folder is its contact's `printed` mark (`welcomemat.records.contact_workflow`).

    The folder is already in place: a Redis failure here costs the marks, not the files; it
    is returned (None when every piece is marked), and the command's exit code stays the folder's."""
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
        return f"Redis failed: {exc}"
    finally:
        client.close()
    return None
