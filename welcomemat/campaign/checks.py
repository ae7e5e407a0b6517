"""The checks across a campaign's sections, each a pure function of the sections it reads.

`Campaign.cross_field_problems` runs them on the fields that passed on their own (a field
that failed is reported as such, not again here), so one `welcomemat validate` lists every
problem. Each appends what it finds, with the field path, to the list it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from welcomemat.campaign.declared_fact_types import FactTypeDeclaration
from welcomemat.campaign.experiments import Experiment
from welcomemat.campaign.fact_types import FACT_TYPES, FactType
from welcomemat.campaign.patterns import pattern_problems, unknown_fact_type_problem
from welcomemat.campaign.sections import Cta, PageSpec, ZoneCopy
from welcomemat.campaign.voice import MAX_VOICE_EXAMPLES, MIN_VOICE_EXAMPLES, VoiceProfile, examples_sha256
from welcomemat.errors import ContractError
from welcomemat.security.urlgate import LOOPBACK_HOSTS, LinkAllowlist, browser_view, gate_link
from welcomemat.yamlfile import FieldProblem
from welcomemat.zones.contract import ZoneContract

__all__ = [
    "allowlist_or_problem",
    "check_copy",
    "check_ctas",
    "check_experiment",
    "check_fact_types",
    "check_patterns",
    "check_zones_exist",
    "is_snippet_origin",
    "snippet_origin_problems",
    "voice_problems",
]

_Patterns = Mapping[str, Mapping[str, tuple[str, ...]]]  # fact type -> zone id -> patterns


def is_snippet_origin(origin: str) -> bool:
    """An origin a campaign may list in `snippet_origins`: `https://host[:port]` with no
    path, query, fragment or userinfo; `http://` only for a loopback host."""
    view = browser_view(origin) if isinstance(origin, str) else None
    if view is None:
        return False
    scheme, host = view
    bare = origin.strip().rstrip("/")
    if bare.count("/") != 2 or any(c in bare for c in "?#@\\") or not host:
        return False
    return scheme == "https" or (scheme == "http" and host in LOOPBACK_HOSTS)


def snippet_origin_problems(origins: tuple[str, ...]) -> list[FieldProblem]:
    """Every `snippet_origins` entry that is not an https origin (http only for a loopback host)."""
    return [
        FieldProblem(
            ("snippet_origins", i),
            f"{origin!r} is not an https origin (scheme://host[:port], no path); "
            "http:// only for a loopback host (127.0.0.1, localhost, [::1])",
        )
        for i, origin in enumerate(origins)
        if not is_snippet_origin(origin)
    ]


def voice_problems(examples: tuple[str, ...], profile: VoiceProfile | None) -> list[FieldProblem]:
    """5..30 non-empty example lines, and a profile built from exactly them (or neither)."""
    out: list[FieldProblem] = []
    if examples and not MIN_VOICE_EXAMPLES <= len(examples) <= MAX_VOICE_EXAMPLES:
        out.append(
            FieldProblem(
                ("voice_examples",),
                f"needs {MIN_VOICE_EXAMPLES} to {MAX_VOICE_EXAMPLES} example lines, got {len(examples)}",
            )
        )
    out += [
        FieldProblem(("voice_examples", i), "an example line needs words")
        for i, line in enumerate(examples)
        if not any(c.isalnum() for c in line)
    ]
    build = "run `welcomemat voice build` on this file"
    if examples and profile is None:
        out.append(FieldProblem(("voice_examples",), f"voice_examples without a voice_profile: {build}"))
    elif profile is not None and not examples:
        out.append(FieldProblem(("voice_profile",), "voice_profile without voice_examples to build it from"))
    elif profile is not None and profile.examples_sha256 != examples_sha256(examples):
        out.append(
            FieldProblem(("voice_profile",), f"voice_profile was built from other voice_examples: {build}")
        )
    return out


def allowlist_or_problem(hosts: tuple[str, ...], out: list[FieldProblem]) -> LinkAllowlist | None:
    """The `link_allowlist` as the link gate reads it; None (and the problem in `out`) when refused."""
    try:
        return LinkAllowlist.from_hosts(hosts)
    except ContractError as exc:
        out.append(FieldProblem(("link_allowlist",), exc.message))
        return None


def check_ctas(ctas: tuple[Cta, ...], allowlist: LinkAllowlist | None, out: list[FieldProblem]) -> set[str]:
    """Each CTA link passes the link gate and each id is unique; the CTA ids."""
    cta_ids: set[str] = set()
    for i, cta in enumerate(ctas):
        decision = gate_link(cta.href, allowlist) if allowlist is not None else None
        if decision is not None and not decision.allowed:
            out.append(
                FieldProblem(
                    ("ctas", i, "href"),
                    f"CTA {cta.id!r} link {cta.href!r} is refused ({decision.reason}); "
                    "CTA links must be https and on the campaign's link_allowlist",
                )
            )
        if cta.id in cta_ids:
            out.append(FieldProblem(("ctas", i, "id"), f"duplicate CTA id {cta.id!r}"))
        cta_ids.add(cta.id)
    return cta_ids


def check_copy(
    where: tuple[str, ...],
    copy: Mapping[str, ZoneCopy],
    shown: tuple[str, ...] | None,
    cta_ids: set[str] | None,
    zones: Mapping[str, ZoneContract | None] | None,
    out: list[FieldProblem],
) -> None:
    """Copy for every zone a page shows, naming known CTAs, within its zone contract's limits."""
    for zone_id in shown or ():
        if zone_id not in copy:
            out.append(FieldProblem(where, f"no copy for zone {zone_id!r}, which a page shows"))
    for zone_id, item in copy.items():
        loc = (*where, zone_id)
        if cta_ids is not None and item.cta is not None and item.cta not in cta_ids:
            out.append(FieldProblem(loc, f"CTA {item.cta!r} is not one of the campaign's CTAs"))
        contract = zones.get(zone_id) if zones is not None else None
        if contract is None:
            continue
        if contract.link and item.cta is None:
            out.append(FieldProblem(loc, f"zone {zone_id!r} carries a link: its copy must name a cta"))
        if not contract.fits(item.text):
            out.append(
                FieldProblem(
                    loc,
                    f"copy is over zone {zone_id!r} limits "
                    f"({contract.max_words} words, {contract.max_chars} characters)",
                )
            )


