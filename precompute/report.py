"""The run report: what a precompute run read, decided and published (`--json` prints it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from welcomemat.model_cost import RunCost

__all__ = ["AccountFailure", "MalformedRow", "RunReport"]


class MalformedRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str | None
    line: int | None
    field: str | None
    reason: str


class AccountFailure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    account_id: str
    reason: str


class RunReport(BaseModel):
    """Counts are accounts unless named otherwise."""

    model_config = ConfigDict(extra="forbid")

    tenant: str
    campaign: str
    provider: str
    started_at: str
    seconds: float = 0.0
    rows_read: int = 0
    accounts: int = 0
    malformed: list[MalformedRow] = Field(default_factory=list)
    published: int = 0  # a new version was written
    unchanged: int = 0  # same inputs, still valid: nothing regenerated, no new version
    resumed: int = 0  # skipped by --resume: journalled as published with the same inputs
    pending_review: int = 0  # published as pending_review (served as fallback until approved)
    failed: list[AccountFailure] = Field(default_factory=list)
    suppressed: int = 0  # on the tenant's erasure list (`welcomemat erase`): left out, nothing written
    contacts_suppressed: int = 0  # erased contacts left out of accounts that were published
    by_mode: dict[str, int] = Field(default_factory=dict)
    zones_by_rung: dict[str, int] = Field(default_factory=dict)
    fallback_reasons: dict[str, int] = Field(default_factory=dict)
    check_failures: dict[str, int] = Field(default_factory=dict)
    # The provider could not answer (`precompute.provider_faults`): a version already published
    # is kept as it was (none: the fallback is published, marked deferred); asked again next run.
    deferred: int = 0
    deferred_causes: dict[str, int] = Field(default_factory=dict)  # deferred accounts by FaultCause
    provider_answered: int = 0  # accounts the provider answered for (drafts or declines) in this run
    # Accounts whose own pages failed the campaign theme's rendered-page check: published with
    # `theme_refused`, so their pages use the built-in frame (`server.render.account_page_check`).
    theme_refused: list[AccountFailure] = Field(default_factory=list)
    model_calls: int = 0
    retries: int = 0
    breaker_openings: int = 0
    tokens: int = 0
    # The model's own counts (each answer's `usage`), and what they cost at the price table's rate
    # (`welcomemat.model_cost`; the offline composer: 0 calls, cost 0; an unpriced model: cost None).
    input_tokens: int = 0
    output_tokens: int = 0
    cost: RunCost = Field(default_factory=RunCost)
    personal_published: int = 0  # new versions with a personal zone: what the results page divides by
    # `--budget`: the limit, whether the run reached it, and the accounts it then left for the next
    # run (not assembled, not published, journalled `deferred`).
    budget: str | None = None
    budget_reached: bool = False
    budget_deferred: int = 0
    accounts_per_second: float = 0.0
    verdict: str | None = None
