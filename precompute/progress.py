"""Progress of a local run on the terminal: accounts done, as a bar on stderr.

Only the command line shows it (`welcomemat precompute`); a run reports its progress through
a plain callback (`PrecomputeRun(progress=...)`), so the run itself imports no terminal library.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["progress_bar"]


def progress_bar(
    total: int, *, enabled: bool | None = None
) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A tqdm bar on stderr when it is a terminal; (advance, close)."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    bar = tqdm(total=total, unit="acct", disable=not show, file=sys.stderr, dynamic_ncols=True)

    def advance(n: int) -> None:
        bar.update(n)

    return advance, bar.close
