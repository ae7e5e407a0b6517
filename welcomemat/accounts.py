"""`accounts.jsonl`: the account records a CRM or research table exports, one per line.

Reading is forgiving of the file and strict about each line: a malformed line is
reported with file, line number and field, and skipped; the rest of the file goes on.
Unknown fields are kept (a CRM export carries more than we use, and what we do not use
must survive a round trip). Fact fields stay as written: whether a fact is trusted
(parseable date, inside its window, sourced...) is the trust policy's decision per fact,
so one bad fact never costs the account its line.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from welcomemat.errors import InputError
from welcomemat.ids import OpaqueId
from welcomemat.validation_errors import dotted, first_problem

__all__ = [
    "MAX_LINE_BYTES",
    "Account",
    "AccountsReport",
    "Contact",
    "Fact",
    "Source",
    "iter_account_lines",
    "parse_account_line",
    "read_accounts",
]

MAX_LINE_BYTES = 1_000_000  # 1 MB: a line longer than this is a broken export, not an account


class Contact(BaseModel):
    """A person at the account. Unknown fields kept."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    contact_id: OpaqueId
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    title: str | None = None

    @field_validator("email")
    @classmethod
    def _email_shape(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        local, sep, domain = value.rpartition("@")
        if not sep or not local or "." not in domain or " " in value:
            raise ValueError(f"not an email address: {value!r}")
        return value


class Fact(BaseModel):
    """A research answer: a statement, its link and its date, as the file states them."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    id: str = Field(min_length=1, max_length=128)
    type: str = Field(min_length=1, max_length=64)
    statement: str = Field(min_length=1, max_length=2_000)
    subject: str | None = None
    source_url: str | None = None
    published_at: str | None = None
    confidence: str | None = None
    surfaces: list[str] = Field(default_factory=list)
    evidence: str | None = None


class Source(BaseModel):
    """A raw document a model provider may extract further facts from."""

    model_config = ConfigDict(extra="allow")

    url: str
    published_at: str | None = None
    text: str = ""


class Account(BaseModel):
    """One account record. Unknown fields kept."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    account_id: OpaqueId
    name: str = Field(min_length=1, max_length=300)
    domain: str = Field(min_length=1, max_length=253)
    segment: str = Field(min_length=1, max_length=64)
    tier: int = Field(default=3, ge=1, le=5)
    industry: str | None = None
    country: str | None = None
    employee_count: int | None = Field(default=None, ge=0)
    ip_ranges: list[str] = Field(default_factory=list)
    contacts: list[Contact] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)

    @field_validator("domain")
    @classmethod
    def _domain_lower(cls, value: str) -> str:
        value = value.lower().rstrip(".")
        if "/" in value or "@" in value or " " in value or "." not in value:
            raise ValueError(f"not a domain name: {value!r}")
        return value

    @field_validator("ip_ranges")
    @classmethod
    def _ip_ranges_parse(cls, values: list[str]) -> list[str]:
        out = []
        for i, raw in enumerate(values):
            try:
                out.append(str(ipaddress.ip_network(raw.strip(), strict=False)))
            except ValueError as exc:
                raise ValueError(f"ip_ranges[{i}] {raw!r} is not an IP range: {exc}") from None
        return out


@dataclass
class AccountsReport:
    """What reading a file found: accounts kept, problems per line, duplicates."""

    accounts: list[Account] = field(default_factory=list)
    problems: list[InputError] = field(default_factory=list)
    lines_read: int = 0

    @property
    def skipped(self) -> int:
        return len(self.problems)


def parse_account_line(text: str, *, file: str | Path, line: int) -> Account:
    """One line to one Account, or InputError naming file, line and field."""
    if len(text) > MAX_LINE_BYTES:
        raise InputError(f"line longer than {MAX_LINE_BYTES} bytes", file=file, line=line)
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at column {exc.colno})", file=file, line=line) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}", file=file, line=line)
    try:
        return Account.model_validate(data)
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise InputError(message, file=file, line=line, field=dotted(loc)) from None


def iter_account_lines(path: Path) -> Iterator[tuple[int, Account | InputError]]:
    """Each non-blank line as an Account or the InputError explaining why it was skipped."""
    # Bytes, decoded line by line: one line in a wrong encoding costs that line only.
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    line_no,
                    InputError(f"not UTF-8 (byte {exc.start + 1}: {exc.reason})", file=path, line=line_no),
                )
                continue
            if not text.strip():
                continue
            try:
                yield line_no, parse_account_line(text, file=path, line=line_no)
            except InputError as err:
                yield line_no, err


def read_accounts(path: str | Path) -> AccountsReport:
    """Read a whole accounts file. Bad lines and duplicate ids are reported, not fatal."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", file=path)
    report = AccountsReport()
    seen: dict[str, int] = {}
    for line_no, item in iter_account_lines(path):
        report.lines_read = line_no
        if isinstance(item, InputError):
            report.problems.append(item)
            continue
        first = seen.get(item.account_id)
        if first is not None:
            report.problems.append(
                InputError(
                    f"duplicate account_id {item.account_id!r} (first on line {first}); skipped",
                    file=path,
                    line=line_no,
                    field="account_id",
                )
            )
            continue
        seen[item.account_id] = line_no
        report.accounts.append(item)
    return report
