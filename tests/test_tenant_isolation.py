"""Two tenants on one deployment: what one publishes never changes what the other's visitors get.

`acme` publishes the example campaign `q4-pipeline`; `evil` copies it, keeps the id and
publishes it under its own tenant. Both folders are the example campaign (zones, theme,
accounts dated today) copied into temporary folders and re-tenanted; the command line runs
in-process (`cli.main.main`) against the session's real Redis, the renderer is the real app.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from starlette.testclient import TestClient

from cli.main import main
from server.app import create_app
from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from tests.server.conftest import BASE_URL, PUBLIC_URL, SECRET, renderer_settings
from welcomemat import keys

ACCOUNTS = 60
DYMAXA = "acct_dymaxa"


@dataclass(frozen=True)
class TenantFolder:
    """A campaign folder of one tenant: campaign.yaml, zones/, theme/ and accounts.jsonl."""

    tenant: str
    campaign: str
    folder: Path

    @property
    def yaml(self) -> str:
        return str(self.folder / "campaign.yaml")

    @property
    def accounts(self) -> str:
        return str(self.folder / "accounts.jsonl")

    @property
    def ref(self) -> str:
        return f"{self.tenant}/{self.campaign}"


def tenant_folder(root: Path, tenant: str, campaign: str, *, footer: str | None = None) -> TenantFolder:
    """The example campaign as `tenant`'s campaign `campaign`; `footer` replaces the theme's tagline."""
    folder = root / f"{tenant}-{campaign}"
    folder.mkdir()
    shutil.copytree(REPO_ROOT / "zones", folder / "zones")
    shutil.copytree(REPO_ROOT / "examples" / "theme", folder / "theme")
    if footer is not None:
        base = folder / "theme" / "base.html"
        base.write_text(base.read_text().replace("onboarding that gets new sellers to quota sooner", footer))
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    text = re.sub(r"(?m)^tenant: acme$", f"tenant: {tenant}", text)
    text = re.sub(r"(?m)^campaign: q4-pipeline$", f"campaign: {campaign}", text)
    (folder / "campaign.yaml").write_text(text)
    write_example_accounts(folder / "accounts.jsonl", ACCOUNTS)
    return TenantFolder(tenant, campaign, folder)


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


class Welcomemat(Protocol):
    def __call__(self, *args: str) -> Ran: ...


@pytest.fixture
def welcomemat(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str, tmp_path: Path
) -> Iterator[Welcomemat]:
    """`welcomemat ARGS...` in-process, against the session's Redis: (exit code, stdout, stderr)."""
    for name in ("REDIS_URL", "WELCOMEMAT_ADMIN_TOKEN", "WELCOMEMAT_CRM_TOKEN", "WELCOMEMAT_CRM_WEBHOOK_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("WELCOMEMAT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WELCOMEMAT_SECRET", SECRET)
    monkeypatch.setenv("WELCOMEMAT_PUBLIC_URL", PUBLIC_URL)

    def run(*args: str) -> Ran:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    yield run


def personal_link(welcomemat: Welcomemat, campaign: str, account: str = DYMAXA, *, qr: bool = False) -> str:
    ran = welcomemat("link", campaign, account, *(["--qr"] if qr else []))
    assert ran.code == 0, ran.err
    return str(ran.out.strip())


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_a_second_tenant_publishing_the_same_id_cannot_take_the_first_ones_pages_down(
    tmp_path: Path, redis_client: redis.Redis, welcomemat: Welcomemat
) -> None:
    acme = tenant_folder(tmp_path, "acme", "q4-pipeline")
    evil = tenant_folder(tmp_path, "evil", "q4-pipeline", footer="EVILCORP-MARKER")
    assert welcomemat("precompute", acme.yaml, acme.accounts).code == 0
    assert welcomemat("review", "approve", "q4-pipeline", DYMAXA).code == 0
    link = personal_link(welcomemat, "q4-pipeline")

    refused = welcomemat("precompute", evil.yaml, evil.accounts)
    assert refused.code == 2, refused.out + refused.err
    assert "campaign 'q4-pipeline' belongs to tenant 'acme'; tenant 'evil' cannot publish it" in refused.err
    for prefix in (keys.campaign_prefix("evil", "q4-pipeline"), keys.tenant_prefix("evil")):
        assert not list(redis_client.scan_iter(match=f"{prefix}:*"))  # refused before any write

    # The renderer starts again over the same Redis: acme's pages, API and QR codes still answer.
    app = create_app(renderer_settings(), redis_client=redis_client)
    with TestClient(app, base_url=BASE_URL, client=("198.51.100.7", 50000)) as client:
        page = client.get(path_of(link))
        assert page.status_code == 200 and 'data-wm-rung="personal"' in page.text
        assert "Series A" in page.text and "EVILCORP-MARKER" not in page.text
        token = parse_qs(urlsplit(link).query)["wm"][0]
        zones = client.get("/v1/zones", params={"campaign": "q4-pipeline", "wm": token})
        assert zones.status_code == 200 and zones.json()["zones"]["hero_headline"]["rung"] == "personal"
        scan = client.get(path_of(personal_link(welcomemat, "q4-pipeline", qr=True)), follow_redirects=False)
        assert scan.status_code == 303
        assert client.get(path_of(scan.headers["location"])).status_code == 200
