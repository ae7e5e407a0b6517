"""Policy precedence: hard rules ▸ tenant policy ▸ campaign ▸ zone contract.

Each level may tighten the one above it, never loosen it. A brand team writes the tenant
policy (``tenant.yaml``) once; campaign authors then cannot, by accident or in a hurry,
widen a signal window, lower the confidence bar, or drop a banned phrase the brand has
ruled out. A campaign that tries is refused at load, with the file, line, field and the
rule it broke, rather than quietly corrected: a silent fix would hide the mistake from the
person who made it.

How the levels combine into the :class:`EffectivePolicy` the trust policy and the checks
use:

* signal windows: the campaign's, each at most the tenant's maximum for that type and the
  hard maximum (refused otherwise);
* minimum fact confidence: the higher of tenant and campaign. A campaign that states a
  lower one is refused; one that does not state it inherits the tenant's;
* checks: the hard ones always run; the tenant, the campaign and the zone contract may only
  add (`precompute.check_precedence`, the one function that combines them);
* banned phrases, banned openers, prohibited claims: the union of every level, so no
  lower level can remove one (compared case- and spacing-insensitively). The banned openers
  shipped with Welcomemat (`welcomemat.campaign.openers`) are the hard level of openers; a file that
  tries to drop one is refused when it loads.

Zone contracts (the lowest level) only add limits of their own at check time.
"""

from __future__ import annotations

from collections.abc import Iterable

from precompute.check_precedence import added_checks
from precompute.claims.classes import KNOWN_CLAIM_CLASSES
from precompute.context import EffectivePolicy
from welcomemat.campaign.contract import Campaign
from welcomemat.campaign.openers import DEFAULT_BANNED_OPENERS
from welcomemat.campaign.sections import MAX_SIGNAL_WINDOW_DAYS, Confidence

# The tenant.yaml format is the core's, with the other input formats; re-exported here, where
# the precedence it takes part in lives.
from welcomemat.campaign.tenant_policy import TenantPolicy, check_tenant_policy, load_tenant_policy
from welcomemat.errors import ContractError, ContractProblems
from welcomemat.yamlfile import line_of_field

__all__ = [
    "HARD_BANNED_PHRASES",
    "HARD_MAX_SIGNAL_WINDOW_DAYS",
    "HARD_PROHIBITED_CLAIMS",
    "HARD_RULE",
    "TenantPolicy",
    "build_policy",
    "check_tenant_policy",
    "load_tenant_policy",
    "policy_as_written",
    "policy_problems",
]

HARD_RULE = "hard rule"  # the source named for rules that live in code
HARD_MAX_SIGNAL_WINDOW_DAYS = MAX_SIGNAL_WINDOW_DAYS  # days; the campaign loader enforces it too
# Phrases that tell a visitor they are being watched: wrong for every tenant, whatever the brand.
HARD_BANNED_PHRASES: tuple[str, ...] = (
    "we noticed you visited",
    "we have been tracking",
    "we've been tracking",
)
# Customer status is never a sourced, dated fact in a research record, so a line implying
# the account already buys from us could only be made up (DESIGN.md: never a made-up fact).
# Other claim classes (partnership, guaranteed outcomes) are brand decisions: tenant or campaign.
HARD_PROHIBITED_CLAIMS: tuple[str, ...] = ("customer_status",)

_DEFAULT_TENANT_FILE = "tenant.yaml"
_DEFAULT_CAMPAIGN_FILE = "campaign.yaml"
_TIGHTEN_ONLY = "a campaign may tighten tenant policy, never loosen it"


def _refuse(message: str, loc: tuple[int | str, ...], campaign_file: str | None) -> ContractError:
    field = ".".join(map(str, loc)) or None
    return ContractError(message, file=campaign_file, line=line_of_field(campaign_file, loc), field=field)


def _check_claim_classes(claims: Iterable[str], file: str | None) -> Iterable[ContractError]:
    """A claim class no rule can detect would be a prohibition that checks nothing: refuse it.

    In `tenant.yaml` as in `campaign.yaml`: a brand rule that silently checks nothing is worse
    than one refused with its line.
    """
    for i, claim in enumerate(claims):
        if claim not in KNOWN_CLAIM_CLASSES:
            yield _refuse(
                f"prohibited claim class {claim!r} is unknown; known classes: "
                f"{', '.join(sorted(KNOWN_CLAIM_CLASSES))}",
                ("prohibited_claims", i),
                file,
            )


def _check_tenant_id(
    campaign: Campaign, tenant: TenantPolicy, campaign_file: str | None, tfile: str
) -> Iterable[ContractError]:
    if campaign.tenant != tenant.tenant:
        yield _refuse(
            f"campaign tenant {campaign.tenant!r} does not match the tenant policy's {tenant.tenant!r} "
            f"({tfile} tenant): a campaign is governed by its own tenant's policy only",
            ("tenant",),
            campaign_file,
        )


def _check_windows(
    campaign: Campaign, tenant: TenantPolicy | None, campaign_file: str | None, tfile: str
) -> Iterable[ContractError]:
    # The campaign's own types (`fact_types`) have their window in their declaration; the
    # tenant's ceilings and the hard maximum hold for them as for the built-in ones.
    where = campaign.window_fields()
    for fact_type, days in campaign.signal_windows().items():
        loc = where[fact_type]
        if days > HARD_MAX_SIGNAL_WINDOW_DAYS:
            yield _refuse(
                f"{fact_type} window of {days} days exceeds the hard maximum of "
                f"{HARD_MAX_SIGNAL_WINDOW_DAYS} days: older than that is history, not a signal",
                loc,
                campaign_file,
            )
            continue
        ceiling = tenant.max_signal_windows_days.get(fact_type) if tenant is not None else None
        if ceiling is not None and days > ceiling:
            yield _refuse(
                f"{fact_type} window of {days} days exceeds the tenant's maximum of {ceiling} days "
                f"({tfile} max_signal_windows_days.{fact_type}): {_TIGHTEN_ONLY}",
                loc,
                campaign_file,
            )


