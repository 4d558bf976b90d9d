"""Beam counter names and a helper to bump them; the run summary reads the same names."""

from __future__ import annotations

from apache_beam.metrics import Metrics

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


def count(name: str, amount: int = 1) -> None:
    """Adds `amount` to counter `name`; must run inside a Beam DoFn or Map."""
    if amount:
        Metrics.counter(NAMESPACE, name).inc(amount)
