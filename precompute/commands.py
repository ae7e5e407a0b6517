"""The precompute side of the CLI: `precompute`, `qa`, `explain`, `review`.

Imported lazily by `welcomemat.cli`. Each function prints for a person (or JSON with
`--json`) and returns the exit code: 0 success, 1 the job ran and its verdict is NO GO or
it failed, 2 bad usage or input (raised as InputError / ContractError / ConfigError).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import redis

from precompute.policy import TenantPolicy, build_policy, load_tenant_policy
from precompute.providers.base import Provider
from precompute.qa import QaReport, run_qa
from precompute.report import RunReport
from precompute.review import decide, list_queue, show
from precompute.run import PrecomputeRun, progress_bar
from welcomemat import keys
from welcomemat.campaign import Campaign, load_campaign
from welcomemat.commands.validate import find_zones_folder
from welcomemat.connection import connect, resolve_redis
from welcomemat.errors import InputError
from welcomemat.settings import Settings
from welcomemat.store import ZoneSetStore
from welcomemat.zone_contract import ZoneContract, load_zone_contracts

__all__ = [
    "PROVIDERS",
    "load_campaign_inputs",
    "make_provider",
    "print_qa",
    "print_run_report",
    "resolve_campaign",
    "run_explain",
    "run_precompute",
    "run_qa_command",
    "run_review",
]

PROVIDERS = ("offline",)


def make_provider(name: str, settings: Settings) -> Provider:
    if name == "offline":
        from precompute.providers.offline import OfflineComposer

        return OfflineComposer()
    raise InputError(f"unknown provider {name!r}; available: {', '.join(PROVIDERS)}", field="--provider")


def load_campaign_inputs(
    campaign_path: Path, zones_dir: str | None, tenant_file: str | None
) -> tuple[Campaign, dict[str, ZoneContract], TenantPolicy | None, str | None]:
    zones = dict(load_zone_contracts(find_zones_folder(campaign_path, zones_dir)))
    campaign = load_campaign(campaign_path, zones)
    tenant_path = Path(tenant_file) if tenant_file else campaign_path.parent / "tenant.yaml"
    if tenant_file and not tenant_path.is_file():
        raise InputError("tenant policy file not found", file=tenant_path)
    tenant = load_tenant_policy(tenant_path) if tenant_path.is_file() else None
    return campaign, zones, tenant, str(tenant_path) if tenant else None


def resolve_campaign(
    arg: str, client: redis.Redis, zones_dir: str | None = None
) -> tuple[Campaign, dict[str, ZoneContract]]:
    """CAMPAIGN as a campaign.yaml path, `tenant/campaign`, or a campaign id published before."""
    path = Path(arg)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        campaign, zones, _, _ = load_campaign_inputs(path, zones_dir, None)
        return campaign, zones
    raw_index: dict[bytes, bytes] = client.hgetall(keys.campaigns_index_key())  # type: ignore[assignment]
    index = {k.decode(): v.decode() for k, v in raw_index.items()}
    matches = [k for k in index if k == arg or k.split("/", 1)[1] == arg]
    if not matches:
        known = ", ".join(sorted(index)) or "none"
        raise InputError(
            f"no published campaign {arg!r} (published: {known}); run `welcomemat precompute` first",
            field="CAMPAIGN",
        )
    if len(matches) > 1:
        raise InputError(
            f"campaign id {arg!r} is ambiguous: {', '.join(matches)}; use tenant/campaign", field="CAMPAIGN"
        )
    tenant, campaign_id = matches[0].split("/", 1)
    raw = client.get(keys.campaign_config_key(tenant, campaign_id))
    if raw is None:
        raise InputError(
            f"campaign {matches[0]!r} has expired from Redis; rerun `welcomemat precompute`", field="CAMPAIGN"
        )
    config = json.loads(raw)
    zones = {k: ZoneContract.model_validate(v) for k, v in config["zones"].items()}
    return Campaign.model_validate(config["campaign"], context={"zones": zones}), zones


def _client(settings: Settings) -> redis.Redis:
    return connect(resolve_redis(settings))


def print_run_report(report: RunReport) -> None:
    out = sys.stdout
    print(
        f"precompute {report.tenant}/{report.campaign} ({report.provider}): {report.accounts} accounts "
        f"from {report.rows_read} rows in {report.seconds:.2f}s ({report.accounts_per_second:.0f}/s)",
        file=out,
    )
    print(
        f"  published {report.published} new versions, {report.unchanged} unchanged"
        + (f", {report.resumed} resumed" if report.resumed else "")
        + f", {report.pending_review} waiting for review, {len(report.failed)} failed",
        file=out,
    )
    print("  accounts by mode: " + ", ".join(f"{k} {v}" for k, v in sorted(report.by_mode.items())), file=out)
    print(
        "  zones by rung:    " + ", ".join(f"{k} {v}" for k, v in sorted(report.zones_by_rung.items())),
        file=out,
    )
    top = list(report.fallback_reasons.items())[:6]
    if top:
        print("  fallback reasons: " + ", ".join(f"{k} {v}" for k, v in top), file=out)
    if report.check_failures:
        print(
            "  check failures:   "
            + ", ".join(f"{k} {v}" for k, v in list(report.check_failures.items())[:6]),
            file=out,
        )
    if report.model_calls or report.deferred:
        print(
            f"  model calls {report.model_calls} ({report.retries} retries), tokens {report.tokens}, "
            f"circuit breaker opened {report.breaker_openings} times, {report.deferred} accounts deferred "
            "(fallback now; generated again on the next run)",
            file=out,
        )
    for row in report.malformed[:20]:
        where = f"{row.file}:{row.line}" + (f", field '{row.field}'" if row.field else "")
        print(f"  skipped {where}: {row.reason}", file=sys.stderr)
    if len(report.malformed) > 20:
        print(f"  ... and {len(report.malformed) - 20} more skipped rows (see --json)", file=sys.stderr)
    for failure in report.failed[:20]:
        print(f"  failed {failure.account_id}: {failure.reason}", file=sys.stderr)


def print_qa(report: QaReport) -> None:
    print(f"QA {report.tenant}/{report.campaign}: {report.verdict}")
    print(
        f"  {report.accounts} zone sets; by status: "
        + ", ".join(f"{k} {v}" for k, v in sorted(report.by_status.items()))
    )
    print(
        "  by mode: "
        + ", ".join(f"{k} {v}" for k, v in sorted(report.by_mode.items()))
        + f"; fallback rate {report.fallback_rate:.1%}"
        + f" (max {report.thresholds.get('max_fallback_rate', 0):.0%})"
    )
    print(
        f"  personal attempts {report.personal_attempts}, failed checks {report.check_failed} "
        f"({report.check_failure_rate:.1%}, max {report.thresholds.get('max_check_failure_rate', 0):.0%})"
    )
    if report.findings_by_code:
        print("  findings: " + ", ".join(f"{k} {v}" for k, v in report.findings_by_code.items()))
    blockers = [f for f in report.findings if f.severity == "blocker"][:10]
    for finding in blockers:
        print(f"    BLOCKER {finding.code} {finding.account_id} {finding.zone_id or ''}: {finding.detail}")
    print(f"  sample to read ({len(report.sample)} accounts, by segment/mode):")
    for item in report.sample[:12]:
        headline = next((z for z in item.zones if z.rung == "personal"), item.zones[0])
        print(f"    [{item.stratum}] {item.account_id}: “{headline.text}” ({headline.rung})")


def run_precompute(
    campaign: str,
    accounts: str,
    *,
    provider: str,
    concurrency: int,
    as_json: bool,
    resume: bool,
    zones: str | None,
    tenant: str | None,
) -> int:
    settings = Settings.from_env()
    accounts_path = Path(accounts)
    if not accounts_path.is_file():
        raise InputError("accounts file not found", file=accounts_path)
    loaded, zone_contracts, tenant_policy, tenant_file = load_campaign_inputs(Path(campaign), zones, tenant)
    policy = build_policy(loaded, tenant_policy, campaign_file=campaign, tenant_file=tenant_file)
    writer = make_provider(provider, settings)
    client = _client(settings)
    total = sum(1 for line in accounts_path.open("rb") if line.strip())
    advance, close = progress_bar(total, enabled=None if not as_json else False)
    try:
        report = PrecomputeRun(
            client=client,
            campaign=loaded,
            zones=zone_contracts,
            policy=policy,
            provider=writer,
            concurrency=concurrency,
            resume=resume,
            progress=advance,
        ).run(accounts_path)
    finally:
        close()
    qa = run_qa(ZoneSetStore(client), loaded, zone_contracts)
    report.verdict = qa.verdict
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        print_run_report(report)
        print(f"  QA verdict: {qa.verdict} (details: welcomemat qa {campaign})")
    return 1 if qa.verdict == "NO GO" or report.failed else 0


def run_qa_command(campaign: str, *, as_json: bool, zones: str | None) -> int:
    client = _client(Settings.from_env())
    loaded, zone_contracts = resolve_campaign(campaign, client, zones)
    report = run_qa(ZoneSetStore(client), loaded, zone_contracts, now=datetime.now(UTC))
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        print_qa(report)
    return 1 if report.verdict == "NO GO" else 0


def run_explain(campaign: str, account: str, *, as_json: bool, zones: str | None) -> int:
    from precompute.explain import format_explain

    client = _client(Settings.from_env())
    loaded, _ = resolve_campaign(campaign, client, zones)
    record = show(client, loaded.tenant, loaded.campaign, account)
    if record is None:
        raise InputError(
            f"no published zone set for account {account!r} in {loaded.tenant}/{loaded.campaign}",
            field="ACCOUNT",
        )
    current = ZoneSetStore(client).get(loaded.tenant, loaded.campaign, account)
    if current is not None:  # review may have changed status and version since the run
        record["status"], record["version"] = current.status.value, current.version
    print(json.dumps(record, indent=2) if as_json else format_explain(record))
    return 0


def run_review(
    action: str, campaign: str, account: str | None, *, version: int | None, zones: str | None
) -> int:
    from precompute.explain import format_explain

    client = _client(Settings.from_env())
    loaded, _ = resolve_campaign(campaign, client, zones)
    tenant, campaign_id = loaded.tenant, loaded.campaign
    if action == "list":
        items = list_queue(client, tenant, campaign_id)
        if not items:
            print("nothing to review")
        for item in items:
            zs = item.zone_set
            state = f"v{zs.version} {zs.status.value} {zs.mode.value}" if zs else "no zone set"
            print(f"{item.queue:8} {item.account_id:24} {state}")
        return 0
    if account is None:
        raise InputError(f"`review {action}` needs an ACCOUNT", field="ACCOUNT")
    if action == "show":
        record = show(client, tenant, campaign_id, account)
        if record is None:
            raise InputError(f"no zone set for account {account!r}", field="ACCOUNT")
        current = ZoneSetStore(client).get(tenant, campaign_id, account)
        if current is not None:
            record["status"], record["version"] = current.status.value, current.version
        print(format_explain(record))
        return 0
    if action == "rollback":
        restored = ZoneSetStore(client).rollback(tenant, campaign_id, account)
        if restored is None:
            print(f"{account}: no previous version to roll back to")
            return 1
        print(f"{account}: rolled back; v{restored.version} serves what was published before")
        return 0
    outcome = decide(
        client, tenant, campaign_id, account, approve=action == "approve", expected_version=version
    )
    print(f"{account}: {outcome.detail}")
    return 0 if outcome.applied else 1
