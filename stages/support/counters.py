"""Beam counter names, the registry the run summary iterates, and a helper to bump them.

The names import without Beam (`explain` and the settings use them); Beam's metrics are
imported where a step first counts or a summary sums."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apache_beam.metrics import Metrics
    from apache_beam.runners.runner import PipelineResult

NAMESPACE = "rag_evidence"

QUERIES = "queries"
CANDIDATES = "candidates"
DUPLICATES_MERGED = "duplicates_merged"
CAPPED = "capped"
BELOW_MIN_SCORE = "below_min_score"
DIVERSIFIED_AWAY = "diversified_away"
NOT_RERANKED = "not_reranked"
EVIDENCE_UNCHANGED = "evidence_unchanged"
EVIDENCE_CHANGED = "evidence_changed"
EVIDENCE_NEW = "evidence_new"
PREVIOUS_GONE = "previous_gone"
QUERIES_CONTINUED = "queries_continued"
CONTINUED_UNCHANGED = "continued_unchanged"
FULL_NEW_QUERY = "full_new_query"
FULL_QUERY_CHANGED = "full_query_changed"
FULL_RAN_OUT = "full_ran_out"
FULL_CONTINUE_FAILED = "full_continue_failed"
FULL_NOT_CONTINUABLE = "full_not_continuable"
LEXICAL_LISTS_CONTINUED = "lexical_lists_continued"
DELTA_CHUNKS = "delta_chunks"
RESULTS = "results"
DEAD_LETTERS = "dead_letters"
SEARCH_REQUESTS = "search_requests"
TEXTS_EMBEDDED = "texts_embedded"
EMBEDDING_MS = "embedding_ms"
CHUNKS_ADDED = "chunks_added"
CHUNKS_UPDATED = "chunks_updated"
CHUNKS_UNCHANGED = "chunks_unchanged"
CHUNKS_DELETED = "chunks_deleted"
CHUNK_INDEX_FAILURES = "chunk_index_failures"
KEPT_AFTER_FAILURE = "kept_after_failure"
DUPLICATE_IDS = "duplicate_ids"
INTERNAL_ERRORS = "internal_errors"
FALLBACK_IDENTITY = "fallback_identities"
INVALID_CHUNK_INDEX = "invalid_chunk_index"
IDENTITY_CONFLICT = "identity_conflicts"

SUMMARY = (
    QUERIES, RESULTS, DEAD_LETTERS, INTERNAL_ERRORS, CANDIDATES, DUPLICATES_MERGED, CAPPED,
    BELOW_MIN_SCORE, EVIDENCE_UNCHANGED, EVIDENCE_CHANGED, EVIDENCE_NEW, PREVIOUS_GONE,
    FALLBACK_IDENTITY, INVALID_CHUNK_INDEX, IDENTITY_CONFLICT, SEARCH_REQUESTS, TEXTS_EMBEDDED,
    EMBEDDING_MS, QUERIES_CONTINUED, CONTINUED_UNCHANGED, FULL_NEW_QUERY, FULL_QUERY_CHANGED,
    FULL_RAN_OUT, FULL_CONTINUE_FAILED, FULL_NOT_CONTINUABLE, DELTA_CHUNKS,
    LEXICAL_LISTS_CONTINUED,
)
"""Every counter a run reports, in the order the summary prints them."""

CONTINUATION = (QUERIES_CONTINUED, CONTINUED_UNCHANGED, FULL_NEW_QUERY, FULL_QUERY_CHANGED,
                FULL_RAN_OUT, FULL_CONTINUE_FAILED, FULL_NOT_CONTINUABLE, DELTA_CHUNKS,
                LEXICAL_LISTS_CONTINUED)
"""What a run with `--previous` reports of continuing from PREV's state (see
`stages.continuation`): queries continued (of them, unchanged), queries answered in full by
reason, chunks the store changed since PREV, and the BM25 lists continued (a hybrid query
has a kNN list and a BM25 list)."""

INDEX_SUMMARY = (CHUNKS_ADDED, CHUNKS_UPDATED, CHUNKS_UNCHANGED, CHUNKS_DELETED,
                 CHUNK_INDEX_FAILURES, TEXTS_EMBEDDED, KEPT_AFTER_FAILURE)
"""What an `index` reports, in order."""


def count(name: str, amount: int = 1) -> None:
    """Adds `amount` to counter `name` inside a Beam DoFn or Map; outside any step (`explain`
    calls the stages' functions without Beam) it counts nothing; inside `held`, it keeps it."""
    if amount:
        kept = getattr(_held, "counts", None)
        if kept is not None:
            kept[name] = kept.get(name, 0) + amount
            return
        counter = _COUNTERS.get(name)
        if counter is None:
            if "apache_beam" not in sys.modules:  # no step is running
                return
            from apache_beam.metrics import Metrics

            counter = _COUNTERS[name] = Metrics.counter(NAMESPACE, name)
        counter.inc(amount)


_COUNTERS: dict[str, Metrics.DelegatingCounter] = {}
"""One delegating counter per name: it finds the running step's metrics at each `inc`, so one
object serves every step and thread (building one per call would cost more than counting)."""


_held = threading.local()


@contextmanager
def held() -> Iterator[dict[str, int]]:
    """What this thread counts inside the block, kept rather than counted: Beam's metrics
    belong to the thread running the step, so a step's worker thread hands them back to it
    (`count_all`)."""
    counts: dict[str, int] = {}
    _held.counts = counts
    try:
        yield counts
    finally:
        _held.counts = None


def count_all(counts: Mapping[str, int]) -> None:
    """Counts what a `held` block kept."""
    for name, amount in counts.items():
        count(name, amount)


def totals(result: PipelineResult) -> dict[str, int]:
    """Sums the committed (or, where a runner has none, attempted) rag_evidence counters;
    empty for a runner without metrics (Beam's `PipelineResult.metrics` raises
    NotImplementedError there)."""
    from apache_beam.metrics.metric import MetricsFilter

    try:
        metrics = result.metrics()
    except NotImplementedError:
        return {}
    query = metrics.query(MetricsFilter().with_namespace(NAMESPACE))
    summed: dict[str, int] = {}
    for counter in query["counters"]:
        value = counter.committed if counter.committed is not None else counter.attempted
        summed[counter.key.metric.name] = summed.get(counter.key.metric.name, 0) + int(value or 0)
    return summed
