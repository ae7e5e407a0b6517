"""Progress of a long command on the terminal: accounts done, as a bar on stderr.

`welcomemat precompute` and `welcomemat export` show it; the layers report their progress
through a plain callback (`PrecomputeRun(progress=...)`, `export_campaign(on_account=...)`),
so none of them imports a terminal library or writes to the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["progress_bar"]


def progress_bar(
    total: int | None, *, enabled: bool | None = None
) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A tqdm bar on stderr when it is a terminal (`total` None: a count without an end); (advance, close)."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    bar = tqdm(total=total, unit="acct", disable=not show, file=sys.stderr, dynamic_ncols=True)

    def advance(n: int) -> None:
        bar.update(n)

    return advance, bar.close
