"""CSV cells a spreadsheet opens as text: the one guard against CSV (formula) injection.

Every CSV this project writes (the sequencer export, the results page's download) puts its
text cells through `spreadsheet_safe` (OWASP's advice against CSV injection). Numbers are
written as numbers: a negative one is a value, not a formula.
"""

from __future__ import annotations

__all__ = ["SPREADSHEET_TRIGGERS", "spreadsheet_safe"]

# A spreadsheet reads a cell starting with one of these as a formula (or strips it first).
SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: str) -> str:
    """`cell`, with a leading `'` when a spreadsheet would read it as a formula."""
    return "'" + cell if cell.startswith(SPREADSHEET_TRIGGERS) else cell
