"""How the import, export and mail commands end: counts in words, bad lines, the exit code.

`welcomemat conversions import` and `welcomemat delivered import` record the good lines and
skip the bad ones; both name every bad line (file, line, field) on stderr, then say what they
did, and exit 2 when any line was bad, so a cron job notices without losing the rest.
`welcomemat export` and `welcomemat mail` summarise their rows by arm, rung and status in the
same words.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

__all__ = ["counts_in_words", "finish_import"]


def counts_in_words(counts: Mapping[str, int]) -> str:
    """`3 personal, 1 segment` (keys in order), or `none`."""
    return ", ".join(f"{n} {key}" for key, n in sorted(counts.items())) or "none"


def finish_import(problems: Sequence[object], summary: str) -> int:
    """Print each problem and the summary on stderr; the exit code (2 when any line was bad)."""
    for problem in problems:
        print(f"welcomemat: error: {problem}", file=sys.stderr)
    print(summary, file=sys.stderr)
    return 2 if problems else 0