def check_zones_exist(
    pages: Mapping[str, PageSpec] | None,
    patterns: _Patterns | None,
    known: Set[str],
    out: list[FieldProblem],
) -> None:
    """Every zone a page (`pages`) or a pattern (`patterns`) names has a contract (`known`)."""
    if pages is not None:
        for page_id, page in pages.items():
            for i, zone_id in enumerate(page.zones):
                if zone_id not in known:
                    out.append(
                        FieldProblem(("pages", page_id, "zones", i), f"no zone contract for {zone_id!r}")
                    )
    if patterns is not None:
        for fact_type, by_zone in patterns.items():
            for zone_id in by_zone:
                if zone_id not in known:
                    out.append(
                        FieldProblem(("patterns", fact_type, zone_id), f"no zone contract for {zone_id!r}")
                    )


def _type_problem(fact_type: str, registry: Mapping[str, FactType] | None) -> str | None:
    """Why patterns of `fact_type` are refused; None when it is known, or may be declared in a
    `fact_types` that is itself refused (`registry` None: only built-in types can be judged)."""
    if registry is None:
        return None
    return unknown_fact_type_problem(fact_type, registry)


def _slot_problems(fact_type: str, pattern: str, registry: Mapping[str, FactType] | None) -> list[str]:
    # A type the registry does not know gets its pattern's shape checked only (its slots are the
    # refused `fact_types`' to say, or the type itself is refused once, by the caller).
    return pattern_problems(fact_type, pattern, FACT_TYPES if registry is None else registry)


def check_patterns(
    by_fact_type: Mapping[str, Mapping[str, tuple[str, ...]]],
    registry: Mapping[str, FactType] | None,
    out: list[FieldProblem],
) -> None:
    """Each pattern parses and names only slots its fact type fills (welcomemat/campaign/fact_types.py, or the
    campaign's own `fact_types`: `registry`)."""
    for fact_type, by_zone in by_fact_type.items():
        unknown = _type_problem(fact_type, registry)
        if unknown is not None:
            out.append(FieldProblem(("patterns", fact_type), unknown))
            continue
        for zone_id, patterns in by_zone.items():
            for i, pattern in enumerate(patterns):
                loc = ("patterns", fact_type, zone_id, i)
                out += [
                    FieldProblem(loc, problem) for problem in _slot_problems(fact_type, pattern, registry)
                ]


