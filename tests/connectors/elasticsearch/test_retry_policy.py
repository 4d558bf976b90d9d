"""The one retry policy: what it retries, what it says, and TLS failures by kind."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TlsError

from connectors.elasticsearch.config import RetryPolicy
from connectors.elasticsearch.failures import describe
from connectors.elasticsearch.retry import call_with_retries, retry_each
from connectors.retry import Done
from core.errors import SearchUnavailableError

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


def _timing_out_when(bad: Callable[[list[int]], bool]) -> tuple[Callable, list[list[int]]]:
    """A send that times out whenever `bad(group)`, and answers each item otherwise."""
    sent: list[list[int]] = []

    def send(group: list[int]) -> dict[int, Done[int]]:
        sent.append(list(group))
        if bad(group):
            raise ConnectionTimeout("timed out")
        return {item: Done(item) for item in group}

    return send, sent


def test_a_heavy_item_that_times_out_is_isolated_and_fails_alone() -> None:
    send, sent = _timing_out_when(lambda group: 5 in group)
    results = retry_each(list(range(16)), send, POLICY, what="search", hosts=["h"],
                         sleep=lambda _: None, split_timeouts=True)
    assert [item for item, value in results.items() if value == item] == [
        i for i in range(16) if i != 5]
    assert isinstance(results[5], SearchUnavailableError)
    assert "failed after 3 attempts" in str(results[5])
    assert sent[-3:] == [[5], [5], [5]]


def test_a_stalled_server_costs_a_bounded_number_of_requests_per_batch() -> None:
    send, sent = _timing_out_when(lambda group: True)
    results = retry_each(list(range(64)), send, POLICY, what="search", hosts=["h"],
                         sleep=lambda _: None, split_timeouts=True)
    assert all(isinstance(value, SearchUnavailableError) for value in results.values())
    assert len(sent) == 3 + (POLICY.max_attempts - 1)
