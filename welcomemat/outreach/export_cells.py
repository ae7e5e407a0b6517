"""The export's last choke point: every cell a sequencer or a spreadsheet reads goes through here.

Sequencers paste export cells into HTML e-mails and template engines; spreadsheets run a
cell that looks like a formula. Whatever the records, research or copy hold, a cell leaves
Welcomemat only as `export_cell` makes it:

- cleaned: control characters (C0, C1, DEL), Unicode line and paragraph separators and the
  invisible bidirectional and zero-width format characters become a space (they reorder or
  hide text in a mail client), runs of white space one space, both ends stripped;
- refused (`CellRefusal`, its reason code) when it still holds something a browser, mail
  client or template engine acts on: a tag, entity, attribute, script call, backslash or
  template syntax (`{{`, `{%`, `${`, `<%`, `[[`, `{slot}` ...), found by the one scanner
  (`welcomemat.security.markup_scan.find_active_markup`). Links, e-mail addresses and ordinary
  punctuation pass: URL columns come through the URL gate.

The CSV writer then applies `welcomemat.spreadsheet.spreadsheet_safe` (OWASP's advice against
CSV injection): a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from welcomemat.security.markup_scan import find_active_markup

__all__ = ["CellRefusal", "export_cell"]

_INVISIBLE_RE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
_SPACES_RE = re.compile(r"\s+")
_SHOWN_CHARS = 40  # how much of a refused cell a report quotes
# Copy cells repeat across thousands of rows (segment copy, an account's zones for each of
# its contacts, then again in the writer): checked once each while they are recent.
_CACHED_CELLS = 4096


@dataclass(frozen=True, slots=True)
class CellRefusal:
    """Why a cell cannot be exported as it is: a reason code and the offending part."""

    reason: str  # html_in_text | template_in_text
    near: str

    def __str__(self) -> str:
        return f"{self.reason} near {self.near!r}"


@lru_cache(maxsize=_CACHED_CELLS)
def export_cell(value: str | None) -> str | CellRefusal:
    """The cell as exported (cleaned; empty when there is no value), or why it is refused."""
    if not value:
        return ""
    cleaned = value
    # Most cells are printable already (isprintable is false for every control, separator
    # and format character): skip the substitutions for them.
    if not value.isprintable() or "  " in value or value[0].isspace() or value[-1].isspace():
        cleaned = _SPACES_RE.sub(" ", _INVISIBLE_RE.sub(" ", value)).strip()
    found = find_active_markup(cleaned)
    if found is None:
        return cleaned
    reason, at = found
    return CellRefusal(reason, cleaned[at : at + _SHOWN_CHARS])
