"""`campaign.yaml`: the campaign contract, checked whole at load.

A campaign is refused at load, with file, line and field, when it could later put an
unsafe or broken page in front of a visitor: a CTA link off its own allowlist, a segment
whose copy misses a zone a page shows, copy over a zone's limits, a zone no contract
defines, a pattern slot no fact fills. Checking here means the renderer never has to guess.

Every problem is reported, not the first: the cross-field checks collect what they find,
and when some fields fail on their own, the checks that read only valid fields still run
(`check_campaign`), so one `welcomemat validate` shows the whole list. The sections (CTAs,
copy, pages, policies) are `welcomemat.campaign.sections`; the checks across them,
`welcomemat.campaign.checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    StringConstraints,
    ValidationInfo,
    model_validator,
)

from welcomemat.bounded_time import BoundedDay
from welcomemat.campaign.checks import (
    allowlist_or_problem,
    check_copy,
    check_ctas,
    check_experiment,
    check_fact_types,
    check_patterns,
    check_zones_exist,
    snippet_origin_problems,
    voice_problems,
)
from welcomemat.campaign.declared_fact_types import FactTypeDeclaration, FactTypeName, fact_type_registry
from welcomemat.campaign.experiments import Experiment
from welcomemat.campaign.fact_types import FactType
from welcomemat.campaign.openers import refuse_opener_overrides
from welcomemat.campaign.sections import (
    MAX_SIGNAL_WINDOW_DAYS,
    STRICT,
    ApprovalPolicy,
    Confidence,
    Cta,
    PageSpec,
    ProofItem,
    QaThresholds,
    RiskTier,
    SegmentCopy,
    SellerAlerts,
    SignalWindowDays,
    SnippetOptions,
    ZoneCopy,
)
from welcomemat.campaign.voice import MAX_VOICE_EXAMPLES, MIN_VOICE_EXAMPLES, VoiceProfile
from welcomemat.errors import ContractError, ContractProblems
from welcomemat.ids import OpaqueId
from welcomemat.security.urlgate import LinkAllowlist, gate_link
from welcomemat.yamlfile import FieldProblem, FieldProblems, check_yaml_model, read_yaml, valid_fields
from welcomemat.zones.contract import CHECK_NAMES_SCHEMA, AddedChecks, ZoneContract

__all__ = [
    "CONTINUATION_PAGE_ID",
    "LANDING_PAGE_ID",
    "Campaign",
    "check_campaign",
    "draft_campaign",
    "load_campaign",
]
# The page a direct-mail QR scan lands on (`/q/{token}` redirects to `/c/{campaign}/continue`):
# a campaign without it cannot issue QR links.
CONTINUATION_PAGE_ID = "continuation"
# The page a personal link opens (`/c/{campaign}`).
LANDING_PAGE_ID = "landing"


class Campaign(BaseModel):
    """The whole campaign contract."""

    model_config = STRICT

    tenant: OpaqueId = Field(
        description="The brand the campaign belongs to: part of its Redis keys and tokens; must match "
        "`tenant.yaml`'s `tenant` when the precompute job reads one.",
        examples=["acme"],
    )
    campaign: OpaqueId = Field(
        description="The campaign id: in page URLs (`/c/{campaign}`), tokens and Redis keys. Unique per "
        "deployment: the first tenant to publish an id owns it, and another tenant's publish of it "
        "is refused (exit 2).",
        examples=["q4-pipeline"],
    )
    name: str = Field(
        min_length=1,
        description="The campaign's name, for people and the model provider.",
        examples=["Q4 pipeline"],
    )
    guideline_version: str = Field(
        min_length=1,
        description="Version of the writing guidelines the copy follows; stored on every zone set. Quote a "
        'date (`"2026-11-01"`): unquoted, YAML reads a date, which is refused.',
        examples=["2026-11-01"],
    )
    risk_tier: RiskTier = Field(
        default="standard",
        description="How much a change of the campaign's guidelines (`welcomemat guidelines promote`) needs: "
        "`standard`, one approver; `high`, two steps by two different people: a sign-off of the "
        "candidate report's diagnosis (`welcomemat guidelines signoff`), then the promotion.",
        examples=["high"],
    )
    site_base_url: str = Field(
        description="The customer's site: https, its host on `link_allowlist`; the sequencer export's link "
        "when a link zone has none.",
        examples=["https://www.acmerevenue.example/"],
    )
    link_allowlist: tuple[str, ...] = Field(
        min_length=1,
        description="Plain host names a rendered link may point to (exact match, https only; unicode or "
        "punycode); checked at precompute and again at render.",
        examples=[["www.acmerevenue.example", "meet.acmerevenue.example"]],
    )
    snippet_origins: tuple[str, ...] = Field(
        default=(),
        description="Origins of the sites that embed the snippet (CORS): `https://host[:port]`, no path; "
        "`http://` only for 127.0.0.1, localhost or [::1].",
        examples=[["https://www.acmerevenue.example"]],
    )
    snippet: SnippetOptions = Field(
        default=SnippetOptions(),
        description="What the snippet may do to the site's own copy: see `SnippetOptions`. Unset, it "
        "leaves the site's words for anonymous visitors and wherever the rung would be the default.",
        examples=[{"replace_default": True}],
    )
    holdout_fraction: float = Field(
        ge=0.0,
        le=0.5,
        description="Share of accounts held out (shown segment copy, to measure lift), chosen by a stable "
        "hash of tenant, campaign and account.",
        examples=[0.1],
    )
    min_confidence: Confidence = Field(
        default=Confidence.MEDIUM,
        description="Lowest fact `confidence` the trust policy accepts. A `tenant.yaml` `min_confidence` is "
        "a floor: stating a lower value here is refused; leaving this out inherits a higher floor.",
        examples=["medium"],
    )
    signal_windows_days: dict[str, SignalWindowDays] = Field(
        min_length=1,
        description="Per built-in fact type, how many days after its `published_at` a fact stays usable; "
        "facts of a type not listed are never trusted. Only for a type some pattern uses (a window for a "
        "type no pattern can use is refused, whatever the provider); a type declared under `fact_types` "
        "has its window there.",
        examples=[{"funding": 30, "hiring": 45}],
        json_schema_extra={
            "additionalProperties": {"type": "integer", "minimum": 1, "maximum": MAX_SIGNAL_WINDOW_DAYS}
        },
    )
    banned_phrases: tuple[str, ...] = Field(
        default=(),
        description="Phrases zone text may not contain (case, spacing and punctuation aside), personal, "
        "segment and default copy alike, in every zone (the `banned_phrases` check always runs); added to "
        "`tenant.yaml`'s and the hard-coded ones.",
        examples=[["game-changer", "synergy"]],
    )
    banned_openers: tuple[str, ...] = Field(
        default=(),
        description="Words zone text and each of its sentences may not open with (a greeting before "
        "them aside; the `banned_phrases` check); added to `tenant.yaml`'s and the ones shipped with "
        "Welcomemat, which always apply.",
        examples=[["Did you know"]],
    )
    prohibited_claims: tuple[str, ...] = Field(
        default=(),
        description="Claim classes no zone text may make, added to `tenant.yaml`'s and the hard "
        "`customer_status`: `customer_status`, `partnership` or `guaranteed_outcome` (the precompute job "
        "refuses any other).",
        examples=[["partnership", "guaranteed_outcome"]],
    )
    checks: AddedChecks = Field(
        default=(),
        description="Checks every zone of the campaign adds to the hard ones, which always run: "
        "`one_question`, `confidence` (docs/precompute.md: The checks). A campaign may add checks, "
        "never remove one.",
        examples=[["one_question"]],
        json_schema_extra=CHECK_NAMES_SCHEMA,
    )
    approved_words: tuple[Annotated[str, StringConstraints(min_length=1, max_length=40)], ...] = Field(
        default=(),
        max_length=500,
        description="Plain words a personal line may use beside those of its cited facts, the account and "
        "the approved copy (docs/precompute.md: Grounding): words that say nothing about the account or "
        "the reader (`sooner`, `smoother`). A word that asserts an event, a relationship, the reader's "
        "words or role (`customer`, `acquired`, `loved`) is refused: it must come from a fact.",
        examples=[["sooner", "smoother", "onboarding"]],
    )
    vocabulary: tuple[str, ...] = Field(
        default=(),
        description="The campaign's own terms (product names, acronyms, rounds): names the checks accept "
        "without a fact to support them, and words given to the model provider.",
        examples=[["Acme Revenue", "SDR", "Series A"]],
    )
    voice: str = Field(
        default="",
        description="How the copy should sound, in plain words; given to the model provider (the offline "
        "composer does not use it).",
        examples=["Plain, specific and warm. Short sentences."],
    )
    voice_examples: tuple[str, ...] = Field(
        default=(),
        description=f"{MIN_VOICE_EXAMPLES} to {MAX_VOICE_EXAMPLES} lines that sound like the campaign, "
        "strong and everyday ones: `welcomemat voice build` derives `voice_profile` from them, and a model "
        "provider is shown them as examples of the voice. Leave out for no voice profile.",
        examples=[["New sellers, productive in weeks, not quarters.", "Hiring SDRs? We ramp each one fast."]],
    )
    voice_profile: VoiceProfile | None = Field(
        default=None,
        description="Written by `welcomemat voice build` from `voice_examples` (never by hand): sentence "
        "length, openers, hedging, person, punctuation and reading level, which every personal zone is "
        "checked against (`off_voice`). Refused when built from other examples.",
        examples=[
            {
                "examples": 10,
                "examples_sha256": "5d41e5400e60139dd0b5b8ca4279b2fe2518f71a3547b22541b672bd4396fd57",
                "sentence_words": {"min": 2, "median": 11, "max": 16},
                "openers": ["new", "your", "a"],
                "opener_kinds": {"we": 0.07, "you": 0.14, "other": 0.79},
                "hedges_per_line": {"min": 0, "median": 0, "max": 0},
                "person": {"i": 0, "we": 4, "you": 4},
                "exclamations_per_line": {"min": 0, "median": 0, "max": 0},
                "questions_per_line": {"min": 0, "median": 0, "max": 1},
                "dashes_per_line": {"min": 0, "median": 0, "max": 0},
                "colons_per_line": {"min": 0, "median": 0, "max": 1},
                "commas_per_sentence": {"min": 0, "median": 0, "max": 2},
                "reading_grade": {"min": 2.31, "median": 4.25, "max": 6.88},
            }
        ],
    )
    approval: ApprovalPolicy = Field(
        default=ApprovalPolicy(),
        description="Which accounts a person approves or reads: see `ApprovalPolicy`.",
        examples=[{"review_tiers": [1], "sample_rate": 0.02}],
    )
    seller_alerts: SellerAlerts | None = Field(
        default=None,
        description="Alerts to the seller when a tier-1 account engages (see `SellerAlerts`); the channel "
        "is the deployment's (`WELCOMEMAT_ALERT_WEBHOOK_URL`, the CRM webhook), or the account owner's "
        "chat webhook when `owners` maps its `crm_owner`. Unset: no alerts.",
        examples=[{"next_step": "Call within 24 hours and offer the ramp review.", "tiers": [1]}],
    )
    qa: QaThresholds = Field(
        default=QaThresholds(),
        description="The population QA verdict's thresholds: see `QaThresholds`.",
        examples=[{"max_check_failure_rate": 0.05, "max_fallback_rate": 0.85, "fixes_margin": 0.05}],
    )
    pages: dict[OpaqueId, PageSpec] = Field(
        min_length=1,
        description="Pages by id: `landing` is served at `/c/{campaign}`, `continuation` at "
        "`/c/{campaign}/continue` (where a QR scan lands).",
        examples=[{"landing": {"template": "landing.html", "zones": ["hero_headline", "cta"]}}],
    )
    default_copy: dict[OpaqueId, ZoneCopy] = Field(
        description="The campaign default rung: copy per zone for anonymous visitors, accounts whose segment "
        "has no copy, and zones whose contract says `fallback: default`. Covers every zone a page shows.",
        examples=[{"hero_headline": "New sellers, productive in weeks, not quarters"}],
    )
    segments: dict[OpaqueId, SegmentCopy] = Field(
        min_length=1,
        description="Copy per segment id (an account's `segment`), each covering every zone a page shows: "
        "the fallback when a zone has no personal version, and what the holdout sees.",
        examples=[
            {"saas-mid": {"label": "SaaS, 50 to 500 people", "zones": {"hero_headline": "Ramp faster"}}}
        ],
    )
    proof_library: tuple[ProofItem, ...] = Field(
        default=(),
        description="Approved proof points: the offline composer fills a `proof` zone with the first that "
        "suits the account's segment and fits the zone.",
        examples=[[{"id": "proof_first_meeting", "text": "New SDRs book a first meeting in week two."}]],
    )
    ctas: tuple[Cta, ...] = Field(
        min_length=1,
        description="The approved calls to action; copy and models name one by id, never by URL.",
        examples=[
            [
                {
                    "id": "talk_to_sales",
                    "label": "Talk to our team",
                    "href": "https://www.acmerevenue.example/contact",
                }
            ]
        ],
    )
    patterns: dict[str, dict[OpaqueId, tuple[str, ...]]] = Field(
        default={},
        description="The offline composer's human-written lines: fact type → zone id → patterns whose "
        "`{slots}` are filled from a trusted fact's fields (`{round}`, `{location}`..., or a declared type's "
        "`fields`), `{account}`, `{when}` (the fact's date in words) and, for hiring, `{role_count}`; a "
        "pattern with a slot it cannot fill is skipped. A type declared under `fact_types` may be cited in "
        "the zones its patterns are written for.",
        examples=[{"funding": {"hero_headline": ["Congrats on the {round} {when}, {account}"]}}],
    )
    mail_in_home_date: BoundedDay | None = Field(
        default=None,
        description="The day the campaign's direct mail lands (`welcomemat mail --in-home-date`), when it "
        "has one: the offline composer then words the dates of accounts with a fact allowed on `print` "
        "so they stay true until 30 days after it (docs/campaigns.md: Date phrases). Unset: pages need "
        "14 days. A day `YYYY-MM-DD` in the years 2000 to 2100.",
        examples=["2026-12-08"],
    )
    fact_types: dict[FactTypeName, FactTypeDeclaration] = Field(
        default={},
        description="The campaign's own fact types, beside the built-in ones (funding, hiring, expansion, "
        "leadership, product_launch, quote, crm_activity): name → its fields (the slots its patterns may "
        "use), window and surfaces. Its patterns go under `patterns`; accounts' facts of the type are "
        "checked against it (docs/campaigns.md: The campaign's own fact types).",
        examples=[
            {
                "acquisition": {
                    "fields": ["company"],
                    "window_days": 60,
                    "surfaces": ["web", "email", "seller"],
                }
            }
        ],
    )
    experiment: Experiment | None = Field(
        default=None,
        description="A copy experiment: two or three variants of one zone's patterns or voice, each checked "
        "like any copy; accounts in the personal arm get one by a stable hash of campaign, experiment and "
        "account (docs/campaigns.md: Copy experiments).",
        examples=[
            {
                "id": "headline-angle",
                "zone": "hero_headline",
                "variants": [
                    {"id": "control"},
                    {"id": "direct", "patterns": {"funding": ["{round} closed, {account}: ramp faster"]}},
                ],
            }
        ],
    )
    theme: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description=(
            "The campaign's own branding: a folder inside this file's folder (relative; no "
            "absolute path, `..` or symlink), holding its own "
            "base.html (header, logo, footer) and the stylesheets, images and fonts it links. "
            "It overrides base.html only, never the pages or zone partials; welcomemat validate "
            "refuses a theme that breaks a rule, naming the file and line (docs/campaigns.md: Own branding)."
        ),
        examples=["./theme"],
    )

    @model_validator(mode="wrap")
    @classmethod
    def _shipped_openers_stay(cls, data: Any, handler: ModelWrapValidatorHandler[Campaign]) -> Campaign:
        """The banned openers shipped with Welcomemat always apply: no key but `banned_openers` names
        openers, `banned_openers` is not null, and no entry starts with `!` (a file can add openers,
        never remove one)."""
        return refuse_opener_overrides(data, handler)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Campaign:
        """Across fields, and against the zone contracts when they are given (`validate`, `precompute`):

        - every `link_allowlist` entry is a plain host name;
        - `site_base_url`, every CTA `href` and `seller_alerts.next_step_url` pass the link gate: https,
          host on `link_allowlist`;
        - every `snippet_origins` entry is an https origin (http only for a loopback host);
        - CTA ids are unique, and so are proof ids;
        - `default_copy` and every segment have copy for every zone a page shows, and a copy's `cta` is
          one of the campaign's CTAs;
        - with the zone contracts: every zone a page or a pattern names has a contract, copy fits its
          zone's word and character limits, and copy for a zone with `link: true` names a `cta`;
        - `voice_examples` holds 5 to 30 lines, and `voice_profile` was built from exactly them;
        - every pattern's fact type is built in or declared under `fact_types`, and its slots are ones that
          type fills; a declared type is not a built-in one, has no `signal_windows_days` entry (its window
          is its own) and some pattern uses it;
        - read from campaign.yaml (not from a config published before this rule): every
          `signal_windows_days` entry is for a type some pattern (or copy variant) uses; a window for a
          type no pattern can use is refused.
        """
        context = info.context or {}
        problems = self.cross_field_problems(
            context.get("zones"),
            usable=frozenset(Campaign.model_fields),
            unreadable=context.get("unreadable"),
            from_file=bool(context.get("from_file")),
        )
        if problems:
            raise FieldProblems(problems)
        return self

    def cross_field_problems(
        self,
        zones: Mapping[str, ZoneContract] | None,
        *,
        usable: frozenset[str],
        unreadable: frozenset[str] | None = None,
        from_file: bool = False,
    ) -> list[FieldProblem]:
        """Every problem between fields, looking only at the `usable` fields (the others failed on
        their own and are reported as such). `unreadable`: zone ids whose contract file is refused,
        so the campaign is not also blamed for naming them. `from_file`: read from campaign.yaml,
        where rules newer than a published config also hold (a stored config is not re-judged)."""
        out: list[FieldProblem] = []
        allowlist = allowlist_or_problem(self.link_allowlist, out) if "link_allowlist" in usable else None
        if allowlist is not None and "site_base_url" in usable:
            base = gate_link(self.site_base_url, allowlist)
            if not base.allowed:
                out.append(FieldProblem(("site_base_url",), f"site_base_url refused ({base.reason})"))
        if "snippet_origins" in usable:
            out += snippet_origin_problems(self.snippet_origins)
        cta_ids = check_ctas(self.ctas, allowlist, out) if "ctas" in usable else None
        alerts = self.seller_alerts if "seller_alerts" in usable else None
        if allowlist is not None and alerts is not None and alerts.next_step_url is not None:
            step = gate_link(alerts.next_step_url, allowlist)
            if not step.allowed:
                out.append(
                    FieldProblem(
                        ("seller_alerts", "next_step_url"),
                        f"next_step_url {alerts.next_step_url!r} is refused ({step.reason}); "
                        "it must be https and on the campaign's link_allowlist",
                    )
                )
        if "proof_library" in usable:
            seen: set[str] = set()
            for i, item in enumerate(self.proof_library):
                if item.id in seen:
                    out.append(FieldProblem(("proof_library", i, "id"), f"duplicate proof id {item.id!r}"))
                seen.add(item.id)
        if zones is not None:
            pages = self.pages if "pages" in usable else None
            patterns = self.patterns if "patterns" in usable else None
            check_zones_exist(pages, patterns, zones.keys() | (unreadable or frozenset()), out)
        known_zones = None if zones is None else {**zones, **dict.fromkeys(unreadable or ())}
        shown = self.page_zone_ids() if "pages" in usable else None
        if "default_copy" in usable:
            check_copy(("default_copy",), self.default_copy, shown, cta_ids, known_zones, out)
        if "segments" in usable:
            for name, segment in self.segments.items():
                check_copy(("segments", name, "zones"), segment.zones, shown, cta_ids, known_zones, out)
        # Without a readable `fact_types`, a pattern for a type it may declare is not blamed as well.
        registry = self.known_fact_types() if "fact_types" in usable else None
        if "patterns" in usable:
            check_patterns(self.patterns, registry, out)
        experiment = self.experiment if "experiment" in usable else None
        if experiment is not None:
            check_experiment(experiment, shown, known_zones, registry, out)
        if {"patterns", "experiment"} <= usable:
            check_fact_types(
                self.fact_types if "fact_types" in usable else None,
                self.signal_windows_days if "signal_windows_days" in usable else None,
                self.patterns,
                experiment,
                out,
                unused_windows=from_file,
            )
        if {"voice_examples", "voice_profile"} <= usable:
            out += voice_problems(self.voice_examples, self.voice_profile)
        return out

    def known_fact_types(self) -> Mapping[str, FactType]:
        """The fact types patterns may be written for: the built-in ones and the campaign's own."""
        return fact_type_registry(self.fact_types)

    def signal_windows(self) -> dict[str, int]:
        """Every fact type's window in days: `signal_windows_days` and each declared type's own."""
        return {**self.signal_windows_days, **{t: d.window_days for t, d in self.fact_types.items()}}

    def window_fields(self) -> dict[str, tuple[str, ...]]:
        """Per fact type, the field path in campaign.yaml its window is written at."""
        out: dict[str, tuple[str, ...]] = {t: ("signal_windows_days", t) for t in self.signal_windows_days}
        out.update({t: ("fact_types", t, "window_days") for t in self.fact_types})
        return out

    def page_zone_ids(self) -> tuple[str, ...]:
        """Every zone some page shows, in first-seen order."""
        seen: dict[str, None] = {}
        for page in self.pages.values():
            seen.update(dict.fromkeys(page.zones))
        return tuple(seen)

    def issues_qr_links(self) -> bool:
        """Whether a QR code may point at this campaign: only with a continuation page to land on."""
        return CONTINUATION_PAGE_ID in self.pages

    def allowlist(self) -> LinkAllowlist:
        return LinkAllowlist.from_hosts(self.link_allowlist)

    def cta(self, cta_id: str) -> Cta | None:
        return next((c for c in self.ctas if c.id == cta_id), None)


