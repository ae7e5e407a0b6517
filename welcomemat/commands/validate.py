"""`welcomemat validate`: load a campaign, its zone contracts and accounts; report what is wrong."""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from welcomemat.accounts import AccountsReport, read_accounts
from welcomemat.campaign import Campaign, load_campaign
from welcomemat.errors import InputError
from welcomemat.zone_contract import ZoneContract, load_zone_contracts


@dataclass
class InputsReport:
    campaign: Campaign
    zones: dict[str, ZoneContract]
    accounts: AccountsReport | None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "campaign": {
                "tenant": self.campaign.tenant,
                "campaign": self.campaign.campaign,
                "pages": list(self.campaign.pages),
                "segments": list(self.campaign.segments),
                "ctas": [c.id for c in self.campaign.ctas],
            },
            "zones": sorted(self.zones),
        }
        if self.accounts is not None:
            acc = self.accounts
            out["accounts"] = {
                "read": len(acc.accounts),
                "skipped": acc.skipped,
                "by_segment": dict(sorted(Counter(a.segment for a in acc.accounts).items())),
                "segments_without_copy": dict(unknown_segments(acc, self.campaign)),
                "problems": [
                    {"file": p.file, "line": p.line, "field": p.field, "message": p.message}
                    for p in acc.problems
                ],
            }
        return out


def find_zones_folder(campaign_path: Path, zones: str | None) -> Path:
    """`--zones`, else zones/ beside the campaign, else ./zones, else zones/ beside its folder.

    The campaign's own folder comes first: a folder `welcomemat init` wrote carries its own
    contracts, and running from a repository clone must not swap in the clone's `zones/`.
    """
    if zones is not None:
        return Path(zones)
    for candidate in (campaign_path.parent / "zones", Path("zones"), campaign_path.parent.parent / "zones"):
        if candidate.is_dir():
            return candidate
    raise InputError("no zone contracts folder found; pass --zones DIR", file=campaign_path)


def load_inputs(campaign: str | Path, accounts: str | Path | None, zones: str | None = None) -> InputsReport:
    """Zone contracts, then the campaign checked against them, then the accounts."""
    campaign_path = Path(campaign)
    contracts = dict(load_zone_contracts(find_zones_folder(campaign_path, zones)))
    loaded = load_campaign(campaign_path, contracts)
    report = read_accounts(accounts) if accounts is not None else None
    return InputsReport(campaign=loaded, zones=contracts, accounts=report)


def unknown_segments(report: AccountsReport, campaign: Campaign) -> Counter[str]:
    """Segments with no copy in the campaign (their accounts get the campaign default)."""
    return Counter(a.segment for a in report.accounts if a.segment not in campaign.segments)


def print_problems(report: AccountsReport, limit: int = 20) -> None:
    for problem in report.problems[:limit]:
        print(f"  {problem}", file=sys.stderr)
    if len(report.problems) > limit:
        print(f"  ... and {len(report.problems) - limit} more", file=sys.stderr)


def run_validate(campaign: str, accounts: str | None, *, zones: str | None, as_json: bool) -> int:
    report = load_inputs(campaign, accounts, zones)
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        c = report.campaign
        print(
            f"campaign {c.tenant}/{c.campaign}: ok ({len(c.pages)} pages, {len(c.segments)} segments, "
            f"{len(c.ctas)} CTAs; zones: {', '.join(sorted(report.zones))})"
        )
        if report.accounts is not None:
            acc = report.accounts
            print(f"accounts: {len(acc.accounts)} read, {acc.skipped} lines skipped")
            print_problems(acc)
            for segment, n in sorted(unknown_segments(acc, c).items()):
                print(f"  note: {n} accounts in segment {segment!r}, which has no copy: they get the default")
    return 1 if report.accounts is not None and report.accounts.problems else 0
