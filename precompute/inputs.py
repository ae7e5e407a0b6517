"""The campaign inputs a run reads, loaded one way for `precompute` and `welcomemat validate`.

Zone contracts ▸ the campaign, checked against them ▸ ``tenant.yaml`` (``--tenant-policy``,
else the one beside the campaign, if any) ▸ policy precedence (a campaign may tighten the
tenant policy, never loosen it). `check_campaign_inputs` finds every problem in one pass;
`load_campaign_inputs` refuses with them. Both commands call these two functions, so
`welcomemat validate` passing means `precompute` will not refuse the same inputs.

One problem never hides another: a campaign refused only for problems between its fields (a
voice profile to rebuild, a pattern slot, a CTA link) is still read as written
(`welcomemat.campaign.contract.draft_campaign`), and its theme, tenant precedence, segment copy and
patterns are checked as they would be, so one `validate` lists them all. The zone contracts a
run uses take the campaign's own fact types in the zones its patterns name
(`welcomemat.campaign.declared_fact_types.widen_zone_contracts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from precompute.assemble import fallback_copy_problems, neutral_context
from precompute.claims.composer_patterns import pattern_claim_problems
from precompute.claims.grounding import approved_word_problem
from precompute.context import EffectivePolicy, GovernedContext
from precompute.policy import (
    TenantPolicy,
    check_tenant_policy,
    policy_as_written,
    policy_problems,
)
from precompute.providers.offline import OfflineComposer
from precompute.specifics import build_vocabulary
from welcomemat.campaign.contract import Campaign, check_campaign, draft_campaign
from welcomemat.campaign.declared_fact_types import widen_zone_contracts
from welcomemat.campaign.experiment_assignment import variant_campaign
from welcomemat.errors import ContractError, ContractProblems, InputError
from welcomemat.theme.folder import Theme, ThemeCheck, load_campaign_theme
from welcomemat.validation_errors import dotted
from welcomemat.yamlfile import line_of_field
from welcomemat.zones.contract import ZoneContract, check_zone_contracts

__all__ = [
    "TENANT_FILE_NAME",
    "CampaignInputs",
    "InputsCheck",
    "check_campaign_inputs",
    "find_zones_folder",
    "load_campaign_inputs",
    "tenant_policy_path",
]

TENANT_FILE_NAME = "tenant.yaml"  # looked for beside campaign.yaml when --tenant-policy is not given


@dataclass(frozen=True)
class CampaignInputs:
    """Everything a run needs besides the accounts, checked together."""

    campaign: Campaign
    zones: dict[str, ZoneContract]
    tenant: TenantPolicy | None
    tenant_file: str | None
    policy: EffectivePolicy
    theme: Theme | None = None  # the campaign's own branding, checked (docs/campaigns.md: Own branding)


@dataclass(frozen=True)
class InputsCheck:
    """What checking found: the inputs when nothing is wrong, else every problem (by file, then line)."""

    inputs: CampaignInputs | None
    problems: tuple[InputError, ...]
    # The campaign when it loads; refused only for problems between its fields, as written (a draft).
    campaign: Campaign | None = None
    zones: dict[str, ZoneContract] | None = None  # the zone contracts that load
    tenant_file: str | None = None  # the tenant.yaml read, if there is one
    theme: Theme | None = None  # the campaign's theme, when it names one and it passes
    # The effective policy as written (precedence problems are in `problems`), when the campaign reads.
    policy: EffectivePolicy | None = None
    tenant: TenantPolicy | None = None  # the tenant.yaml read, when it loads (its `ip_ranges` rules)


def find_zones_folder(campaign_path: Path, zones: str | None) -> Path:
    """`--zones`, else `zones/` beside the campaign, here, or beside the campaign's folder.

    The campaign's own folder first: a campaign made by `welcomemat init` carries its contracts,
    and validating it from a clone of the repository must not check it against the repository's.
    """
    if zones is not None:
        return Path(zones)
    for candidate in (campaign_path.parent / "zones", Path("zones"), campaign_path.parent.parent / "zones"):
        if candidate.is_dir():
            return candidate
    raise InputError("no zone contracts folder found; pass --zones DIR", file=campaign_path)


def tenant_policy_path(campaign_path: Path, tenant_file: str | None) -> Path:
    return Path(tenant_file) if tenant_file else campaign_path.parent / TENANT_FILE_NAME


def _in_file_order(problems: list[InputError]) -> tuple[InputError, ...]:
    """Grouped by file in the order the files were read, each file's problems by line."""
    order: dict[str | None, int] = {}
    for problem in problems:
        order.setdefault(problem.file, len(order))
    return tuple(sorted(problems, key=lambda p: (order[p.file], p.line or 0)))


