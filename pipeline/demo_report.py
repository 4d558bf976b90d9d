"""The demo's questions and its readable evidence table."""

from __future__ import annotations

import json
from pathlib import Path

DEMO_QUESTIONS = (
    "How do I parse a JSON document from a string?",
    "Run a command in a subprocess and capture its output",
    "Push and pop items on a heap priority queue",
    "Create a temporary directory that is cleaned up",
    "Compare two sequences and show the differences",
    "Read rows from a CSV file as dictionaries",
)


def evidence_table(results_path: Path, snippet_chars: int = 60) -> str:
    """One block per query: rank, score, evidence key and the start of the content."""
    results = [
        json.loads(line) for line in results_path.read_text(encoding="utf-8").split("\n") if line
    ]
    by_id = {r["query_id"]: r for r in results}
    lines: list[str] = []
    for number, question in enumerate(DEMO_QUESTIONS, start=1):
        result = by_id.get(f"q{number}")
        lines.append(f"\nQ{number}: {question}")
        lines.append(f"  {'rank':>4}  {'score':>6}  {'evidence key':<34}  content")
        for block in (result or {}).get("evidence", []):
            snippet = " ".join(block["content"].split())[:snippet_chars]
            lines.append(
                f"  {block['rank']:>4}  {block['score']:>6.3f}  "
                f"{block['evidence_key']:<34}  {snippet}"
            )
    return "\n".join(lines)
