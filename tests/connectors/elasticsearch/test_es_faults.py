"""Retries and failures through a fault-injecting proxy in front of the real server."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig, RetryPolicy
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.index_check import IndexFacts
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.search_port import SearchRequest
from core.errors import SearchRejectedError, SearchUnavailableError
from tests.builders import chunk_records, unit_vectors
from tests.fault_proxy import FaultProxy

pytestmark = pytest.mark.live_es
DIM = 8
VECTORS = unit_vectors(12, dim=DIM)
REQUESTS = [SearchRequest(vector=tuple(v.tolist()), k=2) for v in VECTORS[:3]]


@pytest.fixture
def loaded_index(es_url: str, es_client: Elasticsearch, es_index: str) -> Iterator[str]:
    config = ElasticsearchConfig(hosts=(es_url,), index=es_index, index_options={"type": "flat"})
    ensure_index(es_client, config, DIM)
    write_chunks(es_client, config, chunk_records(VECTORS), refresh=True)
    yield es_index


def _port(proxy: FaultProxy, index: str, events: Counter[str], attempts: int = 3,
          timeout: float = 10.0) -> ElasticsearchPort:
    config = ElasticsearchConfig(hosts=(proxy.url,), index=index, request_timeout=timeout,
                                 retry=RetryPolicy(attempts, initial_backoff=0.01,
                                                   max_backoff=0.05))
    client = open_client(config, environ={})
    return ElasticsearchPort(client, config, IndexFacts(DIM),
                             on_event=lambda n, v: events.update({n: v}), rng=random.Random(0))


def _answered(outcomes: list) -> list[str | None]:  # type: ignore[type-arg]
    return [o[0].id if isinstance(o, list) else None for o in outcomes]


EXPECTED = ["doc0#chunk-0", "doc1#chunk-0", "doc2#chunk-0"]


@pytest.mark.parametrize("fault", ["429", "502", "503", "504", "drop", "delay:1.5"])
def test_transient_faults_are_retried_then_answered(es_url: str, loaded_index: str,
                                                    fault: str) -> None:
    events: Counter[str] = Counter()
    with FaultProxy(es_url, [fault]) as proxy:
        port = _port(proxy, loaded_index, events, timeout=0.5 if fault.startswith("delay") else 10)
        outcomes = port.search(REQUESTS)
        port.close()
    assert _answered(outcomes) == EXPECTED
    if fault.startswith("delay"):  # a timed-out batch is searched again in halves
        assert events["backend_requests"] == 3 and events["backend_retries"] == 0
    else:
        assert events["backend_requests"] == 2 and events["backend_retries"] == 1
    assert events["backend_failures"] == 0


def test_a_fault_that_persists_fails_each_query_after_all_attempts(
        es_url: str, loaded_index: str) -> None:
    events: Counter[str] = Counter()
    with FaultProxy(es_url, ["503"] * 10) as proxy:
        port = _port(proxy, loaded_index, events, attempts=3)
        outcomes = port.search(REQUESTS)
        port.close()
        assert proxy.requests == 3
    assert all(isinstance(o, SearchUnavailableError) for o in outcomes)
    assert "after 3 attempts" in str(outcomes[0]) and "HTTP 503" in str(outcomes[0])
    assert events["backend_failures"] == 3 and events["backend_retries"] == 2


@pytest.mark.parametrize("fault", ["400", "breaker"])
def test_permanent_failures_are_not_retried(es_url: str, loaded_index: str, fault: str) -> None:
    events: Counter[str] = Counter()
    with FaultProxy(es_url, [fault]) as proxy:
        port = _port(proxy, loaded_index, events)
        outcomes = port.search(REQUESTS)
        port.close()
        assert proxy.requests == 1
    assert all(isinstance(o, SearchRejectedError) for o in outcomes)
    assert events["backend_retries"] == 0


def test_a_throttled_sub_search_is_retried_alone(es_url: str, loaded_index: str) -> None:
    events: Counter[str] = Counter()
    with FaultProxy(es_url, ["sub429"]) as proxy:
        port = _port(proxy, loaded_index, events)
        outcomes = port.search(REQUESTS)
        port.close()
    assert _answered(outcomes) == EXPECTED
    assert events["backend_requests"] == 2 and events["backend_retries"] == 1


def test_backoff_grows_exponentially_within_its_cap() -> None:
    from connectors.retry import backoff_seconds

    policy = RetryPolicy(max_attempts=10, initial_backoff=0.1, max_backoff=1.0)
    rng = random.Random(1)
    ceilings = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    for attempt, ceiling in enumerate(ceilings, start=1):
        waits = [backoff_seconds(policy, attempt, rng) for _ in range(50)]
        assert all(0 <= w <= ceiling for w in waits) and max(waits) > ceiling / 2


def test_credentials_from_the_environment_go_on_the_wire(es_url: str,
                                                         loaded_index: str) -> None:
    with FaultProxy(es_url) as proxy:
        config = ElasticsearchConfig(hosts=(proxy.url,), index=loaded_index, api_key_env="MY_KEY")
        port = ElasticsearchPort.open(config, environ={"MY_KEY": "c2VjcmV0"})
        port.search(REQUESTS[:1])
        port.close()
    assert proxy.authorizations and set(proxy.authorizations) == {"ApiKey c2VjcmV0"}


def _config(url: str, index: str, attempts: int = 3, timeout: float = 10.0
            ) -> ElasticsearchConfig:
    return ElasticsearchConfig(hosts=(url,), index=index, request_timeout=timeout,
                               index_options={"type": "flat"},
                               retry=RetryPolicy(attempts, initial_backoff=0.01,
                                                 max_backoff=0.05))


@pytest.mark.parametrize("fault", ["429", "503", "504", "drop"])
@pytest.mark.parametrize(("position", "path"), [(0, "/"), (1, "/_mapping")])
def test_a_transient_fault_on_the_info_or_mapping_request_is_retried(
        es_url: str, loaded_index: str, fault: str, position: int, path: str) -> None:
    with FaultProxy(es_url, ["pass"] * position + [fault]) as proxy:
        port = ElasticsearchPort.open(_config(proxy.url, loaded_index))
        assert port.dimension == DIM
        port.close()
        assert proxy.paths[position].endswith(path) and proxy.paths[position + 1].endswith(path)


@pytest.mark.parametrize(("fault", "error", "message"), [
    ("503", SearchUnavailableError, "failed after 3 attempts"),
    ("drop", SearchUnavailableError, "failed after 3 attempts"),
    ("401", SearchRejectedError, "HTTP 401"),
])
def test_a_lasting_fault_on_the_mapping_request_is_one_clear_error_naming_the_host(
        es_url: str, loaded_index: str, fault: str, error: type[Exception],
        message: str) -> None:
    with FaultProxy(es_url, ["pass"] + [fault] * 5) as proxy, \
            pytest.raises(error, match=message) as raised:
        ElasticsearchPort.open(_config(proxy.url, loaded_index))
    assert "mapping request" in str(raised.value) and "127.0.0.1" in str(raised.value)


@pytest.mark.parametrize("fault", ["503", "drop", "429"])
def test_a_transient_fault_on_a_bulk_request_is_retried_and_everything_is_written(
        es_url: str, es_client: Elasticsearch, es_index: str, fault: str) -> None:
    with FaultProxy(es_url, [fault]) as proxy:
        config = _config(proxy.url, es_index)
        ensure_index(es_client, _config(es_url, es_index), DIM)
        client = open_client(config, environ={})
        report = write_chunks(client, config, chunk_records(VECTORS), refresh=True)
        client.close()
    assert (report.indexed, report.failures) == (len(VECTORS), [])
    assert es_client.count(index=es_index)["count"] == len(VECTORS)


def test_a_lasting_bulk_failure_is_reported_per_chunk_never_raised(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    ensure_index(es_client, _config(es_url, es_index), DIM)
    with FaultProxy(es_url, ["drop"] * 10) as proxy:
        config = _config(proxy.url, es_index)
        client = open_client(config, environ={})
        report = write_chunks(client, config, chunk_records(VECTORS[:4]))
        client.close()
    assert report.indexed == 0
    assert [doc_id for doc_id, _ in report.failures] == [f"doc{i}#chunk-0" for i in range(4)]
    assert all("127.0.0.1" in reason for _, reason in report.failures)


def test_a_heavy_sub_search_that_times_out_fails_alone(es_url: str, loaded_index: str) -> None:
    heavy = SearchRequest(text="heavyheavy", k=2)
    requests = [*REQUESTS, heavy]
    events: Counter[str] = Counter()
    with FaultProxy(es_url, slow_when=(b"heavyheavy", 1.5)) as proxy:
        port = _port(proxy, loaded_index, events, attempts=2, timeout=0.5)
        outcomes = port.search(requests)
        port.close()
    assert _answered(outcomes[:3]) == EXPECTED
    assert isinstance(outcomes[3], SearchUnavailableError)
    assert events["backend_failures"] == 1


def test_msearch_requests_hold_at_most_the_configured_number_of_sub_searches(
        es_url: str, loaded_index: str) -> None:
    with FaultProxy(es_url) as proxy:
        config = ElasticsearchConfig(hosts=(proxy.url,), index=loaded_index,
                                     max_searches_per_request=2)
        port = ElasticsearchPort(open_client(config, environ={}), config, IndexFacts(DIM))
        outcomes = port.search(REQUESTS * 2)
        port.close()
        assert _answered(outcomes) == EXPECTED * 2
        assert [p.split("?")[0] for p in proxy.paths].count("/_msearch") == 3
