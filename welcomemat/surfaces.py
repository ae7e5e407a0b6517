"""The channels a fact may reach, and which of them a published zone may be shown on.

Research marks each fact with the surfaces it may be used on (`surfaces` in
accounts.jsonl): `web` (the pages and the snippet), `email` (the sequencer export and its
previews), `seller` (what the seller and the CRM read) and `print` (direct mail). The
trust policy keeps the ones it knows (`allowed_surfaces`); a page zone is only ever written
from facts allowed on `web`, and every other channel shows a personal zone only when every
fact it cites allows that channel too (`ZoneContent.allows`). Anywhere else the zone takes
its fallback copy for that channel, so a fact never travels further than its research says.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = ["ALL_SURFACES", "Surface", "allowed_surfaces"]


class Surface(enum.StrEnum):
    """A channel copy reaches an account through."""

    WEB = "web"
    EMAIL = "email"
    SELLER = "seller"
    PRINT = "print"


ALL_SURFACES: tuple[Surface, ...] = tuple(Surface)


def allowed_surfaces(declared: Iterable[str]) -> tuple[Surface, ...]:
    """The known surfaces among `declared` (case and spaces aside), in `Surface` order.

    An unknown name ("linkedin", a typo) allows nothing: a surface is never guessed.
    """
    names = {s.strip().lower() for s in declared if isinstance(s, str)}
    return tuple(s for s in Surface if s.value in names)
