"""The one exception hierarchy of Welcomemat.

    WelcomematError
    ├── InputError            bad user input: names the file, line (if any) and field
    │   ├── ContractError     a campaign / zone / tenant contract refused at load
    │   │   └── ContractProblems  every problem found at once; reads as the first
    │   └── CampaignOwnerError  a campaign id that belongs to another tenant (names the owner)
    ├── ConfigError           a setting missing or malformed (names the variable)
    ├── TokenError            a token that must not be honoured
    │   ├── TokenMalformed    not a token of ours (truncated, bad encoding, bad payload)
    │   ├── TokenBadSignature tampered, wrong key, or wrong kind (salt)
    │   ├── TokenExpired      past its expiry
    │   ├── TokenFromFuture   issued in the future (clock skew beyond tolerance, or forged)
    │   └── InviteUsed        an admin sign-in link whose invite was used already (or never made)
    ├── ProviderUnavailable   a remote provider (model, CRM webhook) cannot take a call now
    ├── StoreError            Redis could not be read or written
    │   ├── StoredValueError  a stored value does not decode (carries the key)
    │   └── AuditError        an action was done, but its audit entry could not be written
    └── EmbeddedRedisError    the embedded Redis server could not be started or reached

Messages name the bad value and where it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "AuditError",
    "CampaignOwnerError",
    "ConfigError",
    "ContractError",
    "ContractProblems",
    "EmbeddedRedisError",
    "InputError",
    "InviteUsed",
    "ProviderUnavailable",
    "StoreError",
    "StoredValueError",
    "TokenBadSignature",
    "TokenError",
    "TokenExpired",
    "TokenFromFuture",
    "TokenMalformed",
    "WelcomematError",
]


class WelcomematError(Exception):
    """Base of every error Welcomemat raises on purpose."""


class InputError(WelcomematError):
    """Bad input. Carries where it came from: file, line (1-based) and field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        super().__init__(self.__str__())

    @property
    def location(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        loc = self.location
        return f"{loc}: {self.message}" if loc else self.message


class ContractError(InputError):
    """A campaign, zone or tenant contract that is refused at load."""


class ContractProblems(ContractError):
    """Inputs refused for every problem found in one pass (each an InputError of its own).

    It reads as the first problem (file, line, field, message), followed by how many more
    there are, so a command that stops at the first still points at the rest.
    """

    def __init__(self, problems: Sequence[InputError]) -> None:
        if not problems:
            raise ValueError("ContractProblems needs at least one problem")
        self.problems: tuple[InputError, ...] = tuple(problems)
        first = self.problems[0]
        more = len(self.problems) - 1
        message = first.message
        if more:
            noun = "problem" if more == 1 else "problems"
            message += f" (and {more} more {noun}: `welcomemat validate` lists them all)"
        super().__init__(message, file=first.file, line=first.line, field=first.field)


class CampaignOwnerError(InputError):
    """A campaign id that another tenant owns (or, published before owners were recorded, several do).

    `campaign` is the id, `owner` the tenant it belongs to (None when several published it
    before owners were recorded), `tenant` the one refused.
    """

    def __init__(
        self,
        message: str,
        *,
        campaign: str,
        owner: str | None,
        tenant: str,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.campaign = campaign
        self.owner = owner
        self.tenant = tenant
        super().__init__(message, file=file, line=line, field=field)


class ConfigError(WelcomematError):
    """A setting is missing or malformed."""


class TokenError(WelcomematError):
    """A token that must not be honoured."""


class TokenMalformed(TokenError):
    """Not a token of ours: truncated, badly encoded, or an unreadable payload."""


class TokenBadSignature(TokenError):
    """The signature does not verify under any key for this token kind."""


class TokenExpired(TokenError):
    """The token is past its expiry."""


class TokenFromFuture(TokenError):
    """The token claims to be issued in the future."""


class InviteUsed(TokenError):
    """A genuine admin sign-in link whose invite was used already, expired in Redis, or revoked."""


class StoreError(WelcomematError):
    """Redis could not be read or written."""


class ProviderUnavailable(WelcomematError):
    """A remote provider cannot take a call now (circuit open, job deadline passed, retries used up).

    A precompute account gets the fallback for every zone and is journalled `deferred`, so
    the next run (or `--resume`) generates it again; a CRM delivery stays in its outbox.
    """


class StoredValueError(StoreError):
    """A stored value does not decode into its model."""

    def __init__(self, key: str, detail: str) -> None:
        self.key = key
        self.detail = detail
        super().__init__(f"value at Redis key {key!r} does not decode: {detail}")


class AuditError(StoreError):
    """An action was done, but its audit entry could not be written (`welcomemat.records.audit`).

    The action stands; whoever ran it is told it is missing from the log. Carries the entry.
    """

    def __init__(self, message: str, entry: object) -> None:
        self.entry = entry
        super().__init__(message)


class EmbeddedRedisError(WelcomematError):
    """The embedded Redis server could not be started or reached."""
