"""`campaign.yaml`: the campaign contract, checked whole at load.

A campaign is refused at load, with file, line and field, when it could later put an
unsafe or broken page in front of a visitor: a CTA link off its own allowlist, a segment
whose copy misses a zone a page shows, copy over a zone's limits, a zone no contract
defines. Checking here means the renderer never has to guess.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from welcomemat.errors import ContractError
from welcomemat.ids import OpaqueId
from welcomemat.urlgate import LinkAllowlist, browser_view, gate_link
from welcomemat.yamlfile import FieldProblem, load_yaml_model
from welcomemat.zone_contract import ZoneContract

__all__ = [
    "MAX_SIGNAL_WINDOW_DAYS",
    "ApprovalPolicy",
    "Campaign",
    "Confidence",
    "Cta",
    "PageSpec",
    "ProofItem",
    "QaThresholds",
    "SegmentCopy",
    "ZoneCopy",
    "is_snippet_origin",
    "load_campaign",
]

MAX_SIGNAL_WINDOW_DAYS = 730  # two years: older than that is history, not a signal


class Confidence(enum.StrEnum):
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
    id: OpaqueId
    label: str = Field(min_length=1, max_length=80)
    href: str


class ZoneCopy(BaseModel):
    """Human-written copy for one zone; a link zone names its CTA."""

    model_config = _STRICT
    text: str = Field(min_length=1)
    cta: OpaqueId | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_plain_string(cls, value: Any) -> Any:
        return {"text": value} if isinstance(value, str) else value


class SegmentCopy(BaseModel):
    """A segment's copy for every zone a page shows."""

    model_config = _STRICT
    label: str = Field(min_length=1)
    zones: dict[OpaqueId, ZoneCopy]


class ProofItem(BaseModel):
    """An approved proof point (customer story, figure) and the segments it suits."""

    model_config = _STRICT
    id: OpaqueId
    text: str = Field(min_length=1)
    segments: tuple[str, ...] = ()  # empty: every segment


class PageSpec(BaseModel):
    model_config = _STRICT
    template: str = Field(pattern=r"^[a-z0-9_]+\.html$")
    zones: tuple[OpaqueId, ...] = Field(min_length=1)


class ApprovalPolicy(BaseModel):
    """Which account tiers a person must approve before their pages go live."""

    model_config = _STRICT
    review_tiers: tuple[int, ...] = ()
    sample_rate: float = Field(default=0.02, ge=0.0, le=1.0)


class QaThresholds(BaseModel):
    """Population QA verdict thresholds (fractions of published accounts)."""

    model_config = _STRICT
    max_check_failure_rate: float = Field(default=0.05, ge=0.0, le=1.0)
    max_fallback_rate: float = Field(default=0.85, ge=0.0, le=1.0)
    fixes_margin: float = Field(default=0.05, ge=0.0, le=1.0)


# Hosts whose http:// origins a campaign may list, for local development and tests: traffic
# to them never leaves the machine, so plain http exposes nothing.
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


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
    return scheme == "https" or (scheme == "http" and host in _LOOPBACK_HOSTS)


