"""`campaign.yaml`: the campaign contract, checked whole at load.

A campaign is refused at load, with file, line and field, when it could later put an
unsafe or broken page in front of a visitor: a CTA link off its own allowlist, a segment
whose copy misses a zone a page shows, copy over a zone's limits, a zone no contract
defines, a pattern slot no fact fills. Checking here means the renderer never has to guess.

Every problem is reported, not the first: the cross-field checks collect what they find,
and when some fields fail on their own, the checks that read only valid fields still run
(`check_campaign`), so one `welcomemat validate` shows the whole list.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from welcomemat.errors import ContractError, ContractProblems
from welcomemat.experiments import Experiment
from welcomemat.ids import OpaqueId
from welcomemat.openers import refuse_opener_overrides
from welcomemat.patterns import pattern_problems, unknown_fact_type_problem
from welcomemat.urlgate import LOOPBACK_HOSTS, LinkAllowlist, browser_view, gate_link
from welcomemat.voice import MAX_VOICE_EXAMPLES, MIN_VOICE_EXAMPLES, VoiceProfile, examples_sha256
from welcomemat.yamlfile import FieldProblem, FieldProblems, check_yaml_model, valid_fields
from welcomemat.zone_contract import ZoneContract

__all__ = [
    "CONTINUATION_PAGE_ID",
    "LANDING_PAGE_ID",
    "MAX_SIGNAL_WINDOW_DAYS",
    "ApprovalPolicy",
    "Campaign",
    "Confidence",
    "Cta",
    "PageSpec",
    "ProofItem",
    "QaThresholds",
    "RiskTier",
    "SegmentCopy",
    "SellerAlerts",
    "ZoneCopy",
    "check_campaign",
    "is_snippet_origin",
    "load_campaign",
]

MAX_SIGNAL_WINDOW_DAYS = 730  # two years: older than that is history, not a signal
# The page a direct-mail QR scan lands on (`/q/{token}` redirects to `/c/{campaign}/continue`):
# a campaign without it cannot issue QR links.
CONTINUATION_PAGE_ID = "continuation"
# The page a personal link opens (`/c/{campaign}`).
LANDING_PAGE_ID = "landing"


def _window_in_range(days: int) -> int:
    if not 1 <= days <= MAX_SIGNAL_WINDOW_DAYS:
        raise ValueError(f"window {days} days is outside 1..{MAX_SIGNAL_WINDOW_DAYS}")
    return days


SignalWindowDays = Annotated[int, AfterValidator(_window_in_range)]
# `high`: a guideline promotion needs a second, different approver.
RiskTier = Literal["standard", "high"]


class Confidence(enum.StrEnum):
    """How sure the research is of a fact: `low`, `medium` or `high`."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 0, "medium": 1, "high": 2}[self.value]


_STRICT = ConfigDict(frozen=True, extra="forbid")


class Cta(BaseModel):
    """A call to action the campaign approves. Models choose one by id; they never write URLs."""

    model_config = _STRICT
    id: OpaqueId = Field(description="The id copy and models name the CTA by.", examples=["book_ramp_review"])
    label: str = Field(
        min_length=1,
        max_length=80,
        description="What a personal CTA zone shows (never a model's own words); segment and default copy "
        "bring their own `text`.",
        examples=["Book a 20-minute ramp review"],
    )
    href: str = Field(
        description="Where the CTA goes: https, its host on `link_allowlist`.",
        examples=["https://meet.acmerevenue.example/ramp-review"],
    )


