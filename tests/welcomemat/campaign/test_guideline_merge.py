"""A candidate's guideline bundle written into campaign.yaml: the bundle from the candidate,
everything else (fields, comments, lines) from the active file."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpora import REPO_ROOT
from welcomemat.campaign.guideline_merge import BUNDLE_KEYS, merge_bundle_data, merge_bundle_text

INSIDE = ["guideline_version", "patterns", "banned_phrases", "voice", "approved_words", "qa"]
OUTSIDE = ["tenant", "campaign", "snippet_origins", "seller_alerts", "pages", "link_allowlist"]
scalars = st.one_of(
    st.integers(-5, 5), st.booleans(), st.text(min_size=0, max_size=12), st.sampled_from(["# not a comment"])
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=6,
)
documents = st.dictionaries(st.sampled_from(INSIDE + OUTSIDE), values, min_size=1)


def dumped(data: dict[str, Any], comments: bool) -> str:
    """Block-style YAML, each field with a comment line above it when `comments`."""
    out = []
    for key, value in data.items():
        if comments:
            out.append(f"# about {key}\n")
        out.append(
            yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, default_flow_style=False)
        )
    return "".join(out)


def expected(active: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in active.items() if k not in BUNDLE_KEYS}
    return kept | {k: v for k, v in candidate.items() if k in BUNDLE_KEYS}


@settings(max_examples=200, deadline=None)
@given(documents, documents, st.booleans(), st.booleans())
def test_the_merged_file_has_the_candidates_bundle_and_the_active_files_other_fields(
    active: dict[str, Any], candidate: dict[str, Any], active_comments: bool, candidate_comments: bool
) -> None:
    active_text, candidate_text = dumped(active, active_comments), dumped(candidate, candidate_comments)
    merged = merge_bundle_text(active_text, candidate_text)
    assert merged is not None
    # What each file says (PyYAML does not round-trip every character it dumps, e.g. NEL).
    said = expected(yaml.safe_load(active_text), yaml.safe_load(candidate_text))
    assert (yaml.safe_load(merged) or {}) == said
    for key in active:  # the active file's lines for its other fields, comments included, as they were
        if key not in BUNDLE_KEYS:
            block = ("# about {key}\n" if active_comments else "").format(key=key) + dumped(
                {key: active[key]}, False
            )
            assert block in merged
    assert merge_bundle_text(active_text, active_text) == active_text


@settings(max_examples=100, deadline=None)
@given(documents, documents)
def test_the_value_merge_agrees(active: dict[str, Any], candidate: dict[str, Any]) -> None:
    said = expected(*(yaml.safe_load(yaml.safe_dump(d, allow_unicode=True)) for d in (active, candidate)))
    assert yaml.safe_load(merge_bundle_data(active, candidate)) == said


def test_a_flow_style_file_is_left_to_the_value_merge() -> None:
    assert merge_bundle_text("{tenant: acme, voice: plain}\n", "voice: warm\n") is None
    assert merge_bundle_text("tenant: acme\n", "  voice: warm\n") is None  # not YAML at column 0


def test_the_example_candidate_is_the_example_campaign_with_only_guideline_lines_changed() -> None:
    active = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
    candidate = (REPO_ROOT / "examples" / "campaign.candidate.yaml").read_text()
    assert merge_bundle_text(active, candidate) == candidate
