"""IdentityNormalize: give every recalled hit its chunk identity and evidence key."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam

from connectors import chunk_identity
from connectors.chunk_identity import chunk_key, evidence_key
from stages import counters
from stages.internal_errors import HandlesErrors
from stages.models import Candidate, QueryCandidates, QueryHits, RecalledHit, RetrieverHit

Report = Callable[[str], None]
"""Called with a counter name each time something worth counting happens."""

FALLBACK_IDENTITY = counters.FALLBACK_IDENTITY
INVALID_CHUNK_INDEX = counters.INVALID_CHUNK_INDEX
IDENTITY_CONFLICT = counters.IDENTITY_CONFLICT
_FLAG_COUNTERS = ((chunk_identity.DOC_ID_CONFLICT, IDENTITY_CONFLICT),
                  (chunk_identity.CHUNK_INDEX_CONFLICT, IDENTITY_CONFLICT),
                  (chunk_identity.INVALID_CHUNK_INDEX, INVALID_CHUNK_INDEX))


def _ignore(_: str) -> None:
    return None


__all__ = ["IdentityNormalize", "chunk_key", "evidence_key", "normalize_identities",
           "to_candidate"]


def to_candidate(recalled: RecalledHit, report: Report = _ignore) -> Candidate:
    """One hit as a candidate with its evidence key (see README, "Identity rules"); its
    identity was resolved from its metadata where the port read the hit
    (`connectors.chunk_identity.resolve_identity`), and what that ran into is reported here."""
    hit = recalled.hit
    doc_id, chunk_index, named_source, flags = hit.identity
    for flag, counter in _FLAG_COUNTERS:
        if flags & flag:
            report(counter)
    if doc_id is None or chunk_index is None:
        report(FALLBACK_IDENTITY)
    key = evidence_key(doc_id, chunk_index, hit.id, named_source or doc_id or "",
                       hit.content or "")
    return Candidate(key, doc_id, chunk_index, named_source or doc_id or key, hit.content,
                     hit.score, (recalled.reason,), recalled.recall_order,
                     (RetrieverHit(recalled.reason, recalled.rank, hit.score),), hit.ref)


def normalize_identities(hits: Sequence[RecalledHit], report: Report = _ignore) -> list[Candidate]:
    """IdentityNormalize over one query's hits."""
    return [to_candidate(hit, report) for hit in hits]


def _normalize(query_hits: QueryHits) -> QueryCandidates:
    candidates = normalize_identities(query_hits.hits, counters.count)
    return QueryCandidates(query_id=query_hits.query_id, candidates=tuple(candidates))


class IdentityNormalize(HandlesErrors, beam.PTransform[beam.PCollection[QueryHits],
                                         beam.PCollection[QueryCandidates]]):
    """QueryHits -> QueryCandidates with chunk identity and evidence keys.

    >>> candidates = hits | IdentityNormalize()  # doctest: +SKIP
    """

    def expand(self, hits: beam.PCollection[QueryHits]) -> beam.PCollection[QueryCandidates]:
        return hits | "NormalizeIdentity" >> self._guarded(
            beam.Map(_normalize).with_output_types(QueryCandidates))
