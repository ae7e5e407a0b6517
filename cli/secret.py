"""`welcomemat secret rotate`: a new signing key, the steps to rotate `WELCOMEMAT_SECRET` to
it without breaking a link, QR code or cookie already out, and `--check` of the environment.

Rotation needs no other variable: `WELCOMEMAT_SECRET` is a comma-separated list whose first
key signs and whose every key verifies (`welcomemat/security/tokens.py`). So the previous key stays,
second, verify-only, until every token it signed has expired. With several processes (many
renderers, workers, `export`), the new key is first added *second* everywhere, and only
then moved first: a token the first restarted renderer signs then verifies on every other.

Nothing here prints a configured value: keys and tokens are named by position and length.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from welcomemat.errors import ConfigError
from welcomemat.security.credentials import (
    ADMIN_TOKENS_VAR,
    CRM_TOKENS_VAR,
    Credential,
    check_token_reuse,
    parse_admin_tokens,
    parse_crm_tokens,
)
from welcomemat.security.tokens import DEFAULT_TTL_S, MAX_TTL_S, TokenKind
from welcomemat.settings import BEARER_TOKEN_SETTINGS, MIN_SECRET_CHARS, SECRET_ENV_VAR

__all__ = ["Finding", "check_secrets", "new_secret", "print_rotation", "rotation_steps", "secret_findings"]

_DAY_S = 24 * 60 * 60
#: Random bytes in a new key: `secrets.token_urlsafe(32)` is 43 characters, 256 bits.
_NEW_KEY_BYTES = 32


def new_secret() -> str:
    """A new signing key from the kernel's CSPRNG, URL-safe, 43 characters."""
    return secrets.token_urlsafe(_NEW_KEY_BYTES)


def _days(seconds: int) -> int:
    return seconds // _DAY_S


def rotation_steps(new_key: str) -> str:
    """The steps, with `new_key` written in; the current key only ever as `<current key>`."""
    ttl = {kind: _days(seconds) for kind, seconds in DEFAULT_TTL_S.items()}
    qr, cookie, link = ttl[TokenKind.QR], ttl[TokenKind.COOKIE], ttl[TokenKind.LINK]
    longest, most = max(ttl.values()), _days(MAX_TTL_S)
    return f"""\
New signing key ({len(new_key)} characters; keep it like a password):

  {new_key}

{SECRET_ENV_VAR} is a comma-separated list: the first key signs, every key verifies. Set it
the same way for every process that reads it (each renderer, `welcomemat worker`, `sync`,
`export`, `link`), in your secret store, and restart them all at each step:

  1. Add the new key second: the current key still signs, the new one already verifies.
       {SECRET_ENV_VAR}=<current key>,{new_key}
     (A single renderer process and nothing else that signs? Go straight to step 2.)

  2. Move the new key first, the old (until now current) key second:
       {SECRET_ENV_VAR}={new_key},<old key>
     New links, QR codes, cookies and view tokens are signed with the new key; those
     already out, signed with the old key, keep working.

  3. Check this environment (key lengths, the old key differs; no value is printed):
       welcomemat secret rotate --check

  4. Once every token the old key signed has expired, remove it:
       {SECRET_ENV_VAR}={new_key}
     With the default lifetimes that is {longest} days after step 2 (QR codes {qr} days,
     cookies {cookie}, links {link}), up to {most} days if a link or QR code was made with a
     longer `--ttl`. A token signed with the old key then opens the page as an
     anonymous visit: nothing breaks, it is just no longer personal.
"""


def print_rotation(environ: Mapping[str, str] | None = None) -> int:
    """Print a new key and the steps; a note on stderr when a rotation seems under way."""
    env = os.environ if environ is None else environ
    print(rotation_steps(new_secret()), end="")
    configured = [k for k in (env.get(SECRET_ENV_VAR) or "").split(",") if k.strip()]
    if len(configured) > 1:
        print(
            f"welcomemat: note: {SECRET_ENV_VAR} already holds {len(configured)} keys: a rotation is "
            "under way; finish it (step 4) before starting another",
            file=sys.stderr,
        )
    return EXIT_OK


@dataclass(frozen=True)
class Finding:
    """One line of `--check`: what was found, and whether it is a problem."""

    text: str
    problem: bool = False


