"""A thin Beam transform applying a candidate stage (`CandidateStep`) per query."""

from __future__ import annotations

import apache_beam as beam

from stages.candidate_step import CandidateStep
from stages.models import QueryCandidates
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.per_query import PerQueryDoFn


class CandidateStage(HandlesErrors, beam.PTransform[beam.PCollection[QueryCandidates],
                                     beam.PCollection[QueryCandidates]]):
    """Applies `step`'s function to each query's candidates, counting the dropped ones under
    its counter; its inner step is labelled by the step's name, the name the docs and
    `explain` use.

    Usage::

        deduped = candidates | "KeyedDedup" >> CandidateStage(keyed_dedup())
    """

    def __init__(self, step: CandidateStep) -> None:
        super().__init__()
        self._step = step

    @property
    def step(self) -> CandidateStep:
        return self._step

    def expand(self, pcoll: beam.PCollection[QueryCandidates]) -> beam.PCollection[QueryCandidates]:
        return self._guarded_step(pcoll, self._step.name,
                               _CandidateDoFn(self._step)).main


class _CandidateDoFn(PerQueryDoFn):
    output_type = QueryCandidates

    def __init__(self, step: CandidateStep) -> None:
        self._apply = step.apply
        self._dropped_counter = step.dropped_counter

    def answer(self, element: QueryCandidates) -> QueryCandidates:
        kept = self._apply(element.candidates, element.query)
        if self._dropped_counter is not None:
            counters.count(self._dropped_counter, len(element.candidates) - len(kept))
        return QueryCandidates(element.query_id, tuple(kept), element.query)
