"""Bearer credentials: the admin and CRM tokens, whose each is, and which campaigns it may act on.

A credential is the operator's (no tenant: it reaches every tenant's campaigns, each by its
id) or scoped to one tenant (it reaches only the campaigns that tenant owns,
`welcomemat.campaign.owner`). `Credential.may_act_on` is the one decision; the renderer
applies it at one choke point (`server.admin.auth.campaign_for`) on every admin route and on
`POST /v1/conversions`, so a scoped credential meets another tenant's campaign exactly as an
unknown one.

Where they come from (`welcomemat.settings`):

- `WELCOMEMAT_ADMIN_TOKEN`: the operator's, named `admin` in the audit log;
- `WELCOMEMAT_ADMIN_TOKENS`: `NAME:TOKEN` (the operator's, named NAME) and `NAME@TENANT:TOKEN`
  (scoped to TENANT, named `NAME@TENANT`), comma-separated;
- `WELCOMEMAT_CRM_TOKEN`: the operator's CRM token;
- `WELCOMEMAT_CRM_TOKENS`: `TENANT:TOKEN`, one per tenant, comma-separated.

Refusals (`ConfigError`) name the variable and the entry by position, never a token: a message
may end up in a log. A token of a `*_TOKENS` entry is its own value: reused by another entry or
another bearer variable, which credential presented it would be ambiguous, and a scope meaningless.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from welcomemat.errors import ConfigError
from welcomemat.ids import is_valid_id
from welcomemat.records.audit import ACTOR_MAX_CHARS

__all__ = [
    "ADMIN_TOKENS_VAR",
    "CRM_TOKENS_VAR",
    "MIN_TOKEN_CHARS",
    "SHARED_ADMIN_NAME",
    "SHARED_CRM_NAME",
    "Credential",
    "check_token_reuse",
    "parse_admin_tokens",
    "parse_crm_tokens",
]

#: Shortest accepted bearer token, in characters (as `settings.MIN_SECRET_CHARS`).
MIN_TOKEN_CHARS = 32
ADMIN_TOKENS_VAR = "WELCOMEMAT_ADMIN_TOKENS"
CRM_TOKENS_VAR = "WELCOMEMAT_CRM_TOKENS"
#: The name the audit log gives whoever presents the shared `WELCOMEMAT_ADMIN_TOKEN`.
SHARED_ADMIN_NAME = "admin"
#: The name of the shared `WELCOMEMAT_CRM_TOKEN` (a tenant's CRM token is `crm@TENANT`).
SHARED_CRM_NAME = "crm"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Credential:
    """A bearer token, the name it acts under, and the one tenant it is scoped to (None: every tenant)."""

    name: str
    token: str = field(repr=False)  # never in a repr, a log line or an error message
    tenant: str | None = None

    @property
    def actor(self) -> str:
        """Who the audit log says acted: the name, and the scope when there is one (`rita@acme`)."""
        return self.name if self.tenant is None else f"{self.name}@{self.tenant}"

    def may_act_on(self, owner: str | None) -> bool:
        """Whether this credential may read or change a campaign whose id `owner` owns (None: nobody's)."""
        return owner is not None and (self.tenant is None or self.tenant == owner)


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _check_length(where: str, token: str) -> None:
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"{where}: the token is {len(token)} characters; at least {MIN_TOKEN_CHARS}")


def parse_admin_tokens(value: str | None) -> tuple[Credential, ...]:
    """`WELCOMEMAT_ADMIN_TOKENS`: `NAME:TOKEN` (the operator's) and `NAME@TENANT:TOKEN` (scoped) entries.

    NAME is unique across entries and not `admin` (`WELCOMEMAT_ADMIN_TOKEN`'s).
    """
    found: list[Credential] = []
    for position, entry in enumerate(_split(value), start=1):
        label, sep, token = entry.partition(":")
        name, at, tenant = label.partition("@")
        where = f"{ADMIN_TOKENS_VAR} entry #{position}"
        if not sep or _NAME.fullmatch(name) is None or (at and not is_valid_id(tenant)):
            raise ConfigError(
                f"{where} must be NAME:TOKEN or NAME@TENANT:TOKEN, NAME and TENANT of letters, digits "
                "and '_.-'"
            )
        if name == SHARED_ADMIN_NAME or name in {c.name for c in found}:
            raise ConfigError(f"{where}: the name {name!r} is taken (`admin` is WELCOMEMAT_ADMIN_TOKEN's)")
        if len(label) > ACTOR_MAX_CHARS:
            raise ConfigError(
                f"{where}: NAME@TENANT is {len(label)} characters; the audit log records at most "
                f"{ACTOR_MAX_CHARS}"
            )
        _check_length(f"{where} ({label})", token)
        found.append(Credential(name, token, tenant if at else None))
    return tuple(found)


def parse_crm_tokens(value: str | None) -> tuple[Credential, ...]:
    """`WELCOMEMAT_CRM_TOKENS`: one `TENANT:TOKEN` entry per tenant, each scoped to its tenant."""
    found: list[Credential] = []
    for position, entry in enumerate(_split(value), start=1):
        tenant, sep, token = entry.partition(":")
        where = f"{CRM_TOKENS_VAR} entry #{position}"
        if not sep or not is_valid_id(tenant):
            raise ConfigError(f"{where} must be TENANT:TOKEN, TENANT a tenant id (letters, digits and '_.-')")
        if tenant in {c.tenant for c in found}:
            raise ConfigError(f"{where}: tenant {tenant!r} is listed twice; give each tenant one CRM token")
        _check_length(f"{where} ({tenant})", token)
        found.append(Credential(SHARED_CRM_NAME, token, tenant))
    return tuple(found)


def check_token_reuse(
    singles: Iterable[tuple[str, str | None]], lists: Iterable[tuple[str, Sequence[Credential]]]
) -> None:
    """ConfigError when a `*_TOKENS` entry's token is another entry's or another bearer variable's.

    `singles`: (variable, token or None) of the one-token variables; `lists`: (variable, its
    credentials). Two one-token variables sharing a value are `welcomemat secret rotate --check`'s
    to report (they are no scope to confuse), not refused here.
    """
    seen: dict[str, str] = {}
    for variable, token in singles:
        if token:
            seen.setdefault(token, variable)
    for variable, credentials in lists:
        for position, credential in enumerate(credentials, start=1):
            where = f"{variable} entry #{position} ({credential.actor})"
            earlier = seen.get(credential.token)
            if earlier is not None:
                raise ConfigError(f"{where}: its token is also {earlier}'s; give each its own value")
            seen[credential.token] = f"{variable} entry #{position}"