class ZoneCopy(BaseModel):
    """Human-written copy for one zone: a plain string, or `{text, cta}` where a link zone names its CTA."""

    model_config = _STRICT
    text: str = Field(
        min_length=1,
        description="The copy, within the zone's word and character limits.",
        examples=["New sellers, productive in weeks, not quarters"],
    )
    cta: OpaqueId | None = Field(
        default=None,
        description="Id of one of the campaign's `ctas`; required in a zone whose contract has `link: true`.",
        examples=["talk_to_sales"],
    )

    @model_validator(mode="before")
    @classmethod
    def _from_plain_string(cls, value: Any) -> Any:
        """A plain string is short for `{text: ...}` with no CTA."""
        return {"text": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The schema says what the loader accepts: the plain-string shorthand too.
        mapping = handler.resolve_ref_schema(handler(core_schema))
        head: dict[str, Any] = {key: mapping[key] for key in ("title", "description") if key in mapping}
        return {**head, "anyOf": [{"type": "string", "minLength": 1}, mapping]}


class SegmentCopy(BaseModel):
    """A segment's copy for every zone a page shows."""

    model_config = _STRICT
    label: str = Field(
        min_length=1,
        description="What the segment is, in words; given to a model provider as the account's segment.",
        examples=["SaaS, 50 to 500 people"],
    )
    zones: dict[OpaqueId, ZoneCopy] = Field(
        description="Copy per zone id; every zone a page shows needs one.",
        examples=[{"hero_headline": "Scaling the sales team? Ramp every hire faster"}],
    )


class ProofItem(BaseModel):
    """An approved proof point (customer story, figure) and the segments it suits."""

    model_config = _STRICT
    id: OpaqueId = Field(description="Unique within the library.", examples=["proof_ramp_half"])
    text: str = Field(
        min_length=1,
        description="The proof point as it may appear on a page; its numbers and names count as approved.",
        examples=["Mid-size SaaS teams cut SDR ramp time from 90 to 45 days with Acme Revenue."],
    )
    segments: tuple[str, ...] = Field(
        default=(),
        description="Segments it suits, preferred for their accounts; empty: it suits every segment.",
        examples=[["saas-mid", "saas-enterprise"]],
    )


class PageSpec(BaseModel):
    """One page: the template that lays it out and the zones it shows."""

    model_config = _STRICT
    template: str = Field(
        pattern=r"^[a-z0-9_]+\.html$",
        description="A file in `templates/`.",
        examples=["landing.html"],
    )
    zones: tuple[OpaqueId, ...] = Field(
        min_length=1,
        description="Zone ids in page order; each needs a zone contract and copy in `default_copy` and "
        "every segment.",
        examples=[["hero_headline", "hero_support", "proof", "cta"]],
    )


class ApprovalPolicy(BaseModel):
    """Which account tiers a person must approve before their pages go live."""

    model_config = _STRICT
    review_tiers: tuple[int, ...] = Field(
        default=(),
        description="Account tiers whose personal zone sets wait as `pending_review` until a person "
        "approves them (`welcomemat review`); accounts served only fallback copy never wait.",
        examples=[[1]],
    )
    sample_rate: float = Field(
        default=0.02,
        ge=0.0,
        le=1.0,
        description="Fraction of the published (live) accounts queued for a person to read afterwards: "
        "per segment and mode, at least one each.",
        examples=[0.02],
    )


class SellerAlerts(BaseModel):
    """Tell the account's seller when an account of a named tier engages (`welcomemat sync`)."""

    model_config = _STRICT
    next_step: str = Field(
        min_length=1,
        max_length=300,
        description="What the seller should do next, in plain words; every alert of the campaign ends "
        "with it.",
        examples=["Call within 24 hours and offer the ramp review; mention the line they saw."],
    )
    next_step_url: str | None = Field(
        default=None,
        description="A link for that step (a booking page, a playbook): https, its host on `link_allowlist`.",
        examples=["https://www.acmerevenue.example/playbooks/ramp-review"],
    )
    tiers: tuple[int, ...] = Field(
        default=(1,),
        min_length=1,
        description="Account tiers whose visits, QR scans and CTA clicks alert the seller, once per account "
        "and day (UTC).",
        examples=[[1]],
    )


class QaThresholds(BaseModel):
    """Population QA verdict thresholds (fractions of published accounts)."""

    model_config = _STRICT
    max_check_failure_rate: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="QA says NO GO above this share of personal attempts (zones written for an account) "
        "that failed a check.",
        examples=[0.05],
    )
    max_fallback_rate: float = Field(
        default=0.85,
        ge=0.0,
        le=1.0,
        description="QA says NO GO above this share of accounts with no personal zone at all.",
        examples=[0.85],
    )
    fixes_margin: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="A rate within this margin of its maximum makes the verdict GO WITH FIXES.",
        examples=[0.05],
    )


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


