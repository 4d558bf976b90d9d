"""Project as a Beam step: `assemble_result` per query."""

from __future__ import annotations

import apache_beam as beam

from stages.models import QueryCandidates, QueryResult
from stages.projection import ProjectionBudget, assemble_result
from stages.support.internal_errors import HandlesErrors
from stages.support.per_query import PerQueryDoFn


class Project(HandlesErrors,
              beam.PTransform[beam.PCollection[QueryCandidates], beam.PCollection[QueryResult]]):
    """QueryCandidates -> QueryResult: ranked evidence blocks plus the Agent projection.

    Usage::

        results = candidates | Project(ProjectionBudget(max_items=5))
    """

    def __init__(self, budget: ProjectionBudget) -> None:
        super().__init__()
        self._budget = budget

    def expand(self, pcoll: beam.PCollection[QueryCandidates]) -> beam.PCollection[QueryResult]:
        return self._guarded_step(pcoll, "ProjectEvidence", _ProjectDoFn(self._budget)).main


class _ProjectDoFn(PerQueryDoFn):
    output_type = QueryResult

    def __init__(self, budget: ProjectionBudget) -> None:
        self._budget = budget

    def answer(self, element: QueryCandidates) -> QueryResult:
        return assemble_result(element, self._budget)
