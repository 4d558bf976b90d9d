"""The one retry policy: what it retries, what it says, and TLS failures by kind."""

from __future__ import annotations

import random

import pytest
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import TlsError

from connectors.elasticsearch.config import RetryPolicy
from connectors.elasticsearch.retry import call_with_retries, describe
from connectors.errors import SearchUnavailableError

POLICY = RetryPolicy(max_attempts=3, initial_backoff=0.0, max_backoff=0.0)


@pytest.mark.parametrize(("message", "kind"), [
    ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "not trusted"),
    ("[SSL: WRONG_VERSION_NUMBER] wrong version number", "protocol mismatch"),
    ("hostname 'es' doesn't match 'other'", "not for this host name"),
])
def test_tls_failures_say_which_kind(message: str, kind: str) -> None:
    assert kind in describe(TlsError(message))


def test_a_request_that_keeps_failing_names_what_where_and_every_error() -> None:
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise TransportConnectionError("refused")

    with pytest.raises(SearchUnavailableError,
                       match=r"the info request on \['http://\*\*\*@h:9200'\] failed after 3 "
                             r"attempts; last error: ConnectionError"):
        call_with_retries(failing, POLICY, "the info request", ["http://u:pw@h:9200"],
                          sleep=lambda _: None, rng=random.Random(0))
    assert len(calls) == 3


def test_a_request_that_recovers_returns_its_answer() -> None:
    answers = iter([TransportConnectionError("refused"), "ok"])

    def flaky() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert call_with_retries(flaky, POLICY, "x", ["h"], sleep=lambda _: None) == "ok"
