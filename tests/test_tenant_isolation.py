"""Two tenants on one deployment: what one publishes never changes what the other's visitors get.

`acme` publishes the example campaign `q4-pipeline`, `evil` its own `evil-launch`; each then
tries to publish the other's id. Every folder is the example campaign (zones, theme, accounts
dated today) copied into a temporary folder and re-tenanted, evil's with its own theme footer
and headline pattern so that its copy can be told apart anywhere. The command line runs
in-process (`cli.main.main`) against the session's real Redis; the renderer is the real app,
started again (a new app over the same Redis) to show nothing depends on what one process held.

Each tenant also holds its own scoped admin token (`NAME@TENANT:TOKEN`) and CRM token
(`WELCOMEMAT_CRM_TOKENS`): on every bearer route the other tenant's campaign answers exactly as
an unknown id, is never loaded, and nothing in Redis changes; the operator's tokens reach both.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from starlette.applications import Starlette
from starlette.testclient import TestClient

from cli.main import main
from tests.corpora import REPO_ROOT
from tests.example_accounts import write_example_accounts
from tests.server.conftest import BASE_URL, PUBLIC_URL, SECRET, renderer_app, renderer_settings
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.campaign.guidelines import READY_FOR_PROMOTION, GuidelineChange, GuidelineStore
from welcomemat.records.account_records import read_account_record
from welcomemat.records.audit import read_entries
from welcomemat.security.credentials import parse_admin_tokens, parse_crm_tokens
from welcomemat.security.tokens import TokenKind, TokenSigner
from welcomemat.zones.store import ZoneSetStore

ACCOUNTS = 60
DYMAXA = "acct_dymaxa"
VISITOR = ("10.9.8.7", 50000)  # in no example account's IP ranges (documentation ranges)


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


ACME_HEADLINE = "Congrats on the Series A"  # the example campaign's funding pattern, for Dymaxa
EVIL_HEADLINE = "Raising a glass to the Series A"
ACME_FOOTER = "onboarding that gets new sellers to quota sooner"  # the example theme's tagline
EVIL_FOOTER = "EVILCORP-MARKER"


def tenant_folder(
    root: Path, tenant: str, campaign: str, *, footer: str | None = None, headline: str | None = None
) -> TenantFolder:
    """The example campaign as `tenant`'s campaign `campaign`; `footer` replaces the theme's
    tagline, `headline` the words before `{round}` in the funding headline pattern."""
    folder = root / f"{tenant}-{campaign}"
    folder.mkdir()
    shutil.copytree(REPO_ROOT / "zones", folder / "zones")
    shutil.copytree(REPO_ROOT / "examples" / "theme", folder / "theme")
    if footer is not None:
        base = folder / "theme" / "base.html"
        base.write_text(base.read_text().replace(ACME_FOOTER, footer))
    text = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    text = re.sub(r"(?m)^tenant: acme$", f"tenant: {tenant}", text)
    text = re.sub(r"(?m)^campaign: q4-pipeline$", f"campaign: {campaign}", text)
    if headline is not None:
        text = text.replace('"Congrats on the {round} {when}', f'"{headline} {{round}} {{when}}')
    (folder / "campaign.yaml").write_text(text)
    write_example_accounts(folder / "accounts.jsonl", ACCOUNTS)
    return TenantFolder(tenant, campaign, folder)


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


# Every command line the tests ran, with its exit code: the figures the big test prints.
RAN: list[tuple[tuple[str, ...], int]] = []
_SUBCOMMANDS = {"review", "report", "preview", "delivered", "conversions", "guidelines", "experiment"}


def command_name(args: tuple[str, ...]) -> str:
    return " ".join(args[:2]) if args[0] in _SUBCOMMANDS else args[0]


def print_figures(capsys: pytest.CaptureFixture[str], **figures: object) -> None:
    """One line of JSON on the terminal (`pytest -s`): what the test covered."""
    with capsys.disabled():
        print(f"\n{json.dumps(figures)}")


class Welcomemat(Protocol):
    def __call__(self, *args: str) -> Ran: ...


@pytest.fixture
def welcomemat(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str, tmp_path: Path
) -> Iterator[Welcomemat]:
    """`welcomemat ARGS...` in-process, against the session's Redis: (exit code, stdout, stderr)."""
    for name in [n for n in os.environ if n.startswith("WELCOMEMAT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("WELCOMEMAT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WELCOMEMAT_SECRET", SECRET)
    monkeypatch.setenv("WELCOMEMAT_PUBLIC_URL", PUBLIC_URL)

    def run(*args: str) -> Ran:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        RAN.append((args, code))
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
    evil = tenant_folder(tmp_path, "evil", "q4-pipeline", footer=EVIL_FOOTER)
    assert welcomemat("precompute", acme.yaml, acme.accounts).code == 0
    assert welcomemat("review", "approve", "q4-pipeline", DYMAXA).code == 0
    link = personal_link(welcomemat, "q4-pipeline")

    refused = welcomemat("precompute", evil.yaml, evil.accounts)
    assert refused.code == 2, refused.out + refused.err
    assert "campaign 'q4-pipeline' belongs to tenant 'acme'; tenant 'evil' cannot publish it" in refused.err
    for prefix in (keys.campaign_prefix("evil", "q4-pipeline"), keys.tenant_prefix("evil")):
        assert not list(redis_client.scan_iter(match=f"{prefix}:*"))  # refused before any write

    # The renderer starts again over the same Redis: acme's pages, API and QR codes still answer.
    app = renderer_app(renderer_settings(), redis_client=redis_client)
    with TestClient(app, base_url=BASE_URL, client=VISITOR) as client:
        page = client.get(path_of(link))
        assert page.status_code == 200 and 'data-wm-rung="personal"' in page.text
        assert ACME_HEADLINE in page.text and EVIL_FOOTER not in page.text
        token = parse_qs(urlsplit(link).query)["wm"][0]
        zones = client.get("/v1/zones", params={"campaign": "q4-pipeline", "wm": token})
        assert zones.status_code == 200 and zones.json()["zones"]["hero_headline"]["rung"] == "personal"
        scan = client.get(path_of(personal_link(welcomemat, "q4-pipeline", qr=True)), follow_redirects=False)
        assert scan.status_code == 303
        assert client.get(path_of(scan.headers["location"])).status_code == 200


# -- every route and every command, both ways, across a restart -------------------------------------

ADMIN_TOKEN = "admin-token-0123456789-0123456789"
CRM_TOKEN = "crm-token-0123456789-0123456789-0"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
ROUTES = (
    "GET /c/{campaign}",
    "GET /c/{campaign}/continue",
    "GET /c/{campaign}/theme/{file}",
    "GET /v1/zones",
    "GET /q/{token}",
    "POST /v1/events",
    "POST /v1/conversions",
    "GET /admin/explain/{campaign}/{account}",
    "GET /admin/preview/{campaign}/{account}",
    "POST /admin/preview/{campaign}/{account}",
    "GET /admin/review/{campaign}",
    "POST /admin/review/{campaign}/{account}/approve",
    "GET /admin/lift/{campaign}",
    "GET /admin/results/{campaign}",
)
EMAIL_TEMPLATE = "Hi {{ first_name }} at {{ company }},\n{{ hero_headline }}\n"


@dataclass(frozen=True)
class Tenancy:
    """One tenant's own campaign in the test, what tells its copy apart, and its signed links."""

    folder: TenantFolder
    headline: str
    footer: str
    link: str
    qr: str

    @property
    def tenant(self) -> str:
        return self.folder.tenant

    @property
    def campaign(self) -> str:
        return self.folder.campaign

    @property
    def token(self) -> str:
        return parse_qs(urlsplit(self.link).query)["wm"][0]

    def shows_own_page(self, html: str, other: Tenancy) -> bool:
        """The page wears this tenant's theme (its footer), not the other's."""
        return self.footer in html and other.footer not in html


def publish_own_campaign(welcomemat: Welcomemat, folder: TenantFolder, headline: str, footer: str) -> Tenancy:
    ran = welcomemat("precompute", folder.yaml, folder.accounts)
    assert ran.code == 0, ran.out + ran.err
    approved = welcomemat("review", "approve", folder.campaign, DYMAXA)
    assert approved.code == 0, approved.err
    link = personal_link(welcomemat, folder.campaign)
    return Tenancy(folder, headline, footer, link, personal_link(welcomemat, folder.campaign, qr=True))


def renderer(redis_client: redis.Redis) -> TestClient:
    settings = renderer_settings(admin_token=ADMIN_TOKEN, crm_token=CRM_TOKEN)
    return TestClient(renderer_app(settings, redis_client=redis_client), base_url=BASE_URL, client=VISITOR)


def drive_every_route(
    client: TestClient, redis_client: redis.Redis, mine: Tenancy, other: Tenancy, run: str
) -> list[str]:
    """Each route for `mine`'s campaign answers with `mine`'s data only; `other`'s tokens get nothing
    of it. Returns the routes covered."""
    c, admin = mine.campaign, {"authorization": f"Bearer {ADMIN_TOKEN}"}
    covered: list[str] = []

    page = client.get(path_of(mine.link))
    assert page.status_code == 200 and 'data-wm-rung="personal"' in page.text
    assert (
        mine.headline in page.text
        and other.headline not in page.text
        and mine.shows_own_page(page.text, other)
    )
    client.cookies.clear()  # the other tenant's token alone, no cookie of this campaign's visitor
    foreign = client.get(f"/c/{c}", params={"wm": other.token})
    assert foreign.status_code == 200 and 'data-wm-rung="personal"' not in foreign.text
    covered.append("GET /c/{campaign}")

    continued = client.get(f"/c/{c}/continue", params={"wm": mine.token})
    assert continued.status_code == 200 and mine.shows_own_page(continued.text, other)
    covered.append("GET /c/{campaign}/continue")

    theme = client.get(f"/c/{c}/theme/acme.css")
    assert theme.status_code == 200 and theme.headers["content-type"].startswith("text/css")
    covered.append("GET /c/{campaign}/theme/{file}")

    zones = client.get("/v1/zones", params={"campaign": c, "wm": mine.token})
    assert zones.status_code == 200
    answer = zones.json()
    headline = answer["zones"]["hero_headline"]
    assert (
        answer["campaign"] == c
        and headline["rung"] == "personal"
        and headline["text"].startswith(mine.headline)
    )
    client.cookies.clear()
    strangers = client.get("/v1/zones", params={"campaign": c, "wm": other.token}).json()
    # Anonymous: no zones to write at all (the site keeps its own copy), least of all `mine`'s.
    assert strangers["arm"] == "anonymous" and strangers["zones"] == {}
    covered.append("GET /v1/zones")

    scan = client.get(path_of(mine.qr), follow_redirects=False)
    assert scan.status_code == 303 and scan.headers["location"] == f"{PUBLIC_URL}/c/{c}/continue"
    landed = client.get(path_of(scan.headers["location"]))
    assert landed.status_code == 200 and mine.shows_own_page(landed.text, other)
    covered.append("GET /q/{token}")

    beacon = {"campaign": c, "view": answer["view"], "event_id": f"ev-{c}-{run}", "type": "view"}
    sent = client.post(
        "/v1/events",
        content=json.dumps(beacon),
        headers={"content-type": "text/plain", "user-agent": BROWSER},
    )
    assert sent.status_code == 204
    theirs = client.get("/v1/zones", params={"campaign": other.campaign, "wm": other.token}).json()["view"]
    forged = dict(beacon, view=theirs, event_id=f"ev-forged-{c}-{run}")
    refused = client.post(
        "/v1/events",
        content=json.dumps(forged),
        headers={"content-type": "text/plain", "user-agent": BROWSER},
    )
    assert refused.status_code == 400
    # A view token genuinely signed for the other tenant under this campaign id: still refused.
    other_tenants = TokenSigner([SECRET]).sign_view(
        tenant=other.tenant,
        campaign=c,
        view_id="view0000view0000",
        arm=Arm.PERSONAL,
        rung="personal",
        account=DYMAXA,
        contact=None,
        zone_set_version=1,
    )
    squatting = dict(beacon, view=other_tenants, event_id=f"ev-squat-{c}-{run}")
    refused = client.post(
        "/v1/events",
        content=json.dumps(squatting),
        headers={"content-type": "text/plain", "user-agent": BROWSER},
    )
    assert refused.status_code == 400
    covered.append("POST /v1/events")

    conversion = {
        "campaign": c,
        "account_id": DYMAXA,
        "type": "meeting_booked",
        "conversion_id": f"crm-{c}-{run}",
        "occurred_at": "2026-12-02T15:30:00+01:00",
    }
    recorded = client.post(
        "/v1/conversions", json=conversion, headers={"authorization": f"Bearer {CRM_TOKEN}"}
    )
    assert recorded.status_code == 202, recorded.text
    assert redis_client.hexists(keys.conversions_key(mine.tenant, c), conversion["conversion_id"])
    assert not redis_client.hexists(keys.conversions_key(other.tenant, c), conversion["conversion_id"])
    covered.append("POST /v1/conversions")

    explained = client.get(f"/admin/explain/{c}/{DYMAXA}", headers=admin)
    assert explained.status_code == 200
    [hero] = [z for z in explained.json()["zones"] if z["zone_id"] == "hero_headline"]
    assert hero["text"].startswith(mine.headline)
    covered.append("GET /admin/explain/{campaign}/{account}")

    preview = client.get(f"/admin/preview/{c}/{DYMAXA}", headers=admin)
    assert preview.status_code == 200 and mine.headline in preview.text and other.headline not in preview.text
    covered.append("GET /admin/preview/{campaign}/{account}")

    emailed = client.post(
        f"/admin/preview/{c}/{DYMAXA}",
        content=EMAIL_TEMPLATE,
        headers={**admin, "content-type": "text/plain"},
    )
    assert emailed.status_code == 200 and "Hi Joram at Dymaxa B.V." in emailed.text
    assert mine.headline in emailed.text and other.headline not in emailed.text
    covered.append("POST /admin/preview/{campaign}/{account}")

    queue = client.get(f"/admin/review/{c}", headers=admin)
    assert queue.status_code == 200 and queue.json()["tenant"] == mine.tenant
    covered.append("GET /admin/review/{campaign}")

    waiting = [
        i for i in queue.json()["items"] if i["queue"] == "approval" and i["status"] == "pending_review"
    ]
    assert waiting, "no account waits for review"
    item = waiting[0]
    decided = client.post(
        f"/admin/review/{c}/{item['account_id']}/approve", json={"version": item["version"]}, headers=admin
    )
    assert decided.status_code == 200 and decided.json()["status"] == "published"
    covered.append("POST /admin/review/{campaign}/{account}/approve")

    lift = client.get(f"/admin/lift/{c}", params={"format": "json"}, headers=admin)
    assert lift.status_code == 200 and (lift.json()["tenant"], lift.json()["campaign"]) == (mine.tenant, c)
    covered.append("GET /admin/lift/{campaign}")

    results = client.get(f"/admin/results/{c}", params={"format": "json"}, headers=admin)
    assert results.status_code == 200
    assert (results.json()["tenant"], results.json()["campaign"]) == (mine.tenant, c)
    covered.append("GET /admin/results/{campaign}")
    return covered


def publish_both_tenants(tmp_path: Path, welcomemat: Welcomemat) -> tuple[Tenancy, Tenancy]:
    """acme's q4-pipeline and evil's evil-launch, each published by its own tenant."""
    acme = publish_own_campaign(
        welcomemat, tenant_folder(tmp_path, "acme", "q4-pipeline"), ACME_HEADLINE, ACME_FOOTER
    )
    evil_folder = tenant_folder(
        tmp_path, "evil", "evil-launch", footer=EVIL_FOOTER, headline="Raising a glass to the"
    )
    return acme, publish_own_campaign(welcomemat, evil_folder, EVIL_HEADLINE, EVIL_FOOTER)


def refused_naming(ran: Ran, owner: str, campaign: str) -> bool:
    return ran.code == 2 and f"campaign '{campaign}' belongs to tenant '{owner}'" in ran.err


def test_every_route_and_command_keeps_each_tenant_to_its_own_campaign_both_ways_across_a_restart(
    tmp_path: Path, redis_client: redis.Redis, welcomemat: Welcomemat, capsys: pytest.CaptureFixture[str]
) -> None:
    first_run = len(RAN)
    acme, evil = publish_both_tenants(tmp_path, welcomemat)
    covered: list[tuple[str, str, str]] = []

    with renderer(redis_client) as before:
        for mine, other in ((acme, evil), (evil, acme)):
            covered += [
                (route, mine.tenant, "first app")
                for route in drive_every_route(before, redis_client, mine, other, "1")
            ]

    # Each tenant copies the other's campaign id: every way of publishing it is refused before any write.
    squats = (
        (
            tenant_folder(
                tmp_path, "evil", "q4-pipeline", footer=EVIL_FOOTER, headline="Raising a glass to the"
            ),
            acme,
        ),
        (tenant_folder(tmp_path, "acme", "evil-launch"), evil),
    )
    template = tmp_path / "email.txt"
    template.write_text(EMAIL_TEMPLATE)
    delivered = tmp_path / "delivered.csv"
    delivered.write_text(f"account_id,contact_id\n{DYMAXA},c_joram\n")
    for squat, owner in squats:
        published = redis_client.dump(keys.campaign_config_key(owner.tenant, owner.campaign))
        for args in (
            ("precompute", squat.yaml, squat.accounts),
            ("precompute", squat.yaml, squat.accounts, "--enqueue"),
            ("precompute", squat.yaml, squat.accounts, "--json"),
        ):
            ran = welcomemat(*args)
            assert refused_naming(ran, owner.tenant, squat.campaign), ran.out + ran.err
            assert f"tenant '{squat.tenant}' cannot publish it (choose another campaign id)" in ran.err
        assert not list(
            redis_client.scan_iter(match=f"{keys.campaign_prefix(squat.tenant, squat.campaign)}:*")
        )
        assert redis_client.get(keys.campaign_owner_key(squat.campaign)) == owner.tenant.encode()
        assert redis_client.dump(keys.campaign_config_key(owner.tenant, owner.campaign)) == published
        # Nor can any command read or write the owner's campaign under the squatter's name.
        for ref in (squat.ref, squat.yaml):
            for args in (
                ("review", "show", ref, DYMAXA),
                ("review", "reject", ref, DYMAXA, "--reason", "squatting"),
                ("review", "rollback", ref, DYMAXA, "--reason", "squatting"),
                ("preview", "email", ref, DYMAXA, "--template", str(template)),
                ("delivered", "import", ref, str(delivered)),
                ("mail", ref, "--out", str(tmp_path / "mail-out")),
                ("erase", DYMAXA, "--campaign", ref, "--json"),
                ("subject-export", DYMAXA, "--campaign", ref),
                ("audit", "--campaign", ref, "--json"),
                ("link", ref, DYMAXA),
                ("link", ref, DYMAXA, "--qr"),
                ("export", ref, "--format", "jsonl"),
                ("report", "lift", ref, "--json"),
                ("qa", ref, "--json"),
                ("explain", ref, DYMAXA, "--json"),
                ("review", "list", ref),
                ("review", "approve", ref, DYMAXA),
                ("precompute-status", ref),
            ):
                ran = welcomemat(*args)
                assert refused_naming(ran, owner.tenant, squat.campaign), (args, ran.out, ran.err)
        ran = welcomemat("worker", "--campaign", squat.ref, "--once")
        assert refused_naming(ran, owner.tenant, squat.campaign), ran.err
        ran = welcomemat("guidelines", "rollback", squat.yaml, "--reason", "squatting")
        assert refused_naming(ran, owner.tenant, squat.campaign), ran.err

    # Each owner's commands, by the bare id, read and write its own campaign only.
    conversions = tmp_path / "conversions.jsonl"
    conversions.write_text(
        "".join(
            json.dumps(
                {
                    "campaign": t.campaign,
                    "account_id": DYMAXA,
                    "type": "opportunity",
                    "conversion_id": f"import-{t.campaign}",
                    "occurred_at": "2026-12-03T10:00:00+00:00",
                }
            )
            + "\n"
            for t in (acme, evil)
        )
    )
    assert welcomemat("conversions", "import", str(conversions)).code == 0
    for mine, other in ((acme, evil), (evil, acme)):
        c = mine.campaign
        again = welcomemat("precompute", mine.folder.yaml, mine.folder.accounts, "--json")
        assert again.code == 0 and json.loads(again.out)["unchanged"] == ACCOUNTS, again.err
        assert redis_client.hexists(keys.conversions_key(mine.tenant, c), f"import-{c}")
        assert not redis_client.hexists(keys.conversions_key(other.tenant, c), f"import-{c}")
        link = personal_link(welcomemat, c)
        assert TokenSigner([SECRET]).verify(
            TokenKind.LINK, parse_qs(urlsplit(link).query)["wm"][0], tenant=mine.tenant, campaign=c
        )
        exported = welcomemat("export", c, "--format", "jsonl")
        assert exported.code == 0, exported.err
        rows = [json.loads(line) for line in exported.out.splitlines()]
        [dymaxa] = [r for r in rows if r["account_id"] == DYMAXA]
        assert dymaxa["hero_headline"].startswith(mine.headline)
        for row in rows:
            token = parse_qs(urlsplit(row["page_url"]).query)["wm"][0]
            TokenSigner([SECRET]).verify(TokenKind.LINK, token, tenant=mine.tenant, campaign=c)
        lift = welcomemat("report", "lift", c, "--json")
        assert lift.code == 0 and json.loads(lift.out)["tenant"] == mine.tenant
        qa = welcomemat("qa", c, "--json")
        assert qa.code == 0 and json.loads(qa.out)["tenant"] == mine.tenant
        explained = welcomemat("explain", c, DYMAXA, "--json")
        [hero] = [z for z in json.loads(explained.out)["zones"] if z["zone_id"] == "hero_headline"]
        assert explained.code == 0 and hero["text"].startswith(mine.headline)
        assert welcomemat("review", "list", c).code == 0
        audited = welcomemat("audit", "--campaign", c, "--json")
        entries = [json.loads(line) for line in audited.out.splitlines()]
        assert audited.code == 0 and entries and {e["tenant"] for e in entries} == {mine.tenant}
        assert {e["campaign"] for e in entries if "campaign" in e} == {c}
        exported = welcomemat("subject-export", DYMAXA, "--campaign", c)
        [held] = json.loads(exported.out)["held"]
        assert exported.code == 0 and held["tenant"] == mine.tenant and set(held["campaigns"]) == {c}

    # The renderer starts again over the same Redis: every route still answers each owner.
    with renderer(redis_client) as after:
        for mine, other in ((acme, evil), (evil, acme)):
            covered += [
                (route, mine.tenant, "restarted")
                for route in drive_every_route(after, redis_client, mine, other, "2")
            ]
        while cast(Starlette, after.app).state.renderer.events.flush_once():
            pass

    # The engagement sync folds each tenant's events into its own records, under its own campaign.
    synced = welcomemat("sync", "--once")
    assert synced.code == 0, synced.err
    for mine in (acme, evil):
        record = read_account_record(redis_client, mine.tenant, DYMAXA)
        assert record is not None and set(record.engagement) == {mine.campaign}, mine.tenant
        assert record.engagement[mine.campaign].views > 0 and record.engagement[mine.campaign].qr_scans > 0

    assert len(covered) == len(set(covered)) == len(ROUTES) * 2 * 2  # routes × tenants × app instances
    assert {route for route, _, _ in covered} == set(ROUTES)

    # acme erases Dymaxa, an account id evil holds too: evil's Dymaxa keeps its record, zone set
    # and personal page, on a renderer started after the erasure.
    erased = welcomemat("erase", DYMAXA, "--campaign", acme.campaign, "--reason", "asked", "--json")
    assert erased.code == 0 and [json.loads(line)["tenant"] for line in erased.out.splitlines()] == ["acme"]
    assert read_account_record(redis_client, "acme", DYMAXA) is None
    assert read_account_record(redis_client, "evil", DYMAXA) is not None
    assert ZoneSetStore(redis_client).get("evil", evil.campaign, DYMAXA) is not None
    with renderer(redis_client) as later:
        assert 'data-wm-rung="personal"' not in later.get(path_of(acme.link)).text
        later.cookies.clear()
        page = later.get(path_of(evil.link))
        assert 'data-wm-rung="personal"' in page.text and evil.shows_own_page(page.text, acme)

    ran = RAN[first_run:]
    print_figures(
        capsys,
        routes=len(ROUTES),
        route_checks=f"{len(ROUTES)} routes x 2 tenants x 2 renderer starts = {len(covered)}",
        commands=sorted({command_name(args) for args, _ in ran}),
        command_runs=len(ran),
        refused_naming_the_owner=sum(1 for _, code in ran if code == 2),
    )


def test_state_from_before_owners_were_recorded_never_serves_a_non_owner_nor_redirects_into_a_404(
    tmp_path: Path, redis_client: redis.Redis, welcomemat: Welcomemat, caplog: pytest.LogCaptureFixture
) -> None:
    acme = publish_own_campaign(
        welcomemat, tenant_folder(tmp_path, "acme", "q4-pipeline"), ACME_HEADLINE, ACME_FOOTER
    )
    # What an older version left behind when evil published the same id: its config and index entry.
    stored = json.loads(redis_client.get(keys.campaign_config_key("acme", "q4-pipeline")) or b"{}")
    stored["campaign"]["tenant"] = "evil"
    redis_client.set(keys.campaign_config_key("evil", "q4-pipeline"), json.dumps(stored))
    redis_client.hset(keys.campaigns_index_key(), "evil/q4-pipeline", "q4-pipeline")

    with caplog.at_level(logging.WARNING, logger="server.campaigns"), renderer(redis_client) as client:
        page = client.get(path_of(acme.link))
        assert (
            page.status_code == 200 and 'data-wm-rung="personal"' in page.text and ACME_HEADLINE in page.text
        )
        scan = client.get(path_of(acme.qr), follow_redirects=False)
        assert scan.status_code == 303 and client.get(path_of(scan.headers["location"])).status_code == 200
    assert "'q4-pipeline' is also published by evil, not its owner: serving its owner acme" in caplog.text
    assert welcomemat("link", "q4-pipeline", DYMAXA).code == 0

    # With no owner recorded, two tenants under one id are ambiguous: neither is served, and a QR
    # code answers 404 itself rather than redirecting into one; commands ask for tenant/campaign.
    redis_client.delete(keys.campaign_owner_key("q4-pipeline"))
    with renderer(redis_client) as client:
        assert client.get(path_of(acme.link)).status_code == 404
        assert client.get(path_of(acme.qr), follow_redirects=False).status_code == 404
    ambiguous = welcomemat("link", "q4-pipeline", DYMAXA)
    assert ambiguous.code == 2 and "published by several tenants (acme, evil)" in ambiguous.err

    # acme publishes again and owns its id; evil cannot take it any more.
    assert welcomemat("precompute", acme.folder.yaml, acme.folder.accounts).code == 0
    squat = tenant_folder(tmp_path, "evil", "q4-pipeline", footer=EVIL_FOOTER)
    assert refused_naming(welcomemat("precompute", squat.yaml, squat.accounts), "acme", "q4-pipeline")
    with renderer(redis_client) as client:
        page = client.get(path_of(acme.link))
        assert page.status_code == 200 and ACME_HEADLINE in page.text and EVIL_FOOTER not in page.text


# -- tenant-scoped bearer tokens: another tenant's campaign is an unknown one ----------------------

ACME_ADMIN = "ann-acme-admin-token-0123456789abcdef"
EVIL_ADMIN = "eve-evil-admin-token-0123456789abcdef"
ACME_CRM = "acme-crm-token-0123456789abcdef-0123"
EVIL_CRM = "evil-crm-token-0123456789abcdef-0123"
UNKNOWN = "no-such-campaign"


@dataclass(frozen=True)
class Bearer:
    """One kind of credential: the admin and CRM tokens it presents, and whose they are."""

    kind: str
    admin: str
    crm: str
    actor: str

    def headers(self, path: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.crm if path == '/v1/conversions' else self.admin}"}


OPERATOR = Bearer("operator", ADMIN_TOKEN, CRM_TOKEN, "admin")
SCOPED = {
    "acme": Bearer("acme-scoped", ACME_ADMIN, ACME_CRM, "ann@acme"),
    "evil": Bearer("evil-scoped", EVIL_ADMIN, EVIL_CRM, "eve@evil"),
}
BEARER_ROUTES = (
    "GET /admin/explain/{campaign}/{account}",
    "GET /admin/preview/{campaign}/{account}",
    "GET /admin/review/{campaign}",
    "POST /admin/review/{campaign}/{account}/approve",
    "POST /admin/review/{campaign}/{account}/reject",
    "POST /admin/review/{campaign}/{account}/rollback",
    "GET /admin/lift/{campaign}",
    "GET /admin/results/{campaign}",
    "POST /v1/conversions",
    "GET /admin/campaigns/{campaign}",
    "GET /admin/campaigns/{campaign}/accounts/{account}",
    "GET /admin/campaigns/{campaign}/guidelines",
    "POST /admin/campaigns/{campaign}/guidelines/signoff",
    "GET /admin/campaigns/{campaign}/experiments",
)
# The report a high-risk guideline candidate's sign-off names (its change record's `report_sha256`).
REPORT_SHA256 = "ab" * 32
# The admin routes that reach no campaign: a person signs in (the invite names the tenant) and out.
SIGN_IN_ROUTES = ("/admin/sign-in/{token}", "/admin/sign-out")
# Admin routes that name no campaign: what they list is the token's tenant's only.
TENANT_WIDE_ROUTES = ("GET /admin/", "GET /admin/audit")


def scoped_renderer(redis_client: redis.Redis) -> TestClient:
    """The renderer with the operator's tokens and each tenant's own, as the variables spell them."""
    settings = renderer_settings(
        admin_token=ADMIN_TOKEN,
        crm_token=CRM_TOKEN,
        admin_tokens=parse_admin_tokens(f"ann@acme:{ACME_ADMIN}, eve@evil:{EVIL_ADMIN}"),
        crm_tokens=parse_crm_tokens(f"acme:{ACME_CRM},evil:{EVIL_CRM}"),
    )
    return TestClient(renderer_app(settings, redis_client=redis_client), base_url=BASE_URL, client=VISITOR)


def decided_account(tenancy: Tenancy) -> str:
    """An account of the tenant's campaign other than Dymaxa, for approve, reject and rollback."""
    for line in Path(tenancy.folder.accounts).read_text().splitlines():
        account = str(json.loads(line)["account_id"])
        if account != DYMAXA:
            return account
    raise AssertionError("no second account")


def bearer_calls(
    campaign: str, account: str, version: int, conversion_id: str, candidate: str = "2026-12-01"
) -> list[tuple[str, str, str, dict[str, object] | None]]:
    """(route, method, path, JSON body) of every bearer route for `campaign`; `candidate`: the
    guideline version signed off."""
    review = f"/admin/review/{campaign}/{account}"
    return [
        (BEARER_ROUTES[0], "GET", f"/admin/explain/{campaign}/{DYMAXA}", None),
        (BEARER_ROUTES[1], "GET", f"/admin/preview/{campaign}/{DYMAXA}", None),
        (BEARER_ROUTES[2], "GET", f"/admin/review/{campaign}", None),
        (BEARER_ROUTES[3], "POST", f"{review}/approve", {"version": version}),
        (BEARER_ROUTES[4], "POST", f"{review}/reject", {"version": version, "reason": "not ours"}),
        (BEARER_ROUTES[5], "POST", f"{review}/rollback", {"reason": "not ours"}),
        (BEARER_ROUTES[6], "GET", f"/admin/lift/{campaign}?format=json", None),
        (BEARER_ROUTES[7], "GET", f"/admin/results/{campaign}?format=json", None),
        (
            BEARER_ROUTES[8],
            "POST",
            "/v1/conversions",
            {
                "campaign": campaign,
                "account_id": DYMAXA,
                "type": "closed_won",
                "conversion_id": conversion_id,
                "occurred_at": "2026-12-04T09:00:00+00:00",
            },
        ),
        (BEARER_ROUTES[9], "GET", f"/admin/campaigns/{campaign}?q={DYMAXA}", None),
        (BEARER_ROUTES[10], "GET", f"/admin/campaigns/{campaign}/accounts/{DYMAXA}", None),
        (BEARER_ROUTES[11], "GET", f"/admin/campaigns/{campaign}/guidelines", None),
        (
            BEARER_ROUTES[12],
            "POST",
            f"/admin/campaigns/{campaign}/guidelines/signoff",
            {"version": candidate, "report_sha256": REPORT_SHA256},
        ),
        (BEARER_ROUTES[13], "GET", f"/admin/campaigns/{campaign}/experiments", None),
    ]


def redis_snapshot(redis_client: redis.Redis) -> dict[bytes, bytes | None]:
    return {key: redis_client.dump(key) for key in redis_client.scan_iter(count=1000)}  # type: ignore[misc]


def refused_as_unknown(client: TestClient, bearer: Bearer, theirs: Tenancy) -> list[str]:
    """Every bearer route for `theirs`' campaign, with `bearer`'s tokens: the answer an unknown
    campaign id gets (status, content type, body), and nothing read or written. Returns the routes."""
    renderer = cast(Starlette, client.app).state.renderer
    account = decided_account(theirs)
    current = ZoneSetStore(renderer.client).get(theirs.tenant, theirs.campaign, account)
    assert current is not None
    before = redis_snapshot(renderer.client)
    covered = []
    calls = bearer_calls(theirs.campaign, account, current.version, f"crm-{bearer.kind}-{theirs.campaign}")
    unknown = bearer_calls(UNKNOWN, account, current.version, f"crm-{bearer.kind}-{theirs.campaign}")
    for (route, method, path, body), (_, _, unknown_path, unknown_body) in zip(calls, unknown, strict=True):
        answer = client.request(method, path, json=body, headers=bearer.headers(path))
        expected = client.request(method, unknown_path, json=unknown_body, headers=bearer.headers(path))
        assert expected.status_code == 404, (route, expected.text)
        assert answer.status_code == 404, (bearer.kind, route, answer.status_code, answer.text)
        assert answer.headers["content-type"] == expected.headers["content-type"], route
        assert answer.text.replace(theirs.campaign, UNKNOWN) == expected.text, (route, answer.text)
        covered.append(route)
    assert renderer.campaigns.cached(theirs.campaign) is None  # its config was never loaded for it
    assert redis_snapshot(renderer.client) == before  # nothing written, anywhere
    return covered


def served(
    client: TestClient, redis_client: redis.Redis, bearer: Bearer, mine: Tenancy, other: Tenancy
) -> list[str]:
    """Every bearer route for `mine`'s campaign, with `bearer`'s tokens: answered with `mine`'s data,
    decisions audit-logged as the token's name and scope. Returns the routes."""
    c, account = mine.campaign, decided_account(mine)
    store = ZoneSetStore(redis_client)
    published = store.get(mine.tenant, c, account)
    assert published is not None
    # New content for the account, as a rerun on changed inputs publishes: something to roll back to.
    current = store.publish(
        published.model_copy(update={"input_hash": f"{published.input_hash}-{bearer.kind}"})
    )
    assert current.changed
    # A high-risk guideline candidate of the campaign, waiting for its sign-off.
    candidate = f"2026-12-{bearer.kind}"
    GuidelineStore(redis_client).save(
        GuidelineChange(
            tenant=mine.tenant,
            campaign=c,
            version=candidate,
            hash="cd" * 32,
            reason=f"a change of {mine.tenant}'s",
            approvers_required=2,
            recommendation=READY_FOR_PROMOTION,
            report_sha256=REPORT_SHA256,
        )
    )
    calls = {
        route: (method, path, body)
        for route, method, path, body in bearer_calls(
            c, account, current.version, f"crm-{bearer.kind}-{c}", candidate
        )
    }

    def call(route: str, **body: object) -> Any:
        method, path, default = calls[route]
        answer = client.request(
            method, path, json={**(default or {}), **body} if default else None, headers=bearer.headers(path)
        )
        assert answer.status_code in (200, 202), (bearer.kind, route, answer.status_code, answer.text)
        return answer

    [hero] = [z for z in call(BEARER_ROUTES[0]).json()["zones"] if z["zone_id"] == "hero_headline"]
    assert hero["text"].startswith(mine.headline)
    preview = call(BEARER_ROUTES[1]).text
    assert mine.headline in preview and other.headline not in preview
    assert call(BEARER_ROUTES[2]).json()["tenant"] == mine.tenant
    approved = call(BEARER_ROUTES[3]).json()
    rejected = call(BEARER_ROUTES[4], version=approved["version"], reason="checking the scope").json()
    assert rejected["status"] == "rejected"
    rolled = call(BEARER_ROUTES[5], reason="checking the scope").json()
    assert rolled["version"] == rejected["version"] + 1
    lift = call(BEARER_ROUTES[6]).json()
    assert (lift["tenant"], lift["campaign"]) == (mine.tenant, c)
    results = call(BEARER_ROUTES[7]).json()
    assert (results["tenant"], results["campaign"]) == (mine.tenant, c)
    recorded = call(BEARER_ROUTES[8])
    assert recorded.status_code == 202 and recorded.json()["campaign"] == c
    assert redis_client.hexists(keys.conversions_key(mine.tenant, c), f"crm-{bearer.kind}-{c}")
    overview = call(BEARER_ROUTES[9]).text
    assert f'data-admin-account="{DYMAXA}"' in overview and other.campaign not in overview
    account_page = call(BEARER_ROUTES[10]).text
    assert mine.headline in account_page and other.headline not in account_page
    guidelines = call(BEARER_ROUTES[11]).text
    assert f'data-admin-version="{candidate}"' in guidelines and other.tenant not in guidelines
    signed = call(BEARER_ROUTES[12]).json()
    assert (signed["campaign"], signed["version"], signed["signed_off_by"]) == (c, candidate, bearer.actor)
    experiments = call(BEARER_ROUTES[13]).text
    assert f"Copy experiments of {c}" in experiments and "declares no copy experiment" in experiments
    assert other.campaign not in experiments and other.tenant not in experiments
    decisions = [e for e in read_entries(redis_client, mine.tenant, account=account) if e.via.value == "http"]
    assert [(e.action.value, e.actor) for e in decisions[-3:]] == [
        ("approve", bearer.actor),
        ("reject", bearer.actor),
        ("rollback", bearer.actor),
    ]
    return list(BEARER_ROUTES)


def tenant_wide(client: TestClient, bearer: Bearer, mine: Tenancy, other: Tenancy) -> None:
    """The routes that name no campaign list `mine`'s only; the other tenant's log is an unknown one's."""
    as_json = {**bearer.headers("/admin/"), "accept": "application/json"}
    listed = client.get("/admin/", headers=as_json).json()["campaigns"]
    assert [(c["tenant"], c["campaign"]) for c in listed] == [(mine.tenant, mine.campaign)]
    page = client.get("/admin/", headers=bearer.headers("/admin/")).text
    assert other.campaign not in page and other.tenant not in page
    log = client.get("/admin/audit", headers=as_json).json()
    assert log["tenants"] == [mine.tenant] and log["entries"]
    assert {e["tenant"] for e in log["entries"]} == {mine.tenant}
    theirs = client.get(f"/admin/audit?tenant={other.tenant}", headers=as_json)
    unknown = client.get(f"/admin/audit?tenant={UNKNOWN}", headers=as_json)
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.text.replace(other.tenant, UNKNOWN) == unknown.text


def test_a_tenants_scoped_tokens_get_the_other_tenants_campaign_as_an_unknown_one_on_every_bearer_route(
    tmp_path: Path, redis_client: redis.Redis, welcomemat: Welcomemat, capsys: pytest.CaptureFixture[str]
) -> None:
    acme, evil = publish_both_tenants(tmp_path, welcomemat)
    # Each copies the other's id: refused, so each id stays its owner's.
    for squat, owner in (
        (tenant_folder(tmp_path, "evil", "q4-pipeline", footer=EVIL_FOOTER), acme),
        (tenant_folder(tmp_path, "acme", "evil-launch"), evil),
    ):
        assert refused_naming(
            welcomemat("precompute", squat.yaml, squat.accounts), owner.tenant, owner.campaign
        )
    covered: list[tuple[str, str, str, str]] = []  # (route, campaign's tenant, token kind, answer)

    for mine, other in ((acme, evil), (evil, acme)):
        bearer = SCOPED[mine.tenant]
        # A renderer that has loaded nothing yet: the other's campaign is refused before it is read.
        with scoped_renderer(redis_client) as client:
            admin_paths = {
                route.path
                for route in cast(Starlette, client.app).routes
                if getattr(route, "path", "").startswith("/admin/")
            }
            assert admin_paths == {
                r.split(" ")[1] for r in (*BEARER_ROUTES, *TENANT_WIDE_ROUTES) if "/admin/" in r
            } | set(SIGN_IN_ROUTES)
            covered += [
                (r, other.tenant, bearer.kind, "404") for r in refused_as_unknown(client, bearer, other)
            ]
            covered += [
                (r, mine.tenant, bearer.kind, "ok") for r in served(client, redis_client, bearer, mine, other)
            ]
            # Still refused once the other's campaign is loaded (by the operator, here).
            assert (
                client.get(f"/admin/review/{other.campaign}", headers=OPERATOR.headers("")).status_code == 200
            )
            for route, method, path, body in bearer_calls(
                other.campaign, decided_account(other), 1, "crm-late"
            ):
                late = client.request(method, path, json=body, headers=bearer.headers(path))
                assert late.status_code == 404 and "no published campaign" in late.text, route

            tenant_wide(client, bearer, mine, other)

    # The operator's tokens reach both tenants' campaigns.
    with scoped_renderer(redis_client) as client:
        for mine, other in ((acme, evil), (evil, acme)):
            covered += [
                (r, mine.tenant, OPERATOR.kind, "ok")
                for r in served(client, redis_client, OPERATOR, mine, other)
            ]

    # Nothing a tenant's tokens sent reached the other tenant's conversions.
    for mine in (acme, evil):
        stored = redis_client.hkeys(keys.conversions_key(mine.tenant, mine.campaign))
        assert {k.decode() for k in stored} == {
            f"crm-{SCOPED[mine.tenant].kind}-{mine.campaign}",
            f"crm-operator-{mine.campaign}",
        }

    # routes × tenants × token kinds (the tenant's own, the other tenant's, the operator's)
    assert len(covered) == len(set(covered)) == len(BEARER_ROUTES) * 2 * 3
    print_figures(
        capsys,
        bearer_route_checks=f"{len(BEARER_ROUTES)} routes x 2 tenants x 3 token kinds = {len(covered)}",
        refused_as_unknown=sum(1 for *_, answer in covered if answer == "404"),
    )
