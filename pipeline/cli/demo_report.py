"""The demo's questions and its readable evidence table."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pipeline.io.result_sink import read_results

DEMO_QUESTIONS = (
    "How do I parse a JSON document from a string?",
    "Run a command in a subprocess and capture its output",
    "Push and pop items on a heap priority queue",
    "Create a temporary directory that is cleaned up",
    "Compare two sequences and show the differences",
    "Read rows from a CSV file as dictionaries",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ABBREVIATION = re.compile(r"(?:[A-Za-z]\.){2,}|(?:e\.g|i\.e|etc|vs|cf|approx|resp)\.", re.I)
"""A word ending in a period that ends no sentence: a.k.a., e.g., i.e., etc."""


def first_sentence(text: str) -> str:
    """`text` up to its first sentence end, not cut at an abbreviation."""
    for end in _SENTENCE_END.finditer(text):
        word = text[:end.start()].rsplit(None, 1)[-1]
        if not _ABBREVIATION.fullmatch(word.lstrip("(")):
            return text[:end.start()]
    return text


def headline(content: str, heading: str | None = None, limit: int = 90) -> str:
    """What a chunk is about: the heading it falls under (else the first one in it) and its
    first sentence."""
    heading, sentence = heading or "", ""
    for paragraph in (p.strip() for p in content.split("\n\n")):
        if paragraph.startswith("#"):
            heading = heading or paragraph.lstrip("#").strip().splitlines()[0]
        elif paragraph:
            sentence = first_sentence(" ".join(paragraph.split()))
            if heading or sentence:
                break
    text = f"{heading}: {sentence}" if heading and sentence else heading or sentence
    return text if len(text) <= limit else text[: limit - 3] + "..."


def evidence_table(results_path: Path, headings: Mapping[str, str] | None = None) -> str:
    """One block per query: rank, score, evidence key and what the chunk is about (under
    `headings[evidence key]`, the heading a chunk falls under)."""
    headings = headings or {}
    by_id = {r.query_id: r for r in read_results(str(results_path))}
    lines: list[str] = []
    for number, question in enumerate(DEMO_QUESTIONS, start=1):
        result = by_id.get(f"q{number}")
        lines.append(f"\nQ{number}: {question}")
        lines.append(f"  {'rank':>4}  {'score':>6}  {'evidence key':<28}  about")
        for block in result.evidence if result else ():
            lines.append(f"  {block.rank:>4}  {block.score:>6.3f}  "
                         f"{block.evidence_key:<28}  "
                         f"{headline(block.content, headings.get(block.evidence_key))}")
    return "\n".join(lines)