def check_campaign_inputs(
    campaign_path: Path, zones_dir: str | None, tenant_file: str | None, check_theme: ThemeCheck | None = None
) -> InputsCheck:
    """Load zone contracts, campaign, its theme, tenant policy and precedence; every problem, none raised.

    `check_theme`: the renderer's checks of a theme's template (the CLI passes them in: this
    layer does not render pages); without it a theme gets the file checks only.
    """
    problems: list[InputError] = []
    zones: dict[str, ZoneContract] | None = None
    unreadable: frozenset[str] = frozenset()
    try:
        folder = find_zones_folder(campaign_path, zones_dir)
    except InputError as exc:
        problems.append(exc)
    else:
        checked = check_zone_contracts(folder)
        problems += checked.problems
        zones, unreadable = dict(checked.contracts), checked.unreadable
        if not zones and not unreadable:
            zones = None  # no folder or no files: already reported; check the campaign on its own

    campaign, found = check_campaign(campaign_path, zones, unreadable_zones=unreadable)
    problems += found
    # Refused for problems between its fields only: read as written, so the checks below still run.
    subject = campaign if campaign is not None else draft_campaign(campaign_path)
    if subject is not None and zones is not None:
        zones = widen_zone_contracts(zones, subject.fact_types, subject.patterns)
    shown = subject is not None and zones is not None and set(subject.page_zone_ids()) <= zones.keys()
    theme: Theme | None = None
    if subject is not None and zones is not None and (campaign is not None or shown):
        try:
            theme = load_campaign_theme(subject, campaign_path, zones, check_theme)
        except ContractError as exc:
            problems.append(exc)

    tenant_path = tenant_policy_path(campaign_path, tenant_file)
    tenant: TenantPolicy | None = None
    if tenant_path.is_file():
        tenant, found = check_tenant_policy(tenant_path)
        problems += found
    elif tenant_file:
        problems.append(InputError("tenant policy file not found", file=tenant_path, field="--tenant-policy"))
    tfile = str(tenant_path) if tenant is not None else None
    read_tenant = str(tenant_path) if tenant_path.is_file() else None

    if subject is None:
        return InputsCheck(None, _in_file_order(problems), None, zones, read_tenant, theme, tenant=tenant)
    # With a tenant.yaml that is itself refused, the hard rules are still checked.
    precedence = policy_problems(subject, tenant, campaign_file=str(campaign_path), tenant_file=tfile)
    problems += precedence
    policy = policy_as_written(subject, tenant, campaign_file=str(campaign_path), tenant_file=tfile)
    if campaign is not None and zones is not None and not problems:
        copy_problems = _fallback_copy_problems(campaign_path, campaign, zones, policy)
        if not copy_problems:
            inputs = CampaignInputs(
                campaign=campaign, zones=zones, tenant=tenant, tenant_file=tfile, policy=policy, theme=theme
            )
            return InputsCheck(inputs, (), campaign, zones, read_tenant, theme, policy, tenant=tenant)
        problems += copy_problems
    elif zones is not None and _copy_checkable(subject, zones, problems):
        problems += _fallback_copy_problems(campaign_path, subject, zones, policy)
    return InputsCheck(
        None, _in_file_order(problems), subject, zones, read_tenant, theme, policy, tenant=tenant
    )


# Fields whose problems leave segment and default copy unfit to check (a zone without copy or
# contract, a claim class no rule knows): those problems are reported, the copy checks wait.
_COPY_FIELDS = ("pages", "default_copy", "segments", "ctas", "prohibited_claims", "link_allowlist")


def _copy_checkable(
    campaign: Campaign, zones: Mapping[str, ZoneContract], problems: list[InputError]
) -> bool:
    """Whether the copy checks can run on a campaign that has other problems."""
    if not set(campaign.page_zone_ids()) <= zones.keys():
        return False
    return not any((p.field or "").split(".")[0] in _COPY_FIELDS for p in problems)


def _fallback_copy_problems(
    campaign_path: Path, campaign: Campaign, zones: dict[str, ZoneContract], policy: EffectivePolicy
) -> list[InputError]:
    """Segment and default copy through the checks a run puts them through before it starts, and
    the patterns no fact of their type could let through (`precompute.claims.composer_patterns`).

    Human-written copy is what every visitor without a personal line sees: a banned phrase or
    an unsupported claim in it is refused now, with its line, not when a run is under way.
    """
    # The policy's checks of copy do not depend on the day; any `now` gives the same answer.
    now = datetime.now(UTC)
    vocabulary = build_vocabulary(campaign)
    found: list[tuple[tuple[str | int, ...], str]] = list(
        fallback_copy_problems(campaign, zones, policy, OfflineComposer(), vocabulary, now=now)
    )
    neutral = neutral_context(campaign, policy, now.date())
    found += pattern_claim_problems(campaign, zones, policy, vocabulary, neutral)
    found += _variant_pattern_problems(campaign, zones, policy, neutral)
    for i, word in enumerate(campaign.approved_words):
        problem = approved_word_problem(word)
        if problem is not None:
            found.append((("approved_words", i), problem))
    file = str(campaign_path)
    return [
        ContractError(message, file=file, line=line_of_field(file, loc), field=dotted(loc))
        for loc, message in found
    ]


def _variant_pattern_problems(
    campaign: Campaign, zones: Mapping[str, ZoneContract], policy: EffectivePolicy, neutral: GovernedContext
) -> list[tuple[tuple[str | int, ...], str]]:
    """A copy variant's patterns through the same refusal as the campaign's, at the variant's line."""
    experiment = campaign.experiment
    if experiment is None:
        return []
    found: list[tuple[tuple[str | int, ...], str]] = []
    for i, variant in enumerate(experiment.variants):
        written = variant_campaign(campaign, variant)
        if written is campaign or not variant.patterns:
            continue
        for loc, message in pattern_claim_problems(
            written, zones, policy, build_vocabulary(written), neutral
        ):
            _, fact_type, zone_id, j = loc
            if zone_id == experiment.zone and fact_type in variant.patterns:
                found.append((("experiment", "variants", i, "patterns", fact_type, j), message))
    return found


def load_campaign_inputs(
    campaign_path: Path, zones_dir: str | None, tenant_file: str | None, check_theme: ThemeCheck | None = None
) -> CampaignInputs:
    """The checked inputs; ContractProblems (reading as the first problem) when anything is wrong."""
    checked = check_campaign_inputs(campaign_path, zones_dir, tenant_file, check_theme)
    if checked.inputs is None:
        raise ContractProblems(checked.problems)
    return checked.inputs
