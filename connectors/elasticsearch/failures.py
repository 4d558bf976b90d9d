"""Elasticsearch failures in short, secret-free words; and which of them are worth retrying."""

from __future__ import annotations

from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, SerializationError, TlsError
from elasticsearch import ApiError

from core.errors import redact

RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})


def is_retryable_status(status: int, error_body: Any) -> bool:
    """429/502/503/504 are retryable, except a circuit breaker whose durability is PERMANENT."""
    if status not in RETRYABLE_STATUSES:
        return False
    return not _permanent_circuit_breaker(error_body)


def is_retryable_exception(error: BaseException) -> bool:
    """Timeouts and connection errors are retryable; API errors by their status."""
    if isinstance(error, (ConnectionTimeout, TransportConnectionError, SerializationError)):
        return True  # a page no JSON parser reads is a server or proxy failing, as a 5xx
    if isinstance(error, ApiError):
        return is_retryable_status(error.meta.status, error.body)
    return False


def describe(error: BaseException) -> str:
    """A short, secret-free description of a client error; TLS errors say which kind."""
    if isinstance(error, ApiError):
        return f"HTTP {error.meta.status} {_error_type(error.body) or error.message}"
    if isinstance(error, TlsError):
        details = " ".join([str(error.message), *(str(cause) for cause in error.errors)])
        return f"TLS error: {_tls_kind(details)}"
    return redact(f"{type(error).__name__}: {error}")


def not_an_answer(request: str, body: Any) -> str:
    """Why an answer with status 200 is not one of Elasticsearch's to `request`."""
    shown = repr(body if not isinstance(body, bytes | str) else body[:60])[:80]
    return (f"the server's answer to {request} is not Elasticsearch's (got {shown}); is "
            "search.elasticsearch.hosts an Elasticsearch server?")


def describe_body(status: int, body: Any) -> str:
    """A per-item failure (a sub-search of `_msearch`, an item of `_bulk`) in short words."""
    return f"HTTP {status} {_error_type(body) or ''}".strip()


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
