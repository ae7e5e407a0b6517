"""`accounts.jsonl`: the account records a CRM or research table exports, one per line.

Reading is forgiving of the file and strict about each line: a malformed line is
reported with file, line number and field, and skipped; the rest of the file goes on.
Unknown fields are kept (a CRM export carries more than we use, and what we do not use
must survive a round trip). Fact fields stay as written: whether a fact is trusted
(parseable date, inside its window, sourced...) is the trust policy's decision per fact,
so one bad fact never costs the account its line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from welcomemat.bounded_json import decode_json, iter_lines
from welcomemat.errors import InputError
from welcomemat.ids import OpaqueId
from welcomemat.limits import ACCOUNT_LINE_MAX_BYTES
from welcomemat.security.ip_ranges import IP_RULES_CONTEXT, IpRangeRules, validate_ip_range_entry
from welcomemat.validation_errors import dotted, first_problem

__all__ = [
    "MAX_LINE_BYTES",
    "Account",
    "AccountsReport",
    "Contact",
    "Fact",
    "PostalAddress",
    "Source",
    "iter_account_lines",
    "parse_account_line",
    "read_accounts",
]

MAX_LINE_BYTES = ACCOUNT_LINE_MAX_BYTES  # bytes (welcomemat.limits)


class PostalAddress(BaseModel):
    """Where direct mail reaches a person (`welcomemat mail`); every part is a single line of text."""

    # Unknown fields are kept like the rest of the file's (the records keep only these).
    model_config = ConfigDict(extra="allow", frozen=True, str_strip_whitespace=True)

    line1: str = Field(
        min_length=1,
        max_length=200,
        description="Street and number, or the first line.",
        examples=["Keizersgracht 62"],
    )
    line2: str | None = Field(
        default=None,
        max_length=200,
        description="Floor, suite or building. Empty: none.",
        examples=["3rd floor"],
    )
    city: str = Field(min_length=1, max_length=100, description="Town or city.", examples=["Amsterdam"])
    region: str | None = Field(
        default=None, max_length=100, description="State, province or county. Empty: none.", examples=["NH"]
    )
    postal_code: str = Field(
        min_length=1, max_length=20, description="Postal or ZIP code.", examples=["1015 CS"]
    )
    country: str = Field(
        pattern=r"^[A-Z]{2}$",
        description="ISO 3166-1 alpha-2 country code, upper case.",
        examples=["NL"],
    )

    @field_validator("line1", "line2", "city", "region", "postal_code")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        """Address parts are one line each: no line breaks or other control characters."""
        if value is not None and not value.isprintable():
            raise ValueError("holds a line break or another control character")
        return value or None  # an empty optional part is no part


class Contact(BaseModel):
    """A person at the account."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    contact_id: OpaqueId = Field(
        description="The person's id: a personal link may carry it (`welcomemat link --contact`); one "
        "sequencer export row each.",
        examples=["c_joram"],
    )
    email: str | None = Field(
        default=None,
        description="Work address; its domain is compared with the account's to confirm who the account is "
        "(a free-mail address says nothing). Empty: none.",
        examples=["joram@dymaxa.com"],
    )
    first_name: str | None = Field(
        default=None, description="For the sequencer export (`there` when missing).", examples=["Joram"]
    )
    last_name: str | None = Field(
        default=None, description="For the sequencer export.", examples=["de Vries"]
    )
    title: str | None = Field(
        default=None, description="Job title, for the sequencer export.", examples=["Head of Sales"]
    )
    address: PostalAddress | None = Field(
        default=None,
        description="Postal address for direct mail (`welcomemat mail`: one piece per contact with one). "
        "Empty: the contact gets no mail.",
        examples=[
            {"line1": "Keizersgracht 62", "city": "Amsterdam", "postal_code": "1015 CS", "country": "NL"}
        ],
    )

    @field_validator("email")
    @classmethod
    def _email_shape(cls, value: str | None) -> str | None:
        """`email`, when not empty, looks like an address: `local@domain.tld`, no spaces."""
        if value is None or value == "":
            return None
        local, sep, domain = value.rpartition("@")
        if not sep or not local or "." not in domain or " " in value:
            raise ValueError(f"not an email address: {value!r}")
        return value


