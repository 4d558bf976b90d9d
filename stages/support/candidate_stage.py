"""A thin Beam transform applying a pure `list[Candidate] -> list[Candidate]` stage per query."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam

from stages.models import Candidate, QueryCandidates
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.per_query import PerQueryDoFn

CandidateFn = Callable[[Sequence[Candidate]], list[Candidate]]


class CandidateStage(HandlesErrors, beam.PTransform[beam.PCollection[QueryCandidates],
                                     beam.PCollection[QueryCandidates]]):
    """Applies `fn` to each query's candidates; counts the dropped ones under `dropped_counter`.
    Its step is labelled by the subclass's name, the name the docs and `explain` use."""

    def __init__(self, fn: CandidateFn, dropped_counter: str | None = None) -> None:
        super().__init__()
        self._fn = fn
        self._dropped_counter = dropped_counter

    @property
    def fn(self) -> CandidateFn:
        """The pure stage, its parameters bound (what `explain` calls)."""
        return self._fn

    def expand(self, pcoll: beam.PCollection[QueryCandidates]) -> beam.PCollection[QueryCandidates]:
        return self._guarded_step(pcoll, type(self).__name__,
                               _CandidateDoFn(self._fn, self._dropped_counter)).main


class _CandidateDoFn(PerQueryDoFn):
    output_type = QueryCandidates

    def __init__(self, fn: CandidateFn, dropped_counter: str | None) -> None:
        self._fn = fn
        self._dropped_counter = dropped_counter

    def answer(self, element: QueryCandidates) -> QueryCandidates:
        kept = self._fn(element.candidates)
        if self._dropped_counter is not None:
            counters.count(self._dropped_counter, len(element.candidates) - len(kept))
        return QueryCandidates(element.query_id, tuple(kept))
