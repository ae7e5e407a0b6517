"""One settings object per process, built from the environment (or any mapping) and flags.

Every variable Welcomemat reads is a `Setting` in `SETTINGS`; README.md's environment
table lists each one and a test keeps the two in step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from welcomemat.errors import ConfigError

__all__ = [
    "SETTINGS",
    "Setting",
    "Settings",
]


@dataclass(frozen=True)
class Setting:
    name: str
    default: str | None
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "REDIS_URL",
        None,
        "Redis/Valkey 7+ URL (`redis://`, `rediss://`, `unix://`). Unset: an embedded Redis "
        "started under `WELCOMEMAT_HOME`.",
    ),
    Setting(
        "WELCOMEMAT_HOME",
        ".welcomemat",
        "Folder for local state: the embedded Redis (socket, AOF, log) and demo files.",
    ),
    Setting(
        "WELCOMEMAT_SECRET",
        None,
        "Token signing keys, comma-separated, each at least 32 characters: the first signs, all "
        "verify (rotation). Required to sign or verify links, QR codes and cookies.",
    ),
    Setting(
        "WELCOMEMAT_ADMIN_TOKEN", None, "Bearer token for `/admin/...` routes. Unset: admin routes are off."
    ),
    Setting("OPENAI_BASE_URL", None, "Base URL of an OpenAI-compatible endpoint for the `openai` provider."),
    Setting("OPENAI_API_KEY", None, "API key for that endpoint."),
    Setting("WELCOMEMAT_MODEL", None, "Model name the `openai` provider asks for."),
    Setting("WELCOMEMAT_LOG_LEVEL", "INFO", "Log level: DEBUG, INFO, WARNING or ERROR."),
)

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True)
class Settings:
    """What this process was configured with. Build it once, pass it down."""

    redis_url: str | None
    home: Path
    secret: str | None
    admin_token: str | None
    openai_base_url: str | None
    openai_api_key: str | None
    model: str | None
    log_level: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Read every Setting from `environ` (default: os.environ); flags override."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            default = next(s.default for s in SETTINGS if s.name == name)
            value = env.get(name, default)
            return value if value not in ("", None) else default

        log_level = (get("WELCOMEMAT_LOG_LEVEL") or "INFO").upper()
        if log_level not in _LOG_LEVELS:
            raise ConfigError(
                f"WELCOMEMAT_LOG_LEVEL is {log_level!r}; expected one of {', '.join(_LOG_LEVELS)}"
            )
        redis_url = get("REDIS_URL")
        if redis_url is not None and not redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(f"REDIS_URL {redis_url!r} must start with redis://, rediss:// or unix://")
        values: dict[str, object] = {
            "redis_url": redis_url,
            "home": Path(get("WELCOMEMAT_HOME") or ".welcomemat"),
            "secret": get("WELCOMEMAT_SECRET"),
            "admin_token": get("WELCOMEMAT_ADMIN_TOKEN"),
            "openai_base_url": get("OPENAI_BASE_URL"),
            "openai_api_key": get("OPENAI_API_KEY"),
            "model": get("WELCOMEMAT_MODEL"),
            "log_level": log_level,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def require_secret(self) -> str:
        if not self.secret:
            raise ConfigError(
                "WELCOMEMAT_SECRET is not set: set it to one or more comma-separated keys of at "
                "least 32 characters (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
        return self.secret
