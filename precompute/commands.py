"""The precompute side of the CLI: `precompute` (local or `--enqueue`), `worker`,
`precompute-status`, `qa`, `explain`, `review`.

Imported lazily by `cli.commands`. Each function prints for a person (or JSON with
`--json`) and returns the exit code: 0 success, 1 the job ran and its verdict is NO GO or
it failed, 2 bad usage or input (raised as InputError / ContractError / ConfigError).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import redis

from precompute.findings import CohortCollector, format_findings
from precompute.inputs import load_campaign_inputs
from precompute.progress import progress_bar
from precompute.providers.base import Provider
from precompute.qa import QaReport, run_qa
from precompute.report import MalformedRow, RunReport
from precompute.run import PrecomputeRun
from welcomemat import keys
from welcomemat.accounts import MAX_LINE_BYTES, read_accounts
from welcomemat.audit import AuditAction, Auditor, check_reason
from welcomemat.bounded_json import iter_lines
from welcomemat.campaign import Campaign
from welcomemat.campaign_config import decode_campaign_config
from welcomemat.campaign_owner import read_ownership, refuse_other_tenant
from welcomemat.campaign_ref import is_campaign_file, resolve_campaign_ref
from welcomemat.connection import connect, connect_for_blocking_reads, resolve_redis
from welcomemat.contact_workflow import contact_workflows
from welcomemat.erasure import suppress
from welcomemat.errors import CampaignOwnerError, InputError, StoredValueError
from welcomemat.guidelines import ActivationState, GuidelineStore, guideline_hash
from welcomemat.ids import is_valid_id
from welcomemat.records import read_account_record
from welcomemat.review import approve_held, decide, list_queue, roll_back, show
from welcomemat.settings import Settings
from welcomemat.store import ZoneSetStore
from welcomemat.theme import ThemeCheck
from welcomemat.yamlfile import line_of_field
from welcomemat.zone_contract import ZoneContract

__all__ = [
    "PROVIDERS",
    "make_provider",
    "print_qa",
    "print_run_report",
    "resolve_campaign",
    "run_explain",
    "run_precompute",
    "run_precompute_status",
    "run_qa_command",
    "run_review",
    "run_worker",
]

PROVIDERS = ("offline", "openai")


def make_provider(
    name: str,
    settings: Settings,
    *,
    concurrency: int = 1,
    deadline_s: float | None = None,
    self_review: bool = True,
) -> Provider:
    """The named provider; `concurrency`, `deadline_s` and `self_review` matter to model providers only."""
    if name == "offline":
        from precompute.providers.offline import OfflineComposer

        return OfflineComposer()
    if name == "openai":
        from precompute.providers.openai_provider import OpenAIProvider

        return OpenAIProvider.from_settings(
            settings, concurrency=concurrency, deadline_s=deadline_s, self_review=self_review
        )
    raise InputError(f"unknown provider {name!r}; available: {', '.join(PROVIDERS)}", field="--provider")


def resolve_campaign(
    arg: str, client: redis.Redis, zones_dir: str | None = None
) -> tuple[Campaign, dict[str, ZoneContract]]:
    """CAMPAIGN as a campaign.yaml path, `tenant/campaign`, or a campaign id published before.

    A campaign id is its owner's (`welcomemat.campaign_ref`): another tenant's id is refused.
    """
    if is_campaign_file(arg):
        inputs = load_campaign_inputs(Path(arg), zones_dir, None)
        refuse_other_tenant(read_ownership(client, inputs.campaign.campaign), inputs.campaign.tenant)
        return inputs.campaign, inputs.zones
    tenant, campaign_id = resolve_campaign_ref(arg, client=client)
    key = keys.campaign_config_key(tenant, campaign_id)
    raw = client.get(key)
    if raw is None:
        raise InputError(
            f"no published campaign {tenant}/{campaign_id} (never published, or expired from Redis); "
            "run `welcomemat precompute` first",
            field="CAMPAIGN",
        )
    try:
        stored = decode_campaign_config(tenant, campaign_id, raw)
    except StoredValueError as exc:
        raise StoredValueError(key, f"{exc.detail}; rerun `welcomemat precompute` to store it again") from exc
    return stored.campaign, stored.zones


def _count_lines(path: Path) -> int:
    """Non-blank lines (a line too long to read counts: it is reported), for the progress bar."""
    with path.open("rb") as handle:
        return sum(1 for _, raw in iter_lines(handle, MAX_LINE_BYTES) if raw is None or raw.strip())


def _client(settings: Settings) -> redis.Redis:
    return connect(resolve_redis(settings))


def _refuse_other_tenants_id(client: redis.Redis, campaign: Campaign, path: Path) -> None:
    """Refuse, naming campaign.yaml's `campaign` line, to publish an id another tenant owns.

    Before the provider makes a call; the publish itself claims the id atomically
    (`welcomemat.campaign_owner.claim_campaign`) and refuses the same way.
    """
    try:
        refuse_other_tenant(read_ownership(client, campaign.campaign), campaign.tenant, action="publish")
    except CampaignOwnerError as exc:
        raise CampaignOwnerError(
            exc.message,
            campaign=exc.campaign,
            owner=exc.owner,
            tenant=exc.tenant,
            file=path,
            line=line_of_field(path, ("campaign",)),
            field="campaign",
        ) from None


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
    if report.suppressed or report.contacts_suppressed:
        print(
            f"  left out as erased (welcomemat erase): {report.suppressed} accounts, "
            f"{report.contacts_suppressed} contacts of published accounts",
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
    for g in report.by_guideline_version:
        print(
            f"  guidelines {g.guideline_version} ({(g.guideline_hash or 'no hash')[:12]}): "
            f"{g.accounts} accounts, "
            f"{g.personal_zones} personal zones, failed checks {g.check_failed}/{g.personal_attempts}"
        )
    if report.fallback_reasons:
        print("  fallback reasons: " + ", ".join(f"{k} {v}" for k, v in report.fallback_reasons.items()))
    if report.findings_by_code:
        print("  findings: " + ", ".join(f"{k} {v}" for k, v in report.findings_by_code.items()))
    blockers = [f for f in report.findings if f.severity == "blocker"][:10]
    for finding in blockers:
        print(f"    BLOCKER {finding.code} {finding.account_id} {finding.zone_id or ''}: {finding.detail}")
    print(f"  sample to read ({len(report.sample)} accounts, by segment/mode):")
    for item in report.sample[:12]:
        headline = next((z for z in item.zones if z.rung == "personal"), item.zones[0])
        print(f"    [{item.stratum}] {item.account_id}: “{headline.text}” ({headline.rung})")
    if report.cohort_findings is not None:
        for line in format_findings(report.cohort_findings):
            print(line)


def _refuse_unapproved_guidelines(client: redis.Redis, campaign: Campaign, path: Path) -> None:
    """Once a campaign's guidelines are versioned (`welcomemat guidelines`), publish only with the
    active version, as approved: not a candidate, and not an edit that kept the version label."""
    store = GuidelineStore(client)
    active = store.active_version(campaign.tenant, campaign.campaign)
    if active is None:
        return
    version = campaign.guideline_version
    record = store.get(campaign.tenant, campaign.campaign, version)
    problem = None
    if record is None or record.state is not ActivationState.ACTIVE:
        state = "never proposed" if record is None else f"{record.state.value}"
        problem = (
            f"guideline version {version!r} is {state}; the active one is {active!r} "
            "(welcomemat guidelines propose / promote / rollback)"
        )
    elif record.hash != guideline_hash(campaign):
        problem = (
            f"the guidelines differ from version {version!r} as approved: propose the change as a new "
            "guideline_version (welcomemat guidelines propose)"
        )
    if problem is not None:
        raise InputError(
            problem, file=path, line=line_of_field(path, ("guideline_version",)), field="guideline_version"
        )


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
    enqueue: bool = False,
    self_review: bool = True,
    deadline_s: float | None = None,
    check_theme: ThemeCheck | None = None,
    auditor: Auditor | None = None,
) -> int:
    """`check_theme`: the renderer's checks of the campaign's theme (the CLI passes them in);
    `auditor`: who the audit log says published (default: `precompute`)."""
    settings = Settings.from_env()
    accounts_path = Path(accounts)
    if not accounts_path.is_file():
        raise InputError("accounts file not found", file=accounts_path)
    inputs = load_campaign_inputs(Path(campaign), zones, tenant, check_theme)
    loaded, zone_contracts, policy = inputs.campaign, inputs.zones, inputs.policy
    writer = make_provider(
        provider, settings, concurrency=concurrency, deadline_s=deadline_s, self_review=self_review
    )
    client = _client(settings)
    _refuse_other_tenants_id(client, loaded, Path(campaign))
    _refuse_unapproved_guidelines(client, loaded, Path(campaign))
    total = 0 if enqueue else _count_lines(accounts_path)
    advance, close = progress_bar(total, enabled=False if as_json or enqueue else None)
    run = PrecomputeRun(
        client=client,
        campaign=loaded,
        zones=zone_contracts,
        policy=policy,
        provider=writer,
        concurrency=concurrency,
        resume=resume,
        progress=advance,
        theme=inputs.theme,
        auditor=auditor,
    )
    if enqueue:
        close()
        options = {"concurrency": concurrency, "deadline_s": deadline_s, "self_review": self_review}
        return _enqueue(run, accounts_path, provider_options=options, as_json=as_json)
    try:
        report = run.run(accounts_path)
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


def run_qa_command(campaign: str, *, as_json: bool, zones: str | None, findings: bool = False) -> int:
    """`findings`: also the cohort findings (`precompute.findings`), in the text and the JSON."""
    client = _client(Settings.from_env())
    loaded, zone_contracts = resolve_campaign(campaign, client, zones)
    cohorts = CohortCollector(client, loaded, zone_contracts) if findings else None
    report = run_qa(ZoneSetStore(client), loaded, zone_contracts, now=datetime.now(UTC), cohorts=cohorts)
    if as_json:
        print(report.model_dump_json(indent=2, exclude=None if findings else {"cohort_findings"}))
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
    shared = read_account_record(client, loaded.tenant, account)
    if shared is not None:  # where each contact stands, from the live records
        workflows = contact_workflows(client, shared, loaded.campaign, current)
        record["workflow"] = [w.as_json() for w in workflows]
    print(json.dumps(record, indent=2) if as_json else format_explain(record))
    return 0


def run_review(
    action: str,
    campaign: str,
    account: str | None,
    *,
    version: int | None,
    zones: str | None,
    auditor: Auditor,
    reason: str | None = None,
    held: str | None = None,
) -> int:
    """`approve`, `reject` and `rollback` are audit-logged as `auditor`; the last two need a `reason`.

    `approve --held ZONE` approves that zone's held draft instead of a waiting zone set.
    """
    from precompute.explain import format_explain

    audited = {"approve": AuditAction.APPROVE, "reject": AuditAction.REJECT, "rollback": AuditAction.ROLLBACK}
    if action in audited:  # before anything is read or written
        reason = check_reason(reason, audited[action], source="--reason")
    if held is not None and action != "approve":
        raise InputError(f"--held is for `review approve`, not `review {action}`", field="--held")
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
            for kept in item.held:
                verdict = "approvable" if kept.approvable else f"not approvable ({', '.join(kept.failures)})"
                print(f"{'':8}   {kept.zone_id}: held by {kept.layer.value}, {verdict}: {kept.note}")
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
        restored = roll_back(client, tenant, campaign_id, account, auditor=auditor, reason=reason)
        if restored is None:
            print(f"{account}: no previous version to roll back to")
            return 1
        print(f"{account}: rolled back; v{restored.version} serves what was published before")
        return 0
    if held is not None:
        outcome = approve_held(
            client,
            tenant,
            campaign_id,
            account,
            held,
            auditor=auditor,
            reason=reason,
            expected_version=version,
        )
    else:
        outcome = decide(
            client,
            tenant,
            campaign_id,
            account,
            approve=action == "approve",
            auditor=auditor,
            reason=reason,
            expected_version=version,
        )
    print(f"{account}: {outcome.detail}")
    return 0 if outcome.applied else 1


# -- distributed runs ----------------------------------------------------------------------------


def _enqueue(
    run: PrecomputeRun,
    accounts_path: Path,
    *,
    provider_options: dict[str, int | float | bool | None],
    as_json: bool,
) -> int:
    from precompute.queue import WORK_CHUNK_SIZE, enqueue_run

    read = read_accounts(accounts_path)
    malformed = [
        MalformedRow(file=p.file, line=p.line, field=p.field, reason=p.message) for p in read.problems
    ]
    for row in malformed[:20]:
        where = f"{row.file}:{row.line}" + (f", field '{row.field}'" if row.field else "")
        print(f"  skipped {where}: {row.reason}", file=sys.stderr)
    if not read.accounts:
        raise InputError(
            f"no valid account records to enqueue ({len(read.problems)} rows skipped)", file=accounts_path
        )
    # Erased accounts and contacts never go on the stream (workers check again when they process).
    suppression = suppress(run.client, run.campaign.tenant, read.accounts)
    if suppression.accounts or suppression.contacts:
        print(
            f"  left out as erased (welcomemat erase): {len(suppression.accounts)} accounts, "
            f"{suppression.contacts} contacts",
            file=sys.stderr,
        )
    if not suppression.kept:
        raise InputError("every account in the file is erased (welcomemat erase): nothing to enqueue")
    record = enqueue_run(
        run,
        suppression.kept,
        accounts_file=str(accounts_path),
        rows_read=read.lines_read,
        malformed=malformed,
        provider_options=provider_options,
        # An entry is processed `concurrency` accounts at a time and waits for its slowest:
        # two full waves per entry keep a model provider's connections busy.
        chunk_size=max(WORK_CHUNK_SIZE, 2 * int(provider_options.get("concurrency") or 1)),
    )
    ref = f"{record.tenant}/{record.campaign}"
    if as_json:
        print(record.model_dump_json(indent=2))
        return 0
    print(
        f"enqueued run {record.run_id}: {record.total} accounts of {ref} in {record.entries} entries "
        f"(provider {record.provider}); nothing processed yet"
    )
    print(f"  start workers (any machine, same Redis): welcomemat worker --campaign {ref}")
    print(f"  follow progress: welcomemat precompute-status {ref} --run {record.run_id}")
    return 0


def _campaign_ref(arg: str, client: redis.Redis) -> tuple[str, str]:
    """`tenant/campaign` as given (a worker may start before anything is enqueued) unless another
    tenant owns the id, else resolved."""
    tenant, sep, campaign_id = arg.partition("/")
    if sep and not Path(arg).is_file():
        for kind, value in (("tenant", tenant), ("campaign", campaign_id)):
            if not is_valid_id(value):
                raise InputError(f"{kind} id {value!r} in {arg!r} is not a valid id", field="--campaign")
        refuse_other_tenant(read_ownership(client, campaign_id), tenant)
        return tenant, campaign_id
    loaded, _ = resolve_campaign(arg, client)
    return loaded.tenant, loaded.campaign


def _provider_from_options(name: str, options: Mapping[str, object], settings: Settings) -> Provider:
    """The provider a run record names, with the options `--enqueue` recorded (per worker: a
    `deadline_s` counts from when this worker first builds the run's provider)."""
    concurrency, deadline_s = options.get("concurrency", 1), options.get("deadline_s")
    return make_provider(
        name,
        settings,
        concurrency=concurrency if isinstance(concurrency, int) else 1,
        deadline_s=float(deadline_s) if isinstance(deadline_s, int | float) else None,
        self_review=options.get("self_review", True) is not False,
    )


def run_worker(
    *,
    campaign: str | None,
    name: str | None,
    once: bool,
    block_ms: int,
    claim_idle_ms: int,
    max_deliveries: int,
) -> int:
    """Consume enqueued runs until SIGTERM/SIGINT (or, with `once`, until drained); exit 0, or 1
    when `once` gave up on a Redis that stayed down."""
    from precompute.worker import Worker, WorkerOptions, default_consumer_name
    from welcomemat.redis_client import REDIS_OUTAGE_ERRORS
    from welcomemat.stop_signals import stop_on_signals

    settings = Settings.from_env()
    target = resolve_redis(settings)
    client = connect_for_blocking_reads(target, block_ms)
    options = WorkerOptions(
        name=name or default_consumer_name(),
        campaign=_campaign_ref(campaign, client) if campaign else None,
        block_ms=block_ms,
        claim_idle_ms=claim_idle_ms,
        max_deliveries=max_deliveries,
        once=once,
    )
    stop = threading.Event()
    worker = Worker(
        client, lambda name, opts: _provider_from_options(name, opts, settings), options, stop=stop
    )
    scope = f"{options.campaign[0]}/{options.campaign[1]}" if options.campaign else "every active run"
    print(f"worker {options.name}: consuming {scope} on {target.describe()}", file=sys.stderr, flush=True)
    failed_redis: str | None = None
    with stop_on_signals(stop):
        try:
            stats = worker.run()
        except REDIS_OUTAGE_ERRORS as exc:  # only with --once: without it the worker waits for Redis
            failed_redis, stats = str(exc), worker.stats
    print(
        f"worker {options.name}: stopped; {stats.entries} entries ({stats.accounts} accounts), "
        f"{stats.claimed} claimed back, {stats.dead_lettered} dead-lettered, "
        f"{stats.runs_completed} runs completed",
        file=sys.stderr,
    )
    if failed_redis is not None:
        print(f"welcomemat: failed: Redis unavailable, worker stopped: {failed_redis}", file=sys.stderr)
        return 1
    return 0


def run_precompute_status(campaign: str, *, run_id: str | None, as_json: bool, zones: str | None) -> int:
    """Progress of a distributed run (default: the campaign's latest); QA verdict once complete."""
    from precompute.queue import latest_run_id, read_progress

    client = _client(Settings.from_env())
    tenant, campaign_id = _campaign_ref(campaign, client)
    ref = f"{tenant}/{campaign_id}"
    run_id = run_id or latest_run_id(client, tenant, campaign_id)
    if run_id is None:
        raise InputError(f"no enqueued run of {ref} is recorded; use `welcomemat precompute --enqueue`")
    if not is_valid_id(run_id):
        raise InputError(f"run id {run_id!r} is not a valid id", field="--run")
    progress = read_progress(client, tenant, campaign_id, run_id)
    if progress is None:
        raise InputError(
            f"run {run_id!r} of {ref} is not recorded (expired, or another campaign's)", field="--run"
        )
    report = progress.to_report()
    qa = None
    if progress.complete:
        loaded, zone_contracts = resolve_campaign(ref, client, zones)
        qa = run_qa(ZoneSetStore(client), loaded, zone_contracts)
        report.verdict = qa.verdict
    if as_json:
        out = {"progress": progress.model_dump(mode="json"), "report": report.model_dump(mode="json")}
        print(json.dumps(out, indent=2))
    else:
        record, done = progress.record, progress.count("processed")
        print(
            f"run {record.run_id} of {ref} ({record.provider}): {progress.status.value}, "
            f"{done}/{record.total} accounts processed ({done / record.total:.0%}); "
            f"{progress.count('entries_done')}/{record.entries} entries, "
            f"{progress.pending_entries} in flight, {progress.count('dead_lettered')} dead-lettered"
        )
        print(
            f"  published {report.published}, unchanged {report.unchanged}, deferred {report.deferred}, "
            f"failed {len(report.failed)}" + (f", resumed {report.resumed}" if report.resumed else "")
        )
        if progress.by_worker:
            print("  by worker: " + ", ".join(f"{k} {v}" for k, v in sorted(progress.by_worker.items())))
        if qa is not None:
            print_run_report(report)
            print(f"  QA verdict: {qa.verdict} (details: welcomemat qa {ref})")
    if qa is None:
        return 0
    return 1 if qa.verdict == "NO GO" or report.failed else 0
