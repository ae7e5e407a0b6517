"""Who is making an admin request: a person signed in with a session, or a bearer token.

Every admin route gets one `AdminActor` from `server.admin.endpoint.admin_endpoint`: the name
the audit log records (the person's e-mail address, or the credential's `NAME[@TENANT]`), the
one tenant it is scoped to (None: every tenant, the operator's token), its role there, and, for
a session, its CSRF token. A bearer token is an `admin` (automation acts for the operator): it
carries no cookie, so no browser can be made to send it, and it needs no CSRF token.
"""

from __future__ import annotations

from dataclasses import dataclass

from welcomemat.security.admin_sessions import SignedIn
from welcomemat.security.credentials import Credential
from welcomemat.security.people import Role

__all__ = ["AdminActor"]


@dataclass(frozen=True)
class AdminActor:
    """The actor of one admin request (see the module docstring)."""

    name: str
    tenant: str | None
    role: Role
    csrf: str | None = None
    session_hash: str | None = None

    @property
    def actor(self) -> str:
        """Who the audit log says acted."""
        return self.name

    @property
    def is_person(self) -> bool:
        """Signed in with a session (a browser), not a bearer token."""
        return self.session_hash is not None

    def may_act_on(self, owner: str | None) -> bool:
        """Whether this actor may read or change a campaign `owner` owns (None: nobody's)."""
        return owner is not None and (self.tenant is None or self.tenant == owner)

    @classmethod
    def of_credential(cls, credential: Credential) -> AdminActor:
        return cls(credential.actor, credential.tenant, Role.ADMIN)

    @classmethod
    def of_session(cls, session: SignedIn) -> AdminActor:
        return cls(session.email, session.tenant, session.role, session.csrf, session.session_hash)
