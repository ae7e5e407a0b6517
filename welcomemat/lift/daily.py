"""The lift report's counts per day: visits, reached accounts, CTA clicks and conversions.

The lift report (`welcomemat.lift.comparison`) counts from the account records, which keep totals and
no dates. The days come from where dates are: the tenant's engagement event stream
(`keys.events_stream_key`, each event's `ts`, decoded by `welcomemat.records.event_entries`) and
the stored conversions (`occurred_at`). The stream keeps `keys.EVENTS_STREAM_TTL_S` (30 days
after its last event) and is trimmed at the renderer's `events_stream_maxlen`, so the series
covers what it still holds; a day's counts can therefore add up to less than the report's
totals for an old campaign.

Accounts, arms and variants are the report's own (`AccountOutcome`: the population is every
account with a published zone set, its variant the one its zone set records), so a line of
the series and a row of the report count the same accounts. Days are UTC dates, the last
one `now`'s (the clock is the caller's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, time, timedelta

import redis
from pydantic import BaseModel, ConfigDict

from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.errors import StoredValueError
from welcomemat.lift.comparison import COMPARED_ARMS, AccountOutcome
from welcomemat.records.conversions import ConversionType, iter_conversions
from welcomemat.records.event_entries import ENTRIES_PER_READ, PoisonEvent, parse_entry
from welcomemat.records.fold import EventFold

__all__ = ["DEFAULT_DAYS", "DailyCounts", "daily_counts", "series_groups"]

# The series' length: the event stream's lifetime (`keys.EVENTS_STREAM_TTL_S`), in days.
DEFAULT_DAYS = keys.EVENTS_STREAM_TTL_S // 86_400
_DAY_MS = 86_400_000
# An entry's id is Redis's clock when it was added, a moment after its event's `ts` (the renderer
# batches; clocks drift): read an hour either side of the days and count by `ts`, so an event near
# midnight is counted on its own day.
_WRITE_LAG_MS = 3_600_000


class DailyCounts(BaseModel):
    """One group's counts on one day (UTC): `arm`, and `variant` for one variant's personal accounts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    day: date
    arm: Arm
    variant: str | None
    visits: int
    reached_accounts: int
    cta_clicks: int
    conversions: int


def series_groups(variants: Iterable[str]) -> list[tuple[Arm, str | None]]:
    """The series' groups in display order: each arm (a line even when empty), then each variant."""
    return [(arm, None) for arm in COMPARED_ARMS] + [(Arm.PERSONAL, v) for v in variants]


def _days(now: datetime, days: int) -> list[date]:
    last = now.astimezone(UTC).date()
    return [last - timedelta(days=n) for n in range(days - 1, -1, -1)]


def _entries(client: redis.Redis, tenant: str, start_ms: int, end_ms: int) -> Iterator[tuple[str, object]]:
    key = keys.events_stream_key(tenant)
    lower = f"{max(0, start_ms - _WRITE_LAG_MS)}-0"
    upper = f"{end_ms + _WRITE_LAG_MS}-0"
    while True:
        batch = client.xrange(key, min=lower, max=upper, count=ENTRIES_PER_READ)
        if not batch:
            return
        for entry_id, fields in batch:
            yield (entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)), fields
        last = batch[-1][0]
        last_id = last.decode() if isinstance(last, bytes) else str(last)
        lower = f"({last_id}"  # exclusive: the next batch starts after this one
        if len(batch) < ENTRIES_PER_READ:
            return


def _events(
    client: redis.Redis, tenant: str, start_ms: int, end_ms: int
) -> Iterator[tuple[str, EventFold | None | PoisonEvent]]:
    """Each event of the entries written in the window (one per entry, or a batch's), by name."""
    for entry_id, fields in _entries(client, tenant, start_ms, end_ms):
        try:
            for event in parse_entry(tenant, entry_id, fields):  # type: ignore[arg-type]
                yield event.name, event.fold
        except PoisonEvent as exc:
            yield entry_id, exc


