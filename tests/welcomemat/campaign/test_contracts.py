"""Campaign and zone contracts: the examples load; a contract that could break a page is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.corpora import REPO_ROOT
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.errors import ContractError
from welcomemat.zones.contract import KNOWN_CHECKS, load_zone_contract, load_zone_contracts

ZONES = REPO_ROOT / "zones"
CAMPAIGN = REPO_ROOT / "examples" / "campaign.yaml"
REQUIRED_ZONES = {"hero_headline", "hero_support", "proof", "cta", "continuation_headline"}


def test_example_zones_and_campaign_load() -> None:
    zones = load_zone_contracts(ZONES)
    assert REQUIRED_ZONES <= set(zones)
    campaign = load_campaign(CAMPAIGN, zones)
    assert campaign.holdout_fraction == pytest.approx(0.10)
    assert campaign.approval.review_tiers
    assert {"funding", "hiring"} <= set(campaign.signal_windows_days)
    for zone in zones.values():
        assert set(zone.checks) <= KNOWN_CHECKS
        assert zone.max_chars >= 20


def test_every_zone_has_copy_in_every_segment_and_the_default_and_vice_versa() -> None:
    zones = load_zone_contracts(ZONES)
    campaign = load_campaign(CAMPAIGN, zones)
    shown = set(campaign.page_zone_ids())
    assert shown == set(zones), "every zone contract is shown on some page, and only those"
    for name, segment in campaign.segments.items():
        assert set(segment.zones) == shown, name
    assert set(campaign.default_copy) == shown


def mutate(tmp_path: Path, change: Callable[[dict], None]) -> Path:  # type: ignore[type-arg]
    data = yaml.safe_load(CAMPAIGN.read_text())
    change(data)
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def refused(path: Path) -> ContractError:
    with pytest.raises(ContractError) as info:
        load_campaign(path, load_zone_contracts(ZONES))
    err = info.value
    assert err.file == str(path)
    assert err.line is not None and err.line >= 1
    return err


def set_in(*keys: object, value: object) -> Callable[[dict], None]:  # type: ignore[type-arg]
    def change(data: dict) -> None:  # type: ignore[type-arg]
        node = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (set_in("ctas", 0, "href", value="https://evil.example/x"), "ctas.0.href", "allowlist"),
        (set_in("ctas", 1, "href", value="http://www.acmerevenue.example/p"), "ctas.1.href", "not_https"),
        (
            set_in("ctas", 2, "href", value="https://evil.example\\@www.acmerevenue.example/"),
            "ctas.2.href",
            "refused",
        ),
        (
            set_in("ctas", 0, "href", value="https://www.acmerevenue.example.evil.example/"),
            "ctas.0.href",
            "allowlist",
        ),
        (lambda d: d["segments"]["fintech"]["zones"].pop("proof"), "segments.fintech.zones", "'proof'"),
        (lambda d: d["default_copy"].pop("cta"), "default_copy", "'cta'"),
        (
            set_in("segments", "saas-mid", "zones", "hero_headline", value="word " * 30),
            "segments.saas-mid.zones.hero_headline",
            "limits",
        ),
        (
            set_in("segments", "saas-mid", "zones", "cta", value="Plain text, no CTA"),
            "segments.saas-mid.zones.cta",
            "must name a cta",
        ),
        (
            set_in("segments", "saas-mid", "zones", "cta", value={"text": "Go", "cta": "nope"}),
            "segments.saas-mid.zones.cta",
            "not one of",
        ),
        (
            set_in("pages", "landing", "zones", value=["hero_headline", "sidebar"]),
            "pages.landing.zones.1",
            "no zone contract",
        ),
        (set_in("link_allowlist", value=["*.acmerevenue.example"]), "link_allowlist", "*.acmerevenue"),
        (set_in("site_base_url", value="https://elsewhere.example/"), "site_base_url", "refused"),
        (
            set_in("snippet_origins", value=["https://www.acmerevenue.example/path"]),
            "snippet_origins.0",
            "origin",
        ),
        (
            set_in("snippet_origins", value=["http://www.acmerevenue.example"]),
            "snippet_origins.0",
            "loopback",
        ),
        (set_in("snippet_origins", value=["http://127.0.0.2:8080"]), "snippet_origins.0", "origin"),
        (
            set_in("snippet_origins", value=["https://u@www.acmerevenue.example"]),
            "snippet_origins.0",
            "origin",
        ),
        (set_in("signal_windows_days", "hiring", value=0), "signal_windows_days.hiring", "outside"),
        (set_in("holdout_fraction", value=0.9), "holdout_fraction", "0.5"),
        (set_in("surprise", value=1), "surprise", "Extra inputs"),
        (lambda d: d.pop("tenant"), "tenant", "required"),
    ],
)
def test_campaign_refused_with_file_line_and_field(
    tmp_path: Path,
    change: Callable[[dict], None],
    field: str,
    words: str,  # type: ignore[type-arg]
) -> None:
    err = refused(mutate(tmp_path, change))
    assert err.field == field
    assert words in str(err)


def test_snippet_origins_accept_https_and_loopback_http(tmp_path: Path) -> None:
    origins = [
        "https://www.acmerevenue.example",
        "https://shop.acmerevenue.example:8443/",
        "http://127.0.0.1:5173",
        "http://localhost:8080",
        "http://[::1]:3000",
    ]
    campaign = load_campaign(
        mutate(tmp_path, set_in("snippet_origins", value=origins)), load_zone_contracts(ZONES)
    )
    assert campaign.snippet_origins == tuple(origins)


def test_error_line_points_at_the_field(tmp_path: Path) -> None:
    path = mutate(tmp_path, set_in("ctas", 1, "href", value="https://evil.example/x"))
    err = refused(path)
    assert err.line is not None
    assert "https://evil.example/x" in path.read_text().splitlines()[err.line - 1]


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "campaign.yaml"
    path.write_text("tenant: acme\ncampaign: [unclosed\nname: x\n")
    with pytest.raises(ContractError) as info:
        load_campaign(path)
    assert info.value.line is not None and "YAML" in str(info.value)


def test_campaign_without_zones_context_still_checks_links_and_coverage() -> None:
    campaign = load_campaign(CAMPAIGN)
    assert isinstance(campaign, Campaign)
    assert campaign.cta("book_ramp_review") is not None


def write_zone(tmp_path: Path, name: str, **fields: object) -> Path:
    base: dict[str, object] = {
        "id": name,
        "purpose": "p",
        "max_words": 5,
        "max_chars": 40,
        "markup": [],
        "fact_types": ["funding"],
        "requires_fact": True,
        "checks": ["empty"],
        "fallback": "segment",
    }
    base.update(fields)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"markup": ["em", "a"]}, "markup", "'a'"),
        ({"markup": ["script"]}, "markup", "'script'"),
        ({"checks": ["empty", "vibes"]}, "checks", "vibes"),
        ({"fallback": "personal"}, "fallback", "segment"),
        ({"fact_types": []}, None, "fact_types"),
        ({"max_words": 0}, "max_words", "greater"),
        ({"id": "other"}, "id", "file name"),
    ],
)
def test_zone_contract_refused(
    tmp_path: Path, fields: dict[str, object], field: str | None, words: str
) -> None:
    with pytest.raises(ContractError) as info:
        load_zone_contract(write_zone(tmp_path, "z1", **fields))
    assert info.value.field == field
    assert words in str(info.value)


def test_zone_markup_within_ceiling_loads(tmp_path: Path) -> None:
    contract = load_zone_contract(write_zone(tmp_path, "z2", markup=["em", "strong"]))
    assert contract.markup == frozenset({"em", "strong"})
    assert contract.fits("one two three") and not contract.fits("one two three four five six")
