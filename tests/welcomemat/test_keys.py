from __future__ import annotations

import pytest

from welcomemat import keys
from welcomemat.security.tokens import MAX_TTL_S

BUILDERS_WITH_ACCOUNT = [keys.zone_set_key, keys.previous_zone_set_key, keys.zone_set_version_key]
BUILDERS_OF_CAMPAIGN = [
    keys.campaign_prefix,
    keys.changes_channel,
    keys.journal_key,
    keys.zone_set_scan_pattern,
]
BAD_IDS = ["a:b", "{x}", "", "../x", "a b", "x*", "x?", "[x]", "-x", "a" * 65, "acct\n"]


def test_key_format_is_stable() -> None:
    assert (
        keys.zone_set_key("acme", "q4-expansion", "acct_dymaxa") == "wm:1:{acme:q4-expansion}:zs:acct_dymaxa"
    )
    assert (
        keys.previous_zone_set_key("acme", "q4-expansion", "acct_dymaxa")
        == "wm:1:{acme:q4-expansion}:zs_prev:acct_dymaxa"
    )
    assert (
        keys.zone_set_version_key("acme", "q4-expansion", "acct_dymaxa")
        == "wm:1:{acme:q4-expansion}:zs_ver:acct_dymaxa"
    )
    assert keys.zone_set_scan_pattern("acme", "q4-expansion") == "wm:1:{acme:q4-expansion}:zs:*"
    assert keys.changes_channel("acme", "q4-expansion") == "wm:1:{acme:q4-expansion}:changes"
    assert keys.journal_key("acme", "q4-expansion") == "wm:1:{acme:q4-expansion}:journal"
    assert keys.events_stream_key("acme") == "wm:1:{acme}:events"
    assert keys.events_held_key("acme") == "wm:1:{acme}:events:held"
    assert keys.account_record_key("acme", "acct_dymaxa") == "wm:1:{acme}:acct:acct_dymaxa"


def test_prefix_and_schema_version() -> None:
    assert keys.KEY_PREFIX == "wm"
    assert keys.KEY_SCHEMA_VERSION == 1
    assert keys.tenant_prefix("acme") == "wm:1:{acme}"
    assert keys.campaign_prefix("acme", "q4") == "wm:1:{acme:q4}"


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_ids_are_rejected_everywhere(bad: str) -> None:
    for builder in BUILDERS_WITH_ACCOUNT:
        for args in ((bad, "q4", "acct"), ("acme", bad, "acct"), ("acme", "q4", bad)):
            with pytest.raises(ValueError, match="invalid .* id"):
                builder(*args)
    for campaign_builder in BUILDERS_OF_CAMPAIGN:
        for pair in ((bad, "q4"), ("acme", bad)):
            with pytest.raises(ValueError):
                campaign_builder(*pair)
    with pytest.raises(ValueError):
        keys.events_stream_key(bad)
    with pytest.raises(ValueError):
        keys.account_record_key("acme", bad)


def test_error_names_the_bad_id_and_its_kind() -> None:
    with pytest.raises(ValueError, match=r"invalid account id 'a:b'"):
        keys.zone_set_key("acme", "q4", "a:b")
    with pytest.raises(ValueError, match=r"invalid tenant id '\{x\}'"):
        keys.zone_set_key("{x}", "q4", "acct")


def test_ttls_are_positive_whole_seconds() -> None:
    ttls = {name: getattr(keys, name) for name in keys.__all__ if name.endswith("_TTL_S")}
    assert ttls, "no TTL constants"
    for name, value in ttls.items():
        assert isinstance(value, int) and value > 0, name
    # The counter must outlive the zone set it numbers, or versions would restart.
    assert keys.ZONE_SET_VERSION_TTL_S >= keys.ZONE_SET_TTL_S
    # A campaign id stays its owner's while a link or QR code signed for it, or a conversion
    # recorded for it, may still point at it.
    assert keys.CAMPAIGN_OWNER_TTL_S >= keys.CAMPAIGN_TTL_S + MAX_TTL_S
    assert keys.CAMPAIGN_OWNER_TTL_S >= keys.CONVERSIONS_TTL_S


def test_a_campaign_owner_key_is_outside_any_tenants_slot() -> None:
    assert keys.campaign_owner_key("q4-pipeline") == "wm:1:campaign_owner:q4-pipeline"
    for bad in BAD_IDS:
        with pytest.raises(ValueError, match="invalid campaign id"):
            keys.campaign_owner_key(bad)


def test_public_surface_is_sorted_and_complete() -> None:
    assert keys.__all__ == sorted(keys.__all__)
    imported = {"annotations", "is_valid_id", "is_view_id"}
    public = {n for n in vars(keys) if not n.startswith("_") and n not in imported}
    assert public == set(keys.__all__)
