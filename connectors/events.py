"""What the search adapters report as they work: event names, counted by the pipeline."""

from __future__ import annotations

from collections.abc import Callable

REQUESTS, RETRIES, BACKOFF_MS, REQUEST_FAILURES = REQUEST_EVENTS = (
    "backend_requests", "backend_retries", "backend_backoff_ms", "backend_failures")
"""A search service's requests (`_msearch`, `_bulk`, ...), its retries, the time spent backing
off, and the requests that failed for good: counted by the retry loop of any backend that makes
requests."""
RENAMED = dict(zip(REQUEST_EVENTS, ("es_requests", "es_retries", "es_backoff_ms", "es_failures"),
                   strict=True))
"""The names these counters had while Elasticsearch was the only service that made requests: a
run's `--summary` still writes them beside the new ones, deprecated."""
HNSW_AUDITED, HNSW_EXPECTED, HNSW_FOUND, HNSW_SETTLED, HNSW_EF, HNSW_EXACT = HNSW_EVENTS = (
    "hnsw_audited_queries", "hnsw_audit_expected", "hnsw_audit_found", "hnsw_settlements",
    "hnsw_settled_ef_sum", "hnsw_exact_instead")
"""The HNSW search's audit: queries also searched exactly, the exact hits among them and how
many of those the graph found; with `ef-search: auto`, each time a worker settles, the ef it
settled on (summed: divide by settlements), and each time it found exact search cheaper."""
HNSW_CONTINUED_AUDITED, HNSW_CONTINUED_EXPECTED, HNSW_CONTINUED_FOUND = HNSW_CONTINUED_EVENTS = (
    "hnsw_continued_audited_lists", "hnsw_continued_audit_expected",
    "hnsw_continued_audit_found")
"""The audit of a continued HNSW night's lists, apart from the graph's (a continued list is
last night's graph's answer made exact where the store changed: see
`pipeline.run.continued_audit`): lists also searched exactly, the exact hits among them and
how many of those the continued list holds."""
EVENTS = REQUEST_EVENTS + HNSW_EVENTS + HNSW_CONTINUED_EVENTS

EventHook = Callable[[str, int], None]
"""Told of each of `EVENTS` as it happens, with an amount."""


def ignore_event(_: str, __: int) -> None:
    return None
