"""The erasure list: accounts and people whose data was erased, read by everyone who could bring it back.

One hash per tenant (`keys.erasures_key`), written by `welcomemat erase`
(`welcomemat.records.subject_requests`), one field per erased subject:

    a:<account>              an erased account (every contact of it with it)
    p:<account>:<contact>    an erased contact of an account (ids hold no `:`)
    m:<sha256 hex>           an erased e-mail address (its digest: the list holds no address), so
                             precompute drops the person under whatever contact id a new export uses

each holding an `ErasureMark` (JSON). Three readers, three jobs:

- the renderer: a link, QR or cookie token (or a snippet's view token) issued before the mark's
  `revoke_before` identifies no one (`Revocations`): the old e-mail link shows the anonymous
  page, and no cookie is set from it. Loaded with the campaign, refreshed with its IP ranges
  and at once on the erasure's change message;
- the engagement fold (`welcomemat.records.fold.FOLD_LUA`): an event from before `revoke_before`
  is never folded into a record again (one a renderer still had queued at the erasure);
- precompute (`suppress`): an erased account, or a contact whose id or address is on the list,
  is left out of a run, so the same accounts file does not publish it again. `welcomemat erase
  --readmit` sets `suppress` false (a deliberate re-add); `revoke_before` stays: tokens issued
  before the erasure never come back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from welcomemat import keys
from welcomemat.ids import is_valid_id
from welcomemat.records.accounts import Account

__all__ = [
    "ErasureMark",
    "Revocations",
    "Suppression",
    "account_field",
    "contact_field",
    "email_digest",
    "email_field",
    "load_revocations",
    "suppress",
]

# Fields per HMGET while checking a run's accounts.
_CHECK_BATCH = 1000


class ErasureMark(BaseModel):
    """What the list says about one erased subject."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    erased_at: AwareDatetime
    # Unix seconds: a token issued before this identifies no one; an event from before it is
    # not folded. One second past the erasure, so a token issued in its very second counts too.
    revoke_before: int = Field(ge=0)
    # Precompute leaves the subject out of its runs (False after a deliberate re-add).
    suppress: bool = True
    # On an address's mark: the `account:contact` ids it was erased as, so erasing it again
    # finds them when no record names the address any more.
    contacts: tuple[str, ...] = ()


def account_field(account: str) -> str:
    return f"a:{account}"


def contact_field(account: str, contact: str) -> str:
    return f"p:{account}:{contact}"


def email_digest(email: str) -> str:
    """The list's name for an address: SHA-256 of it, trimmed and case-folded."""
    return hashlib.sha256(email.strip().casefold().encode("utf-8")).hexdigest()


def email_field(email: str) -> str:
    return f"m:{email_digest(email)}"


def _mark(raw: object) -> ErasureMark | None:
    """A stored mark, or None when it does not decode (a broken entry revokes nothing; it is
    rewritten by the next erasure of the subject)."""
    if not isinstance(raw, bytes | str):
        return None
    try:
        return ErasureMark.model_validate_json(raw)
    except ValidationError:
        return None


@dataclass(frozen=True)
class Revocations:
    """The tenant's revocation instants, by account and by (account, contact)."""

    accounts: Mapping[str, int] = field(default_factory=dict)
    contacts: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.accounts or self.contacts)

    def revoked(self, account: str | None, contact: str | None, issued_at: int) -> bool:
        """Whether a token for `account` (and `contact`) issued at `issued_at` (Unix s) is revoked."""
        if account is None or not self:
            return False
        before = self.accounts.get(account)
        if before is not None and issued_at < before:
            return True
        if contact is not None:
            before = self.contacts.get((account, contact))
            if before is not None and issued_at < before:
                return True
        return False


def load_revocations(client: redis.Redis, tenant: str) -> Revocations:
    """The tenant's revocations from its erasure list (blocking: the renderer runs it in a thread)."""
    raw: Mapping[Any, Any] = client.hgetall(keys.erasures_key(tenant))
    accounts: dict[str, int] = {}
    contacts: dict[tuple[str, str], int] = {}
    for name, value in raw.items():
        text = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        kind, _, rest = text.partition(":")
        mark = _mark(value)
        if mark is None:
            continue
        if kind == "a" and is_valid_id(rest):
            accounts[rest] = mark.revoke_before
        elif kind == "p":
            account, _, contact = rest.partition(":")
            if is_valid_id(account) and is_valid_id(contact):
                contacts[(account, contact)] = mark.revoke_before
    return Revocations(accounts, contacts)


@dataclass(frozen=True)
class Suppression:
    """A run's accounts with the erased left out: `kept`, and what was dropped."""

    kept: list[Account]
    accounts: list[str]  # ids of erased accounts left out
    contacts: int  # erased contacts dropped from accounts that were kept


def suppress(client: redis.Redis, tenant: str, accounts: Sequence[Account]) -> Suppression:
    """Leave out every account, and every contact, the tenant's erasure list suppresses."""
    key = keys.erasures_key(tenant)
    if not accounts or not client.exists(key):
        return Suppression(list(accounts), [], 0)
    names: list[str] = []
    for account in accounts:
        names.append(account_field(account.account_id))
        for contact in account.contacts:
            names.append(contact_field(account.account_id, contact.contact_id))
            if contact.email:
                names.append(email_field(contact.email))
    unique = list(dict.fromkeys(names))
    suppressed: set[str] = set()
    for start in range(0, len(unique), _CHECK_BATCH):
        batch = unique[start : start + _CHECK_BATCH]
        values: list[Any] = client.hmget(key, batch)
        for name, value in zip(batch, values, strict=True):
            mark = _mark(value)
            if mark is not None and mark.suppress:
                suppressed.add(name)
    if not suppressed:
        return Suppression(list(accounts), [], 0)
    kept: list[Account] = []
    dropped: list[str] = []
    contacts = 0
    for account in accounts:
        if account_field(account.account_id) in suppressed:
            dropped.append(account.account_id)
            continue
        remaining = [
            c
            for c in account.contacts
            if contact_field(account.account_id, c.contact_id) not in suppressed
            and not (c.email and email_field(c.email) in suppressed)
        ]
        contacts += len(account.contacts) - len(remaining)
        kept.append(
            account if len(remaining) == len(account.contacts) else _with_contacts(account, remaining)
        )
    return Suppression(kept, dropped, contacts)


def _with_contacts(account: Account, contacts: list[Any]) -> Account:
    # Through the model again, so the account is exactly what reading that line would give.
    data = json.loads(account.model_dump_json())
    data["contacts"] = [json.loads(c.model_dump_json()) for c in contacts]
    return Account.model_validate(data)
