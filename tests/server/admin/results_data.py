"""A campaign with an experiment, events on known days and conversions, for the results page's tests.

Events are written to the tenant's stream as the renderer writes them (`EngagementEvent`),
then folded into the account records by the sync, so the report (from records) and the daily
series (from the stream) read one history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import redis

from outbound.sync import Syncer, SyncOptions
from server.engagement.events import EngagementEvent, EventType
from tests.server.conftest import (
    CAMPAIGN,
    TENANT,
    accounts_in,
    example_inputs,
    make_zone_set,
    publish_config,
)
from welcomemat import keys
from welcomemat.arms import Arm
from welcomemat.campaign.experiments import CopyVariant, Experiment, assign_variant
from welcomemat.records.conversions import parse_conversion, record_conversion
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneContent, ZoneSet

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY1, DAY2 = (NOW - timedelta(days=2)).date(), (NOW - timedelta(days=1)).date()
EXPERIMENT = Experiment(
    id="headline-angle",
    zone="hero_headline",
    variants=(CopyVariant(id="control"), CopyVariant(id="direct")),
)


@dataclass(frozen=True)
class Population:
    personal: list[str]
    holdout: list[str]


def zone_set(account: str, variant: str | None) -> ZoneSet:
    """Personal headline and CTA; the proof zone on its segment copy (no trusted fact)."""
    base = make_zone_set(account, texts={"hero_headline": "Congrats on the round", "cta": "Book a review"})
    proof = ZoneContent(
        zone_id="proof", text="Teams like yours ramp faster", rung=Rung.SEGMENT, reason="no_trusted_fact"
    )
    return base.model_copy(
        update={
            "zones": (*base.zones, proof),
            "experiment": EXPERIMENT.id if variant is not None else None,
            "variant": variant,
        }
    )


def publish_results_campaign(client: redis.Redis) -> Population:
    """40 personal accounts (in two variants) and 40 holdout; on DAY1 and DAY2 as below.

    DAY1: personal[:20] and holdout[:10] view twice; personal[:6] click the CTA.
    DAY2: personal[10:30] view once; holdout[:10] view once; personal[:4] convert (DAY2 10:00).
    """
    campaign, zones = example_inputs()
    publish_config(client, campaign.model_copy(update={"experiment": EXPERIMENT}), zones)
    personal, holdout = accounts_in(Arm.PERSONAL, 40), accounts_in(Arm.HOLDOUT, 40)
    ZoneSetStore(client).publish_many(
        [zone_set(a, assign_variant(CAMPAIGN, EXPERIMENT, a).id) for a in personal]
        + [zone_set(a, None) for a in holdout]
    )
    day1 = int(datetime(DAY1.year, DAY1.month, DAY1.day, 9, tzinfo=UTC).timestamp() * 1000)
    day2 = day1 + 86_400_000
    events: list[EngagementEvent] = []

    def add(kind: EventType, account: str, arm: Arm, ts: int, zone: str | None = None) -> None:
        variant = assign_variant(CAMPAIGN, EXPERIMENT, account).id if arm is Arm.PERSONAL else None
        events.append(
            EngagementEvent(
                type=kind,
                tenant=TENANT,
                campaign=CAMPAIGN,
                view_id=f"v{len(events)}",
                ts_ms=ts + len(events),
                arm=arm.value,
                account=account,
                zone=zone,
                variant=variant,
            )
        )

    for a in personal[:20]:
        add(EventType.VIEW, a, Arm.PERSONAL, day1)
        add(EventType.VIEW, a, Arm.PERSONAL, day1)
    for a in holdout[:10]:
        add(EventType.VIEW, a, Arm.HOLDOUT, day1)
        add(EventType.VIEW, a, Arm.HOLDOUT, day1)
    for a in personal[:6]:
        add(EventType.CLICK, a, Arm.PERSONAL, day1, zone="cta")
    for a in personal[10:30]:
        add(EventType.VIEW, a, Arm.PERSONAL, day2)
    for a in holdout[:10]:
        add(EventType.VIEW, a, Arm.HOLDOUT, day2)
    stream = keys.events_stream_key(TENANT)
    for i, e in enumerate(events):
        entry = e.stream_entry()
        client.xadd(stream, dict(zip(entry[::2], entry[1::2], strict=True)), id=f"{e.ts_ms}-{i}")
    Syncer(
        client, SyncOptions(name="results", tenants=(TENANT,), once=True, block_ms=50), log=lambda line: None
    ).run()
    for a in personal[:4]:
        body = {
            "campaign": CAMPAIGN,
            "account_id": a,
            "type": "meeting_booked",
            "conversion_id": f"{a}-meeting",
            "occurred_at": f"{DAY2.isoformat()}T10:00:00Z",
        }
        record_conversion(client, TENANT, 0.1, parse_conversion(json.dumps(body)), now=NOW)
    return Population(personal, holdout)
