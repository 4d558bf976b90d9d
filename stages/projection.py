"""Project: the Agent-facing evidence list, deduplicated by evidence key and cut to budgets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Protocol

from core.params import PARAMS_CONFIG, Bound, Whole, check_bounds
from stages.models import (
    EvidenceBlock,
    ProjectedItem,
    QueryCandidates,
    QueryResult,
    block_fields,
    unvalidated,
)
from stages.ranking import ranked


@dataclass(frozen=True)
class ProjectionBudget:
    """Limits on the projected list: item count, total characters, characters per item.
    Settings: `projection.*`."""

    __pydantic_config__: ClassVar = PARAMS_CONFIG

    max_items: Annotated[Whole, Bound("projection.max-items", ge=1)] = 5
    max_chars: Annotated[Whole, Bound("projection.max-chars", ge=1)] = 6000
    max_chars_per_item: Annotated[Whole, Bound("projection.max-chars-per-item", ge=1)] = 2000

    def __post_init__(self) -> None:
        check_bounds(self)


class Evidence(Protocol):
    """What projection reads of a block (an `EvidenceBlock`, or a `Candidate` in rank order)."""

    @property
    def evidence_key(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def content(self) -> str | None: ...

    @property
    def score(self) -> float: ...


def projected_fields(in_rank_order: Sequence[Evidence], budget: ProjectionBudget
                     ) -> list[dict[str, Any]]:
    """The projected items' fields, of blocks given in rank order.

    - A block whose evidence key was already projected is skipped; a shared `source` never is.
    - Content longer than `max_chars_per_item` is cut to its first `max_chars_per_item` chars.
    - Content longer than what is left of `max_chars` is cut to what is left; once nothing is
      left, that block and all after it are dropped.
    - At most `max_items` items; blocks past that are dropped.
    """
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    remaining = budget.max_chars
    for block in in_rank_order:
        if len(items) >= budget.max_items or remaining <= 0:
            break
        if block.evidence_key in seen:
            continue
        seen.add(block.evidence_key)
        content = (block.content or "")[: min(budget.max_chars_per_item, remaining)]
        remaining -= len(content)
        items.append({"document_id": block.evidence_key, "source": block.source,
                      "content": content, "score": float(block.score)})
    return items


def assemble_result(element: QueryCandidates, budget: ProjectionBudget) -> QueryResult:
    """Ranks a query's final candidates as evidence and adds their Agent projection. Built
    from the candidates' values without validation (`unvalidated`): they were validated where
    they entered, and a test holds what is built to what validation gives.

    Raises:
        ValueError: a candidate's content was never read (FetchContent belongs before this).
    """
    in_order = ranked(element.candidates)
    evidence = tuple(unvalidated(EvidenceBlock, block_fields(c, rank))
                     for rank, c in enumerate(in_order, start=1))
    projected = tuple(unvalidated(ProjectedItem, item)
                      for item in projected_fields(in_order, budget))
    return unvalidated(QueryResult, {"query_id": element.query_id, "evidence": evidence,
                                     "projected": projected})
