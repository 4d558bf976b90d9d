"""A thin Beam transform applying a pure `list[Candidate] -> list[Candidate]` stage per query."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam

from stages import counters
from stages.internal_errors import HandlesErrors
from stages.models import Candidate, QueryCandidates

CandidateFn = Callable[[Sequence[Candidate]], list[Candidate]]


class CandidateStage(HandlesErrors, beam.PTransform[beam.PCollection[QueryCandidates],
                                     beam.PCollection[QueryCandidates]]):
    """Applies `fn` to each query's candidates; counts the dropped ones under `dropped_counter`."""

    def __init__(self, label: str, fn: CandidateFn, dropped_counter: str | None = None) -> None:
        super().__init__()
        self._label = label
        self._fn = fn
        self._dropped_counter = dropped_counter

    def expand(self, pcoll: beam.PCollection[QueryCandidates]) -> beam.PCollection[QueryCandidates]:
        apply = beam.Map(self._apply).with_output_types(QueryCandidates)
        return pcoll | self._label >> self._guarded(apply)

    def _apply(self, element: QueryCandidates) -> QueryCandidates:
        kept = self._fn(element.candidates)
        if self._dropped_counter is not None:
            counters.count(self._dropped_counter, len(element.candidates) - len(kept))
        return QueryCandidates(query_id=element.query_id, candidates=tuple(kept))
