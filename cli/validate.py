"""`welcomemat validate`: every problem with a campaign's inputs, in one run, as precompute sees them.

Zone contracts, the campaign, ``tenant.yaml`` and policy precedence are loaded by
precompute's own loader (`precompute/inputs.py`), so passing here means `precompute`
will not refuse them; one problem never hides another (a campaign refused for a problem
between its fields still has its theme, copy and patterns checked). Then every line of the
accounts file is read, and every account's facts are judged the way a run on `today` would
judge them (`precompute.facts.problems`: identity, the trust policy, the campaign's patterns
and fact types): bad or future dates, stale facts, wrong subject, another company, a type
no pattern is written for, a field its patterns need that is missing, a field its type does
not have.

Each problem is one line on stderr, `file:line: field: message` (a fact's: `accounts.jsonl:7:
facts[2].subject: wrong_subject: ...`), then the facts' counts per reason. `--json` prints the
report on stdout: malformed-input problems as a list of {file, line, field, message}, and the
facts' problems with their reason, account and fact ids. Exit 2 when an input is malformed
(bad input, as everywhere in the CLI), else 1 when some fact will not be used as written, else
0. Notes (segments without copy, no QR continuation page) are facts about the inputs, not
problems: they never change the exit.

A theme gets every check the renderer makes (`server.render.check_campaign_theme`), so a
theme that validates is one the renderer serves.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from precompute.check_precedence import zone_check_problems
from precompute.context import EffectivePolicy
from precompute.facts.problems import FactProblem, check_account_facts
from precompute.inputs import InputsCheck, check_campaign_inputs, find_zones_folder
from welcomemat.campaign.contract import CONTINUATION_PAGE_ID, Campaign
from welcomemat.errors import InputError
from welcomemat.records.accounts import AccountsReport, iter_account_lines, read_accounts
from welcomemat.security.ip_ranges import IpRangeRules

__all__ = [
    "FactFinding",
    "FactsReport",
    "ValidationReport",
    "check_facts",
    "format_problem",
    "print_problems",
    "run_validate",
    "unknown_segments",
    "validate_inputs",
]


@dataclass(frozen=True)
class FactFinding:
    """One fact problem, placed: the accounts file's line of its account."""

    where: InputError  # file, line, field (`facts[2].subject`) and `reason: message`
    account_id: str
    problem: FactProblem


@dataclass(frozen=True)
class FactsReport:
    """The accounts' facts as a run on `as_of` would take them."""

    as_of: date
    checked: int
    used: int
    findings: tuple[FactFinding, ...]

    def by_reason(self) -> dict[str, int]:
        """How many problems of each reason, most first (then by name)."""
        counts = Counter(f.problem.reason for f in self.findings)
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


@dataclass(frozen=True)
class ValidationReport:
    """The campaign inputs as precompute's loader found them, the accounts read, every problem."""

    check: InputsCheck
    accounts: AccountsReport | None
    problems: tuple[
        InputError, ...
    ]  # malformed input: the campaign inputs' (by file, then line), then the accounts'
    facts: FactsReport | None = None  # None: no accounts, no readable campaign, or no day to judge facts on

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def exit_code(self) -> int:
        """2 when an input is malformed, else 1 when a fact will not be used as written, else 0."""
        if self.problems:
            return EXIT_BAD_INPUT
        return EXIT_FAILED if self.facts is not None and self.facts.findings else EXIT_OK

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
            "exit": self.exit_code,
            "problems": [
                {"file": p.file, "line": p.line, "field": p.field, "message": p.message}
                for p in self.problems
            ],
            "facts": None,
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
        if self.facts is not None:
            facts = self.facts
            out["facts"] = {
                "as_of": facts.as_of.isoformat(),
                "checked": facts.checked,
                "used": facts.used,
                "by_reason": facts.by_reason(),
                "problems": [
                    {
                        "file": f.where.file,
                        "line": f.where.line,
                        "field": f.where.field,
                        "reason": f.problem.reason,
                        "message": f.problem.message,
                        "account_id": f.account_id,
                        "fact_id": f.problem.fact_id,
                        "fact_used": f.problem.fact_used,
                    }
                    for f in facts.findings
                ],
            }
        return out


def unknown_segments(report: AccountsReport, campaign: Campaign) -> Counter[str]:
    """Segments with no copy in the campaign (their accounts get the campaign default)."""
    return Counter(a.segment for a in report.accounts if a.segment not in campaign.segments)


