"""`welcomemat validate`: every problem with a campaign's inputs, in one run, as precompute sees them.

Zone contracts, the campaign, ``tenant.yaml`` and policy precedence are loaded by
precompute's own loader (`precompute/inputs.py`), so passing here means `precompute`
will not refuse them; then every line of the accounts file is read. Each problem is one
line on stderr, `file:line: field: message`; `--json` prints the report, problems as a
list of {file, line, field, message}, on stdout. Exit 0 when nothing is wrong, 2 when
anything is (bad input, as everywhere in the CLI). Notes (segments without copy, no QR
continuation page) are facts about the inputs, not problems: they never change the exit.

A theme gets every check the renderer makes (`server.render.check_campaign_theme`), so a
theme that validates is one the renderer serves.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from precompute.inputs import InputsCheck, check_campaign_inputs
from welcomemat.accounts import AccountsReport, read_accounts
from welcomemat.campaign import CONTINUATION_PAGE_ID, Campaign
from welcomemat.errors import InputError

__all__ = [
    "ValidationReport",
    "format_problem",
    "print_problems",
    "run_validate",
    "unknown_segments",
    "validate_inputs",
]


@dataclass(frozen=True)
class ValidationReport:
    """The campaign inputs as precompute's loader found them, the accounts read, every problem."""

    check: InputsCheck
    accounts: AccountsReport | None
    problems: tuple[InputError, ...]  # the campaign inputs' (by file, then line), then the accounts'

    @property
    def ok(self) -> bool:
        return not self.problems

    def notes(self) -> list[str]:
        campaign = self.check.campaign
        if campaign is None:
            return []
        out = []
        if CONTINUATION_PAGE_ID not in campaign.pages:
            out.append(
                f"no {CONTINUATION_PAGE_ID!r} page: this campaign cannot issue QR links "
                "(`welcomemat link --qr` refuses it: a scan would land on a 404)"
            )
        if self.accounts is not None:
            for segment, n in sorted(unknown_segments(self.accounts, campaign).items()):
                out.append(f"{n} accounts in segment {segment!r}, which has no copy: they get the default")
        return out

    def as_dict(self) -> dict[str, object]:
        campaign = self.check.campaign
        out: dict[str, object] = {
            "ok": self.ok,
            "problems": [
                {"file": p.file, "line": p.line, "field": p.field, "message": p.message}
                for p in self.problems
            ],
            "campaign": None,
            "zones": sorted(self.check.zones or ()),
            "tenant_policy": self.check.tenant_file,
            "notes": self.notes(),
        }
        if campaign is not None:
            out["campaign"] = {
                "tenant": campaign.tenant,
                "campaign": campaign.campaign,
                "pages": list(campaign.pages),
                "segments": list(campaign.segments),
                "ctas": [c.id for c in campaign.ctas],
                "qr_links": CONTINUATION_PAGE_ID in campaign.pages,
            }
        theme = self.check.theme
        if theme is not None and campaign is not None:
            out["theme"] = {"folder": campaign.theme, "files": ["base.html", *sorted(theme.files)]}
        if self.accounts is not None:
            acc = self.accounts
            out["accounts"] = {
                "read": len(acc.accounts),
                "skipped": acc.skipped,
                "by_segment": dict(sorted(Counter(a.segment for a in acc.accounts).items())),
                "segments_without_copy": dict(unknown_segments(acc, campaign))
                if campaign is not None
                else {},
            }
        return out


def unknown_segments(report: AccountsReport, campaign: Campaign) -> Counter[str]:
    """Segments with no copy in the campaign (their accounts get the campaign default)."""
    return Counter(a.segment for a in report.accounts if a.segment not in campaign.segments)


def validate_inputs(
    campaign: str | Path, accounts: str | Path | None, *, zones: str | None, tenant_policy: str | None
) -> ValidationReport:
    """Check every input; nothing is raised for bad input, every problem is in the report."""
    campaign_path = Path(campaign)
    from server.render import check_campaign_theme

    check = check_campaign_inputs(campaign_path, zones, tenant_policy, check_campaign_theme)
    problems = list(check.problems)
    report = None
    if accounts is not None:
        try:
            report = read_accounts(accounts)
        except InputError as exc:  # the file itself (missing): its lines cannot be read
            problems.append(exc)
        else:
            problems += report.problems
    return ValidationReport(check=check, accounts=report, problems=tuple(problems))


def format_problem(problem: InputError) -> str:
    """`file:line: field: message`; the parts a problem does not have are left out."""
    where = problem.file or ""
    if problem.line is not None:
        where = f"{where}:{problem.line}"
    parts = [part for part in (where, problem.field, problem.message) if part]
    return ": ".join(parts)


def print_problems(problems: Sequence[InputError], limit: int | None = None) -> None:
    """Each problem on its own line on stderr (the first `limit`, then how many more)."""
    shown = problems if limit is None else problems[:limit]
    for problem in shown:
        print(format_problem(problem), file=sys.stderr)
    if len(problems) > len(shown):
        print(f"... and {len(problems) - len(shown)} more", file=sys.stderr)


def _print_summary(report: ValidationReport) -> None:
    campaign, check = report.check.campaign, report.check
    if campaign is not None:
        state = "ok" if check.inputs is not None else "loads, with problems below"
        zones = ", ".join(sorted(check.zones or ()))
        print(
            f"campaign {campaign.tenant}/{campaign.campaign}: {state} ({len(campaign.pages)} pages, "
            f"{len(campaign.segments)} segments, {len(campaign.ctas)} CTAs; zones: {zones})"
        )
    if check.theme is not None and campaign is not None:
        print(f"theme {campaign.theme}: ok ({', '.join(['base.html', *sorted(check.theme.files)])})")
    if check.tenant_file is not None:
        print(f"tenant policy: {check.tenant_file}")
    if report.accounts is not None:
        acc = report.accounts
        print(f"accounts: {len(acc.accounts)} read, {acc.skipped} lines skipped")
    for note in report.notes():
        print(f"  note: {note}")


def run_validate(
    campaign: str, accounts: str | None, *, zones: str | None, tenant_policy: str | None, as_json: bool
) -> int:
    report = validate_inputs(campaign, accounts, zones=zones, tenant_policy=tenant_policy)
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        _print_summary(report)
        print_problems(report.problems)
        if report.problems:
            files = len({p.file for p in report.problems})
            noun = "problem" if len(report.problems) == 1 else "problems"
            print(
                f"{len(report.problems)} {noun} in {files} file{'s' if files != 1 else ''}", file=sys.stderr
            )
    return EXIT_OK if report.ok else EXIT_BAD_INPUT
