"""What the Elasticsearch adapter reports as it works (the pipeline counts them)."""

from __future__ import annotations

ES_REQUESTS, ES_RETRIES, ES_BACKOFF_MS, ES_FAILURES = EVENTS = (
    "es_requests", "es_retries", "es_backoff_ms", "es_failures")
