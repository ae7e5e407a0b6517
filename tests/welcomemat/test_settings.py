"""Settings: one object from an injectable mapping; the configuration page lists every variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.main import main
from cli.reference_pages import REGENERATE
from tests.corpora import REPO_ROOT
from welcomemat.errors import ConfigError
from welcomemat.security.credentials import Credential
from welcomemat.settings import SETTINGS, Settings

CONFIGURATION_PAGE = REPO_ROOT / "docs" / "reference" / "configuration.md"


def configuration_table() -> list[str]:
    return re.findall(r"^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|", CONFIGURATION_PAGE.read_text(), flags=re.MULTILINE)


def test_the_configuration_page_lists_every_setting_once_and_nothing_else() -> None:
    listed = configuration_table()
    assert sorted(listed) == sorted(s.name for s in SETTINGS), f"run `{REGENERATE}`"


def test_every_environment_variable_the_code_reads_is_a_setting() -> None:
    names = {s.name for s in SETTINGS}
    pattern = re.compile(r"""(?:environ(?:\.get)?\(|getenv\(|environ\[)\s*["']([A-Z][A-Z0-9_]+)["']""")
    for package in ("welcomemat", "precompute", "server", "outbound", "cli"):
        for path in (REPO_ROOT / package).rglob("*.py"):
            for name in pattern.findall(path.read_text()):
                assert name in names, (
                    f"{path}: reads {name}, which is not in SETTINGS (docs/reference/configuration.md)"
                )


def test_defaults_and_overrides() -> None:
    s = Settings.from_env({})
    assert s.redis_url is None and s.home == Path(".welcomemat") and s.log_level == "INFO"
    s = Settings.from_env({"REDIS_URL": "redis://r:6379/0", "WELCOMEMAT_HOME": "/tmp/x"}, home=Path("/y"))
    assert s.redis_url == "redis://r:6379/0" and s.home == Path("/y")
    assert Settings.from_env({"REDIS_URL": ""}).redis_url is None


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"WELCOMEMAT_LOG_LEVEL": "loud"}, "WELCOMEMAT_LOG_LEVEL"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        Settings.from_env(env)


def test_missing_secret_says_how_to_make_one() -> None:
    with pytest.raises(ConfigError, match="WELCOMEMAT_SECRET"):
        Settings.from_env({}).require_secret()


def test_named_admin_tokens_and_the_shared_one_by_name() -> None:
    rita, sam = "r" * 32, "s" * 40
    s = Settings.from_env(
        {"WELCOMEMAT_ADMIN_TOKENS": f"rita:{rita}, sam@acme:{sam}", "WELCOMEMAT_ADMIN_TOKEN": "t" * 32}
    )
    assert s.admin_credentials() == (
        Credential("admin", "t" * 32),
        Credential("rita", rita),
        Credential("sam", sam, "acme"),
    )
    assert [c.actor for c in s.admin_credentials()] == ["admin", "rita", "sam@acme"]
    assert Settings.from_env({}).admin_credentials() == ()
    for value, words in (
        (f"rita{rita}", "entry #1 must be NAME:TOKEN or NAME@TENANT:TOKEN"),
        (f"rita:{rita},ri ta:{sam}", "entry #2 must be NAME:TOKEN"),
        (f"rita@:{rita}", "entry #1 must be NAME:TOKEN"),
        (f"rita@ac/me:{rita}", "entry #1 must be NAME:TOKEN"),
        (f"rita@acme@evil:{rita}", "entry #1 must be NAME:TOKEN"),
        (f"rita:{rita},rita:{sam}", "'rita' is taken"),
        (f"rita@acme:{rita},rita@evil:{sam}", "'rita' is taken"),
        (f"admin:{rita}", "'admin' is taken"),
        (f"admin@acme:{rita}", "'admin' is taken"),
        ("rita:short", "at least 32"),
        ("rita@acme:short", r"entry #1 \(rita@acme\): the token is 5 characters; at least 32"),
        (
            f"rita:{rita},sam@acme:{rita}",
            r"entry #2 \(sam@acme\): its token is also WELCOMEMAT_ADMIN_TOKENS entry #1's",
        ),
        (f"{'n' * 64}@{'t' * 64}:{rita}", "the audit log records at most 128"),
    ):
        with pytest.raises(ConfigError, match=words) as raised:
            Settings.from_env({"WELCOMEMAT_ADMIN_TOKENS": value})
        assert (
            rita not in str(raised.value)
            and sam not in str(raised.value)
            and "short" not in str(raised.value)
        )


def test_crm_tokens_are_one_per_tenant_each_its_own_value() -> None:
    acme, evil, shared = "a" * 32, "e" * 40, "c" * 33
    s = Settings.from_env(
        {"WELCOMEMAT_CRM_TOKENS": f"acme:{acme} , evil:{evil}", "WELCOMEMAT_CRM_TOKEN": shared}
    )
    assert s.crm_credentials() == (
        Credential("crm", shared),
        Credential("crm", acme, "acme"),
        Credential("crm", evil, "evil"),
    )
    assert Settings.from_env({"WELCOMEMAT_CRM_TOKENS": f"acme:{acme}"}).crm_credentials() == (
        Credential("crm", acme, "acme"),
    )
    assert Settings.from_env({}).crm_credentials() == ()
    for env, words in (
        ({"WELCOMEMAT_CRM_TOKENS": acme}, "WELCOMEMAT_CRM_TOKENS entry #1 must be TENANT:TOKEN"),
        ({"WELCOMEMAT_CRM_TOKENS": f"ac me:{acme}"}, "entry #1 must be TENANT:TOKEN"),
        ({"WELCOMEMAT_CRM_TOKENS": f":{acme}"}, "entry #1 must be TENANT:TOKEN"),
        ({"WELCOMEMAT_CRM_TOKENS": "acme:short"}, r"entry #1 \(acme\): the token is 5 characters"),
        ({"WELCOMEMAT_CRM_TOKENS": f"acme:{acme},acme:{evil}"}, "entry #2: tenant 'acme' is listed twice"),
        (
            {"WELCOMEMAT_CRM_TOKENS": f"acme:{acme},evil:{acme}"},
            r"entry #2 \(crm@evil\): its token is also WELCOMEMAT_CRM_TOKENS entry #1's",
        ),
        (
            {"WELCOMEMAT_CRM_TOKENS": f"acme:{acme}", "WELCOMEMAT_CRM_TOKEN": acme},
            "entry #1 .*: its token is also WELCOMEMAT_CRM_TOKEN's",
        ),
        (
            {"WELCOMEMAT_CRM_TOKENS": f"acme:{acme}", "WELCOMEMAT_ADMIN_TOKEN": acme},
            "WELCOMEMAT_CRM_TOKENS entry #1 .*: its token is also WELCOMEMAT_ADMIN_TOKEN's",
        ),
        (
            {"WELCOMEMAT_CRM_TOKENS": f"acme:{acme}", "WELCOMEMAT_ADMIN_TOKENS": f"sam@acme:{acme}"},
            "WELCOMEMAT_CRM_TOKENS entry #1 .*: its token is also WELCOMEMAT_ADMIN_TOKENS entry #1's",
        ),
    ):
        with pytest.raises(ConfigError, match=words) as raised:
            Settings.from_env(env)
        assert (
            acme not in str(raised.value)
            and evil not in str(raised.value)
            and "short" not in str(raised.value)
        )


def test_scoped_tokens_set_by_flags_are_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"WELCOMEMAT_CRM_TOKENS entry #1 \(crm@acme\) is 5 characters"):
        Settings.from_env({}, crm_tokens=(Credential("crm", "short", "acme"),))
    with pytest.raises(ConfigError, match="its token is also WELCOMEMAT_ADMIN_TOKEN's"):
        Settings.from_env({}, admin_token="t" * 32, admin_tokens=(Credential("rita", "t" * 32, "acme"),))


def test_a_command_refuses_bad_scoped_tokens_with_exit_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "z" * 40
    monkeypatch.setenv("WELCOMEMAT_CRM_TOKENS", f"acme:{token},acme:{token}x")
    assert main(["audit", "--tenant", "acme"]) == 2
    err = capsys.readouterr().err
    assert "WELCOMEMAT_CRM_TOKENS entry #2: tenant 'acme' is listed twice" in err and token not in err


SHORT = "tok-" + "x" * 27  # 31 characters, one short


@pytest.mark.parametrize(
    ("name", "field"), [("WELCOMEMAT_ADMIN_TOKEN", "admin_token"), ("WELCOMEMAT_CRM_TOKEN", "crm_token")]
)
def test_a_short_bearer_token_is_refused_by_name_never_by_value(name: str, field: str) -> None:
    with pytest.raises(ConfigError, match=f"{name} is 31 characters; at least 32") as from_env:
        Settings.from_env({name: SHORT})
    with pytest.raises(ConfigError, match=name) as from_flag:
        Settings.from_env({}, **{field: SHORT})
    for refused in (from_env, from_flag):
        assert SHORT not in str(refused.value) and "xxxx" not in str(refused.value)
    assert getattr(Settings.from_env({name: SHORT + "y"}), field) == SHORT + "y"  # 32 is enough
    assert getattr(Settings.from_env({name: ""}), field) is None  # empty is unset: the routes are off


def test_a_short_signing_key_is_refused_when_the_settings_are_read() -> None:
    long_key = "k" * 40
    with pytest.raises(ConfigError, match="WELCOMEMAT_SECRET: secret #2 is 31 characters") as refused:
        Settings.from_env({"WELCOMEMAT_SECRET": f"{long_key},{SHORT}"})
    assert SHORT not in str(refused.value) and long_key not in str(refused.value)
    with pytest.raises(ConfigError, match="WELCOMEMAT_SECRET is empty"):
        Settings.from_env({"WELCOMEMAT_SECRET": " , "})
    assert Settings.from_env({"WELCOMEMAT_SECRET": f" {long_key} , "}).secret == f" {long_key} , "


def test_a_signing_key_that_is_not_utf8_is_refused_when_the_settings_are_read() -> None:
    """A byte that is not UTF-8 in the environment reaches Python as a lone surrogate; a token key
    cannot be derived from it, so the settings refuse it by position, never echoing it."""
    long_key = "k" * 40
    undecodable = (b"u" * 40 + b"\xff").decode("utf-8", "surrogateescape")
    with pytest.raises(ConfigError, match="WELCOMEMAT_SECRET: secret #2 is not valid UTF-8") as refused:
        Settings.from_env({"WELCOMEMAT_SECRET": f"{long_key},{undecodable}"})
    assert undecodable not in str(refused.value) and "uuuu" not in str(refused.value)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("127.0.0.1", "localhost", "[::1]")),
        (
            {"WELCOMEMAT_PUBLIC_URL": "https://wm.example.com"},
            ("wm.example.com", "localhost", "127.0.0.1", "[::1]"),
        ),
        (
            {"WELCOMEMAT_PUBLIC_URL": "https://wm.example.com", "WELCOMEMAT_ALLOWED_HOSTS": "*.Example.org"},
            ("*.example.org", "wm.example.com", "localhost", "127.0.0.1", "[::1]"),
        ),
        ({"WELCOMEMAT_PUBLIC_URL": "http://[::1]:8000"}, ("[::1]", "localhost", "127.0.0.1")),
    ],
)
def test_the_public_urls_host_and_loopback_names_are_always_answered(
    env: dict[str, str], expected: tuple[str, ...]
) -> None:
    """`docker run -p 8000:8000` opened at http://localhost:8000 or http://127.0.0.1:8000 serves,
    whatever else the allowed hosts hold."""
    assert Settings.from_env(env).allowed_hosts == expected
