"""`welcomemat init DIR`: a new campaign folder a marketer can start from.

The folder is self-contained, so it validates and runs wherever it is copied:

    DIR/campaign.yaml    the campaign, every section commented (what it is, what to change)
    DIR/tenant.yaml      the brand's rules every campaign of the tenant inherits
    DIR/zones/*.yaml     the zone contracts the campaign's pages use
    DIR/accounts.jsonl   five sample accounts dated back from today (sample_accounts.py)

The YAML files ship inside the package (`cli/scaffold/`, package data), because the
repository's `zones/` and `examples/` are not installed. `init` never overwrites: a folder
that exists and holds anything is refused before a byte is written, since the files in it
are somebody's work.
"""

from __future__ import annotations

import shlex
from datetime import date
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from cli.sample_accounts import sample_accounts, sample_accounts_jsonl
from welcomemat.errors import InputError

__all__ = ["SCAFFOLD_FILES", "run_init", "write_scaffold"]

# The scaffold's files, as written into DIR (the zone contracts are every zones/*.yaml).
SCAFFOLD_FILES = ("campaign.yaml", "tenant.yaml")
_ACCOUNTS_FILE = "accounts.jsonl"
_ZONES_DIR = "zones"
_THEME_DIR = "theme"
# The account whose page the printed next steps open: the one with a personal headline.
_SHOWCASE_ACCOUNT = "acct_brightwave"


def _scaffold() -> Traversable:
    return resources.files("cli") / "scaffold"


def _refuse_unless_empty(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise InputError("exists and is not a folder; init writes a new campaign folder", file=target)
    if target.is_dir() and any(target.iterdir()):
        raise InputError(
            "folder is not empty; init never overwrites: name a new or empty folder (nothing was written)",
            file=target,
        )


def write_scaffold(target: Path, today: date) -> list[Path]:
    """Write a new campaign into `target` (absent or empty); the files written, in order.

    `today` dates the sample accounts (the caller's clock: the CLI passes today's UTC date).
    Raises InputError, before writing anything, when `target` is a file or a non-empty folder.
    """
    _refuse_unless_empty(target)
    scaffold = _scaffold()
    zones = sorted(
        (f for f in (scaffold / _ZONES_DIR).iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name
    )
    theme = sorted((f for f in (scaffold / _THEME_DIR).iterdir() if f.is_file()), key=lambda f: f.name)
    target.mkdir(parents=True, exist_ok=True)
    (target / _ZONES_DIR).mkdir()
    (target / _THEME_DIR).mkdir()
    written: list[Path] = []
    for name in SCAFFOLD_FILES:
        written.append(target / name)
        written[-1].write_bytes((scaffold / name).read_bytes())
    for contract in zones:
        written.append(target / _ZONES_DIR / contract.name)
        written[-1].write_bytes(contract.read_bytes())
    for part in theme:
        written.append(target / _THEME_DIR / part.name)
        written[-1].write_bytes(part.read_bytes())
    written.append(target / _ACCOUNTS_FILE)
    written[-1].write_text(sample_accounts_jsonl(today), encoding="utf-8")
    return written


def _print_summary(target: Path, today: date, written: list[Path]) -> None:
    d = target
    zones = [p for p in written if p.parent == d / _ZONES_DIR]
    campaign, accounts = shlex.quote(str(d / "campaign.yaml")), shlex.quote(str(d / _ACCOUNTS_FILE))
    print(f"Created {d}/, a campaign to start from:")
    rows = [
        (
            d / "campaign.yaml",
            "the campaign: pages, copy per segment, links and rules; every section commented",
        ),
        (
            d / "tenant.yaml",
            "your brand's rules, inherited by every campaign (a campaign may only tighten them)",
        ),
        (d / _ZONES_DIR, f"the zone contracts: each page zone's limits and checks ({len(zones)} files)"),
        (
            d / _THEME_DIR,
            "your pages' frame: base.html (header, footer) and site.css; zones stay as they are",
        ),
        (
            d / _ACCOUNTS_FILE,
            f"five sample accounts dated from {today.isoformat()}; replace with your export",
        ),
    ]
    width = max(len(str(path)) for path, _ in rows) + 2
    for path, what in rows:
        print(f"  {str(path).ljust(width)}{what}")
    print("\nWhat each sample account shows after precompute:")
    for sample in sample_accounts(today):
        print(f"  {sample.account_id.ljust(17)}{sample.shows}")
    secret = "export WELCOMEMAT_SECRET=\"$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')\""
    print("\nNext: edit campaign.yaml (your company, site, copy), then")
    for command in (
        f"welcomemat validate {campaign} {accounts}",
        f"welcomemat precompute {campaign} {accounts}",
        f"welcomemat explain {campaign} {_SHOWCASE_ACCOUNT}",
        secret,
        f"welcomemat link {campaign} {_SHOWCASE_ACCOUNT}",
        "welcomemat serve",
    ):
        print(f"  {command}")
    print("and open the printed link while `serve` runs.")


def run_init(directory: str, *, today: date) -> int:
    target = Path(directory)
    written = write_scaffold(target, today)
    _print_summary(target, today, written)
    return 0
