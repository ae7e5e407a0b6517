"""Research extraction: facts a model found in an account's raw sources, kept only when verbatim.

A model may read an account's `sources` (press releases, job posts) and propose dated
facts. It can paraphrase, misread or obey an instruction planted in a document, so what
it proposes is only a candidate: a fact is kept when its `evidence` is a verbatim
substring of the source text (whitespace aside) and its statement adds no link, markup,
number or name that the evidence lacks. Kept facts carry the source's URL and date and
then face the trust policy like any fact a researcher supplied.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from welcomemat.records.accounts import Source

__all__ = [
    "MAX_SOURCES",
    "MAX_SOURCE_CHARS",
    "ExtractedFact",
    "ExtractedFacts",
    "normalise_whitespace",
    "verified_facts",
]

MAX_SOURCES = 10  # raw documents per account sent for extraction
MAX_SOURCE_CHARS = 20_000  # of each document's text (evidence must still be in the whole text)
_EXTRACTED_CONFIDENCE = "medium"  # quoted verbatim, but the statement is the model's own words
_WORD_RE = re.compile(r"[^\W_]+")
_DOMAIN_RE = re.compile(r"(?i)\b[a-z0-9-]+\.[a-z]{2,}\b")
_LINK_OR_MARKUP = ("<", ">", "://", "www.")


class ExtractedFact(BaseModel):
    """One fact the model found in a source document, with its verbatim evidence."""

    model_config = ConfigDict(extra="forbid")

    source_id: str
    type: str
    statement: str
    subject: str
    evidence: str


class ExtractedFacts(BaseModel):
    """The extraction call's answer."""

    model_config = ConfigDict(extra="forbid")

    facts: list[ExtractedFact]


def normalise_whitespace(text: str) -> str:
    """Runs of whitespace (newlines, tabs, non-breaking spaces) as one space; nothing else changes."""
    return " ".join(text.split())


def _statement_supported(statement: str, evidence: str, subject: str) -> bool:
    """The statement adds no link, markup, number or capitalised name the evidence and subject lack."""
    if any(s in statement for s in _LINK_OR_MARKUP) or _DOMAIN_RE.search(statement):
        return False
    known = {w.casefold() for w in _WORD_RE.findall(f"{evidence} {subject}")}
    words = _WORD_RE.findall(statement)
    # The first word is capitalised by grammar, not because it is a name.
    return all(w.casefold() in known for w in words[1:] if w[0].isupper() or any(c.isdigit() for c in w))


def verified_facts(extracted: Iterable[ExtractedFact], sources: Mapping[str, Source]) -> list[dict[str, Any]]:
    """Fact records (the `accounts.jsonl` shape) for the extracted facts whose evidence is verbatim.

    A fact is dropped when its source id is unknown, its evidence is not a substring of that
    source's text after whitespace normalisation only (case, quotes and spelling must match),
    or its statement adds a link, markup, number or name the evidence does not contain. Kept
    facts carry the source's URL and date; the trust policy still decides each one.
    """
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for fact in extracted:
        source = sources.get(fact.source_id)
        evidence = normalise_whitespace(fact.evidence)
        statement = normalise_whitespace(fact.statement)
        if source is None or not evidence or not statement:
            continue
        if evidence not in normalise_whitespace(source.text):
            continue
        if not _statement_supported(statement, evidence, fact.subject):
            continue
        digest = hashlib.sha256(f"{source.url}\x00{fact.type}\x00{evidence}".encode()).hexdigest()
        fact_id = f"x-{digest[:16]}"
        if fact_id in seen:
            continue
        seen.add(fact_id)
        kept.append(
            {
                "id": fact_id,
                "type": fact.type.strip(),
                "statement": statement,
                "subject": normalise_whitespace(fact.subject),
                "source_url": source.url,
                "published_at": source.published_at,
                "confidence": _EXTRACTED_CONFIDENCE,
                "surfaces": ["web"],
                "evidence": evidence,
            }
        )
    return kept
