"""IdentityNormalize as a Beam step: `candidates_of` per query, its findings counted."""

from __future__ import annotations

import apache_beam as beam

from stages.identity import candidates_of
from stages.models import QueryCandidates, QueryHits
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.per_query import PerQueryDoFn


class _NormalizeDoFn(PerQueryDoFn):
    output_type = QueryCandidates

    def answer(self, query_hits: QueryHits) -> QueryCandidates:
        return QueryCandidates(query_hits.query_id,
                               tuple(candidates_of(query_hits, counters.count)), query_hits.query)


class IdentityNormalize(HandlesErrors, beam.PTransform[beam.PCollection[QueryHits],
                                         beam.PCollection[QueryCandidates]]):
    """QueryHits -> QueryCandidates with chunk identity and evidence keys.

    Usage::

        candidates = hits | IdentityNormalize()
    """

    def expand(self, hits: beam.PCollection[QueryHits]) -> beam.PCollection[QueryCandidates]:
        return self._guarded_step(hits, "IdentityNormalize", _NormalizeDoFn()).main
