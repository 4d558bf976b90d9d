"""What the search adapters report as they work: event names, counted by the pipeline."""

from __future__ import annotations

from collections.abc import Callable

ES_REQUESTS, ES_RETRIES, ES_BACKOFF_MS, ES_FAILURES = EVENTS = (
    "es_requests", "es_retries", "es_backoff_ms", "es_failures")

EventHook = Callable[[str, int], None]
"""Told of each of `EVENTS` as it happens, with an amount."""


def ignore_event(_: str, __: int) -> None:
    return None
