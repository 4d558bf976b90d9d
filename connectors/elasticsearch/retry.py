"""Which Elasticsearch failures are worth retrying, and how long to wait: one place for both."""

from __future__ import annotations

import random
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError

from connectors.elasticsearch.config import RetryPolicy

RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


def is_retryable_status(status: int, error_body: Any) -> bool:
    """429/502/503/504 are retryable, except a circuit breaker whose durability is PERMANENT."""
    if status not in RETRYABLE_STATUSES:
        return False
    return not _permanent_circuit_breaker(error_body)


def is_retryable_exception(error: BaseException) -> bool:
    """Timeouts and connection errors are retryable; API errors by their status."""
    if isinstance(error, (ConnectionTimeout, TransportConnectionError)):
        return True
    if isinstance(error, ApiError):
        return is_retryable_status(error.meta.status, error.body)
    return False


def backoff_seconds(policy: RetryPolicy, attempt: int, rng: random.Random) -> float:
    """Full-jitter exponential backoff before retry number `attempt` (1-based)."""
    ceiling = min(policy.max_backoff, policy.initial_backoff * (2 ** (attempt - 1)))
    return rng.uniform(0, ceiling)


def describe(error: BaseException) -> str:
    """A short, secret-free description of a client error."""
    if isinstance(error, ApiError):
        return f"HTTP {error.meta.status} {_error_type(error.body) or error.message}"
    return f"{type(error).__name__}: {error}"


def describe_body(status: int, body: Any) -> str:
    return f"HTTP {status} {_error_type(body) or ''}".strip()


def _error_type(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        reason = error.get("reason")
        return f"{error.get('type')}: {reason}" if reason else str(error.get("type"))
    return str(error) if error else None


def _permanent_circuit_breaker(body: Any) -> bool:
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return False
    causes = [error, *error.get("root_cause", [])]
    return any(isinstance(c, dict) and c.get("type") == "circuit_breaking_exception"
               and c.get("durability") == "PERMANENT" for c in causes)
