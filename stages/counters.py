"""Beam counter names, the registry the run summary iterates, and a helper to bump them."""

from __future__ import annotations

from apache_beam.metrics import Metrics

from connectors.elasticsearch.events import EVENTS as ES_EVENTS

NAMESPACE = "rag_evidence"

QUERIES = "queries"
CANDIDATES = "candidates"
DUPLICATES_MERGED = "duplicates_merged"
CAPPED = "capped"
RESULTS = "results"
DEAD_LETTERS = "dead_letters"
SEARCH_REQUESTS = "search_requests"
TEXTS_EMBEDDED = "texts_embedded"
EMBEDDING_MS = "embedding_ms"
CHUNKS_INDEXED = "chunks_indexed"
CHUNK_INDEX_FAILURES = "chunk_index_failures"
INTERNAL_ERRORS = "internal_errors"
FALLBACK_IDENTITY = "fallback_identities"
INVALID_CHUNK_INDEX = "invalid_chunk_index"
IDENTITY_CONFLICT = "identity_conflicts"

SUMMARY = (
    QUERIES, RESULTS, DEAD_LETTERS, INTERNAL_ERRORS, CANDIDATES, DUPLICATES_MERGED, CAPPED,
    FALLBACK_IDENTITY, INVALID_CHUNK_INDEX, IDENTITY_CONFLICT, SEARCH_REQUESTS, TEXTS_EMBEDDED,
    EMBEDDING_MS, *ES_EVENTS,
)
"""Every counter a run reports, in the order the summary prints them."""


def count(name: str, amount: int = 1) -> None:
    """Adds `amount` to counter `name`; must run inside a Beam DoFn or Map."""
    if amount:
        Metrics.counter(NAMESPACE, name).inc(amount)
