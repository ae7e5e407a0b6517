"""The grounding corpus through the model path: which planted lines reach a page as personal copy.

    .venv/bin/python -m tests.precompute.claims.grounding_corpus

`grounding_lines/fabricated.jsonl` holds personal lines that claim what their cited facts do not
say (customer status, relationships, the reader's words or state, invented events, third
parties, invented numbers and dates); `grounding_lines/good.jsonl` lines a marketer would
publish, each true given the fact it cites. Both were written apart from the checks' own
vocabulary, as an auditor would write them (issue 24), so they measure whether a line is
grounded in what it cites, not whether it resembles sentences the checks have seen.

Every line goes the whole way a model's line goes: the real `openai` provider over a real
socket to the local test model server (tests/llm_server.py, mode `lines`: it writes the line
for its zone, citing the line's facts, writes the other zones as a careful model would, and
its self-review approves everything), then the deterministic checks, the fallback ladder and
the publisher, into a real Redis. What the page would serve is read back from the published
zone set, and why from the account's explain record.

The server's `lines` are one mapping for a whole run, not one per account, so a run carries
one account's page: one line per zone. An account's lines are grouped by zone and run in
rounds (round n: the n-th line of each zone). Publishing is idempotent on the account record
and campaign, not on what the model answers, so the database is emptied before every run (a
run is ~20 ms; the corpus takes seconds).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import redis

from precompute.company_names import short_name
from precompute.explain import decode_explain_record
from precompute.policy import build_policy
from precompute.run import PrecomputeRun
from tests.corpora import REPO_ROOT
from tests.example_accounts import committed_today
from tests.llm_server import LLMTestServer
from tests.precompute.test_openai_provider import provider_for
from welcomemat import keys
from welcomemat.campaign.contract import Campaign, load_campaign
from welcomemat.zones.contract import ZoneContract, load_zone_contracts
from welcomemat.zones.store import ZoneSetStore
from welcomemat.zones.zoneset import Rung, ZoneSet

__all__ = [
    "CLASSES",
    "CORPUS_DIR",
    "KINDS",
    "NOW",
    "CorpusLine",
    "LineOutcome",
    "Result",
    "corpus_rows",
    "load_lines",
    "main",
    "measure",
    "rounds",
]

CORPUS_DIR = Path(__file__).parent / "grounding_lines"
KINDS = ("fabricated", "good")
# What a fabricated line claims without support; a good line's class is the type of fact it cites.
FABRICATED_CLASSES = (
    "customer_status",
    "event",
    "number_or_date",
    "reader_state",
    "reader_words",
    "relationship",
    "third_party",
)
FACT_CLASSES = ("expansion", "funding", "hiring", "leadership")
CLASSES = {"fabricated": FABRICATED_CLASSES, "good": FACT_CLASSES}
# As in test_openai_provider and test_pipeline: Sunday 29 November 2026, Dymaxa's Series A on Thursday.
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TODAY = NOW.date()
SHOWN_PER_KIND = 3  # examples printed per failure kind


@dataclass(frozen=True)
class CorpusLine:
    """One planted line: the zone it is written for, its account, the facts it cites."""

    kind: str  # fabricated | good
    number: int  # 1-based line number in its file
    zone: str
    account: str
    cites: tuple[str, ...]
    klass: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.kind}.jsonl:{self.number}"


@dataclass(frozen=True)
class LineOutcome:
    """What the page serves in the line's zone, and why."""

    line: CorpusLine
    served: bool  # the zone serves the line's own text, whatever the rung
    rung: str
    reason: str
    checks: tuple[str, ...] = ()  # failed checks, `check:reason detail`
    held: str | None = None  # `layer: note` when doubt held the draft
    note: str | None = None  # the provider's note for a zone it wrote no draft for

    @property
    def personal(self) -> bool:
        return self.served and self.rung == Rung.PERSONAL.value

    @property
    def why(self) -> str:
        """The kind of refusal, for grouping: the reason code without its detail."""
        if self.personal:
            return "personal"
        if self.served:
            return f"served as {self.rung} ({self.reason.split(':', 1)[0]})"
        return self.reason.split(";", 1)[0] if not self.checks else self.reason

    def describe(self) -> str:
        parts = [
            f"{self.line.where} [{self.line.klass}] {self.line.zone} {self.line.account}: {self.line.text!r}"
        ]
        parts.append(f"    -> {self.rung} ({self.reason})")
        parts += [f"    check {c}" for c in self.checks]
        if self.held:
            parts.append(f"    held: {self.held}")
        if self.note:
            parts.append(f"    note: {self.note}")
        return "\n".join(parts)