class Campaign(BaseModel):
    """The whole campaign contract."""

    model_config = _STRICT

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
        "`standard`, one approver; `high`, two different people.",
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
        description="Per fact type, how many days after its `published_at` a fact stays usable; facts of a "
        "type not listed are never trusted.",
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
        "is the deployment's (`WELCOMEMAT_ALERT_WEBHOOK_URL`, the CRM webhook). Unset: no alerts.",
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
        "`{slots}` are filled from a trusted fact's fields (`{round}`, `{location}`...), `{account}`, "
        "`{when}` (the fact's date in words) and, for hiring, `{role_count}`; a pattern with a slot it "
        "cannot fill is skipped.",
        examples=[{"funding": {"hero_headline": ["Congrats on the {round} {when}, {account}"]}}],
    )
    experiment: Experiment | None = Field(
        default=None,
        description="A copy experiment: two or three variants of one zone's patterns or voice, each checked "
        "like any copy; accounts in the personal arm get one by a stable hash of campaign, experiment and "
        "account (README: Copy experiments).",
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
            "The campaign's own branding: a folder, relative to this file, holding its own "
            "base.html (header, logo, footer) and the stylesheets, images and fonts it links. "
            "It overrides base.html only, never the pages or zone partials; welcomemat validate "
            "refuses a theme that breaks a rule, naming the file and line (README: Own branding)."
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
        - `voice_examples` holds 5 to 30 lines, and `voice_profile` was built from exactly them.
        """
        context = info.context or {}
        problems = self.cross_field_problems(
            context.get("zones"),
            usable=frozenset(Campaign.model_fields),
            unreadable=context.get("unreadable"),
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
    ) -> list[FieldProblem]:
        """Every problem between fields, looking only at the `usable` fields (the others failed on
        their own and are reported as such). `unreadable`: zone ids whose contract file is refused,
        so the campaign is not also blamed for naming them."""
        out: list[FieldProblem] = []
        allowlist = self._allowlist(out) if "link_allowlist" in usable else None
        if allowlist is not None and "site_base_url" in usable:
            base = gate_link(self.site_base_url, allowlist)
            if not base.allowed:
                out.append(FieldProblem(("site_base_url",), f"site_base_url refused ({base.reason})"))
        if "snippet_origins" in usable:
            out += [
                FieldProblem(
                    ("snippet_origins", i),
                    f"{origin!r} is not an https origin (scheme://host[:port], no path); "
                    "http:// only for a loopback host (127.0.0.1, localhost, [::1])",
                )
                for i, origin in enumerate(self.snippet_origins)
                if not is_snippet_origin(origin)
            ]
        cta_ids = self._check_ctas(allowlist, out) if "ctas" in usable else None
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
            self._check_zones_exist(zones, unreadable or frozenset(), usable, out)
        known_zones = None if zones is None else {**zones, **dict.fromkeys(unreadable or ())}
        shown = self.page_zone_ids() if "pages" in usable else None
        if "default_copy" in usable:
            self._check_copy(("default_copy",), self.default_copy, shown, cta_ids, known_zones, out)
        if "segments" in usable:
            for name, segment in self.segments.items():
                self._check_copy(("segments", name, "zones"), segment.zones, shown, cta_ids, known_zones, out)
        if "patterns" in usable:
            self._check_patterns(out)
        if "experiment" in usable and self.experiment is not None:
            self._check_experiment(self.experiment, shown, known_zones, out)
        if {"voice_examples", "voice_profile"} <= usable:
            out += self._voice_problems()
        return out

    def _voice_problems(self) -> list[FieldProblem]:
        """5..30 non-empty example lines, and a profile built from exactly them (or neither)."""
        out: list[FieldProblem] = []
        examples = self.voice_examples
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
        if examples and self.voice_profile is None:
            out.append(FieldProblem(("voice_examples",), f"voice_examples without a voice_profile: {build}"))
        elif self.voice_profile is not None and not examples:
            out.append(
                FieldProblem(("voice_profile",), "voice_profile without voice_examples to build it from")
            )
        elif self.voice_profile is not None and self.voice_profile.examples_sha256 != examples_sha256(
            examples
        ):
            out.append(
                FieldProblem(
                    ("voice_profile",), f"voice_profile was built from other voice_examples: {build}"
                )
            )
        return out

    def _allowlist(self, out: list[FieldProblem]) -> LinkAllowlist | None:
        try:
            return LinkAllowlist.from_hosts(self.link_allowlist)
        except ContractError as exc:
            out.append(FieldProblem(("link_allowlist",), exc.message))
            return None

    def _check_ctas(self, allowlist: LinkAllowlist | None, out: list[FieldProblem]) -> set[str]:
        cta_ids: set[str] = set()
        for i, cta in enumerate(self.ctas):
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

    def _check_copy(
        self,
        where: tuple[str, ...],
        copy: Mapping[str, ZoneCopy],
        shown: tuple[str, ...] | None,
        cta_ids: set[str] | None,
        zones: Mapping[str, ZoneContract | None] | None,
        out: list[FieldProblem],
    ) -> None:
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

    def _check_zones_exist(
        self,
        zones: Mapping[str, ZoneContract],
        unreadable: frozenset[str],
        usable: frozenset[str],
        out: list[FieldProblem],
    ) -> None:
        known = zones.keys() | unreadable
        if "pages" in usable:
            for page_id, page in self.pages.items():
                for i, zone_id in enumerate(page.zones):
                    if zone_id not in known:
                        out.append(
                            FieldProblem(("pages", page_id, "zones", i), f"no zone contract for {zone_id!r}")
                        )
        if "patterns" in usable:
            for fact_type, by_zone in self.patterns.items():
                for zone_id in by_zone:
                    if zone_id not in known:
                        out.append(
                            FieldProblem(
                                ("patterns", fact_type, zone_id), f"no zone contract for {zone_id!r}"
                            )
                        )

    def _check_patterns(self, out: list[FieldProblem]) -> None:
        """Each pattern parses and names only slots its fact type fills (welcomemat/fact_types.py)."""
        for fact_type, by_zone in self.patterns.items():
            unknown = unknown_fact_type_problem(fact_type)
            if unknown is not None:
                out.append(FieldProblem(("patterns", fact_type), unknown))
                continue
            for zone_id, patterns in by_zone.items():
                for i, pattern in enumerate(patterns):
                    loc = ("patterns", fact_type, zone_id, i)
                    out += [FieldProblem(loc, problem) for problem in pattern_problems(fact_type, pattern)]

    def _check_experiment(
        self,
        experiment: Experiment,
        shown: tuple[str, ...] | None,
        zones: Mapping[str, ZoneContract | None] | None,
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
                unknown = unknown_fact_type_problem(fact_type)
                if unknown is not None:
                    out.append(FieldProblem(where, unknown))
                    continue
                if not patterns:
                    out.append(FieldProblem(where, "no patterns: leave the fact type out instead"))
                for j, pattern in enumerate(patterns):
                    out += [
                        FieldProblem((*where, j), problem) for problem in pattern_problems(fact_type, pattern)
                    ]
        if experiment.stopped is not None and experiment.stopped.keep not in seen:
            out.append(
                FieldProblem(
                    ("experiment", "stopped", "keep"),
                    f"no variant {experiment.stopped.keep!r}; the variants are {', '.join(sorted(seen))}",
                )
            )

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


def _context(
    zones: Mapping[str, ZoneContract] | None, unreadable: frozenset[str] | None
) -> dict[str, Any] | None:
    if zones is None:
        return None
    return {"zones": zones, "unreadable": unreadable or frozenset()}


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
        return draft.cross_field_problems(zones, usable=usable, unreadable=unreadable_zones)

    return check_yaml_model(path, Campaign, context, partial=partial)


def load_campaign(path: str | Path, zones: Mapping[str, ZoneContract] | None = None) -> Campaign:
    """Load and check a campaign; with `zones`, also check it against the zone contracts.

    ContractProblems (reading as the first) lists every problem.
    """
    campaign, problems = check_campaign(path, zones)
    if problems or campaign is None:
        raise ContractProblems(problems)
    return campaign
