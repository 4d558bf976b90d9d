"""IdentityNormalize: give every recalled hit its chunk identity and evidence key."""

from __future__ import annotations

from collections.abc import Callable

from connectors.search_port import ContentRef
from core import chunk_identity
from core.chunk_identity import Identity, chunk_key, evidence_key
from stages.models import Candidate, QueryHits, RetrieverHit
from stages.support import counters

Report = Callable[[str], None]
"""Called with a counter name each time something worth counting happens."""

FALLBACK_IDENTITY = counters.FALLBACK_IDENTITY
INVALID_CHUNK_INDEX = counters.INVALID_CHUNK_INDEX
IDENTITY_CONFLICT = counters.IDENTITY_CONFLICT
_FLAG_COUNTERS = ((chunk_identity.DOC_ID_CONFLICT, IDENTITY_CONFLICT),
                  (chunk_identity.CHUNK_INDEX_CONFLICT, IDENTITY_CONFLICT),
                  (chunk_identity.INVALID_CHUNK_INDEX, INVALID_CHUNK_INDEX))


_new = tuple.__new__


def _ignore(_: str) -> None:
    return None


__all__ = ["candidates_of", "chunk_key", "evidence_key"]


def _candidate(hit_id: str | None, score: float, identity: Identity, content: str | None,
               ref: ContentRef | None, reason: str, recall_order: int, rank: int,
               report: Report) -> Candidate:
    doc_id, chunk_index, named_source, flags = identity
    if flags:
        for flag, counter in _FLAG_COUNTERS:
            if flags & flag:
                report(counter)
    if doc_id is None or chunk_index is None:
        report(FALLBACK_IDENTITY)
        key = evidence_key(doc_id, chunk_index, hit_id, named_source or doc_id or "",
                           content or "")
    else:
        key = chunk_key(doc_id, chunk_index)
    # tuple.__new__: the same named tuples, without their Python-level __new__ (a hot path)
    return _new(Candidate, (key, doc_id, chunk_index, named_source or doc_id or key, content,
                            score, (reason,), recall_order,
                            (_new(RetrieverHit, (reason, rank, score)),), ref, hit_id, None))


def candidates_of(query_hits: QueryHits, report: Report = _ignore) -> list[Candidate]:
    """IdentityNormalize over one query's hits as they come from Recall (columns)."""
    found = query_hits.found
    return [_candidate(hit_id, score, identity, content, ref, reason, order, rank, report)
            for order, (hit_id, score, identity, content, ref, reason, rank) in enumerate(zip(
                found.ids, found.scores, found.identities, found.contents, found.refs,
                query_hits.reasons, query_hits.ranks, strict=True))]
