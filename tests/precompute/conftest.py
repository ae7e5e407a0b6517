"""The example campaign and zone contracts, loaded once per test module."""

from __future__ import annotations

import pytest

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.zones.contract import ZoneContract, load_zone_contracts


@pytest.fixture(scope="module")
def zones() -> dict[str, ZoneContract]:
    return dict(load_zone_contracts(REPO_ROOT / "zones"))


@pytest.fixture(scope="module")
def campaign(zones: dict[str, ZoneContract]) -> Campaign:
    return load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones)