def _check_min_confidence(
    campaign: Campaign, tenant: TenantPolicy | None, campaign_file: str | None, tfile: str
) -> Iterable[ContractError]:
    floor = tenant.min_confidence if tenant is not None else None
    own = campaign.min_confidence
    if floor is not None and own.rank < floor.rank and "min_confidence" in campaign.model_fields_set:
        yield _refuse(
            f"min_confidence {own} is below the tenant's minimum of {floor} ({tfile} min_confidence): "
            f"{_TIGHTEN_ONLY}",
            ("min_confidence",),
            campaign_file,
        )


def _min_confidence(
    campaign: Campaign, tenant: TenantPolicy | None, campaign_file: str | None, tfile: str
) -> tuple[Confidence, str]:
    """The effective minimum fact confidence and the file it comes from (precedence checked)."""
    floor = tenant.min_confidence if tenant is not None else None
    own = campaign.min_confidence
    if floor is None or own.rank >= floor.rank:
        return own, campaign_file or _DEFAULT_CAMPAIGN_FILE
    return floor, tfile  # the campaign left it at the default: it inherits the tenant's


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _union(
    rule: str, levels: Iterable[tuple[str, Iterable[str]]], sources: dict[str, str]
) -> tuple[str, ...]:
    """Every level's entries, highest level first; an entry's source is the highest level naming it."""
    seen: dict[str, str] = {}
    for source, entries in levels:
        for entry in entries:
            key = _fold(entry)
            if key and key not in seen:
                seen[key] = entry
                sources[f"{rule}:{entry}"] = source
    return tuple(seen.values())


def policy_problems(
    campaign: Campaign,
    tenant: TenantPolicy | None,
    *,
    campaign_file: str | None = None,
    tenant_file: str | None = None,
) -> list[ContractError]:
    """Every way the campaign loosens a higher level (file = ``campaign_file``, with line and field)."""
    tfile = tenant_file or _DEFAULT_TENANT_FILE
    problems: list[ContractError] = []
    if tenant is not None:
        problems += _check_tenant_id(campaign, tenant, campaign_file, tfile)
    problems += _check_claim_classes(campaign.prohibited_claims, campaign_file)
    if tenant is not None:
        problems += _check_claim_classes(tenant.prohibited_claims, tenant_file)
    problems += _check_windows(campaign, tenant, campaign_file, tfile)
    problems += _check_min_confidence(campaign, tenant, campaign_file, tfile)
    problems.sort(key=lambda p: (p.file != campaign_file, p.line or 0))
    return problems


def build_policy(
    campaign: Campaign,
    tenant: TenantPolicy | None,
    *,
    campaign_file: str | None = None,
    tenant_file: str | None = None,
) -> EffectivePolicy:
    """Combine hard rules, tenant policy and campaign; refuse a campaign that loosens a higher level.

    Raises ContractProblems (reading as the first: file = ``campaign_file``, with line and
    field) naming each rule broken; ``policy_problems`` lists them without raising.
    """
    problems = policy_problems(campaign, tenant, campaign_file=campaign_file, tenant_file=tenant_file)
    if problems:
        raise ContractProblems(problems)
    return policy_as_written(campaign, tenant, campaign_file=campaign_file, tenant_file=tenant_file)


def policy_as_written(
    campaign: Campaign,
    tenant: TenantPolicy | None,
    *,
    campaign_file: str | None = None,
    tenant_file: str | None = None,
) -> EffectivePolicy:
    """The effective policy as `build_policy` combines it, without refusing a loosened rule.

    What `welcomemat validate` checks copy and facts against while it also reports, on their
    own, the rules the campaign loosens: one problem never hides another. Never for a run.
    """
    tfile = tenant_file or _DEFAULT_TENANT_FILE
    cfile = campaign_file or _DEFAULT_CAMPAIGN_FILE
    minimum, minimum_source = _min_confidence(campaign, tenant, campaign_file, tfile)
    sources: dict[str, str] = {"min_confidence": minimum_source}
    sources.update({f"signal_windows_days.{t}": cfile for t in campaign.signal_windows()})
    # The lists every level adds to, the hard rules first: field -> the hard rules' entries.
    hard_rules = {
        "banned_phrases": HARD_BANNED_PHRASES,
        "banned_openers": DEFAULT_BANNED_OPENERS,
        "prohibited_claims": HARD_PROHIBITED_CLAIMS,
    }
    phrases, openers, claims = (
        _union(
            field,
            [(HARD_RULE, hard), (tfile, getattr(tenant, field, ())), (cfile, getattr(campaign, field))],
            sources,
        )
        for field, hard in hard_rules.items()
    )
    checks = added_checks(tenant.checks if tenant is not None else (), campaign.checks)
    sources.update({f"checks:{c}": tfile for c in (tenant.checks if tenant is not None else ())})
    sources.update({f"checks:{c}": cfile for c in campaign.checks if f"checks:{c}" not in sources})
    return EffectivePolicy(
        signal_windows_days=campaign.signal_windows(),
        min_confidence=minimum,
        banned_phrases=phrases,
        banned_openers=openers,
        prohibited_claims=claims,
        sources=sources,
        checks=checks,
    )