def validate_inputs(
    campaign: str | Path,
    accounts: str | Path | None,
    *,
    zones: str | None,
    tenant_policy: str | None,
    today: date | None = None,
) -> ValidationReport:
    """Check every input; nothing is raised for bad input, every problem is in the report.

    `today`: the day the accounts' facts are judged as of, as a run that day would (the CLI
    passes the real date, tests a fixed one); None reads the files only.
    """
    campaign_path = Path(campaign)
    from server.render import check_campaign_theme

    check = check_campaign_inputs(campaign_path, zones, tenant_policy, check_campaign_theme)
    problems = list(check.problems)
    if check.zones:  # a contract that reads as dropping hard checks: a run runs them all the same
        problems += zone_check_problems(check.zones, find_zones_folder(campaign_path, zones))
    report = None
    ip_rules = check.tenant.ip_ranges if check.tenant is not None else None  # tenant.yaml's allowance
    if accounts is not None:
        try:
            report = read_accounts(accounts, ip_rules)
        except InputError as exc:  # the file itself (missing): its lines cannot be read
            problems.append(exc)
        else:
            problems += report.problems
    facts = None
    if report is not None and today is not None and check.campaign is not None and check.policy is not None:
        facts = check_facts(Path(accounts or ""), report, check.campaign, check.policy, today, ip_rules)
    return ValidationReport(check=check, accounts=report, problems=tuple(problems), facts=facts)


def check_facts(
    path: Path,
    report: AccountsReport,
    campaign: Campaign,
    policy: EffectivePolicy,
    today: date,
    ip_rules: IpRangeRules | None = None,
) -> FactsReport:
    """Every account's facts, judged by precompute's own functions as of `today`.

    `ip_rules`: the rules `report` was read with (tenant.yaml's), so every account it kept has its line.
    """
    lines = _account_lines(path, ip_rules)
    findings: list[FactFinding] = []
    checked = used = 0
    for account in report.accounts:
        result = check_account_facts(account, campaign, policy, today)
        checked += result.facts
        used += result.used
        line = lines.get(account.account_id)
        findings += [
            FactFinding(
                where=InputError(f"{p.reason}: {p.message}", file=path, line=line, field=p.field),
                account_id=account.account_id,
                problem=p,
            )
            for p in result.problems
        ]
    return FactsReport(as_of=today, checked=checked, used=used, findings=tuple(findings))


def _account_lines(path: Path, ip_rules: IpRangeRules | None) -> dict[str, int]:
    """The line each account id is first read from (the one a run keeps)."""
    lines: dict[str, int] = {}
    for line_no, item in iter_account_lines(path, ip_rules):
        if not isinstance(item, InputError):
            lines.setdefault(item.account_id, line_no)
    return lines


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
    if report.facts is not None:
        facts = report.facts
        unused = facts.checked - facts.used
        counts = f"{facts.checked} checked, {facts.used} used, {unused} will not be used"
        print(f"facts as of {facts.as_of}: {counts}")
    for note in report.notes():
        print(f"  note: {note}")


def _print_reasons(facts: FactsReport) -> None:
    """The facts' problems counted per reason, after the problems themselves (stderr, with them)."""
    print(f"fact problems by reason ({len(facts.findings)}):", file=sys.stderr)
    for reason, n in facts.by_reason().items():
        print(f"  {reason}: {n}", file=sys.stderr)


def run_validate(
    campaign: str,
    accounts: str | None,
    *,
    zones: str | None,
    tenant_policy: str | None,
    as_json: bool,
    today: date,
) -> int:
    report = validate_inputs(campaign, accounts, zones=zones, tenant_policy=tenant_policy, today=today)
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
        return report.exit_code
    _print_summary(report)
    fact_lines = [f.where for f in report.facts.findings] if report.facts is not None else []
    accounts_file = str(Path(accounts)) if accounts is not None else None
    # The accounts file's lines in order, malformed ones and facts' problems together.
    inputs = [p for p in report.problems if p.file != accounts_file]
    lines = sorted(
        [p for p in report.problems if p.file == accounts_file] + fact_lines, key=lambda p: p.line or 0
    )
    print_problems([*inputs, *lines])
    if report.facts is not None and report.facts.findings:
        _print_reasons(report.facts)
    if report.problems:
        files = len({p.file for p in report.problems})
        noun = "problem" if len(report.problems) == 1 else "problems"
        print(f"{len(report.problems)} {noun} in {files} file{'s' if files != 1 else ''}", file=sys.stderr)
    return report.exit_code