def _context(zones: Mapping[str, ZoneContract] | None, unreadable: frozenset[str] | None) -> dict[str, Any]:
    """What a campaign read from its file is checked with (`from_file`: the load-time rules too)."""
    if zones is None:
        return {"from_file": True}
    return {"zones": zones, "unreadable": unreadable or frozenset(), "from_file": True}


def check_campaign(
    path: str | Path,
    zones: Mapping[str, ZoneContract] | None = None,
    *,
    unreadable_zones: frozenset[str] | None = None,
) -> tuple[Campaign | None, list[ContractError]]:
    """The campaign (None if refused) and every problem with it, each with file, line and field.

    With `zones`, it is also checked against the zone contracts; `unreadable_zones` are ids
    whose contract file is itself refused (reported there, not here).
    """
    context = _context(zones, unreadable_zones)

    def partial(data: dict[str, Any], failing: frozenset[str]) -> list[FieldProblem]:
        values = valid_fields(Campaign, data, failing, context)
        # Fields left out of the file keep their defaults: they are as usable as valid ones.
        defaults = {n for n, f in Campaign.model_fields.items() if not f.is_required() and n not in data}
        usable = frozenset(values) | frozenset(defaults)
        draft = Campaign.model_construct(**values)
        return draft.cross_field_problems(zones, usable=usable, unreadable=unreadable_zones, from_file=True)

    return check_yaml_model(path, Campaign, context, partial=partial)