def daily_counts(
    client: redis.Redis,
    tenant: str,
    campaign: str,
    outcomes: Iterable[AccountOutcome],
    cta_zones: frozenset[str],
    *,
    now: datetime,
    days: int = DEFAULT_DAYS,
    variants: Iterable[str] = (),
    types: frozenset[ConversionType] | None = None,
    problems: list[str] | None = None,
) -> list[DailyCounts]:
    """Per day of the `days` ending `now`, per group, what the population did.

    An entry or a stored conversion that does not decode is skipped and described in
    `problems`; events of accounts outside the population (anonymous, pending review,
    another campaign) are not counted, as the report does not count them.
    """
    if days < 1:
        raise ValueError(f"days must be at least 1, not {days}")
    sink: list[str] = problems if problems is not None else []
    members: Mapping[str, AccountOutcome] = {o.account_id: o for o in outcomes if o.arm in COMPARED_ARMS}
    listed_variants = list(variants)
    groups = series_groups(listed_variants)
    calendar = _days(now, days)
    first, last = calendar[0], calendar[-1]
    start_ms = int(datetime.combine(first, time.min, tzinfo=UTC).timestamp() * 1000)
    end_ms = int(datetime.combine(last, time.min, tzinfo=UTC).timestamp() * 1000) + _DAY_MS - 1

    visits: defaultdict[tuple[date, Arm, str | None], int] = defaultdict(int)
    clicks: defaultdict[tuple[date, Arm, str | None], int] = defaultdict(int)
    conversions: defaultdict[tuple[date, Arm, str | None], int] = defaultdict(int)
    reached: defaultdict[tuple[date, Arm, str | None], set[str]] = defaultdict(set)
    # A view counts once, a click once per view and zone, as the fold counts them
    # (`keys.view_seen_key`): a replayed view token's repeats are not visits or clicks.
    counted: set[tuple[str, str, str | None]] = set()

    def group_keys(day: date, outcome: AccountOutcome) -> list[tuple[date, Arm, str | None]]:
        found: list[tuple[date, Arm, str | None]] = [(day, outcome.arm, None)]
        if outcome.arm is Arm.PERSONAL and outcome.variant in listed_variants:
            found.append((day, Arm.PERSONAL, outcome.variant))
        return found

    for name, event in _events(client, tenant, start_ms, end_ms):
        if isinstance(event, PoisonEvent):
            sink.append(f"{keys.events_stream_key(tenant)} {name}: {event}")
            continue
        if event is None or event.campaign != campaign or not start_ms <= event.ts_ms <= end_ms:
            continue
        outcome = members.get(event.account_id)
        if outcome is None:
            continue
        if event.view_id is not None and event.kind in ("views", "clicks"):
            once = (event.view_id, event.kind, event.zone if event.kind == "clicks" else None)
            if once in counted:
                continue
            counted.add(once)
        day = datetime.fromtimestamp(event.ts_ms / 1000, UTC).date()
        for key in group_keys(day, outcome):
            if event.kind == "views":
                visits[key] += 1
                reached[key].add(event.account_id)
            elif event.kind == "qr":  # reaches the account, as in the report; not a visit
                reached[key].add(event.account_id)
            elif event.kind == "clicks" and event.zone in cta_zones:
                clicks[key] += 1
    conversion_problems: list[StoredValueError] = []
    for conversion in iter_conversions(client, tenant, campaign, problems=conversion_problems):
        outcome = members.get(conversion.account_id)
        if outcome is None or (types is not None and conversion.type not in types):
            continue
        day = conversion.occurred_at.astimezone(UTC).date()
        if first <= day <= last:
            for key in group_keys(day, outcome):
                conversions[key] += 1
    sink.extend(str(p) for p in conversion_problems)
    return [
        DailyCounts(
            day=day,
            arm=arm,
            variant=variant,
            visits=visits[(day, arm, variant)],
            reached_accounts=len(reached[(day, arm, variant)]),
            cta_clicks=clicks[(day, arm, variant)],
            conversions=conversions[(day, arm, variant)],
        )
        for arm, variant in groups
        for day in calendar
    ]
