"""The limits every input from outside is read under: sizes, nesting, numbers, in one place.

A document must not decide what reading it costs: each input is refused by its size before
it is read, and by its shape (nesting, numbers) before or while it is parsed, with a clear
error (`InputError`: exit 2 naming file, line and field on the command line; a 4xx over
HTTP). `INPUT_LIMITS` is the table docs/campaigns.md's "Input limits" shows (a test keeps them equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "ACCOUNT_LINE_MAX_BYTES",
    "ADMIN_BODY_MAX_BYTES",
    "BEACON_BODY_MAX_BYTES",
    "BODY_READ_MAX_SECONDS",
    "CONVERSION_MAX_BYTES",
    "CSV_LINE_MAX_BYTES",
    "INPUT_LIMITS",
    "NESTING_MAX_DEPTH",
    "NUMBER_MAX_CHARS",
    "YAML_MAX_BYTES",
    "YAML_MAX_VALUES",
    "InputLimit",
]

# Levels of lists and mappings (JSON `[` / `{`, YAML collections, the document's own
# included). Real inputs use four or five (account ▸ facts ▸ fact ▸ surfaces; campaign ▸
# segments ▸ segment ▸ zones); a CRM export's own fields get room to spare, a parser's stack
# (both decoders recurse) does not.
NESTING_MAX_DEPTH: Final = 32
# Characters of one number (digits, sign, point, exponent): a 128-bit id has 39 digits, a
# double needs 25 characters. Python refuses to parse integers past 4,300 digits with an error
# of its own, and a long one costs quadratic time well before that.
NUMBER_MAX_CHARS: Final = 40
# Bytes of one `accounts.jsonl` line (a 1 MB account is a broken export, not an account).
ACCOUNT_LINE_MAX_BYTES: Final = 1_000_000
# Bytes of a request body, by route (refused by the declared length before reading, and as
# read): a beacon is about 400; a conversion a handful of short fields, also one line of
# `welcomemat conversions import`; an admin review decision is `{"version": N}`.
BEACON_BODY_MAX_BYTES: Final = 4096
CONVERSION_MAX_BYTES: Final = 4096
ADMIN_BODY_MAX_BYTES: Final = 1024
# Seconds a request body may take to arrive, whole, from the first read (the renderer's
# `RendererTuning.body_read_timeout_s`): a client that announces a body within the limit and
# then stalls would otherwise hold its connection for as long as it likes (uvicorn has no body
# timeout). Bodies are at most 64 KB: any real client sends one in well under a second.
BODY_READ_MAX_SECONDS: Final = 10.0
# Bytes of one line of a CSV file we are given (a sequencer's delivered report): a few ids, a
# date and what else the sequencer adds. Python's csv refuses a field past 131,072 characters
# on its own, but reads a line whole before it gets there.
CSV_LINE_MAX_BYTES: Final = 65_536
# Bytes of one YAML file (campaign, tenant, zone contract): 512 KiB. The example campaign is
# 7 KB; PyYAML reads about 100-200 KB a second, so a file at the limit costs seconds, not minutes.
YAML_MAX_BYTES: Final = 524_288
# Values (scalars, lists, mappings) in one YAML file with every alias expanded: the example
# campaign has about 1,000; a "billion laughs" is a few lines that expand past any memory.
YAML_MAX_VALUES: Final = 100_000


@dataclass(frozen=True)
class InputLimit:
    """One row of the limits table: what it bounds, how much, and what happens past it."""

    applies_to: str
    limit: str
    past_it: str


INPUT_LIMITS: Final[tuple[InputLimit, ...]] = (
    InputLimit(
        "request body of `POST /v1/events`, `POST /v1/conversions`, `POST /admin/review/...`",
        f"{BEACON_BODY_MAX_BYTES:,}, {CONVERSION_MAX_BYTES:,} and {ADMIN_BODY_MAX_BYTES:,} bytes, "
        "declared (`Content-Length`) or as sent (chunked)",
        "413 before a byte is read (declared) or as soon as it passes (sent); connection closed",
    ),
    InputLimit(
        "request body of every route that takes one (the three above, `POST /admin/preview/...`)",
        f"the whole body within {BODY_READ_MAX_SECONDS:g} seconds of the first read, "
        "declared or chunked (a client that stops sending)",
        "408; connection closed",
    ),
    InputLimit(
        "every JSON document (accounts line, beacon, conversion, admin review decision)",
        f"nesting {NESTING_MAX_DEPTH} levels; numbers {NUMBER_MAX_CHARS} characters, finite; "
        "no NaN or Infinity; no repeated key; no lone surrogate",
        "400 over HTTP, a bad line in a file; the message names the field",
    ),
    InputLimit(
        "every YAML file (`campaign.yaml`, `tenant.yaml`, `zones/*.yaml`)",
        f"{YAML_MAX_BYTES:,} bytes; nesting {NESTING_MAX_DEPTH} levels; {YAML_MAX_VALUES:,} values "
        "with aliases expanded; no alias inside its own anchor",
        "the file refused (exit 2, file and line)",
    ),
    InputLimit(
        "a YAML value",
        f"numbers {NUMBER_MAX_CHARS} characters, finite (no `.nan`, `.inf`); dates that exist; "
        "no repeated key; no lone surrogate",
        "that value refused (exit 2, file, line and field); the rest is still checked",
    ),
    InputLimit(
        "`welcomemat conversions import`, one line",
        f"{CONVERSION_MAX_BYTES:,} bytes (a longer line is skipped without being read whole)",
        "that line reported (file, line, field) and skipped; exit 2 after the rest is recorded",
    ),
    InputLimit(
        "`welcomemat delivered import`, one line",
        f"{CSV_LINE_MAX_BYTES:,} bytes (a longer line is skipped without being read whole); UTF-8",
        "that line reported (file, line, field) and skipped; exit 2 after the rest is recorded",
    ),
    InputLimit(
        "`accounts.jsonl`, one line",
        f"{ACCOUNT_LINE_MAX_BYTES:,} bytes (a longer line is skipped without being read whole)",
        "that line reported (file, line, field) and skipped; the run goes on",
    ),
)