def draft_campaign(path: str | Path) -> Campaign | None:
    """The campaign as written when every field is valid on its own, even if fields disagree.

    What `welcomemat validate` and `welcomemat voice build` read a refused campaign as, so one
    problem between fields (a voice profile to rebuild, a pattern slot, a CTA link) never hides
    the checks that need the whole campaign (theme, copy, facts). Never used for a run. None when
    the file is unreadable, has a repeated key or a refused value, or any field fails alone.
    """
    try:
        document = read_yaml(Path(path))
    except ContractError:
        return None
    data = document.data
    if not isinstance(data, dict) or document.duplicates or document.refused:
        return None
    if not set(data) <= set(Campaign.model_fields):
        return None
    values = valid_fields(Campaign, data, frozenset(), None)
    if set(values) != set(data) or not all(
        n in values for n, f in Campaign.model_fields.items() if f.is_required()
    ):
        return None
    return Campaign.model_construct(**values)


def load_campaign(path: str | Path, zones: Mapping[str, ZoneContract] | None = None) -> Campaign:
    """Load and check a campaign; with `zones`, also check it against the zone contracts.

    ContractProblems (reading as the first) lists every problem.
    """
    campaign, problems = check_campaign(path, zones)
    if problems or campaign is None:
        raise ContractProblems(problems)
    return campaign
