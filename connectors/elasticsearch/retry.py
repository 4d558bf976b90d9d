"""Which Elasticsearch failures are worth retrying, and how long to wait: one place for both."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TlsError, TransportError
from elasticsearch import ApiError, NotFoundError

from connectors.elasticsearch.config import RetryPolicy
from connectors.elasticsearch.events import ES_BACKOFF_MS, ES_REQUESTS, ES_RETRIES
from connectors.errors import SearchRejectedError, SearchUnavailableError, redact

T = TypeVar("T")
EventHook = Callable[[str, int], None]
"""Told of each of `events.EVENTS` as it happens, with an amount."""


def ignore_event(_: str, __: int) -> None:
    return None

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


def call_with_retries(call: Callable[[], T], policy: RetryPolicy, what: str,
                      hosts: Sequence[str], *, on_event: EventHook = ignore_event,
                      sleep: Callable[[float], None] = time.sleep,
                      rng: random.Random | None = None) -> T:
    """Makes one request under the retry policy (the one every request kind shares).

    A 404 is raised as it is (callers ask "does it exist?"). Raises SearchRejectedError for
    an error that retrying cannot mend, and SearchUnavailableError naming `what`, the hosts
    and every error once the attempts are spent.
    """
    rng = rng or random.Random()
    errors: list[str] = []
    for attempt in range(1, policy.max_attempts + 1):
        if attempt > 1:
            seconds = backoff_seconds(policy, attempt - 1, rng)
            on_event(ES_RETRIES, 1)
            on_event(ES_BACKOFF_MS, int(seconds * 1000))
            sleep(seconds)
        on_event(ES_REQUESTS, 1)
        try:
            return call()
        except NotFoundError:
            raise
        except (TransportError, ApiError) as error:
            errors.append(describe(error))
            if not is_retryable_exception(error):
                raise SearchRejectedError(redact(f"{what} on {list(hosts)}: {errors[-1]}")
                                          ) from None
    raise SearchUnavailableError(redact(
        f"{what} on {list(hosts)} failed after {policy.max_attempts} attempts; last error: "
        f"{errors[-1]}; earlier: {errors[:-1]}"))


def describe(error: BaseException) -> str:
    """A short, secret-free description of a client error; TLS errors say which kind."""
    if isinstance(error, ApiError):
        return f"HTTP {error.meta.status} {_error_type(error.body) or error.message}"
    if isinstance(error, TlsError):
        details = " ".join([str(error.message), *(str(cause) for cause in error.errors)])
        return f"TLS error: {_tls_kind(details)}"
    return redact(f"{type(error).__name__}: {error}")


def _tls_kind(message: str) -> str:
    if "CERTIFICATE_VERIFY_FAILED" in message or "certificate verify failed" in message:
        return ("the server's certificate is not trusted (set search.elasticsearch.ca-certs to "
                "the CA that signed it)")
    if "WRONG_VERSION_NUMBER" in message or "wrong version number" in message:
        return "protocol mismatch (is the host https:// while the server speaks http, or the "\
               "other way round?)"
    if "hostname" in message.lower():
        return "the certificate is not for this host name"
    return "handshake failed"


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
