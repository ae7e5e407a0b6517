"""Signing keys and bearer tokens changed: noticed where they take effect, and audit-logged.

`welcomemat secret rotate` only prints the steps; a rotation happens when an operator changes
the environment and restarts. So each renderer, as it starts, fingerprints the credentials it
was given (`fingerprints`) and compares them with the last ones recorded in Redis
(`keys.credential_fingerprints_key`). When they differ, it records the new ones and appends a
`secret_rotate` entry to the global audit log saying what changed: which signing key signs,
keys added or retired, bearer tokens added, changed or removed by name. The compare-and-set is
one script, so of many renderers restarted with the same new environment, one logs it.

A fingerprint is the first 12 hex digits of SHA-256 over a domain-separated string: it tells
two credentials apart and names one in a log, and reveals nothing of a 32+ character value.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

import redis

from welcomemat import keys
from welcomemat.records.audit import AuditAction, AuditEntry, Auditor, append_entry

__all__ = ["describe_change", "fingerprint", "fingerprints", "record_credentials"]

_DOMAIN = b"welcomemat credential fingerprint v1\x00"
_DIGITS = 12

# Sets the recorded fingerprints to ARGV[1] unless they already are; returns the previous
# value ("" when none was recorded) to the one caller that changed it, nil to every other.
_SWAP_LUA = """
local old = redis.call('GET', KEYS[1])
if old == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return nil
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if not old then return '' end
return old
"""


def fingerprint(value: str) -> str:
    return hashlib.sha256(_DOMAIN + value.encode("utf-8")).hexdigest()[:_DIGITS]


def fingerprints(signing_keys: str | None, bearer_tokens: Mapping[str, str | None]) -> dict[str, str]:
    """Label -> fingerprint: `key#1` (the one that signs), `key#2`...; `token:<name>` per bearer
    token given (None: not configured, left out)."""
    found: dict[str, str] = {}
    keys_given = [k.strip() for k in (signing_keys or "").split(",") if k.strip()]
    for position, key in enumerate(keys_given, start=1):
        found[f"key#{position}"] = fingerprint(key)
    for name, token in sorted(bearer_tokens.items()):
        if token:
            found[f"token:{name}"] = fingerprint(token)
    return found


def describe_change(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """One line for the audit log: what changed between two sets of fingerprints."""
    old_keys = [v for k, v in sorted(old.items()) if k.startswith("key#")]
    new_keys = [v for k, v in sorted(new.items()) if k.startswith("key#")]
    parts: list[str] = []
    if old_keys[:1] != new_keys[:1]:
        signer = new_keys[0] if new_keys else "none"
        parts.append(f"signing key now {signer} (was {old_keys[0] if old_keys else 'none'})")
    added = [k for k in new_keys if k not in old_keys]
    retired = [k for k in old_keys if k not in new_keys]
    if added:
        parts.append("keys added " + ", ".join(added))
    if retired:
        parts.append("keys retired " + ", ".join(retired))
    old_tokens = {k: v for k, v in old.items() if k.startswith("token:")}
    new_tokens = {k: v for k, v in new.items() if k.startswith("token:")}
    for label in sorted(old_tokens.keys() | new_tokens.keys()):
        name = label.removeprefix("token:")
        if label not in old_tokens:
            parts.append(f"token {name} added")
        elif label not in new_tokens:
            parts.append(f"token {name} removed")
        elif old_tokens[label] != new_tokens[label]:
            parts.append(f"token {name} changed")
    if not old:
        return "credentials first recorded: " + (", ".join(parts) or "none configured")
    return "; ".join(parts) or "key order changed"


def record_credentials(
    client: redis.Redis, current: Mapping[str, str], auditor: Auditor
) -> AuditEntry | None:
    """Record `current` and, when it differs from what was recorded, append the audit entry
    (returned). None when nothing changed or another process logged the change first.
    Raises redis errors and `AuditError` to the caller (a renderer logs them and starts)."""
    encoded = json.dumps(dict(current), sort_keys=True, separators=(",", ":"))
    swap = client.register_script(_SWAP_LUA)
    previous = swap(keys=[keys.credential_fingerprints_key()], args=[encoded, keys.AUDIT_TTL_S])
    if previous is None:
        return None
    text = previous.decode() if isinstance(previous, bytes) else str(previous)
    try:
        old = json.loads(text) if text else {}
    except ValueError:
        old = {}  # a damaged record: say what is configured now
    if not isinstance(old, dict):
        old = {}
    entry = auditor.entry(AuditAction.SECRET_ROTATE, tenant=None, detail=describe_change(old, current))
    append_entry(client, entry)
    return entry