@dataclass
class Result:
    """Every line's outcome, and what measuring cost."""

    outcomes: list[LineOutcome] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0

    def of(self, kind: str) -> list[LineOutcome]:
        return [o for o in self.outcomes if o.line.kind == kind]

    def published(self, kind: str) -> list[LineOutcome]:
        """Lines the page serves as personal copy."""
        return [o for o in self.of(kind) if o.personal]

    def served(self, kind: str) -> list[LineOutcome]:
        """Lines the page serves at any rung (a generic line is served as segment copy)."""
        return [o for o in self.of(kind) if o.served]

    def held(self, kind: str) -> list[LineOutcome]:
        """Lines not served as personal copy: the zone took its fallback (or served them as segment copy)."""
        return [o for o in self.of(kind) if not o.personal]

    def rate(self, kind: str) -> float:
        lines = self.of(kind)
        return len(self.published(kind)) / len(lines) if lines else 0.0

    def summary(self) -> str:
        out = [f"{len(self.outcomes)} lines in {self.runs} runs, {self.seconds:.1f} s"]
        for kind in KINDS:
            lines = self.of(kind)
            if not lines:
                continue
            by_class = Counter(o.line.klass for o in self.published(kind))
            out.append(
                f"{kind}: {len(self.published(kind))}/{len(lines)} published as personal "
                f"({self.rate(kind):.1%}), {len(self.served(kind))} served at any rung, "
                f"{len(self.held(kind))} not personal"
                + (f"; personal by class: {dict(sorted(by_class.items()))}" if kind == "fabricated" else "")
            )
        return "\n".join(out)

    def examples(self) -> str:
        """The first lines of each failure kind: fabricated lines served, good lines not personal."""
        out: list[str] = []
        failing = {
            "fabricated": self.served("fabricated"),
            "good": self.held("good"),
        }
        for kind, outcomes in failing.items():
            groups: dict[str, list[LineOutcome]] = defaultdict(list)
            for o in outcomes:
                key = f"{o.line.klass}, {o.why}" if kind == "fabricated" else o.why
                groups[key].append(o)
            for key, group in sorted(groups.items(), key=lambda kv: -len(kv[1])):
                out.append(f"{kind} {key}: {len(group)}")
                out += [o.describe() for o in group[:SHOWN_PER_KIND]]
        return "\n".join(out)


def load_lines(kind: str, directory: Path = CORPUS_DIR) -> list[CorpusLine]:
    """The lines of `<directory>/<kind>.jsonl`."""
    path = directory / f"{kind}.jsonl"
    lines = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        row = json.loads(raw)
        lines.append(
            CorpusLine(
                kind=kind,
                number=number,
                zone=row["zone"],
                account=row["account"],
                cites=tuple(row["cites"]),
                klass=row["class"],
                text=row["text"],
            )
        )
    return lines


def corpus_rows(today: date = TODAY) -> dict[str, dict[str, Any]]:
    """Every example account by id, re-dated as test_openai_provider's `example_rows` re-dates them.

    Tier 2: no person approves the page first, so what passes is published at once.
    """
    records = [json.loads(r) for r in (REPO_ROOT / "examples" / "accounts.jsonl").read_text().splitlines()]
    shift = today - committed_today(records[0])
    rows = {}
    for record in records:
        for fact in record["facts"]:
            try:
                published = date.fromisoformat(fact["published_at"])
            except (KeyError, TypeError, ValueError):
                continue  # a malformed date stays malformed: the trust policy refuses it
            fact["published_at"] = (published + shift).isoformat()
        record["tier"] = 2
        rows[record["account_id"]] = record
    return rows


def rounds(lines: Iterable[CorpusLine]) -> list[tuple[str, dict[str, CorpusLine]]]:
    """One page per run: (account, {zone: line}), the n-th line of each of the account's zones."""
    by_slot: dict[tuple[str, str], list[CorpusLine]] = defaultdict(list)
    for line in lines:
        by_slot[(line.account, line.zone)].append(line)
    pages: dict[tuple[str, int], dict[str, CorpusLine]] = defaultdict(dict)
    for (account, zone), slot in by_slot.items():
        for n, line in enumerate(slot):
            pages[(account, n)][zone] = line
    return [(account, page) for (account, _), page in sorted(pages.items())]


