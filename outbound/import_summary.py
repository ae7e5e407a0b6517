"""How a line-by-line import command ends: each bad line, one summary, the exit code.

`welcomemat conversions import` and `welcomemat delivered import` record the good lines and
skip the bad ones; both name every bad line (file, line, field) on stderr, then say what they
did, and exit 2 when any line was bad, so a cron job notices without losing the rest.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["finish_import"]


def finish_import(problems: Sequence[object], summary: str) -> int:
    """Print each problem and the summary on stderr; the exit code (2 when any line was bad)."""
    for problem in problems:
        print(f"welcomemat: error: {problem}", file=sys.stderr)
    print(summary, file=sys.stderr)
    return 2 if problems else 0
