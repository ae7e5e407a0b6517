"""Every field of campaign.yaml and tenant.yaml is classified: copy, variant or setting.

The input hash is built from this table, so a field nobody classified would be a decision
nobody made: either stale copy (a copy field left out) or every page rewritten and every
approval reset on a settings edit (a setting hashed). These tests walk the models.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, create_model

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.campaign.copy_inputs import (
    CAMPAIGN_INPUTS,
    TENANT_INPUTS,
    FieldInput,
    InputRole,
    copy_material,
    field_paths,
    role_of,
    unclassified_fields,
)
from welcomemat.campaign.sections import QaThresholds
from welcomemat.campaign.tenant_policy import TenantPolicy
from welcomemat.zones.contract import load_zone_contracts


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    return load_campaign(
        REPO_ROOT / "examples" / "campaign.yaml", dict(load_zone_contracts(REPO_ROOT / "zones"))
    )


@pytest.mark.parametrize(
    ("model", "table"),
    [(Campaign, CAMPAIGN_INPUTS), (TenantPolicy, TENANT_INPUTS)],
    ids=["campaign", "tenant"],
)
def test_every_field_is_classified_once(model: type[BaseModel], table: tuple[FieldInput, ...]) -> None:
    assert unclassified_fields(model, table) == ()
    assert all(row.why.strip() for row in table)


def test_the_walk_reaches_nested_sections_lists_and_mappings() -> None:
    paths = field_paths(Campaign)
    for nested in ("qa.max_fallback_rate", "pages.*.template", "segments.*.zones.*.text", "ctas.*.href"):
        assert nested in paths
    assert "experiment.variants.*.voice" in paths and "experiment.stopped.keep" in paths


def test_a_new_field_anywhere_is_reported_until_someone_classifies_it() -> None:
    """A top-level field, and one added inside a settings section, both need a row."""
    top = create_model("CampaignPlus", __base__=Campaign, alert_channel=(str, ""))
    assert unclassified_fields(top, CAMPAIGN_INPUTS) == ("alert_channel",)

    qa_plus = create_model("QaPlus", __base__=QaThresholds, max_held_rate=(float, 0.1))
    nested = create_model("CampaignQaPlus", __base__=Campaign, qa=(qa_plus, qa_plus()))
    assert unclassified_fields(nested, CAMPAIGN_INPUTS) == ("qa.max_held_rate",)
    # Classified, it passes.
    row = FieldInput("qa.max_held_rate", InputRole.SETTING, "a QA threshold")
    assert unclassified_fields(nested, (*CAMPAIGN_INPUTS, row)) == ()


def test_a_field_inside_a_copy_section_is_an_input_from_the_start() -> None:
    """The safe side: a field added under `voice_profile` or `ctas` is hashed without a row."""
    assert role_of("voice_profile.anything_new", CAMPAIGN_INPUTS) is InputRole.COPY
    assert role_of("ctas.*.tooltip", CAMPAIGN_INPUTS) is InputRole.COPY


def test_wrong_rows_are_reported() -> None:
    rows = (
        *CAMPAIGN_INPUTS,
        FieldInput("qa", InputRole.SETTING, "a whole section as a setting"),
        FieldInput("no_such_field", InputRole.COPY, "a typo"),
        FieldInput("theme", InputRole.SETTING, "twice"),
    )
    assert unclassified_fields(Campaign, rows) == (
        "qa (a setting row must name one field, not a section)",
        "no_such_field (no such field)",
        "theme (classified twice)",
    )


def test_the_issue_s_settings_are_settings() -> None:
    """Origins, QA thresholds, alerts, review policy and themes change nothing published."""
    for path in (
        "snippet_origins",
        "snippet.replace_default",
        "qa.max_fallback_rate",
        "qa.max_check_failure_rate",
        "seller_alerts.next_step",
        "approval.review_tiers",
        "approval.sample_rate",
        "theme",
    ):
        assert role_of(path, CAMPAIGN_INPUTS) is InputRole.SETTING, path
    for path in (
        "patterns",
        "voice",
        "guideline_version",
        "pages.*.zones",
        "link_allowlist",
        "banned_phrases",
    ):
        assert role_of(path, CAMPAIGN_INPUTS) is InputRole.COPY, path


def test_until_it_is_classified_a_new_field_is_hashed(campaign: Campaign) -> None:
    """The safe side at run time: a field no row names is an input (a rebuild, never stale copy)."""
    qa_plus = create_model("QaPlus", __base__=QaThresholds, max_held_rate=(float, 0.1))
    bigger = create_model(
        "CampaignQaPlus", __base__=Campaign, qa=(qa_plus, qa_plus()), alert_channel=(str, "")
    )
    edited = bigger.model_construct(**{**dict(campaign), "qa": qa_plus(), "alert_channel": "#sales"})
    material = copy_material(edited, CAMPAIGN_INPUTS)
    assert material["alert_channel"] == "#sales" and material["qa"] == {"max_held_rate": 0.1}
    # Classified settings stay out: the example's `qa` thresholds, `snippet_origins`, `seller_alerts`.
    plain = copy_material(campaign, CAMPAIGN_INPUTS)
    assert not {"qa", "snippet_origins", "seller_alerts", "approval", "theme", "snippet"} & plain.keys()
