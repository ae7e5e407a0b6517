"""The limits every input from outside is read under: sizes, nesting, numbers, in one place.

A document must not decide what reading it costs: each input is refused by its size before
it is read, and by its shape (nesting, numbers) before or while it is parsed, with a clear
error (`InputError`: exit 2 naming file, line and field on the command line; a 4xx over
HTTP). `INPUT_LIMITS` is the table the README's "Input limits" shows (a test keeps them equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "ACCOUNT_LINE_MAX_BYTES",
    "INPUT_LIMITS",
    "JSON_MAX_DEPTH",
    "NUMBER_MAX_CHARS",
    "InputLimit",
]

# Levels of `[` / `{` in a JSON document. Real inputs use four (account ▸ facts ▸ fact ▸
# surfaces); a CRM export's own fields get room to spare, a parser's stack does not.
JSON_MAX_DEPTH: Final = 32
# Characters of one number (digits, sign, point, exponent): a 128-bit id has 39 digits, a
# double needs 25 characters. Python refuses to parse integers past 4,300 digits with an error
# of its own, and a long one costs quadratic time well before that.
NUMBER_MAX_CHARS: Final = 40
# Bytes of one `accounts.jsonl` line (a 1 MB account is a broken export, not an account).
ACCOUNT_LINE_MAX_BYTES: Final = 1_000_000


@dataclass(frozen=True)
class InputLimit:
    """One row of the limits table: what it bounds, how much, and what happens past it."""

    applies_to: str
    limit: str
    past_it: str


INPUT_LIMITS: Final[tuple[InputLimit, ...]] = (
    InputLimit(
        "every JSON document (an accounts line)",
        f"nesting {JSON_MAX_DEPTH} levels; numbers {NUMBER_MAX_CHARS} characters, finite; "
        "no NaN or Infinity; no repeated key; no lone surrogate",
        "refused, naming the field",
    ),
    InputLimit(
        "`accounts.jsonl`, one line",
        f"{ACCOUNT_LINE_MAX_BYTES:,} bytes (a longer line is skipped without being read whole)",
        "that line reported (file, line, field) and skipped; the run goes on",
    ),
)