def example_inputs() -> tuple[Campaign, dict[str, ZoneContract]]:
    zones = dict(load_zone_contracts(REPO_ROOT / "zones"))
    return load_campaign(REPO_ROOT / "examples" / "campaign.yaml", zones), zones


def measure(
    lines: Sequence[CorpusLine],
    *,
    client: redis.Redis,
    server: LLMTestServer,
    campaign: Campaign | None = None,
    zones: dict[str, ZoneContract] | None = None,
    work_dir: Path | None = None,
) -> Result:
    """Run every line through the model path and read back what the page serves.

    Empties `client`'s database before every run: give it a database of its own. Leaves the
    server in mode `well`.
    """
    if campaign is None or zones is None:
        campaign, zones = example_inputs()
    rows = corpus_rows()
    # The wrong-company check knows every example account, as a run over the whole file would.
    names = frozenset(short_name(r["name"]).casefold() for r in rows.values())
    policy = build_policy(campaign, None)
    store = ZoneSetStore(client)
    result = Result()
    started = time.monotonic()
    provider = provider_for(server)
    try:
        with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
            path = Path(tmp) / "accounts.jsonl"
            for account, page in rounds(lines):
                client.flushdb()
                server.set_mode(
                    "lines",
                    lines={zone: line.text for zone, line in page.items()},
                    fact_ids={zone: list(line.cites) for zone, line in page.items()},
                )
                path.write_text(json.dumps(rows[account]) + "\n", encoding="utf-8")
                report = PrecomputeRun(
                    client=client,
                    campaign=campaign,
                    zones=zones,
                    policy=policy,
                    provider=provider,
                    now=NOW,
                    other_companies=names,
                ).run(path)
                result.runs += 1
                if report.failed or report.deferred:
                    raise RuntimeError(f"{account}: the run failed or was deferred, so nothing was measured")
                zone_set = store.get(campaign.tenant, campaign.campaign, account)
                if zone_set is None:
                    raise RuntimeError(f"{account}: no zone set was published")
                record = decode_explain_record(
                    client.get(keys.explain_key(campaign.tenant, campaign.campaign, account))
                )
                result.outcomes += [_outcome(line, zone_set, record) for line in page.values()]
    finally:
        provider.close()
        server.reset()
    result.seconds = time.monotonic() - started
    order = {line: i for i, line in enumerate(lines)}
    result.outcomes.sort(key=lambda o: order[o.line])
    return result


def _outcome(line: CorpusLine, zone_set: ZoneSet, record: Mapping[str, Any]) -> LineOutcome:
    zone = zone_set.zone(line.zone)
    if zone is None:
        raise RuntimeError(f"{line.where}: the published zone set has no zone {line.zone!r}")
    zones: list[Mapping[str, Any]] = list(record.get("zones") or ())
    explained = next((z for z in zones if z.get("zone_id") == line.zone), {})
    checks = tuple(
        f"{c['check']}:{c['reason']} {c.get('detail') or ''}".strip() for c in explained.get("checks") or ()
    )
    held = explained.get("held") or None
    return LineOutcome(
        line=line,
        served=zone.text == line.text,
        rung=zone.rung.value,
        reason=zone.reason,
        checks=checks,
        held=f"{held.get('layer')}: {held.get('note')}" if held else None,
        note=explained.get("note"),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both files (or the kinds named) on an embedded Redis and a local model server."""
    from welcomemat.storage.embedded_redis import temporary_redis
    from welcomemat.storage.redis_client import redis_from_url

    kinds = list(argv if argv is not None else sys.argv[1:]) or list(KINDS)
    lines = [line for kind in kinds for line in load_lines(kind)]
    with tempfile.TemporaryDirectory() as tmp, temporary_redis(Path(tmp) / "redis") as url:
        client = redis_from_url(url, connect_timeout_s=5.0, socket_timeout_s=30.0)
        try:
            with LLMTestServer() as server:
                result = measure(lines, client=client, server=server, work_dir=Path(tmp))
        finally:
            client.close()
    print(result.summary())
    print(result.examples())
    ok = not result.published("fabricated") and ("good" not in kinds or result.rate("good") >= 0.9)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
