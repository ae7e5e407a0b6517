"""Issue 24's corpus through the model path: no fabricated line reaches a page, good lines do.

The lines (tests/precompute/grounding_lines/, and a second set by another author in
grounding_lines_heldout/, 150 of each kind) were written apart from the checks' own
vocabulary; `tests/precompute/claims/grounding_corpus.py` runs each through the real `openai`
provider against the local model server, whose self-review approves everything, and reads
back what the page serves. Both rates are printed; the good lines guard against a check that
refuses everything. Rerun on its own, with every failure shown:
`python -m tests.precompute.claims.grounding_corpus`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import redis

from precompute.context_builder import build_context
from precompute.policy import build_policy
from tests.llm_server import LLMTestServer
from tests.precompute.claims.grounding_corpus import (
    CLASSES,
    CORPUS_DIR,
    KINDS,
    TODAY,
    corpus_rows,
    load_lines,
    measure,
)
from welcomemat.campaign.contract import Campaign
from welcomemat.records.accounts import Account
from welcomemat.zones.contract import ZoneContract

MIN_LINES = 300  # per file (issue 24)
HELD_OUT_DIR = CORPUS_DIR.parent / "grounding_lines_heldout"
CORPORA = pytest.mark.parametrize("directory", [CORPUS_DIR, HELD_OUT_DIR], ids=["corpus", "held_out"])
MIN_GOOD_PUBLISHED = 0.90
PERSONAL_ZONES = ("hero_headline", "hero_support", "proof", "continuation_headline")
LINK_RE = re.compile(r"https?://|www\.|<[a-z/]|\]\(", re.I)


@pytest.fixture
def server(llm_server: LLMTestServer) -> LLMTestServer:
    llm_server.reset()
    return llm_server


@pytest.mark.parametrize("kind", KINDS)
def test_the_corpus_is_what_it_says(kind: str, campaign: Campaign, zones: dict[str, ZoneContract]) -> None:
    """Enough lines, every class, within each zone's limits, citing trusted facts of the account."""
    lines = load_lines(kind)
    assert len(lines) >= MIN_LINES
    assert len({line.text for line in lines}) == len(lines), "a line is there twice"
    assert set(Counter(line.klass for line in lines)) == set(CLASSES[kind])
    rows = corpus_rows()
    policy = build_policy(campaign, None)
    contexts = {}
    for line in lines:
        assert line.zone in PERSONAL_ZONES, line.where
        contract = zones[line.zone]
        assert len(line.text) <= contract.max_chars and len(line.text.split()) <= contract.max_words, (
            line.where
        )
        if line.account not in contexts:
            contexts[line.account] = build_context(
                Account.model_validate(rows[line.account]), campaign, policy, TODAY
            )
        facts = {f.id: f for f in contexts[line.account].facts}
        assert line.cites and set(line.cites) <= set(facts), (line.where, line.cites, sorted(facts))
        assert {facts[i].type for i in line.cites} <= set(contract.fact_types), line.where
        if kind == "good":
            assert line.klass in {facts[i].type for i in line.cites}, line.where
            assert line.text.count("?") <= 1 and not LINK_RE.search(line.text), line.where
            for banned in campaign.banned_phrases:
                assert banned.casefold() not in line.text.casefold(), (line.where, banned)


@CORPORA
def test_no_fabricated_line_is_published(
    directory: Path, redis_client: redis.Redis, server: LLMTestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    result = measure(load_lines("fabricated", directory), client=redis_client, server=server)
    with capsys.disabled():
        print(f"\n{result.summary()}")
    published = result.published("fabricated")
    served = result.served("fabricated")
    assert not published, "fabricated lines published as personal:\n" + "\n".join(
        o.describe() for o in published
    )
    # A generic line is served as segment copy (`not_specific`): a false one must not be served at all.
    assert not served, "fabricated lines served as segment copy:\n" + "\n".join(o.describe() for o in served)


@CORPORA
def test_good_lines_are_published(
    directory: Path, redis_client: redis.Redis, server: LLMTestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    result = measure(load_lines("good", directory), client=redis_client, server=server)
    with capsys.disabled():
        print(f"\n{result.summary()}")
    held = result.held("good")
    reasons = Counter(o.reason for o in held)
    assert result.rate("good") >= MIN_GOOD_PUBLISHED, (
        f"{len(held)} good lines not published as personal ({json.dumps(reasons)}):\n"
        + "\n".join(o.describe() for o in held[:20])
    )
