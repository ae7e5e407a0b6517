"""`welcomemat demo`: the first five minutes. Embedded Redis, the bundled examples, precompute, QA,
then the renderer on 127.0.0.1:8000 and a demo customer site on 127.0.0.1:8001 that embeds the snippet.

It prints a personal link for Dymaxa, a QR continuation link (and its QR image), an anonymous
link, the customer site (with Dymaxa's token) and the admin URLs with a demo admin token.
On a terminal it serves until Ctrl-C. Elsewhere (CI) it fetches every printed link from the
running servers, prints what each showed, stops and exits: 0, or 1 when a check failed
(`--serve` keeps serving regardless).
"""

from __future__ import annotations

import importlib.util
import secrets
import signal
import socket
import sys
import time
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from cli.validate import print_problems
from welcomemat.errors import InputError
from welcomemat.records.accounts import read_accounts
from welcomemat.security.tokens import DEFAULT_TTL_S, TokenKind, TokenSigner
from welcomemat.settings import MIN_SECRET_CHARS, Settings
from welcomemat.storage.connection import connect, resolve_redis
from welcomemat.storage.embedded_redis import EmbeddedRedis
from welcomemat.zones.store import ZoneSetStore

if TYPE_CHECKING:
    from cli.demo_serve import DemoLinks
    from precompute.inputs import CampaignInputs

__all__ = ["DEFAULT_PORT", "run_demo"]

DEFAULT_PORT = 8000
DEMO_ACCOUNT = "acct_dymaxa"


def _examples_folder(explicit: str | None) -> Path:
    candidates = (
        [Path(explicit)] if explicit else [Path("examples"), Path(__file__).resolve().parents[2] / "examples"]
    )
    for folder in candidates:
        if (folder / "campaign.yaml").is_file() and (folder / "make_accounts.py").is_file():
            return folder
    raise InputError(
        "examples folder not found (run from a clone of the repository, or pass --examples DIR)",
        file=candidates[0],
    )


