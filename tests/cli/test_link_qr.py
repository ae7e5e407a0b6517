"""`welcomemat link --qr`: never a QR code for a campaign whose scans would land on a 404."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.cli.test_link_and_serve import run
from tests.corpora import REPO_ROOT
from tests.server.conftest import CAMPAIGN, SECRET, TENANT, example_inputs, publish_config
from welcomemat.errors import ContractError, InputError
from welcomemat.security.links import check_qr_continuation, published_pages
from welcomemat.settings import Settings

CONTINUATION = (
    "  continuation:\n"
    "    template: continuation.html\n"
    "    zones: [continuation_headline, hero_support, cta]\n"
)


def without_continuation(tmp_path: Path) -> Path:
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    assert CONTINUATION in text
    path = tmp_path / "campaign.yaml"
    path.write_text(text.replace(CONTINUATION, ""))
    return path


@pytest.mark.parametrize("flags", [["--qr"], ["--qr-image", "code.png"], ["--qr", "--qr-image", "code.svg"]])
def test_qr_for_a_campaign_file_without_a_continuation_page_is_exit_2(
    tmp_path: Path, flags: list[str]
) -> None:
    campaign = without_continuation(tmp_path)
    args = [str(tmp_path / f) if f.startswith("code.") else f for f in flags]
    result = run(
        "link", str(campaign), "acct_dymaxa", *args, env={"WELCOMEMAT_SECRET": SECRET}, home=tmp_path
    )
    assert result.returncode == 2 and result.stdout == ""
    assert f"{campaign}:" in result.stderr and "field 'pages'" in result.stderr
    assert "no 'continuation' page, so a QR scan would land on a 404" in result.stderr
    assert not list(tmp_path.glob("code.*"))  # nothing printed, nothing written


def test_a_personal_link_for_the_same_campaign_is_fine(tmp_path: Path) -> None:
    campaign = without_continuation(tmp_path)
    result = run("link", str(campaign), "acct_dymaxa", env={"WELCOMEMAT_SECRET": SECRET}, home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"/c/{CAMPAIGN}?wm=" in result.stdout


def test_the_line_points_at_the_pages(tmp_path: Path) -> None:
    campaign = without_continuation(tmp_path)
    settings = Settings.from_env({"WELCOMEMAT_HOME": str(tmp_path)})
    with pytest.raises(ContractError) as refused:
        check_qr_continuation(str(campaign), TENANT, CAMPAIGN, settings)
    lines = campaign.read_text().splitlines()
    assert refused.value.line is not None and lines[refused.value.line - 2] == "pages:"
    check_qr_continuation(str(REPO_ROOT / "examples" / "campaign.yaml"), TENANT, CAMPAIGN, settings)


def test_a_published_campaign_is_checked_as_published(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    campaign, zones = example_inputs()
    no_continuation = campaign.model_dump(mode="json")
    del no_continuation["pages"]["continuation"]
    publish_config(redis_client, no_continuation, zones)
    env = {"WELCOMEMAT_SECRET": SECRET, "REDIS_URL": redis_url}
    for ref in (CAMPAIGN, f"{TENANT}/{CAMPAIGN}"):
        refused = run("link", ref, "acct_dymaxa", "--qr", env=env, home=tmp_path)
        assert refused.returncode == 2 and refused.stdout == ""
        assert f"{TENANT}/{CAMPAIGN} as published has no 'continuation' page" in refused.stderr
        assert "field 'CAMPAIGN'" in refused.stderr
        assert run("link", ref, "acct_dymaxa", env=env, home=tmp_path).returncode == 0

    publish_config(redis_client, campaign, zones)
    settings = Settings.from_env({"REDIS_URL": redis_url, "WELCOMEMAT_HOME": str(tmp_path)})
    assert published_pages(settings, TENANT, CAMPAIGN) == {"landing", "continuation"}
    ok = run("link", f"{TENANT}/{CAMPAIGN}", "acct_dymaxa", "--qr", env=env, home=tmp_path)
    assert ok.returncode == 0 and "/q/" in ok.stdout


def test_nothing_published_and_no_redis_running_is_not_looked_for(tmp_path: Path) -> None:
    settings = Settings.from_env({"WELCOMEMAT_HOME": str(tmp_path)})
    assert published_pages(settings, TENANT, CAMPAIGN) is None
    assert not (tmp_path / "redis.sock").exists()  # no embedded server started just to look
    with pytest.raises(InputError):
        check_qr_continuation(str(tmp_path / "missing.yaml"), TENANT, CAMPAIGN, settings)
