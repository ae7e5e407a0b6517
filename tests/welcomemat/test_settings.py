"""Settings: one object from an injectable mapping; README's table lists every variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.corpora import REPO_ROOT
from welcomemat.errors import ConfigError
from welcomemat.settings import SETTINGS, Settings


def readme_env_table() -> set[str]:
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("## Environment", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\|\s*`([A-Z][A-Z0-9_]+)`\s*\|", section, flags=re.MULTILINE))


def test_readme_table_lists_every_setting_and_nothing_else() -> None:
    assert readme_env_table() == {s.name for s in SETTINGS}


def test_every_environment_variable_the_code_reads_is_a_setting() -> None:
    names = {s.name for s in SETTINGS}
    pattern = re.compile(r"""(?:environ(?:\.get)?\(|getenv\(|environ\[)\s*["']([A-Z][A-Z0-9_]+)["']""")
    for package in ("welcomemat", "precompute", "server", "outbound"):
        for path in (REPO_ROOT / package).rglob("*.py"):
            for name in pattern.findall(path.read_text()):
                assert name in names, f"{path}: reads {name}, which is not in SETTINGS / README"


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
        {"WELCOMEMAT_ADMIN_TOKENS": f"rita:{rita}, sam:{sam}", "WELCOMEMAT_ADMIN_TOKEN": "t" * 32}
    )
    assert s.admin_credentials() == {"rita": rita, "sam": sam, "admin": "t" * 32}
    assert Settings.from_env({}).admin_credentials() == {}
    for value, words in (
        (f"rita{rita}", "entry #1 must be NAME:TOKEN"),
        (f"rita:{rita},ri ta:{sam}", "entry #2 must be NAME:TOKEN"),
        (f"rita:{rita},rita:{sam}", "'rita' is taken"),
        (f"admin:{rita}", "'admin' is taken"),
        ("rita:short", "at least 32"),
    ):
        with pytest.raises(ConfigError, match=words) as raised:
            Settings.from_env({"WELCOMEMAT_ADMIN_TOKENS": value})
        assert rita not in str(raised.value) and "short" not in str(raised.value)


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