class Fact(BaseModel):
    """A research answer: a statement, its link and its date, as the file states them.

    The trust policy decides per fact whether it may be built on; an untrusted fact costs
    only itself. Other string fields (`round`, `role`, `role_plural`, `location`...) are
    kept and fill the campaign's pattern slots of the same name.
    """

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    id: str = Field(
        min_length=1,
        max_length=128,
        description="The fact's id within the account; zone sets and `explain` cite it.",
        examples=["dymaxa-series-a"],
    )
    type: str = Field(
        min_length=1,
        max_length=64,
        description="The kind of signal: picks its window in `signal_windows_days` (no window: never "
        "trusted), the zones that may cite it and the patterns that use it.",
        examples=["funding"],
    )
    statement: str = Field(
        min_length=1,
        max_length=2_000,
        description="The fact in one sentence, about the account.",
        examples=["Dymaxa raised a Series A"],
    )
    subject: str | None = Field(
        default=None,
        description="The company the fact is about; it must be the account's name or one of its aliases "
        "(legal form, case, accents, punctuation aside), or its brand on a source under the account's "
        "domain. A longer name holding the account's is another company. Missing: the first company the "
        "statement names decides, or, naming none, a source on the account's domain.",
        examples=["Dymaxa"],
    )
    source_url: str | None = Field(
        default=None,
        description="Where it was published: https, a registrable domain, no IP, port or userinfo. Missing "
        "or otherwise: not trusted.",
        examples=["https://dymaxa.com/press/series-a"],
    )
    published_at: str | None = Field(
        default=None,
        description="Publish date, `YYYY-MM-DD` or an ISO datetime; missing, unreadable, in the future or "
        "past its type's window: not trusted.",
        examples=["2026-11-26"],
    )
    confidence: str | None = Field(
        default=None,
        description="`low`, `medium` or `high`; below the campaign's `min_confidence`, missing or other: not "
        "trusted.",
        examples=["high"],
    )
    surfaces: list[str] = Field(
        default_factory=list,
        description="Where the fact may be used: `web`, `email`, `seller`, `print` (others are ignored); "
        "without `web` it never reaches a page, and a zone citing it reaches only the channels every fact it "
        "cites allows.",
        examples=[["web", "email", "seller"]],
    )
    evidence: str | None = Field(
        default=None,
        description="The source passage the fact rests on; its numbers, dates and names support a personal "
        "line that cites the fact.",
        examples=["Dymaxa today announced its Series A to grow its sales team."],
    )


class Source(BaseModel):
    """A raw document a model provider may extract further facts from."""

    model_config = ConfigDict(extra="allow")

    url: str = Field(
        description="Where the document is; facts extracted from it carry this as `source_url`.",
        examples=["https://dymaxa.com/press/series-a"],
    )
    published_at: str | None = Field(
        default=None,
        description="The document's date; facts extracted from it carry it as `published_at`.",
        examples=["2026-11-26"],
    )
    text: str = Field(
        default="",
        description="The document's text; an extracted fact's evidence must be quoted from it verbatim "
        "(whitespace aside), or the fact is dropped. Read by the `openai` provider only.",
        examples=["Amsterdam, 26 November 2026 - Dymaxa today announced its Series A."],
    )


