"""The example campaign with a fact type of its own (`acquisition`), as the declared-type tests use it."""

from __future__ import annotations

from tests.corpora import REPO_ROOT

__all__ = ["ACQUISITION", "ACQUISITION_PATTERN", "EXAMPLE", "with_acquisition"]

EXAMPLE = (REPO_ROOT / "examples" / "campaign.yaml").read_text()
ACQUISITION = """fact_types:
  acquisition:
    fields: [company]
    window_days: 60
    surfaces: [web, email]
"""
ACQUISITION_PATTERN = (
    '  acquisition:\n    hero_headline:\n      - "Congrats on bringing {company} on board, {account}"\n'
)


def with_acquisition(
    text: str = EXAMPLE, *, declaration: str = ACQUISITION, pattern: str = ACQUISITION_PATTERN
) -> str:
    """The example campaign declaring `acquisition`, with a headline pattern for it."""
    assert text.count("\npatterns:\n") == 1
    return text.replace("\npatterns:\n", f"\n{declaration}patterns:\n{pattern}", 1)
