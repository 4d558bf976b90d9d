"""Project: the Agent-facing evidence list, deduplicated by evidence key and cut to budgets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apache_beam as beam

from stages.internal_errors import HandlesErrors
from stages.models import EvidenceBlock, ProjectedItem, QueryCandidates, QueryResult
from stages.top_n import to_evidence_blocks


@dataclass(frozen=True)
class ProjectionBudget:
    """Limits on the projected list: item count, total characters, characters per item."""

    max_items: int = 5
    max_chars: int = 6000
    max_chars_per_item: int = 2000

    def __post_init__(self) -> None:
        for name in ("max_items", "max_chars", "max_chars_per_item"):
            value = getattr(self, name)
            if value < 1:
                key = "projection." + name.replace("_", "-")
                raise ValueError(f"{key}={value!r}: must be at least 1")


def project(blocks: Sequence[EvidenceBlock], budget: ProjectionBudget) -> list[ProjectedItem]:
    """Projects blocks in rank order.

    - A block whose evidence key was already projected is skipped; a shared `source` never is.
    - Content longer than `max_chars_per_item` is cut to its first `max_chars_per_item` chars.
    - Content longer than what is left of `max_chars` is cut to what is left; once nothing is
      left, that block and all after it are dropped.
    - At most `max_items` items; blocks past that are dropped.
    """
    items: list[ProjectedItem] = []
    seen: set[str] = set()
    remaining = budget.max_chars
    for block in sorted(blocks, key=lambda b: b.rank):
        if len(items) >= budget.max_items or remaining <= 0:
            break
        if block.evidence_key in seen:
            continue
        seen.add(block.evidence_key)
        content = block.content[: min(budget.max_chars_per_item, remaining)]
        remaining -= len(content)
        items.append(
            ProjectedItem(
                document_id=block.evidence_key,
                source=block.source,
                content=content,
                score=block.score,
            )
        )
    return items


def assemble_result(element: QueryCandidates, budget: ProjectionBudget) -> QueryResult:
    """Ranks a query's final candidates as evidence and adds their Agent projection."""
    evidence = to_evidence_blocks(element.candidates)
    return QueryResult(query_id=element.query_id, evidence=tuple(evidence),
                       projected=tuple(project(evidence, budget)))


class Project(HandlesErrors,
              beam.PTransform[beam.PCollection[QueryCandidates], beam.PCollection[QueryResult]]):
    """QueryCandidates -> QueryResult: ranked evidence blocks plus the Agent projection.

    >>> results = candidates | Project(ProjectionBudget(max_items=5))  # doctest: +SKIP
    """

    def __init__(self, budget: ProjectionBudget) -> None:
        super().__init__()
        self._budget = budget

    def expand(self, pcoll: beam.PCollection[QueryCandidates]) -> beam.PCollection[QueryResult]:
        return pcoll | "ProjectEvidence" >> self._guarded(beam.Map(
            assemble_result, budget=self._budget).with_output_types(QueryResult))
