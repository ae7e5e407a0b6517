"""How a run updates its campaign's IP-range map: merged account by account, never replaced whole.

The map (`keys.ip_ranges_key`: account id -> JSON list of CIDRs) is what the renderer
identifies visitors by address with (`server/ip_index.py`). A run's accounts file is often
part of the population (the accounts that changed, a new batch); replacing the map with the
file's ranges made every account not in the file anonymous to the renderer. So a run

- replaces the ranges of each account in its file (an account whose row has none has none);
- keeps the ranges of accounts not in its file, as it keeps their zone sets;
- removes the ranges of accounts in its file that the erasure list left out of the run
  (`welcomemat erase` removed them already; a run never brings them back);
- drops stored ranges the current rules refuse (`welcomemat.security.ip_ranges`: written before the
  rules existed, or since disallowed by the tenant), and unreadable entries.

An account leaves the map by `welcomemat erase`, by a row with `"ip_ranges": []`, or when the
map's TTL (`keys.CAMPAIGN_TTL_S`, renewed by every run) ends. There is no "the file is the whole
population" mode: a run never learns that an account it was not given is gone.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from redis.client import Pipeline

from welcomemat import keys
from welcomemat.records.accounts import Account
from welcomemat.security.ip_ranges import IpRangeRefused, IpRangeRules, check_ip_range

__all__ = ["IpRangeUpdate", "plan_ip_range_update", "queue_ip_range_update"]


@dataclass(frozen=True)
class IpRangeUpdate:
    """The writes that bring a stored map up to date: fields to set, fields to delete."""

    set: Mapping[str, str]  # account id -> JSON list of CIDRs
    drop: tuple[str, ...]  # account ids whose field goes
    cleaned: int  # stored entries of accounts not in the run that the rules refused (dropped or trimmed)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _still_allowed(raw: bytes | str, rules: IpRangeRules) -> list[str] | None:
    """The stored CIDRs the rules still allow, or None when the entry does not read as a list."""
    try:
        cidrs = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(cidrs, list):
        return None
    kept: list[str] = []
    for cidr in cidrs:
        try:
            kept.append(str(check_ip_range(str(cidr), rules)))
        except IpRangeRefused:
            continue
    return kept


def plan_ip_range_update(
    stored: Mapping[bytes, bytes] | Mapping[str, str],
    accounts: Sequence[Account],
    erased: Collection[str],
    rules: IpRangeRules | None,
) -> IpRangeUpdate:
    """What to write so that `stored` becomes the merged map (see the module docstring)."""
    rules = rules or IpRangeRules()
    in_run = {a.account_id for a in accounts}
    to_set: dict[str, str] = {}
    drop: set[str] = set()
    cleaned = 0
    for key, raw in stored.items():
        account = _text(key)
        if account in in_run:
            continue
        if account in erased:
            drop.add(account)
            continue
        kept = _still_allowed(raw, rules)
        if kept is None or not kept:
            drop.add(account)
            cleaned += 1
        elif json.dumps(kept) != _text(raw):
            to_set[account] = json.dumps(kept)
            cleaned += 1
    for record in accounts:
        if record.ip_ranges:
            to_set[record.account_id] = json.dumps(record.ip_ranges)
        else:
            drop.add(record.account_id)
    stored_ids = {_text(k) for k in stored}
    return IpRangeUpdate(
        set=to_set,
        drop=tuple(sorted(drop & stored_ids)),
        cleaned=cleaned,
    )


def queue_ip_range_update(pipe: Pipeline, key: str, update: IpRangeUpdate) -> None:
    """Queue `update` on a transaction's pipeline; the map's TTL is renewed when anything remains."""
    if update.drop:
        pipe.hdel(key, *update.drop)
    if update.set:
        pipe.hset(key, mapping=dict(update.set))  # type: ignore[arg-type]
    pipe.expire(key, keys.CAMPAIGN_TTL_S)