def _uses(
    fact_type: str, patterns: Mapping[str, Mapping[str, tuple[str, ...]]], experiment: Experiment | None
) -> bool:
    """Whether some pattern (the campaign's or a copy variant's) is written for `fact_type`."""
    if any(lines for lines in patterns.get(fact_type, {}).values()):
        return True
    return experiment is not None and any(v.patterns.get(fact_type) for v in experiment.variants)


def check_fact_types(
    declared: Mapping[str, FactTypeDeclaration] | None,
    windows: Mapping[str, int] | None,
    patterns: Mapping[str, Mapping[str, tuple[str, ...]]],
    experiment: Experiment | None,
    out: list[FieldProblem],
    *,
    unused_windows: bool = True,
) -> None:
    """The campaign's own fact types are new and used; every window is for a type a pattern uses.

    A window for a type no pattern can use is refused whatever the provider: it would let facts
    of the type be trusted that the offline composer can never state, and a model would state
    them in words no person wrote or approved. That rule is a load-time one (`unused_windows`):
    a campaign config published before it still decodes. `declared` or `windows` None: that
    field is refused on its own, and what depends on it is not judged.
    """
    for name, declaration in (declared or {}).items():
        if name in FACT_TYPES:
            out.append(
                FieldProblem(
                    ("fact_types", name),
                    f"{name!r} is a built-in fact type (its fields are fixed): give the campaign's own a "
                    "name of its own",
                )
            )
            continue
        if windows is not None and name in windows:
            out.append(
                FieldProblem(
                    ("signal_windows_days", name),
                    f"{name} is declared under fact_types, with its window there "
                    f"(fact_types.{name}.window_days: {declaration.window_days}): drop this entry",
                )
            )
        if not _uses(name, patterns, experiment):
            out.append(
                FieldProblem(
                    ("fact_types", name),
                    f"no pattern uses {name} facts: write them under patterns.{name} (a type no pattern "
                    "uses is never shown)",
                )
            )
    for fact_type in (windows or {}) if unused_windows else ():
        if declared is not None and fact_type in declared:
            continue  # reported above
        if declared is None and fact_type not in FACT_TYPES:
            continue  # it may be declared in the fact_types that is refused
        if _uses(fact_type, patterns, experiment):
            continue
        known = fact_type in FACT_TYPES or fact_type in (declared or {})
        what = "" if known else f" ({fact_type!r} is no fact type: built in, or declared under fact_types)"
        out.append(
            FieldProblem(
                ("signal_windows_days", fact_type),
                f"no pattern can use {fact_type} facts{what}: write patterns.{fact_type}, or drop this "
                "window (a window lets facts be trusted that no approved line states)",
            )
        )


def check_experiment(
    experiment: Experiment,
    shown: tuple[str, ...] | None,
    zones: Mapping[str, ZoneContract | None] | None,
    registry: Mapping[str, FactType] | None,
    out: list[FieldProblem],
) -> None:
    """Variant ids are distinct, the zone is one a page shows (and has a contract), every
    variant pattern passes the checks a campaign pattern passes, and a stopped experiment kept
    one of its variants."""
    if shown is not None and experiment.zone not in shown:
        out.append(FieldProblem(("experiment", "zone"), f"no page shows zone {experiment.zone!r}"))
    elif zones is not None and experiment.zone not in zones:
        out.append(FieldProblem(("experiment", "zone"), f"no zone contract for {experiment.zone!r}"))
    seen: set[str] = set()
    for i, variant in enumerate(experiment.variants):
        if variant.id in seen:
            out.append(
                FieldProblem(("experiment", "variants", i, "id"), f"duplicate variant id {variant.id!r}")
            )
        seen.add(variant.id)
        for fact_type, patterns in variant.patterns.items():
            where = ("experiment", "variants", i, "patterns", fact_type)
            unknown = _type_problem(fact_type, registry)
            if unknown is not None:
                out.append(FieldProblem(where, unknown))
                continue
            if not patterns:
                out.append(FieldProblem(where, "no patterns: leave the fact type out instead"))
            for j, pattern in enumerate(patterns):
                out += [
                    FieldProblem((*where, j), problem)
                    for problem in _slot_problems(fact_type, pattern, registry)
                ]
    if experiment.stopped is not None and experiment.stopped.keep not in seen:
        out.append(
            FieldProblem(
                ("experiment", "stopped", "keep"),
                f"no variant {experiment.stopped.keep!r}; the variants are {', '.join(sorted(seen))}",
            )
        )