class Account(BaseModel):
    """One account record, one line of `accounts.jsonl`.

    Beyond these fields, `city` supports a city named in a personal line, and anything else
    (`crm_owner`...) is carried along. Text is stripped of surrounding whitespace.
    """

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    account_id: OpaqueId = Field(
        description="The account's id, unique in the file (a repeat is skipped): in links, tokens, Redis "
        "keys and commands.",
        examples=["acct_dymaxa"],
    )
    name: str = Field(
        min_length=1,
        max_length=300,
        description="The company's name; without its legal form it is the `{account}` slot, and what a "
        "fact must be about.",
        examples=["Dymaxa B.V."],
    )
    aliases: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Other names the company goes by (a brand, a former name, a parent it wants treated as "
        "itself): a fact whose subject or statement names one is the account's, from any source. The brand "
        "alone (the name without legal form and generic words) counts only on the account's own domain.",
        examples=[["Frostline", "Frostline Cold Chain"]],
    )
    domain: str = Field(
        min_length=1,
        max_length=253,
        description="The company's web domain, no scheme or path; its registrable domain is who the account "
        "is, and contacts' mail domains must agree.",
        examples=["dymaxa.com"],
    )
    segment: str = Field(
        min_length=1,
        max_length=64,
        description="A key of the campaign's `segments`: the copy the account falls back to (none: the "
        "campaign default).",
        examples=["saas-mid"],
    )
    tier: int = Field(
        default=3,
        ge=1,
        le=5,
        description="Account tier, 1 the most important; `approval.review_tiers` names the tiers a person "
        "approves.",
        examples=[1],
    )
    industry: str | None = Field(
        default=None,
        description="The company's industry; checked for plausibility (`explain` says when it is hidden).",
        examples=["software"],
    )
    country: str | None = Field(
        default=None,
        description="ISO 3166-1 alpha-2 code; supports the country named in a personal line.",
        examples=["NL"],
    )
    employee_count: int | None = Field(
        default=None,
        ge=0,
        description="Headcount; hidden (see `explain`) when missing, absurd, or contradicting a size in the "
        "segment's name (`-smb`, `-mid`, `-enterprise`).",
        examples=[60],
    )
    ip_ranges: list[Annotated[str, AfterValidator(validate_ip_range_entry)]] = Field(
        default_factory=list,
        description="The company's public networks (CIDR, IPv4 or IPv6; host bits are dropped); a visitor "
        "from one is identified as the account. Refused (the line is skipped, the entry named): a range "
        "wider than /8 (IPv4) or /32 (IPv6), and special-purpose space: loopback, private, shared (CGNAT), "
        "link-local, multicast, reserved, also as IPv4-mapped IPv6 (`tenant.yaml` `ip_ranges.allow_private` "
        "lets private, shared and link-local through). A precompute run replaces the ranges of the accounts "
        "in its file only; `[]` removes the account's own.",
        examples=[["203.0.113.0/24", "2001:db8:d1a::/48"]],
    )
    contacts: list[Contact] = Field(
        default_factory=list,
        description="People at the account.",
        examples=[[{"contact_id": "c_joram", "email": "joram@dymaxa.com", "first_name": "Joram"}]],
    )
    facts: list[Fact] = Field(
        default_factory=list,
        description="Research answers: dated, sourced facts.",
        examples=[
            [
                {
                    "id": "dymaxa-series-a",
                    "type": "funding",
                    "statement": "Dymaxa raised a Series A",
                    "round": "Series A",
                    "source_url": "https://dymaxa.com/press/series-a",
                    "published_at": "2026-11-26",
                    "confidence": "high",
                    "surfaces": ["web"],
                }
            ]
        ],
    )
    sources: list[Source] = Field(
        default_factory=list,
        description="Raw documents the `openai` provider may extract further facts from.",
        examples=[
            [{"url": "https://dymaxa.com/press/series-a", "published_at": "2026-11-26", "text": "..."}]
        ],
    )

    @field_validator("domain")
    @classmethod
    def _domain_lower(cls, value: str) -> str:
        """`domain` is stored lower-case without a trailing dot; it has a dot and no `/`, `@` or space."""
        value = value.lower().rstrip(".")
        if "/" in value or "@" in value or " " in value or "." not in value:
            raise ValueError(f"not a domain name: {value!r}")
        return value

    @field_validator("aliases")
    @classmethod
    def _aliases_are_names(cls, values: list[str]) -> list[str]:
        """Each alias is one line of 1 to 300 characters: a name, not a note."""
        out = []
        for i, raw in enumerate(values):
            alias = raw.strip()
            if not alias or len(alias) > 300 or not alias.isprintable():
                raise ValueError(f"aliases[{i}] {raw[:40]!r} is not a name (1-300 characters on one line)")
            out.append(alias)
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


def parse_account_line(
    text: str, *, file: str | Path, line: int, ip_rules: IpRangeRules | None = None
) -> Account:
    """One line to one Account, or InputError naming file, line and field.

    `ip_rules`: what its `ip_ranges` may hold (`welcomemat.security.ip_ranges`; default: no private ranges).
    """
    try:
        data: Any = decode_json(text, max_bytes=MAX_LINE_BYTES)
    except InputError as exc:
        raise InputError(exc.message, file=file, line=line, field=exc.field) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}", file=file, line=line)
    try:
        return Account.model_validate(data, context={IP_RULES_CONTEXT: ip_rules or IpRangeRules()})
    except ValidationError as exc:
        loc, message = first_problem(exc)
        raise InputError(message, file=file, line=line, field=dotted(loc)) from None


def iter_account_lines(
    path: Path, ip_rules: IpRangeRules | None = None
) -> Iterator[tuple[int, Account | InputError]]:
    """Each non-blank line as an Account or the InputError explaining why it was skipped."""
    # Bytes, decoded line by line: one line in a wrong encoding costs that line only; a line
    # over the limit is skipped without being read whole.
    with path.open("rb") as handle:
        for line_no, raw in iter_lines(handle, MAX_LINE_BYTES):
            if raw is None:
                yield line_no, InputError(f"line longer than {MAX_LINE_BYTES} bytes", file=path, line=line_no)
                continue
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
                yield line_no, parse_account_line(text, file=path, line=line_no, ip_rules=ip_rules)
            except InputError as err:
                yield line_no, err


def read_accounts(path: str | Path, ip_rules: IpRangeRules | None = None) -> AccountsReport:
    """Read a whole accounts file. Bad lines and duplicate ids are reported, not fatal.

    `ip_rules`: the tenant's `ip_ranges` rules (`tenant.yaml`; default: no private ranges).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", file=path)
    report = AccountsReport()
    seen: dict[str, int] = {}
    for line_no, item in iter_account_lines(path, ip_rules):
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