def _secret_findings(value: str | None) -> list[Finding]:
    if value is None or not value.strip():
        return [Finding(f"{SECRET_ENV_VAR} is not set: links, QR codes and cookies cannot be signed", True)]
    keys = [k.strip() for k in value.split(",") if k.strip()]
    if not keys:
        return [Finding(f"{SECRET_ENV_VAR} holds no key, only commas and spaces", True)]
    found = [Finding(f"{SECRET_ENV_VAR}: {len(keys)} key(s)")]
    for position, key in enumerate(keys, start=1):
        role = "signs" if position == 1 else "verifies only (a previous key)"
        if len(key) < MIN_SECRET_CHARS:
            found.append(
                Finding(
                    f"  key #{position}: {len(key)} characters, at least {MIN_SECRET_CHARS} are required",
                    True,
                )
            )
        else:
            found.append(Finding(f"  key #{position}: {len(key)} characters, {role}"))
        for earlier in range(position - 1):
            if keys[earlier] == key:
                found.append(
                    Finding(
                        f"  key #{position} is key #{earlier + 1} again: a previous key must differ "
                        "from the new one (generate one with `welcomemat secret rotate`)",
                        True,
                    )
                )
    if len(keys) > 2:
        found.append(Finding(f"  {len(keys)} keys: every key verifies; remove those no token still needs"))
    return found


def secret_findings(environ: Mapping[str, str]) -> list[Finding]:
    """What `--check` reports for `environ`: the signing keys and the bearer tokens, by
    position and length only."""
    found = _secret_findings(environ.get(SECRET_ENV_VAR))
    keys = {k.strip() for k in (environ.get(SECRET_ENV_VAR) or "").split(",") if k.strip()}
    tokens: dict[str, str] = {}
    for name, _field in BEARER_TOKEN_SETTINGS:
        value = environ.get(name) or ""
        if not value:
            found.append(Finding(f"{name}: unset (its routes are off)"))
            continue
        if len(value) < MIN_SECRET_CHARS:
            found.append(
                Finding(f"{name}: {len(value)} characters, at least {MIN_SECRET_CHARS} are required", True)
            )
        else:
            found.append(Finding(f"{name}: {len(value)} characters"))
        if value in keys:
            found.append(Finding(f"{name} is also a {SECRET_ENV_VAR} key: give each job its own value", True))
        for other, other_value in tokens.items():
            if other_value == value:
                found.append(Finding(f"{name} is the same as {other}: give each its own value", True))
        tokens[name] = value
    return found + _token_list_findings(environ, keys, tokens)


def _token_list_findings(
    environ: Mapping[str, str], keys: set[str], singles: dict[str, str]
) -> list[Finding]:
    """`WELCOMEMAT_ADMIN_TOKENS` and `WELCOMEMAT_CRM_TOKENS`: how many entries, how many scoped
    to a tenant, and each problem the settings would refuse them for."""
    found: list[Finding] = []
    lists: list[tuple[str, tuple[Credential, ...]]] = []
    for name, parse in ((ADMIN_TOKENS_VAR, parse_admin_tokens), (CRM_TOKENS_VAR, parse_crm_tokens)):
        value = environ.get(name) or ""
        if not value.strip(" ,"):
            continue
        try:
            credentials = parse(value)
        except ConfigError as exc:  # names the entry by position, never its token
            found.append(Finding(str(exc), True))
            continue
        scoped = sorted({c.tenant for c in credentials if c.tenant is not None})
        found.append(
            Finding(
                f"{name}: {len(credentials)} token(s), {len(scoped)} tenant(s) scoped"
                + (f" ({', '.join(scoped)})" if scoped else "")
            )
        )
        for position, credential in enumerate(credentials, start=1):
            if credential.token in keys:
                found.append(
                    Finding(
                        f"{name} entry #{position} is also a {SECRET_ENV_VAR} key: "
                        "give each job its own value",
                        True,
                    )
                )
        lists.append((name, credentials))
    try:
        check_token_reuse(singles.items(), lists)
    except ConfigError as exc:
        found.append(Finding(str(exc), True))
    return found


def check_secrets(environ: Mapping[str, str] | None = None) -> int:
    """Print the findings; exit 0 when none is a problem, 2 otherwise."""
    found = secret_findings(os.environ if environ is None else environ)
    problems = [f for f in found if f.problem]
    for finding in found:
        indent = len(finding.text) - len(finding.text.lstrip())
        mark = "problem: " if finding.problem else ""
        print(f"{finding.text[:indent]}{mark}{finding.text[indent:]}")
    if problems:
        print(f"welcomemat: {len(problems)} problem(s) in the secrets of this environment", file=sys.stderr)
        return EXIT_BAD_INPUT
    print("ok")
    return EXIT_OK
