"""`welcomemat secret rotate [--check]` as an operator runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpora import REPO_ROOT
from welcomemat.errors import TokenBadSignature
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.settings import MIN_SECRET_CHARS

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")
OLD = "the-key-in-use-before-the-rotation-0123456789"
NEW = "the-key-made-by-secret-rotate-0123456789abcd"
ADMIN = "admin-token-for-secret-tests-0123456789abcdef"


def run(*args: str, env: dict[str, str], home: Path) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    full_env.update({"WELCOMEMAT_HOME": str(home), **env})
    return subprocess.run(
        [WELCOMEMAT, *args], cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=60
    )


def test_rotate_prints_a_new_strong_key_and_the_steps_never_the_current_key(tmp_path: Path) -> None:
    first = run("secret", "rotate", env={"WELCOMEMAT_SECRET": OLD}, home=tmp_path)
    second = run("secret", "rotate", env={"WELCOMEMAT_SECRET": OLD}, home=tmp_path)
    assert first.returncode == 0, first.stderr
    [key] = re.findall(r"^  (\S+)$", first.stdout, flags=re.MULTILINE)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", key) and len(key) >= MIN_SECRET_CHARS
    assert key not in second.stdout  # a fresh key each time
    for step in (
        f"WELCOMEMAT_SECRET=<current key>,{key}",  # 1: stage, the old key still signs
        f"WELCOMEMAT_SECRET={key},<old key>",  # 2: rotate, the old key verifies only
        "welcomemat secret rotate --check",  # 3
        f"WELCOMEMAT_SECRET={key}\n",  # 4: retire the old key ...
        "120 days",  # ... after the longest default lifetime (QR codes)
        "366 days",  # ... or the longest --ttl
    ):
        assert step in first.stdout, step
    assert OLD not in first.stdout + first.stderr
    TokenSigner.from_setting(f"{key},{OLD}")  # the printed key is one the renderer accepts


def test_rotate_notes_a_rotation_already_under_way(tmp_path: Path) -> None:
    result = run("secret", "rotate", env={"WELCOMEMAT_SECRET": f"{NEW},{OLD}"}, home=tmp_path)
    assert result.returncode == 0 and "already holds 2 keys" in result.stderr
    assert OLD not in result.stdout + result.stderr and NEW not in result.stdout + result.stderr


def test_check_passes_a_rotated_environment_and_prints_no_value(tmp_path: Path) -> None:
    scoped = {
        "WELCOMEMAT_ADMIN_TOKENS": f"rita:{ADMIN}x,sam@acme:{ADMIN}y",
        "WELCOMEMAT_CRM_TOKENS": f"acme:{ADMIN}z",
    }
    env = {"WELCOMEMAT_SECRET": f"{NEW},{OLD}", "WELCOMEMAT_ADMIN_TOKEN": ADMIN, **scoped}
    result = run("secret", "rotate", "--check", env=env, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WELCOMEMAT_ADMIN_TOKENS: 2 token(s), 1 tenant(s) scoped (acme)" in result.stdout
    assert "WELCOMEMAT_CRM_TOKENS: 1 token(s), 1 tenant(s) scoped (acme)" in result.stdout
    assert "key #1: 44 characters, signs" in result.stdout
    assert "key #2: 45 characters, verifies only" in result.stdout
    assert "WELCOMEMAT_CRM_TOKEN: unset" in result.stdout and result.stdout.endswith("ok\n")
    for value in (NEW, OLD, ADMIN):
        assert value not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({}, "WELCOMEMAT_SECRET is not set"),
        ({"WELCOMEMAT_SECRET": " , "}, "WELCOMEMAT_SECRET holds no key"),
        ({"WELCOMEMAT_SECRET": f"{NEW},{NEW}"}, "key #2 is key #1 again: a previous key must differ"),
        ({"WELCOMEMAT_SECRET": f"{NEW},short-old-key"}, "key #2: 13 characters, at least 32"),
        (
            {"WELCOMEMAT_SECRET": NEW, "WELCOMEMAT_ADMIN_TOKEN": "short"},
            "WELCOMEMAT_ADMIN_TOKEN: 5 characters",
        ),
        (
            {"WELCOMEMAT_SECRET": NEW, "WELCOMEMAT_CRM_TOKEN": NEW},
            "WELCOMEMAT_CRM_TOKEN is also a WELCOMEMAT_SECRET",
        ),
        (
            {"WELCOMEMAT_SECRET": NEW, "WELCOMEMAT_ADMIN_TOKEN": ADMIN, "WELCOMEMAT_CRM_TOKEN": ADMIN},
            "WELCOMEMAT_CRM_TOKEN is the same as WELCOMEMAT_ADMIN_TOKEN",
        ),
        (
            {"WELCOMEMAT_SECRET": NEW, "WELCOMEMAT_CRM_TOKENS": f"acme:{ADMIN},acme:{OLD}"},
            "WELCOMEMAT_CRM_TOKENS entry #2: tenant 'acme' is listed twice",
        ),
        (
            {
                "WELCOMEMAT_SECRET": NEW,
                "WELCOMEMAT_ADMIN_TOKEN": ADMIN,
                "WELCOMEMAT_ADMIN_TOKENS": f"sam@acme:{ADMIN}",
            },
            "WELCOMEMAT_ADMIN_TOKENS entry #1 (sam@acme): its token is also WELCOMEMAT_ADMIN_TOKEN's",
        ),
        (
            {"WELCOMEMAT_SECRET": NEW, "WELCOMEMAT_CRM_TOKENS": f"acme:{NEW}"},
            "WELCOMEMAT_CRM_TOKENS entry #1 is also a WELCOMEMAT_SECRET key",
        ),
    ],
)
def test_check_refuses_with_exit_2_naming_the_problem_not_the_value(
    tmp_path: Path, env: dict[str, str], problem: str
) -> None:
    result = run("secret", "rotate", "--check", env=env, home=tmp_path)
    assert result.returncode == 2
    assert f"problem: {problem}" in result.stdout
    assert "problem(s) in the secrets" in result.stderr
    for value in env.values():
        if value.strip(" ,"):
            assert value not in result.stdout + result.stderr


def test_a_link_signed_before_the_rotation_verifies_after_it_and_not_once_the_old_key_is_gone() -> None:
    claims = {"tenant": "acme", "campaign": "q4-pipeline", "account": "acct_dymaxa"}
    token = TokenSigner.from_setting(OLD).sign(TokenKind.LINK, **claims, ttl_s=3600)
    rotated = TokenSigner.from_setting(f"{NEW},{OLD}")
    assert (
        rotated.verify(TokenKind.LINK, token, tenant="acme", campaign="q4-pipeline").account == "acct_dymaxa"
    )
    with pytest.raises(TokenBadSignature):
        TokenSigner.from_setting(NEW).verify(TokenKind.LINK, token, tenant="acme", campaign="q4-pipeline")
    # What the rotated signer signs, it signs with the new key.
    fresh = rotated.sign(TokenKind.LINK, **claims, ttl_s=3600)
    TokenSigner.from_setting(NEW).verify(TokenKind.LINK, fresh, tenant="acme", campaign="q4-pipeline")
