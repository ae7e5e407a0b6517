"""Writes and checks the generated documentation pages; `python -m cli.reference_pages [--check]`.

Each page is rendered from what it documents, so it cannot say something the code does not:

    docs/reference/cli.md            the `welcomemat` parser (`cli.main.build_parser`)
    docs/reference/configuration.md  the settings table (`welcomemat.settings.SETTINGS`)
    docs/reference/layout.md         the source tree: folders, packages, module docstrings
    docs/campaign.md                 the input formats' models (`welcomemat.reference`)

Without arguments it writes the pages that differ and names them; with `--check` it writes
nothing and exits 1 naming every page that is out of date. The output depends on nothing but
the source: no dates, no paths of this machine, no terminal width.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from cli.exit_codes import EXIT_FAILED, EXIT_OK
from cli.main import build_parser
from cli.reference.command_page import render_cli_page
from cli.reference.layout_page import render_layout_page
from cli.reference.settings_page import render_configuration_page
from welcomemat.reference import render_markdown
from welcomemat.settings import SETTINGS

__all__ = ["PAGES", "REGENERATE", "REPO_ROOT", "main", "render_pages", "stale_pages", "write_pages"]

REGENERATE = "python -m cli.reference_pages"
#: The repository this module belongs to: the source the pages are read from.
REPO_ROOT = Path(__file__).resolve().parents[1]


def _cli_page(source: Path) -> str:
    return render_cli_page(build_parser(), REGENERATE)


def _configuration_page(source: Path) -> str:
    return render_configuration_page(SETTINGS, REGENERATE)


def _layout_page(source: Path) -> str:
    return render_layout_page(source, REGENERATE)


def _campaign_page(source: Path) -> str:
    return render_markdown()


#: Each generated page, by its path in the repository, and what renders it from the source at a root.
PAGES: Mapping[str, Callable[[Path], str]] = {
    "docs/campaign.md": _campaign_page,
    "docs/reference/cli.md": _cli_page,
    "docs/reference/configuration.md": _configuration_page,
    "docs/reference/layout.md": _layout_page,
}


def render_pages(source: Path = REPO_ROOT) -> dict[str, str]:
    """Every page as the source at `source` renders it, by path."""
    return {path: render(source) for path, render in PAGES.items()}


def stale_pages(pages: Mapping[str, str], root: Path) -> list[str]:
    """The paths under `root` whose file is missing or differs from `pages`."""
    return [path for path, text in pages.items() if _read(root / path) != text]


def write_pages(pages: Mapping[str, str], root: Path) -> list[str]:
    """Writes the stale pages under `root` (UTF-8, `\\n` line ends); returns their paths."""
    written = stale_pages(pages, root)
    for path in written:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pages[path].encode("utf-8"))
    return written


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None


def main(argv: Sequence[str] | None = None, *, docs_root: Path = REPO_ROOT) -> int:
    """Renders every page from this repository's source; writes or checks them under `docs_root`."""
    parser = argparse.ArgumentParser(
        prog="python -m cli.reference_pages",
        description="Write (or check) the generated documentation pages.",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming every page that is out of date"
    )
    args = parser.parse_args(argv)
    pages = render_pages()
    if args.check:
        stale = stale_pages(pages, docs_root)
        for path in stale:
            print(f"{path} is out of date: run `{REGENERATE}`", file=sys.stderr)
        return EXIT_FAILED if stale else EXIT_OK
    for path in write_pages(pages, docs_root):
        print(f"wrote {path}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
