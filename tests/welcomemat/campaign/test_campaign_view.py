"""A stored campaign config is checked like campaign.yaml: a refused one is a StoredValueError."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.server.conftest import CAMPAIGN, TENANT, example_inputs
from welcomemat.campaign.view import build_campaign_view
from welcomemat.errors import StoredValueError


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda c: c["patterns"]["hiring"]["proof"].append("{locaton}"), "did you mean {location}?"),
        (lambda c: c["ctas"][0].update(href="https://evil.example/"), "refused"),
    ],
)
def test_a_config_failing_a_cross_field_check_is_a_stored_value_error(
    change: Callable[[dict[str, Any]], None], words: str
) -> None:
    campaign, zones = example_inputs()
    data = campaign.model_dump(mode="json")
    change(data)
    raw = json.dumps({"campaign": data, "zones": {k: v.model_dump(mode="json") for k, v in zones.items()}})
    with pytest.raises(StoredValueError, match="does not decode") as refused:
        build_campaign_view(TENANT, CAMPAIGN, raw.encode())
    assert words in str(refused.value)
