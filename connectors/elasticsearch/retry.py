"""What an Elasticsearch client's exception means to the retry loop (`connectors/retry.py`),
and the loop bound to that reading: every request (info, mapping, `_msearch`, `_bulk`,
refresh) goes through it."""

from __future__ import annotations

from functools import partial

from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, NotFoundError

from connectors.elasticsearch.failures import describe, is_retryable_exception
from connectors.retry import Failed, Reject, Retry
from connectors.retry import call_with_retries as _call_with_retries
from connectors.retry import retry_each as _retry_each


def outcome_of(error: TransportError | ApiError) -> Retry | Reject:
    """What a failed request means for each item in it."""
    return (Retry if is_retryable_exception(error) else Reject)(describe(error))


def classify(error: Exception) -> Failed | None:
    """A 404 is `not_found`; timeouts, connection errors and 429/502/503/504 are retried; other
    client errors are rejected; anything else is no failed request."""
    if isinstance(error, NotFoundError):
        return Failed(Reject("HTTP 404 not found"), not_found=True)
    if isinstance(error, (TransportError, ApiError)):
        return Failed(outcome_of(error), timed_out=isinstance(error, ConnectionTimeout))
    return None


retry_each = partial(_retry_each, classify=classify)
call_with_retries = partial(_call_with_retries, classify=classify)
