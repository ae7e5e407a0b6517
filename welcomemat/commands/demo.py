"""`welcomemat demo`: the first five minutes. Embedded Redis, the bundled examples, precompute, QA."""

from __future__ import annotations

import importlib.util
import secrets
import sys
from collections import Counter
from datetime import date
from pathlib import Path

import redis

from welcomemat.commands.validate import load_inputs, print_problems
from welcomemat.connection import connect, resolve_redis
from welcomemat.embedded_redis import EmbeddedRedis
from welcomemat.errors import InputError
from welcomemat.settings import Settings
from welcomemat.store import ZoneSetStore
from welcomemat.tokens import DEFAULT_LINK_TTL_S, TokenKind, TokenSigner

DEMO_BASE_URL = "http://127.0.0.1:8000"


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


def _demo_secret(settings: Settings) -> str:
    """WELCOMEMAT_SECRET, or a per-home demo key kept under home (never for production)."""
    if settings.secret:
        return settings.secret
    path = settings.home / "demo" / "secret"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip()


def _precompute(client: redis.Redis, folder: Path, accounts_path: Path) -> str:
    """Precompute the examples with the offline composer; print the run, QA and Dymaxa's page."""
    from precompute.commands import load_campaign_inputs, print_qa, print_run_report
    from precompute.explain import format_explain
    from precompute.policy import build_policy
    from precompute.providers.offline import OfflineComposer
    from precompute.qa import run_qa
    from precompute.review import show
    from precompute.run import PrecomputeRun

    campaign, zones, tenant, tenant_file = load_campaign_inputs(
        folder / "campaign.yaml", str(folder.parent / "zones"), None
    )
    policy = build_policy(
        campaign, tenant, campaign_file=str(folder / "campaign.yaml"), tenant_file=tenant_file
    )
    report = PrecomputeRun(
        client=client, campaign=campaign, zones=zones, policy=policy, provider=OfflineComposer()
    ).run(accounts_path)
    print_run_report(report)
    print()
    qa = run_qa(ZoneSetStore(client), campaign, zones)
    print_qa(qa)
    record = show(client, campaign.tenant, campaign.campaign, "acct_dymaxa")
    if record is not None:
        print()
        print(format_explain(record))
        if record["status"] == "pending_review":
            print(
                f"  Dymaxa is tier 1: a person approves it first — "
                f"welcomemat review approve {campaign.campaign} acct_dymaxa"
            )
    return qa.verdict


def run_demo(*, examples: str | None, keep_redis: bool) -> int:
    settings = Settings.from_env()
    folder = _examples_folder(examples)
    embedded = settings.redis_url is None
    was_running = embedded and EmbeddedRedis().status(settings.home).running
    target = resolve_redis(settings)
    try:
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

        accounts_path = _fresh_accounts(folder, settings.home / "demo" / "accounts.jsonl", date.today())
        report = load_inputs(folder / "campaign.yaml", accounts_path, zones=str(folder.parent / "zones"))
        c = report.campaign
        print(f"  Zones     {len(report.zones)} contracts: {', '.join(sorted(report.zones))}")
        print(
            f"  Campaign  {c.tenant}/{c.campaign} “{c.name}”: {len(c.pages)} pages, "
            f"{len(c.segments)} segments, {len(c.ctas)} CTAs, holdout {c.holdout_fraction:.0%}"
        )
        acc = report.accounts
        assert acc is not None
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
            print_problems(acc)

        dymaxa = next((a for a in acc.accounts if a.account_id == "acct_dymaxa"), None)
        if dymaxa is not None:
            contact = dymaxa.contacts[0] if dymaxa.contacts else None
            who = f"{contact.first_name}, {contact.title}" if contact else "no contact"
            print(f"  Example   {dymaxa.name} ({dymaxa.account_id}, {dymaxa.employee_count} people): {who}")
            for fact in dymaxa.facts:
                print(f"            {fact.published_at}  {fact.statement}  <{fact.source_url}>")
            signer = TokenSigner.from_setting(_demo_secret(settings))
            token = signer.sign(
                TokenKind.LINK,
                tenant=c.tenant,
                campaign=c.campaign,
                account=dymaxa.account_id,
                contact=contact.contact_id if contact else None,
                ttl_s=DEFAULT_LINK_TTL_S,
            )
            print(f"  Link      {DEMO_BASE_URL}/c/{c.campaign}?wm={token}")
        print()
        verdict = _precompute(client, folder, accounts_path)
        sys.stdout.flush()
        return 1 if verdict == "NO GO" else 0
    finally:
        if embedded and not was_running and not keep_redis:
            EmbeddedRedis().stop(settings.home)