class Campaign(BaseModel):
    """The whole campaign contract."""

    model_config = _STRICT

    tenant: OpaqueId
    campaign: OpaqueId
    name: str = Field(min_length=1)
    guideline_version: str = Field(min_length=1)
    site_base_url: str
    link_allowlist: tuple[str, ...] = Field(min_length=1)
    snippet_origins: tuple[str, ...] = ()
    holdout_fraction: float = Field(ge=0.0, le=0.5)
    min_confidence: Confidence = Confidence.MEDIUM
    signal_windows_days: dict[str, int] = Field(min_length=1)
    banned_phrases: tuple[str, ...] = ()
    banned_openers: tuple[str, ...] = ()
    prohibited_claims: tuple[str, ...] = ()
    vocabulary: tuple[str, ...] = ()
    voice: str = ""
    approval: ApprovalPolicy = ApprovalPolicy()
    qa: QaThresholds = QaThresholds()
    pages: dict[OpaqueId, PageSpec] = Field(min_length=1)
    default_copy: dict[OpaqueId, ZoneCopy]
    segments: dict[OpaqueId, SegmentCopy] = Field(min_length=1)
    proof_library: tuple[ProofItem, ...] = ()
    ctas: tuple[Cta, ...] = Field(min_length=1)
    # fact type -> zone id -> human-written patterns with {slots} (the offline composer's)
    patterns: dict[str, dict[OpaqueId, tuple[str, ...]]] = {}
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

    @field_validator("signal_windows_days")
    @classmethod
    def _windows_sane(cls, value: dict[str, int]) -> dict[str, int]:
        for fact_type, days in value.items():
            if not 1 <= days <= MAX_SIGNAL_WINDOW_DAYS:
                raise FieldProblem(
                    ("signal_windows_days", fact_type),
                    f"window {days} days is outside 1..{MAX_SIGNAL_WINDOW_DAYS}",
                )
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Campaign:
        allowlist = self._allowlist_or_problem()
        base = gate_link(self.site_base_url, allowlist)
        if not base.allowed:
            raise FieldProblem(("site_base_url",), f"site_base_url refused ({base.reason})")
        for i, origin in enumerate(self.snippet_origins):
            if not is_snippet_origin(origin):
                raise FieldProblem(
                    ("snippet_origins", i),
                    f"{origin!r} is not an https origin (scheme://host[:port], no path); "
                    "http:// only for a loopback host (127.0.0.1, localhost, [::1])",
                )
        cta_ids = set()
        for i, cta in enumerate(self.ctas):
            decision = gate_link(cta.href, allowlist)
            if not decision.allowed:
                raise FieldProblem(
                    ("ctas", i, "href"),
                    f"CTA {cta.id!r} link {cta.href!r} is refused ({decision.reason}); "
                    "CTA links must be https and on the campaign's link_allowlist",
                )
            if cta.id in cta_ids:
                raise FieldProblem(("ctas", i, "id"), f"duplicate CTA id {cta.id!r}")
            cta_ids.add(cta.id)
        proof_ids = [p.id for p in self.proof_library]
        if len(proof_ids) != len(set(proof_ids)):
            raise FieldProblem(("proof_library",), "duplicate proof ids")
        zones: Mapping[str, ZoneContract] | None = (info.context or {}).get("zones")
        if zones is not None:
            self._check_zones_exist(zones)
        self._check_copy(("default_copy",), self.default_copy, cta_ids, zones)
        for name, segment in self.segments.items():
            self._check_copy(("segments", name, "zones"), segment.zones, cta_ids, zones)
        return self

    def _allowlist_or_problem(self) -> LinkAllowlist:
        try:
            return LinkAllowlist.from_hosts(self.link_allowlist)
        except ContractError as exc:
            raise FieldProblem(("link_allowlist",), exc.message) from None

    def _check_copy(
        self,
        where: tuple[str, ...],
        copy: Mapping[str, ZoneCopy],
        cta_ids: set[str],
        zones: Mapping[str, ZoneContract] | None,
    ) -> None:
        for zone_id in self.page_zone_ids():
            if zone_id not in copy:
                raise FieldProblem(where, f"no copy for zone {zone_id!r}, which a page shows")
        for zone_id, item in copy.items():
            loc = (*where, zone_id)
            if item.cta is not None and item.cta not in cta_ids:
                raise FieldProblem(loc, f"CTA {item.cta!r} is not one of the campaign's CTAs")
            contract = zones.get(zone_id) if zones is not None else None
            if contract is None:
                continue
            if contract.link and item.cta is None:
                raise FieldProblem(loc, f"zone {zone_id!r} carries a link: its copy must name a cta")
            if not contract.fits(item.text):
                raise FieldProblem(
                    loc,
                    f"copy is over zone {zone_id!r} limits "
                    f"({contract.max_words} words, {contract.max_chars} characters)",
                )

    def _check_zones_exist(self, zones: Mapping[str, ZoneContract]) -> None:
        for page_id, page in self.pages.items():
            for i, zone_id in enumerate(page.zones):
                if zone_id not in zones:
                    raise FieldProblem(("pages", page_id, "zones", i), f"no zone contract for {zone_id!r}")
        for fact_type, by_zone in self.patterns.items():
            for zone_id in by_zone:
                if zone_id not in zones:
                    raise FieldProblem(("patterns", fact_type, zone_id), f"no zone contract for {zone_id!r}")

    def page_zone_ids(self) -> tuple[str, ...]:
        """Every zone some page shows, in first-seen order."""
        seen: dict[str, None] = {}
        for page in self.pages.values():
            seen.update(dict.fromkeys(page.zones))
        return tuple(seen)

    def allowlist(self) -> LinkAllowlist:
        return LinkAllowlist.from_hosts(self.link_allowlist)

    def cta(self, cta_id: str) -> Cta | None:
        return next((c for c in self.ctas if c.id == cta_id), None)


def load_campaign(path: str | Path, zones: Mapping[str, ZoneContract] | None = None) -> Campaign:
    """Load and check a campaign; with `zones`, also check it against the zone contracts."""
    return load_yaml_model(path, Campaign, context={"zones": zones} if zones is not None else None)