def _fresh_accounts(examples: Path, out: Path, today: date) -> Path:
    """Regenerate the example accounts dated from today, so the demo's signals are current."""
    spec = importlib.util.spec_from_file_location(
        "welcomemat_example_accounts", examples / "make_accounts.py"
    )
    if spec is None or spec.loader is None:
        raise InputError("cannot load the accounts generator", file=examples / "make_accounts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out.parent.mkdir(parents=True, exist_ok=True)
    module.write(out, today)
    return out


def _kept_under_home(settings: Settings, name: str) -> str:
    """A random value kept in WELCOMEMAT_HOME/demo/`name` (0600), made on first use (and made
    again if someone left one shorter than the settings accept there)."""
    path = settings.home / "demo" / name
    if not path.is_file() or len(path.read_text().strip()) < MIN_SECRET_CHARS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip()


def _demo_secret(settings: Settings) -> str:
    """WELCOMEMAT_SECRET, or a per-home demo key kept under home (never for production)."""
    return settings.secret or _kept_under_home(settings, "secret")


def _demo_admin_token(settings: Settings) -> str:
    """WELCOMEMAT_ADMIN_TOKEN, or a per-home demo admin token kept under home (demo only)."""
    return settings.admin_token or _kept_under_home(settings, "admin-token")


def _precompute(client: redis.Redis, inputs: CampaignInputs, accounts_path: Path, site_origin: str) -> str:
    """Precompute the examples with the offline composer; print the run, QA and Dymaxa's page.

    The campaign lists the demo customer site's origin in `snippet_origins` (added here when
    `--site-port` moved it off the one examples/campaign.yaml names). Dymaxa is tier 1, so
    it waits for a person: the demo approves it as a reviewer would, and says so.
    """
    from cli.run_output import print_qa, print_run_report
    from precompute.explain import format_explain
    from precompute.providers.offline import OfflineComposer
    from precompute.qa import run_qa
    from precompute.run import PrecomputeRun
    from welcomemat.records.audit import Auditor, Via
    from welcomemat.zones.review import decide, show

    campaign, zones, policy, theme = inputs.campaign, inputs.zones, inputs.policy, inputs.theme
    if site_origin not in campaign.snippet_origins:
        campaign = campaign.model_copy(update={"snippet_origins": (*campaign.snippet_origins, site_origin)})
    from server.render import account_page_check

    report = PrecomputeRun(
        client=client,
        campaign=campaign,
        zones=zones,
        policy=policy,
        provider=OfflineComposer(),
        theme=theme,
        # Each account's own pages in the theme, as `welcomemat precompute` checks them.
        page_check=account_page_check(theme, campaign, zones) if theme is not None else None,
    ).run(accounts_path)
    print_run_report(report)
    print()
    qa = run_qa(ZoneSetStore(client), campaign, zones)
    print_qa(qa)
    record = show(client, campaign.tenant, campaign.campaign, DEMO_ACCOUNT)
    if record is not None:
        print()
        print(format_explain(record))
    current = ZoneSetStore(client).get(campaign.tenant, campaign.campaign, DEMO_ACCOUNT)
    if current is not None and current.status.value == "pending_review":
        outcome = decide(
            client,
            campaign.tenant,
            campaign.campaign,
            DEMO_ACCOUNT,
            approve=True,
            auditor=Auditor("demo", Via.CLI, lambda: datetime.now(UTC)),
            expected_version=current.version,
        )
        print(
            f"  Dymaxa is tier 1: a person approves it first. The demo approves v{current.version} as a "
            f"reviewer would ({outcome.detail}):\n"
            f"    welcomemat review approve {campaign.campaign} {DEMO_ACCOUNT} --version {current.version}"
        )
    return qa.verdict


def _bind_ports(port: int, site_port: int | None) -> tuple[socket.socket, socket.socket]:
    from cli.demo_serve import bind_port

    renderer = bind_port(port, "--port")
    try:
        site = bind_port(site_port if site_port is not None else (port + 1 if port else 0), "--site-port")
    except BaseException:
        renderer.close()
        raise
    return renderer, site


def run_demo(
    *,
    examples: str | None,
    keep_redis: bool,
    port: int = DEFAULT_PORT,
    site_port: int | None = None,
    serve: bool | None = None,
) -> int:
    """`serve`: keep serving until Ctrl-C (None: when stdout is a terminal)."""
    settings = Settings.from_env()
    folder = _examples_folder(examples)
    # Bound before any work: a taken port is exit 2 now, not after precompute.
    renderer_sock, site_sock = _bind_ports(port, site_port)
    renderer_origin = f"http://127.0.0.1:{renderer_sock.getsockname()[1]}"
    site_origin = f"http://127.0.0.1:{site_sock.getsockname()[1]}"
    embedded = settings.redis_url is None
    was_running = embedded and EmbeddedRedis().status(settings.home).running
    try:
        target = resolve_redis(settings)
        client = connect(target)
        info = client.info("server")
        aof = {
            str(k, "ascii") if isinstance(k, bytes) else k: v
            for k, v in client.config_get("appendonly").items()
        }
        aof_state = aof.get("appendonly", b"?")
        aof_text = aof_state.decode() if isinstance(aof_state, bytes) else str(aof_state)
        print("Welcomemat demo")
        print(f"  Redis     {info.get('redis_version')} — {target.describe()} (AOF {aof_text})")

        # Dated from the UTC day, the day precompute's `as_of` is: the local date can differ by one.
        today = datetime.now(UTC).date()
        accounts_path = _fresh_accounts(folder, settings.home / "demo" / "accounts.jsonl", today)
        from precompute.inputs import load_campaign_inputs
        from server.render import check_campaign_theme

        inputs = load_campaign_inputs(
            folder / "campaign.yaml", str(folder.parent / "zones"), None, check_campaign_theme
        )
        c = inputs.campaign
        print(f"  Zones     {len(inputs.zones)} contracts: {', '.join(sorted(inputs.zones))}")
        print(
            f"  Campaign  {c.tenant}/{c.campaign} “{c.name}”: {len(c.pages)} pages, "
            f"{len(c.segments)} segments, {len(c.ctas)} CTAs, holdout {c.holdout_fraction:.0%}"
        )
        if inputs.theme is not None:
            files = ", ".join(["base.html", *sorted(inputs.theme.files)])
            print(f"  Theme     {c.theme}: {files} (own branding; zones and their rules unchanged)")
        acc = read_accounts(accounts_path)
        facts = [f for a in acc.accounts for f in a.facts]
        print(f"  Accounts  {len(acc.accounts)} read from {accounts_path} ({acc.skipped} lines skipped)")
        by_segment = Counter(a.segment for a in acc.accounts)
        print("            by segment: " + ", ".join(f"{s} {n}" for s, n in sorted(by_segment.items())))
        with_facts = sum(1 for a in acc.accounts if a.facts)
        linked = sum(1 for f in facts if f.source_url and f.published_at)
        print(
            f"{'':12}{with_facts} accounts carry {len(facts)} research facts; {linked} have a link and a date"
        )
        if acc.problems:
            print_problems(acc.problems, limit=20)

        dymaxa = next((a for a in acc.accounts if a.account_id == DEMO_ACCOUNT), None)
        if dymaxa is None:
            raise InputError(f"the example accounts have no {DEMO_ACCOUNT}", file=accounts_path)
        contact = dymaxa.contacts[0] if dymaxa.contacts else None
        who = f"{contact.first_name}, {contact.title}" if contact else "no contact"
        print(f"  Example   {dymaxa.name} ({dymaxa.account_id}, {dymaxa.employee_count} people): {who}")
        for fact in dymaxa.facts:
            print(f"            {fact.published_at}  {fact.statement}  <{fact.source_url}>")
        print()
        verdict = _precompute(client, inputs, accounts_path, site_origin)
        client.close()

        links = _links(
            settings,
            c.tenant,
            c.campaign,
            contact.contact_id if contact else None,
            renderer_origin,
            site_origin,
            themed=c.theme is not None,
        )
        return _serve_and_check(
            settings, links, renderer_sock, site_sock, verdict_failed=verdict == "NO GO", serve=serve
        )
    finally:
        renderer_sock.close()
        site_sock.close()
        if embedded and not was_running and not keep_redis:
            EmbeddedRedis().stop(settings.home)


def _links(
    settings: Settings,
    tenant: str,
    campaign: str,
    contact: str | None,
    renderer: str,
    site: str,
    *,
    themed: bool,
) -> DemoLinks:
    from cli.demo_serve import DemoLinks
    from welcomemat.security.links import signed_url

    signer = TokenSigner.from_setting(_demo_secret(settings))

    def url(kind: TokenKind) -> str:
        return signed_url(
            signer,
            renderer,
            tenant=tenant,
            campaign=campaign,
            account=DEMO_ACCOUNT,
            contact=contact,
            qr=kind is TokenKind.QR,
            ttl_s=DEFAULT_TTL_S[kind],
        )

    personal = url(TokenKind.LINK)
    token = personal.partition("?wm=")[2]
    return DemoLinks(
        campaign=campaign,
        account=DEMO_ACCOUNT,
        renderer=renderer,
        site=site,
        personal=personal,
        qr=url(TokenKind.QR),
        anonymous=f"{renderer}/c/{campaign}",
        site_personal=f"{site}/?wm={token}",
        admin_token=_demo_admin_token(settings),
        themed=themed,
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _serve_and_check(
    settings: Settings,
    links: DemoLinks,
    renderer_sock: socket.socket,
    site_sock: socket.socket,
    *,
    verdict_failed: bool,
    serve: bool | None,
) -> int:
    from cli.demo_serve import ThreadedServer, check_links
    from cli.demo_site import customer_site
    from cli.link import write_qr_image
    from server.app import create_app

    renderer_settings = Settings.from_env(
        secret=_demo_secret(settings),
        admin_token=links.admin_token,
        public_url=links.renderer,
        allowed_hosts=("127.0.0.1", "localhost"),
    )
    renderer_app = create_app(renderer_settings)
    servers = [
        ThreadedServer(renderer_app, renderer_sock, "welcomemat-renderer"),
        ThreadedServer(customer_site(links.renderer, links.campaign), site_sock, "welcomemat-demo-site"),
    ]
    qr_image = settings.home / "demo" / "dymaxa-qr.png"
    write_qr_image(links.qr, qr_image)
    token_file = settings.home / "demo" / "admin-token"
    try:
        for server in servers:
            server.start()
        print()
        print("Serving")
        print(f"  Renderer        {links.renderer}")
        print(f"  Customer site   {links.site}  (a page on a second origin that embeds the snippet)")
        print()
        print(f"  Personal link   {links.personal}")
        print(f"  QR link         {links.qr}")
        print(f"                  (a QR code of it: {qr_image})")
        print(f"  Anonymous link  {links.anonymous}")
        print(f"  Customer site   {links.site_personal}")
        print("                  (with Dymaxa's token: the snippet swaps in Dymaxa's zones)")
        print(f"  Admin preview   {links.admin_preview}")
        print(f"  Admin explain   {links.admin_explain}")
        print(f"  Admin review    {links.admin_review}")
        where = "WELCOMEMAT_ADMIN_TOKEN" if settings.admin_token else str(token_file)
        print(f"  Admin token     {links.admin_token}  (demo only; from {where})")
        print(f"                  curl -H 'Authorization: Bearer {links.admin_token}' {links.admin_review}")
        print()
        print("Checks (each link fetched over HTTP from the running servers)")
        checks = check_links(links, renderer_app)
        for check in checks:
            print(check.line())
        failed = [c for c in checks if not c.ok]
        keep_serving = sys.stdout.isatty() if serve is None else serve
        if keep_serving:
            print()
            print("Serving until Ctrl-C.")
            sys.stdout.flush()
            # `kill` (SIGTERM) stops as cleanly as Ctrl-C: servers, then the embedded Redis.
            previous = signal.signal(signal.SIGTERM, _interrupt)
            try:
                while all(s.alive for s in servers):
                    time.sleep(0.5)
            except KeyboardInterrupt:
                print("\nStopping.")
            finally:
                signal.signal(signal.SIGTERM, previous)
        else:
            print()
            print(
                "Not a terminal: the servers stopped after the checks. "
                "Run `welcomemat demo --serve` to keep them serving."
            )
        sys.stdout.flush()
        return 1 if verdict_failed or failed else 0
    finally:
        for server in servers:
            server.stop()
