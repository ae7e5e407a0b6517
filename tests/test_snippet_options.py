"""`snippet.replace_default` in campaign.yaml: checked at load, a serve-time switch only.

A value that is not a YAML boolean is refused by `welcomemat validate` (exit 2) with the
file, the line and the field; turning the switch changes no published zone set (the
precompute fingerprint leaves it out, as it does seller alerts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from precompute.hashing import campaign_fingerprint
from precompute.policy import build_policy
from tests.cli.test_validate import EXAMPLE_CAMPAIGN, line_of, replace, write_inputs
from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import load_campaign
from welcomemat.campaign.sections import SnippetOptions
from welcomemat.zones.contract import load_zone_contracts

ANCHOR = "holdout_fraction: 0.10\n"


def with_snippet(section: str) -> str:
    """The example campaign with a `snippet:` section (YAML text) before `holdout_fraction`."""
    return replace(EXAMPLE_CAMPAIGN, ANCHOR, section + ANCHOR)


@pytest.mark.parametrize(
    ("section", "field", "words"),
    [
        ('snippet:\n  replace_default: "yes"\n', "snippet.replace_default", "valid boolean"),
        ("snippet:\n  replace_default: 1\n", "snippet.replace_default", "valid boolean"),
        ("snippet:\n  replace_default: [true]\n", "snippet.replace_default", "valid boolean"),
        (
            "snippet:\n  replace_defaults: true\n",
            "snippet.replace_defaults",
            "Extra inputs are not permitted",
        ),
        ("snippet: true\n", "snippet", "valid dictionary"),
    ],
    ids=["string", "number", "list", "misspelt", "not-a-section"],
)
def test_a_bad_snippet_section_is_refused_with_file_line_and_field(
    section: str, field: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path, campaign=with_snippet(section))
    needle = section.splitlines()[-1].strip()
    code = main(
        ["validate", str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones), "--json"]
    )
    out = capsys.readouterr()
    assert code == 2
    problems = json.loads(out.out)["problems"]
    assert [(p["file"], p["line"], p["field"]) for p in problems] == [
        (str(inputs.campaign), line_of(inputs.campaign, needle), field)
    ]
    assert words in problems[0]["message"], problems[0]
    assert "Traceback" not in out.err


def test_a_good_snippet_section_validates_and_unset_means_keep_the_site_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path, campaign=with_snippet("snippet:\n  replace_default: true\n"))
    code = main(["validate", str(inputs.campaign), str(inputs.accounts), "--zones", str(inputs.zones)])
    assert code == 0, capsys.readouterr().err
    zones = dict(load_zone_contracts(inputs.zones))
    assert load_campaign(inputs.campaign, zones).snippet == SnippetOptions(replace_default=True)
    assert load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones).snippet.replace_default is False


def test_the_switch_changes_no_published_zone_set() -> None:
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    campaign = load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
    policy = build_policy(campaign, None)
    opted_in = campaign.model_copy(update={"snippet": SnippetOptions(replace_default=True)})
    assert campaign_fingerprint(opted_in, zones, policy, "offline") == campaign_fingerprint(
        campaign, zones, policy, "offline"
    )
