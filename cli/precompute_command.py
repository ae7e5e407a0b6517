"""The precompute side of the CLI: `precompute` (local or `--enqueue`), `qa`, `explain`,
`review`; `worker` and `precompute-status` are `cli.worker_command`, what a run and
QA print `cli.run_output`.

Imported lazily by `cli.commands`. Each function prints for a person (or JSON with
`--json`) and returns the exit code: 0 success, 1 the job ran and its verdict is NO GO or
it failed (a precompute in which the provider answered for no account and deferred some:
every model call failed), 2 bad usage or input (raised as InputError / ContractError /
ConfigError).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import redis

from cli.progress_bar import progress_bar
from cli.run_output import print_fact_refusals, print_qa, print_run_report
from precompute.check_precedence import zone_check_problems
from precompute.facts.refusals import FactRefusalTally
from precompute.findings import CohortCollector
from precompute.inputs import find_zones_folder, load_campaign_inputs
from precompute.provider_faults import every_call_failed
from precompute.providers.base import Provider
from precompute.publish import PageCheckFactory
from precompute.qa import run_qa
from precompute.report import MalformedRow
from precompute.run import PrecomputeRun
from welcomemat import keys
from welcomemat.bounded_json import iter_lines
from welcomemat.campaign.config import decode_campaign_config
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.guidelines import ActivationState, GuidelineStore, guideline_hash
from welcomemat.campaign.owner import read_ownership, refuse_other_tenant
from welcomemat.campaign.ref import is_campaign_file, resolve_campaign_ref
from welcomemat.errors import CampaignOwnerError, InputError, StoredValueError
from welcomemat.model_cost import PRICES_ENV_VAR, RunBudget
from welcomemat.records.account_records import read_account_record
from welcomemat.records.accounts import MAX_LINE_BYTES, read_accounts
from welcomemat.records.audit import AuditAction, Auditor, check_reason
from welcomemat.records.contact_workflow import contact_workflows
from welcomemat.records.erasure import suppress
from welcomemat.settings import Settings
from welcomemat.storage.connection import connect, resolve_redis
from welcomemat.theme.folder import ThemeCheck
from welcomemat.yamlfile import line_of_field
from welcomemat.zones.contract import ZoneContract
from welcomemat.zones.review import approve_held, decide, list_queue, roll_back, show
from welcomemat.zones.store import ZoneSetStore

__all__ = [
    "PROVIDERS",
    "make_provider",
    "resolve_campaign",
    "run_explain",
    "run_precompute",
    "run_qa_command",
    "run_review",
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

    A campaign id is its owner's (`welcomemat.campaign.ref`): another tenant's id is refused.
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
    (`welcomemat.campaign.owner.claim_campaign`) and refuses the same way.
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
    page_check: PageCheckFactory | None = None,
    budget: RunBudget | None = None,
) -> int:
    """`check_theme`: the renderer's checks of the campaign's theme (the CLI passes them in);
    `auditor`: who the audit log says published (default: `precompute`); `page_check`: builds
    the renderer's check of each account's own pages in the theme (`precompute.publish`);
    `budget` (`--budget`): start no account once the run's model tokens or cost reach it."""
    settings = Settings.from_env()
    accounts_path = Path(accounts)
    if not accounts_path.is_file():
        raise InputError("accounts file not found", file=accounts_path)
    inputs = load_campaign_inputs(Path(campaign), zones, tenant, check_theme)
    loaded, zone_contracts, policy = inputs.campaign, inputs.zones, inputs.policy
    for problem in zone_check_problems(zone_contracts, find_zones_folder(Path(campaign), zones)):
        print(f"warning: {problem}; this run runs them all (validate refuses it)", file=sys.stderr)
    writer = make_provider(
        provider, settings, concurrency=concurrency, deadline_s=deadline_s, self_review=self_review
    )
    _check_budget(budget, writer, settings, enqueue=enqueue)
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
        prices=settings.model_prices,
        budget=budget,
        ip_rules=inputs.tenant.ip_ranges if inputs.tenant is not None else None,
        page_check=(
            page_check(inputs.theme, loaded, zone_contracts)
            if page_check is not None and inputs.theme is not None
            else None
        ),
    )
    if enqueue:
        close()
        options = {"concurrency": concurrency, "deadline_s": deadline_s, "self_review": self_review}
        return _enqueue(run, accounts_path, provider_options=options, as_json=as_json)
    try:
        report = run.run(accounts_path)
    finally:
        close()
    facts = FactRefusalTally(client, loaded.tenant, loaded.campaign)
    qa = run_qa(ZoneSetStore(client), loaded, zone_contracts, facts=facts)
    report.verdict = qa.verdict
    if as_json:
        print(report.model_dump_json(indent=2))
    else:
        print_run_report(report)
        print(f"  QA verdict: {qa.verdict} (details: welcomemat qa {campaign})")
        print_fact_refusals(qa.fact_refusals)
    return 1 if qa.verdict == "NO GO" or report.failed or every_call_failed(report) else 0


def _check_budget(budget: RunBudget | None, writer: Provider, settings: Settings, *, enqueue: bool) -> None:
    """Refuse a `--budget` the run could not keep: on a distributed run (each worker would spend it),
    or in money for a model without a price (its cost cannot be counted)."""
    if budget is None:
        return
    if enqueue:
        raise InputError(
            "--budget applies to a local run; a distributed run (--enqueue) has none", field="--budget"
        )
    model = writer.usage().model
    if budget.usd is not None and model is not None and settings.model_prices.get(model) is None:
        raise InputError(
            f"a budget in money needs the model's price: {model!r} has none (set {PRICES_ENV_VAR}, "
            f"e.g. {model}=0.15/0.60, or give the budget in tokens, e.g. 100000tokens)",
            field="--budget",
        )


def run_qa_command(campaign: str, *, as_json: bool, zones: str | None, findings: bool = False) -> int:
    """`findings`: also the cohort findings (`precompute.findings`), in the text and the JSON."""
    client = _client(Settings.from_env())
    loaded, zone_contracts = resolve_campaign(campaign, client, zones)
    cohorts = CohortCollector(client, loaded, zone_contracts) if findings else None
    facts = FactRefusalTally(client, loaded.tenant, loaded.campaign)
    report = run_qa(
        ZoneSetStore(client), loaded, zone_contracts, now=datetime.now(UTC), cohorts=cohorts, facts=facts
    )
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
    try:
        shared = read_account_record(client, loaded.tenant, account)
    except StoredValueError as exc:  # the published record still explains; only the workflow is lost
        print(f"warning: skipped {exc}", file=sys.stderr)
        shared = None
    if shared is not None:  # where each contact stands, from the live records
        unreadable: list[StoredValueError] = []  # skipped, each said on stderr: the rest still explains
        workflows = contact_workflows(client, shared, loaded.campaign, current, problems=unreadable)
        record["workflow"] = [w.as_json() for w in workflows]
        for problem in unreadable:
            print(f"warning: skipped {problem}", file=sys.stderr)
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

    read = read_accounts(accounts_path, run.ip_rules)
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
