"""IdentityNormalize: give every recalled hit its chunk identity and evidence key."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import apache_beam as beam

from connectors.chunk_identity import (
    CHUNK_INDEX_KEYS,
    DOC_ID_KEYS,
    SOURCE_KEYS,
    chunk_key,
    evidence_key,
)
from stages import counters
from stages.internal_errors import HandlesErrors
from stages.models import Candidate, QueryCandidates, QueryHits, RecalledHit, RetrieverHit

Report = Callable[[str], None]
"""Called with a counter name each time something worth counting happens."""

FALLBACK_IDENTITY = counters.FALLBACK_IDENTITY
INVALID_CHUNK_INDEX = counters.INVALID_CHUNK_INDEX
IDENTITY_CONFLICT = counters.IDENTITY_CONFLICT

_DIGITS = re.compile(r"[0-9]+")
_MAX_INDEX = 2**63
_MAX_INDEX_DIGITS = 19
T = TypeVar("T")


def _ignore(_: str) -> None:
    return None


__all__ = ["IdentityNormalize", "chunk_key", "evidence_key", "normalize_identities",
           "to_candidate"]


def to_candidate(recalled: RecalledHit, report: Report = _ignore) -> Candidate:
    """Resolves one hit's identity from its metadata (see README, "Identity rules")."""
    hit, metadata = recalled.hit, recalled.hit.metadata
    doc_id = _resolve(metadata, DOC_ID_KEYS, _as_doc_id, report)
    chunk_index = _resolve(metadata, CHUNK_INDEX_KEYS, _as_index, report)
    named_source = _source(metadata)
    key = evidence_key(doc_id, chunk_index, hit.id, named_source or doc_id or "", hit.content)
    if doc_id is None or chunk_index is None:
        report(FALLBACK_IDENTITY)
    return Candidate(
        evidence_key=key,
        doc_id=doc_id,
        chunk_index=chunk_index,
        source=named_source or doc_id or key,
        content=hit.content,
        score=hit.score,
        hit_reasons=(recalled.reason,),
        recall_order=recalled.recall_order,
        metadata=metadata,
        retrievers=(RetrieverHit(reason=recalled.reason, rank=recalled.rank, score=hit.score),),
    )


def normalize_identities(hits: Sequence[RecalledHit], report: Report = _ignore) -> list[Candidate]:
    """IdentityNormalize over one query's hits."""
    return [to_candidate(hit, report) for hit in hits]


def _resolve(metadata: Mapping[str, Any], keys: tuple[str, ...],
             parse: Callable[[Any], T | None], report: Report) -> T | None:
    """The first key's parsed value if present (camelCase), else the next one's.

    Both present with different parsed values is counted as a conflict; a chosen chunk index
    that is present but not valid is counted as invalid.
    """
    present = [metadata[name] for name in keys if name in metadata]
    if not present:
        return None
    parsed = [parse(raw) for raw in present]
    if len(parsed) == 2 and parsed[0] != parsed[1]:
        report(IDENTITY_CONFLICT)
    if parsed[0] is None and parse is _as_index:
        report(INVALID_CHUNK_INDEX)
    return parsed[0]


def _as_doc_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and abs(value) >= _MAX_INDEX:
        return None  # a number this size is no document id (and str() may refuse it)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _as_index(value: Any) -> int | None:
    """A chunk index: a whole number from 0 to 2**63 - 1, as an int, float or digit string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) and value.is_integer() else None
    elif isinstance(value, str):
        value = int(value) if _DIGITS.fullmatch(value) and len(value) <= _MAX_INDEX_DIGITS else None
    if isinstance(value, int) and 0 <= value < _MAX_INDEX:
        return value
    return None


def _source(metadata: Mapping[str, Any]) -> str | None:
    for field in SOURCE_KEYS:
        value = metadata.get(field)
        if isinstance(value, str) and value.strip():
            return value
    return None


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
