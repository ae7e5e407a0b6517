"""One settings object per process, built from the environment (or any mapping) and flags.

Every variable Welcomemat reads is a `Setting` in `SETTINGS`; docs/reference/configuration.md
is generated from it (`python -m cli.reference_pages`) and a test keeps the two in step.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from welcomemat.errors import ConfigError
from welcomemat.model_cost import DEFAULT_PRICES, PRICES_ENV_VAR, PriceTable, parse_price_table
from welcomemat.security.credentials import (
    ADMIN_TOKENS_VAR,
    CRM_TOKENS_VAR,
    SHARED_ADMIN_NAME,
    SHARED_CRM_NAME,
    Credential,
    check_token_reuse,
    parse_admin_tokens,
    parse_crm_tokens,
)
from welcomemat.storage.redis_client import URL_SCHEMES, is_cluster_url, parse_cluster_url

__all__ = [
    "BEARER_TOKEN_SETTINGS",
    "MIN_SECRET_CHARS",
    "SECRET_ENV_VAR",
    "SETTINGS",
    "SHARED_ADMIN_NAME",
    "SHARED_CRM_NAME",
    "Setting",
    "Settings",
    "check_secret_keys",
    "origin_url",
    "secret_keys",
]

#: Shortest accepted signing key or bearer token, in characters: `secrets.token_urlsafe(32)`
#: makes 43 (256 bits); 32 random URL-safe characters are 192 bits.
MIN_SECRET_CHARS = 32
#: The environment variable holding the token signing keys (comma-separated, first signs).
SECRET_ENV_VAR = "WELCOMEMAT_SECRET"
#: The bearer tokens a client presents, by variable and `Settings` field.
BEARER_TOKEN_SETTINGS = (("WELCOMEMAT_ADMIN_TOKEN", "admin_token"), ("WELCOMEMAT_CRM_TOKEN", "crm_token"))
_MAKE_ONE = "e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"


@dataclass(frozen=True)
class Setting:
    name: str
    default: str | None
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "REDIS_URL",
        None,
        "Redis/Valkey 7+ URL: one server (`redis://`, `rediss://`, `unix://`) or a Redis Cluster "
        "(`redis+cluster://host:port[,host:port...]`, `rediss+cluster://` with TLS; each a startup "
        "node). Unset: an embedded Redis started under `WELCOMEMAT_HOME`.",
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
        "verify (rotation: `welcomemat secret rotate`). Required to sign or verify links, QR codes "
        "and cookies.",
    ),
    Setting(
        "WELCOMEMAT_ADMIN_TOKEN",
        None,
        "Bearer token for `/admin/...` routes, at least 32 characters (shorter: every command refuses "
        "to start, exit 2). Unset: admin routes are off.",
    ),
    Setting(
        "WELCOMEMAT_ADMIN_TOKENS",
        None,
        "Named bearer tokens for `/admin/...` routes, comma-separated: `NAME:TOKEN` reaches every "
        "tenant's campaigns, `NAME@TENANT:TOKEN` only TENANT's (any other campaign is 404, as an unknown "
        "one). Each token at least 32 characters and its own value; the audit log names who decided "
        "`NAME` or `NAME@TENANT`.",
    ),
    Setting(
        "WELCOMEMAT_ADMIN_SESSION_IDLE_S",
        "1800",
        "A person's admin session (`welcomemat admin invite`) ends after this many seconds without a "
        "request (60 to 86400); they sign in again from a new link.",
    ),
    Setting(
        "WELCOMEMAT_ADMIN_SESSION_MAX_S",
        "43200",
        "An admin session ends this many seconds after sign-in however busy it is (300 to 2592000, "
        "30 days; at least the idle timeout).",
    ),
    Setting(
        "WELCOMEMAT_OPERATOR",
        None,
        "Who runs `welcomemat` commands that change or erase something, as the audit log records them "
        "(`--by NAME` overrides it). Unset: the login name, as `login:NAME`.",
    ),
    Setting(
        "WELCOMEMAT_CRM_TOKEN",
        None,
        "Bearer token the CRM sends to `POST /v1/conversions`, at least 32 characters (shorter: every "
        "command refuses to start, exit 2); it reaches every tenant's campaigns. Unset (and no "
        "`WELCOMEMAT_CRM_TOKENS`): the route is off (404).",
    ),
    Setting(
        "WELCOMEMAT_CRM_TOKENS",
        None,
        "Tenant-scoped CRM bearer tokens for `POST /v1/conversions`, comma-separated `TENANT:TOKEN` "
        "pairs (one per tenant, each token at least 32 characters and its own value): a conversion for "
        "a campaign TENANT does not own is 404, as an unknown campaign, and writes nothing.",
    ),
    Setting("OPENAI_BASE_URL", None, "Base URL of an OpenAI-compatible endpoint for the `openai` provider."),
    Setting("OPENAI_API_KEY", None, "API key for that endpoint."),
    Setting("WELCOMEMAT_MODEL", None, "Model name the `openai` provider asks for."),
    Setting(
        PRICES_ENV_VAR,
        None,
        "Model prices for a run's cost line, comma-separated `MODEL=INPUT/OUTPUT` in USD per 1M tokens "
        "(`gpt-4o-mini=0.15/0.60`); added to the built-in table (`welcomemat.model_cost.DEFAULT_PRICES`), "
        "replacing a model it names. A model in neither: tokens reported, cost unknown.",
    ),
    Setting("WELCOMEMAT_LOG_LEVEL", "INFO", "Log level: DEBUG, INFO, WARNING or ERROR."),
    Setting(
        "WELCOMEMAT_PUBLIC_URL",
        "http://127.0.0.1:8000",
        "The renderer's public origin (`https://host[:port]`, no path). Every absolute URL the "
        "renderer and `welcomemat link` build starts with it; never taken from a request's Host header "
        "or scheme (no trailing-slash redirects).",
    ),
    Setting(
        "WELCOMEMAT_ALLOWED_HOSTS",
        None,
        "More host names the renderer answers for, comma-separated (`*.example.com` allowed, `*` for "
        "any). It always answers for the host of `WELCOMEMAT_PUBLIC_URL` and for `localhost`, "
        "`127.0.0.1` and `[::1]` (local runs; no answer is built from the Host header). Other hosts "
        "get 400 naming this setting. `/healthz`, `/readyz` and `/metrics` answer any host.",
    ),
    Setting(
        "WELCOMEMAT_TRUSTED_PROXIES",
        None,
        "Networks of the reverse proxies in front of the renderer, comma-separated CIDRs. Only a peer "
        "inside one may name the client with `X-Forwarded-For`. Unset: the peer is the client.",
    ),
    Setting(
        "WELCOMEMAT_HEADER_TIMEOUT_S",
        "10",
        "Longest the renderer waits for a request's line and headers, in seconds (0.5 to 300): from "
        "the connection's start, or the end of its previous response; past it the connection is "
        "closed (a client sending headers a byte at a time holds no connection longer).",
    ),
    Setting(
        "WELCOMEMAT_FRAME_ANCESTORS",
        "'none'",
        "CSP `frame-ancestors` of the renderer's pages: `'none'` (no framing), `'self'`, or "
        "space-separated https origins allowed to frame them.",
    ),
    Setting(
        "WELCOMEMAT_CRM_WEBHOOK_URL",
        None,
        "Where `welcomemat sync` POSTs each changed account record (engagement and facts shown), "
        "signed: `https://` to a named host (`http://` only to a loopback host), no user name or "
        "password, else `sync` refuses to start. Only its host is ever printed. Unset: no webhook.",
    ),
    Setting(
        "WELCOMEMAT_CRM_WEBHOOK_SECRET",
        None,
        "HMAC-SHA256 key of the webhook's `X-Welcomemat-Signature`, at least 32 characters; required "
        "with `WELCOMEMAT_CRM_WEBHOOK_URL`.",
    ),
    Setting(
        "WELCOMEMAT_ALERT_WEBHOOK_URL",
        None,
        "A Slack-compatible incoming webhook (`https://`; `http://` only to a loopback host) where "
        "`welcomemat sync` posts each seller alert of a campaign with `seller_alerts`. It is a "
        "credential: only its host is ever printed. Unset: alerts go to the CRM webhook only.",
    ),
    Setting(
        "WELCOMEMAT_RECEIVER_DEADLINE_S",
        "10",
        "Longest one request of `welcomemat sync` to the CRM or alert webhook may take, connect to "
        "last byte, in seconds (0.1 to 300); past it the attempt failed and the delivery is retried.",
    ),
)

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_RECEIVER_DEADLINE_RANGE_S = (0.1, 300.0)
_HEADER_TIMEOUT_RANGE_S = (0.5, 300.0)
_SESSION_IDLE_RANGE_S = (60.0, 86_400.0)
_SESSION_MAX_RANGE_S = (300.0, 2_592_000.0)  # up to keys.ADMIN_SESSIONS_TTL_S
_DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
# A CSP source expression we accept for frame-ancestors: a keyword or an https origin.
_FRAME_SOURCE = re.compile(r"'none'|'self'|https://[A-Za-z0-9.-]+(?::[0-9]{1,5})?")


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def check_secret_keys(keys: tuple[str, ...] | list[str]) -> None:
    """ConfigError unless there is a key and each is UTF-8 text of `MIN_SECRET_CHARS`+ characters.

    A message names a key by its position and length, never by its value.
    """
    if not keys:
        raise ConfigError(
            f"{SECRET_ENV_VAR} is empty: set it to at least one secret of {MIN_SECRET_CHARS}+ "
            f"characters (comma-separated for rotation, first signs), {_MAKE_ONE}"
        )
    for position, key in enumerate(keys, start=1):
        if not isinstance(key, str):
            raise ConfigError(f"{SECRET_ENV_VAR}: secret #{position} is not a string")
        if len(key) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"{SECRET_ENV_VAR}: secret #{position} is {len(key)} characters; "
                f"at least {MIN_SECRET_CHARS} characters are required ({_MAKE_ONE})"
            )
        # A byte that is not UTF-8 in the environment reaches Python as a lone surrogate: such a
        # key has no UTF-8 form, which the token key derivation needs (docs/reference/tokens.md).
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(
                f"{SECRET_ENV_VAR}: secret #{position} is not valid UTF-8 text ({len(key)} characters; "
                f"{_MAKE_ONE})"
            ) from None


def secret_keys(value: str) -> tuple[str, ...]:
    """The keys of a `WELCOMEMAT_SECRET` value, newest (the one that signs) first.

    Comma-separated; blank entries and surrounding whitespace are ignored; each key checked
    (`check_secret_keys`).
    """
    keys = _split(value)
    check_secret_keys(keys)
    return keys


def _check_bearer_token(name: str, value: str | None) -> None:
    if value and len(value) < MIN_SECRET_CHARS:
        # The length only: a message may end up in a log, the token must not.
        raise ConfigError(
            f"{name} is {len(value)} characters; at least {MIN_SECRET_CHARS} are required, "
            f"a random value nobody can guess ({_MAKE_ONE})"
        )


def _check_redis_url(url: str) -> None:
    schemes = ", ".join(f"{s}://" for s in URL_SCHEMES)
    if not url.startswith(tuple(f"{s}://" for s in URL_SCHEMES)):
        # The scheme only: a URL may carry a password.
        raise ConfigError(f"REDIS_URL must start with one of {schemes} (it starts {url.split(':')[0]!r})")
    if is_cluster_url(url):
        try:
            parse_cluster_url(url)
        except ValueError as exc:
            raise ConfigError(
                f"REDIS_URL: {exc} (a cluster: redis+cluster://[user:password@]host:port[,host:port...])"
            ) from None


def _seconds(name: str, raw: str, bounds: tuple[float, float]) -> float:
    """`raw` as seconds within `bounds`; `ConfigError` naming the variable otherwise."""
    low, high = bounds
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not low <= seconds <= high:  # also refuses NaN and infinity
        raise ConfigError(f"{name} is {raw!r}; expected seconds from {low:g} to {high:g}")
    return seconds


def origin_url(value: str, name: str = "WELCOMEMAT_PUBLIC_URL") -> str:
    """`value` as an origin (`http(s)://host[:port]`); `ConfigError` naming `name` otherwise."""
    parsed = urlsplit(value)
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or parsed.path not in ("", "/")
        or parsed.query
        or parsed.fragment
        or parsed.username
        or parsed.password
    ):
        raise ConfigError(
            f"{name} {value!r} must be an origin: http(s)://host[:port], no path, query or credentials"
        )
    try:
        parsed.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ConfigError(f"{name} {value!r} has an invalid port") from None
    return f"{parsed.scheme}://{parsed.netloc}"


def _trusted_proxies(value: str | None) -> tuple[str, ...]:
    networks = []
    for part in _split(value):
        try:
            networks.append(str(ipaddress.ip_network(part, strict=False)))
        except ValueError:
            raise ConfigError(
                f"WELCOMEMAT_TRUSTED_PROXIES entry {part!r} is not an IP network (e.g. 10.0.0.0/8, ::1/128)"
            ) from None
    return tuple(networks)


# Always answered: a renderer run on this machine (`docker run -p 8000:8000`, compose on
# 127.0.0.1) is opened at these names. Safe whatever the public URL: no answer is ever built
# from the Host header (absolute URLs come from WELCOMEMAT_PUBLIC_URL), and a DNS-rebinding page
# arrives with its own host name, never with these.
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def _allowed_hosts(value: str | None, public_url: str) -> tuple[str, ...]:
    hosts = _split(value)
    for host in hosts:
        wildcard_ok = host == "*" or (host.startswith("*.") and "*" not in host[2:])
        if ("*" in host and not wildcard_ok) or any(c in host for c in "/:@ "):
            raise ConfigError(
                f"WELCOMEMAT_ALLOWED_HOSTS entry {host!r} must be a host name, `*.domain` or `*`"
            )
    public_host = urlsplit(public_url).hostname or ""
    if ":" in public_host:  # an IPv6 literal: the Host header carries it in brackets
        public_host = f"[{public_host}]"
    names = [h.lower() for h in hosts] + [public_host, *_LOOPBACK_HOSTS]
    return tuple(dict.fromkeys(name for name in names if name))


def _frame_ancestors(value: str | None) -> str:
    sources = (value or "'none'").split()
    for source in sources:
        if _FRAME_SOURCE.fullmatch(source) is None:
            raise ConfigError(
                f"WELCOMEMAT_FRAME_ANCESTORS source {source!r} must be 'none', 'self' or an https origin"
            )
    if "'none'" in sources and len(sources) > 1:
        raise ConfigError("WELCOMEMAT_FRAME_ANCESTORS: 'none' cannot be combined with other sources")
    return " ".join(sources)


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
    public_url: str = _DEFAULT_PUBLIC_URL
    allowed_hosts: tuple[str, ...] = ("127.0.0.1",)
    trusted_proxies: tuple[str, ...] = ()
    header_timeout_s: float = 10.0
    frame_ancestors: str = "'none'"
    crm_webhook_url: str | None = None
    crm_webhook_secret: str | None = None
    alert_webhook_url: str | None = None
    receiver_deadline_s: float = 10.0
    # a person's admin session: idle and absolute timeouts, in seconds
    admin_session_idle_s: int = 1800
    admin_session_max_s: int = 43200
    crm_token: str | None = None
    operator: str | None = None
    # each WELCOMEMAT_ADMIN_TOKENS entry: the operator's (no tenant) or scoped to one tenant
    admin_tokens: tuple[Credential, ...] = ()
    # each WELCOMEMAT_CRM_TOKENS entry, scoped to its tenant
    crm_tokens: tuple[Credential, ...] = ()
    # USD per 1M tokens by model, for a run's cost (WELCOMEMAT_MODEL_PRICES over the built-in table)
    model_prices: PriceTable = DEFAULT_PRICES

    def __post_init__(self) -> None:
        """Refuse a short bearer token or signing key however the settings were built (the
        environment, flags, a test): every process that starts from them refuses to start."""
        for name, field in BEARER_TOKEN_SETTINGS:
            _check_bearer_token(name, getattr(self, field))
        for variable, credentials in (
            (ADMIN_TOKENS_VAR, self.admin_tokens),
            (CRM_TOKENS_VAR, self.crm_tokens),
        ):
            for position, credential in enumerate(credentials, start=1):
                _check_bearer_token(f"{variable} entry #{position} ({credential.actor})", credential.token)
        check_token_reuse(
            ((name, getattr(self, field)) for name, field in BEARER_TOKEN_SETTINGS),
            ((ADMIN_TOKENS_VAR, self.admin_tokens), (CRM_TOKENS_VAR, self.crm_tokens)),
        )
        if self.secret:
            secret_keys(self.secret)
        if self.admin_session_max_s < self.admin_session_idle_s:
            raise ConfigError(
                f"WELCOMEMAT_ADMIN_SESSION_MAX_S ({self.admin_session_max_s}) is shorter than "
                f"WELCOMEMAT_ADMIN_SESSION_IDLE_S ({self.admin_session_idle_s})"
            )

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
        if redis_url is not None:
            _check_redis_url(redis_url)
        public_url = origin_url(get("WELCOMEMAT_PUBLIC_URL") or _DEFAULT_PUBLIC_URL)
        values: dict[str, object] = {
            "redis_url": redis_url,
            "home": Path(get("WELCOMEMAT_HOME") or ".welcomemat"),
            "secret": get("WELCOMEMAT_SECRET"),
            "admin_token": get("WELCOMEMAT_ADMIN_TOKEN"),
            "crm_token": get("WELCOMEMAT_CRM_TOKEN"),
            "operator": get("WELCOMEMAT_OPERATOR"),
            "admin_tokens": parse_admin_tokens(get(ADMIN_TOKENS_VAR)),
            "crm_tokens": parse_crm_tokens(get(CRM_TOKENS_VAR)),
            "openai_base_url": get("OPENAI_BASE_URL"),
            "openai_api_key": get("OPENAI_API_KEY"),
            "model": get("WELCOMEMAT_MODEL"),
            "model_prices": parse_price_table(get(PRICES_ENV_VAR)),
            "log_level": log_level,
            "public_url": public_url,
            "allowed_hosts": _allowed_hosts(get("WELCOMEMAT_ALLOWED_HOSTS"), public_url),
            "trusted_proxies": _trusted_proxies(get("WELCOMEMAT_TRUSTED_PROXIES")),
            "header_timeout_s": _seconds(
                "WELCOMEMAT_HEADER_TIMEOUT_S",
                get("WELCOMEMAT_HEADER_TIMEOUT_S") or "10",
                _HEADER_TIMEOUT_RANGE_S,
            ),
            "frame_ancestors": _frame_ancestors(get("WELCOMEMAT_FRAME_ANCESTORS")),
            "crm_webhook_url": get("WELCOMEMAT_CRM_WEBHOOK_URL"),
            "crm_webhook_secret": get("WELCOMEMAT_CRM_WEBHOOK_SECRET"),
            "alert_webhook_url": get("WELCOMEMAT_ALERT_WEBHOOK_URL"),
            "receiver_deadline_s": _seconds(
                "WELCOMEMAT_RECEIVER_DEADLINE_S",
                get("WELCOMEMAT_RECEIVER_DEADLINE_S") or "10",
                _RECEIVER_DEADLINE_RANGE_S,
            ),
            "admin_session_idle_s": int(
                _seconds(
                    "WELCOMEMAT_ADMIN_SESSION_IDLE_S",
                    get("WELCOMEMAT_ADMIN_SESSION_IDLE_S") or "1800",
                    _SESSION_IDLE_RANGE_S,
                )
            ),
            "admin_session_max_s": int(
                _seconds(
                    "WELCOMEMAT_ADMIN_SESSION_MAX_S",
                    get("WELCOMEMAT_ADMIN_SESSION_MAX_S") or "43200",
                    _SESSION_MAX_RANGE_S,
                )
            ),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def require_secret(self) -> str:
        if not self.secret:
            raise ConfigError(
                f"{SECRET_ENV_VAR} is not set: set it to one or more comma-separated keys of at "
                f"least {MIN_SECRET_CHARS} characters ({_MAKE_ONE})"
            )
        return self.secret

    def admin_credentials(self) -> tuple[Credential, ...]:
        """Every admin bearer credential (empty: admin routes off); the shared token is the
        operator's, named `admin`."""
        shared = (Credential(SHARED_ADMIN_NAME, self.admin_token),) if self.admin_token else ()
        return shared + self.admin_tokens

    def crm_credentials(self) -> tuple[Credential, ...]:
        """Every CRM bearer credential (empty: `POST /v1/conversions` off); the shared token is
        the operator's, each `WELCOMEMAT_CRM_TOKENS` entry its tenant's."""
        shared = (Credential(SHARED_CRM_NAME, self.crm_token),) if self.crm_token else ()
        return shared + self.crm_tokens
