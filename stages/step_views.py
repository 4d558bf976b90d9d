"""How `explain` shows what a candidate step did to one query: a table (its title and columns)
of rows made from the candidates before and after the step, under a field of its JSON output.
A step declares its view (`CandidateStep.view`); one that declares none shows what it dropped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stages.models import Candidate
from stages.ranking import ranked

Row = dict[str, Any]
RowsFn = Callable[[list[Candidate], list[Candidate]], list[Row]]


@dataclass(frozen=True)
class StepView:
    """`rows(before, after)` shown as a table titled `title` with `columns`, under `field` of
    `explain --json` (None: under `dropped_by`, by the step's name); `shown_empty`: whether the
    text output shows the table when it has no row."""

    title: str
    columns: tuple[str, ...]
    rows: RowsFn
    field: str | None = None
    shown_empty: bool = True


def dropped_rows(before: list[Candidate], after: list[Candidate]) -> list[Row]:
    """The candidates of `before` that `after` lacks, with their rank in `before`."""
    kept = {c.evidence_key for c in after}
    return [{"rank": rank, "evidence_key": c.evidence_key, "doc_id": c.doc_id,
             "score": c.score}
            for rank, c in enumerate(ranked(before), start=1) if c.evidence_key not in kept]


def ranked_rows(_: list[Candidate], after: list[Candidate]) -> list[Row]:
    """The candidates after the step in ranking order: rank, score, evidence key, reasons."""
    return [candidate_row(c, rank) for rank, c in enumerate(ranked(after), start=1)]


def ordered_rows(_: list[Candidate], after: list[Candidate]) -> list[Row]:
    """The candidates after the step in the order it gave them."""
    return [candidate_row(c, rank) for rank, c in enumerate(after, start=1)]


def merged_rows(before: list[Candidate], after: list[Candidate]) -> list[Row]:
    """The candidates folded into a higher-ranked one of the same key (KeyedDedup)."""
    survivors = {c.evidence_key: c for c in after}
    merged = []
    for candidate in ranked(before):
        kept = survivors[candidate.evidence_key]
        if candidate.recall_order != kept.recall_order:  # not the survivor itself
            merged.append({"evidence_key": candidate.evidence_key, "score": candidate.score,
                           "reasons": list(candidate.hit_reasons),
                           "into": f"{kept.evidence_key} ({', '.join(kept.hit_reasons)})"})
    return merged


def candidate_row(candidate: Candidate, rank: int) -> Row:
    return {"rank": rank, "score": candidate.score, "evidence_key": candidate.evidence_key,
            "reasons": list(candidate.hit_reasons)}


def dropped_view(name: str) -> StepView:
    """The view of a step that declares none: what it dropped, under `dropped_by`."""
    return StepView(f"removed by {name}", ("rank", "evidence_key", "doc_id", "score"),
                    dropped_rows)
