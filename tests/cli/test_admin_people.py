"""`welcomemat admin invite` and `revoke` as an operator runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

from tests.corpora import REPO_ROOT
from tests.server.conftest import SECRET
from welcomemat.records.audit import AuditAction, read_entries
from welcomemat.security.people import Role, grant_role, role_in, take_invite
from welcomemat.security.tokens import TokenSigner

WELCOMEMAT = str(Path(sys.executable).parent / "welcomemat")


def run(
    *args: str, redis_url: str, home: Path, secret: str | None = SECRET
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WELCOMEMAT_", "REDIS_URL"))}
    env.update(
        {
            "REDIS_URL": redis_url,
            "WELCOMEMAT_HOME": str(home),
            "WELCOMEMAT_PUBLIC_URL": "https://go.acme.example",
        }
    )
    if secret is not None:
        env["WELCOMEMAT_SECRET"] = secret
    return subprocess.run(
        [WELCOMEMAT, "admin", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_invite_prints_a_one_time_link_and_revoke_takes_the_role_away(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    invited = run(
        "invite",
        "Rita@Acme.example",
        "--tenant",
        "acme",
        "--role",
        "reviewer",
        "--by",
        "ops",
        redis_url=redis_url,
        home=tmp_path,
    )
    assert invited.returncode == 0, invited.stderr
    link = invited.stdout.strip()
    assert link.startswith("https://go.acme.example/admin/sign-in/")
    record = take_invite(redis_client, TokenSigner([SECRET]), link.rpartition("/")[2])
    assert (record.email, record.tenant, record.role, record.invited_by) == (
        "rita@acme.example",
        "acme",
        Role.REVIEWER,
        "ops",
    )
    entry = [e for e in read_entries(redis_client, "acme") if e.action is AuditAction.ADMIN_INVITE]
    assert [(e.actor, e.detail) for e in entry] == [("ops", "invited rita@acme.example as reviewer")]

    grant_role(redis_client, "rita@acme.example", "acme", Role.REVIEWER)  # as signing in does
    assert role_in(redis_client, "rita@acme.example", "acme") is Role.REVIEWER
    revoked = run("revoke", "rita@acme.example", "--by", "ops", redis_url=redis_url, home=tmp_path)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.strip() == "revoked rita@acme.example: roles removed in acme; 0 session(s) ended"
    assert role_in(redis_client, "rita@acme.example", "acme") is None
    assert [e.detail for e in read_entries(redis_client, "acme") if e.action is AuditAction.ADMIN_REVOKE] == [
        "revoked rita@acme.example, was reviewer: 0 session(s) ended"
    ]


def test_invite_refuses_without_a_secret_or_with_a_bad_address(redis_url: str, tmp_path: Path) -> None:
    no_secret = run(
        "invite",
        "rita@acme.example",
        "--tenant",
        "acme",
        "--role",
        "viewer",
        redis_url=redis_url,
        home=tmp_path,
        secret=None,
    )
    assert no_secret.returncode == 2 and "WELCOMEMAT_SECRET" in no_secret.stderr and not no_secret.stdout
    bad = run(
        "invite",
        "Rita <rita@acme>",
        "--tenant",
        "acme",
        "--role",
        "viewer",
        redis_url=redis_url,
        home=tmp_path,
    )
    assert bad.returncode == 2 and "not a plain e-mail address" in bad.stderr and not bad.stdout
    role = run(
        "invite",
        "rita@acme.example",
        "--tenant",
        "acme",
        "--role",
        "owner",
        redis_url=redis_url,
        home=tmp_path,
    )
    assert role.returncode == 2 and "invalid choice" in role.stderr
