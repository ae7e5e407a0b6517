"""`tenant.yaml`: the brand's rules every campaign of the tenant inherits.

The format lives in the core with the other input formats, so the reference and the
JSON Schema (`welcomemat.reference`) are built from it like the rest. How the levels
combine (hard rules ▸ tenant ▸ campaign, tighten only) is the precompute job's:
`precompute/policy.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    field_validator,
    model_validator,
)

from welcomemat.campaign.openers import refuse_opener_overrides
from welcomemat.campaign.sections import MAX_SIGNAL_WINDOW_DAYS, Confidence
from welcomemat.errors import ContractError
from welcomemat.ids import OpaqueId
from welcomemat.security.ip_ranges import IpRangeRules
from welcomemat.yamlfile import check_yaml_model, load_yaml_model
from welcomemat.zones.contract import CHECK_NAMES_SCHEMA, AddedChecks

__all__ = [
    "TenantPolicy",
    "check_tenant_policy",
    "load_tenant_policy",
]


def _ceiling_in_range(days: int) -> int:
    # A plain ValueError, not a FieldProblem: pydantic then reports it at its own key, among all the others.
    if not 1 <= days <= MAX_SIGNAL_WINDOW_DAYS:
        raise ValueError(f"maximum window {days} days is outside 1..{MAX_SIGNAL_WINDOW_DAYS} (hard rule)")
    return days


class TenantPolicy(BaseModel):
    """`tenant.yaml`: the brand's rules every campaign of the tenant inherits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: OpaqueId = Field(
        description="The tenant these rules govern; a campaign whose `tenant` differs is refused.",
        examples=["acme"],
    )
    banned_phrases: tuple[str, ...] = Field(
        default=(),
        description="Phrases the zone text of every campaign of the tenant may not contain (the "
        "`banned_phrases` check); added to the campaign's own and the hard-coded ones.",
        examples=[["Unlock your potential", "game-changer"]],
    )
    banned_openers: tuple[str, ...] = Field(
        default=(),
        description="Words zone text and each of its sentences may not open with (a greeting before them "
        "aside; the `banned_phrases` check): added to the ones shipped with Welcomemat, which always apply, "
        "and to the campaign's own.",
        examples=[["Hey there"]],
    )
    prohibited_claims: tuple[str, ...] = Field(
        default=(),
        description="Claim classes no zone text may make, added to the campaign's own and to the hard "
        "`customer_status`. Classes with a detector: `customer_status`, `partnership`, "
        "`guaranteed_outcome`; the precompute job refuses any other.",
        examples=[["partnership", "guaranteed_outcome"]],
    )
    checks: AddedChecks = Field(
        default=(),
        description="Checks every zone of every campaign of the tenant adds to the hard ones, which always "
        "run: `one_question`, `confidence` (docs/precompute.md: The checks). A tenant may add checks, "
        "never remove one.",
        examples=[["one_question", "confidence"]],
        json_schema_extra=CHECK_NAMES_SCHEMA,
    )
    max_signal_windows_days: dict[str, Annotated[int, AfterValidator(_ceiling_in_range)]] = Field(
        default_factory=dict,
        description="Per fact type, the longest signal window (days) a campaign may set; a campaign "
        "window above it is refused. Types not listed are capped only by the hard maximum.",
        examples=[{"funding": 150, "hiring": 60}],
        json_schema_extra={
            "additionalProperties": {"type": "integer", "minimum": 1, "maximum": MAX_SIGNAL_WINDOW_DAYS}
        },
    )
    min_confidence: Confidence | None = Field(
        default=None,
        description="The lowest fact confidence any campaign may use. A campaign stating a lower "
        "`min_confidence` is refused; one that leaves it out inherits this.",
        examples=["medium"],
    )
    ip_ranges: IpRangeRules = Field(
        default_factory=IpRangeRules,
        description="What accounts' `ip_ranges` may hold beyond the rules no file lifts. Only here, not in "
        "`campaign.yaml`: letting private ranges through loosens a built-in rule, a decision for whoever "
        "runs the deployment for the brand, once, that no campaign can make on its own.",
        examples=[{"allow_private": True}],
    )

    @model_validator(mode="wrap")
    @classmethod
    def _shipped_openers_stay(
        cls, data: Any, handler: ModelWrapValidatorHandler[TenantPolicy]
    ) -> TenantPolicy:
        """The banned openers shipped with Welcomemat always apply: no key but `banned_openers` names
        openers, `banned_openers` is not null, and no entry starts with `!` (a file can add openers,
        never remove one)."""
        return refuse_opener_overrides(data, handler)

    @field_validator("banned_phrases", "banned_openers", "prohibited_claims")
    @classmethod
    def _no_blank_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """`banned_phrases`, `banned_openers` and `prohibited_claims` entries are not blank."""
        if any(not entry.strip() for entry in value):
            raise ValueError("entries must not be blank")
        return value


def check_tenant_policy(path: str | Path) -> tuple[TenantPolicy | None, list[ContractError]]:
    """`tenant.yaml` (None if refused) and every problem with it, each naming file, line and field."""
    return check_yaml_model(path, TenantPolicy)


def load_tenant_policy(path: str | Path) -> TenantPolicy:
    """Load `tenant.yaml`; a bad file is a ContractError naming file, line and field."""
    return load_yaml_model(path, TenantPolicy)
