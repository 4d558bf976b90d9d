"""Family 5: a stalled server costs a bounded number of timed-out requests per batch (the
README's worst-case time counts them), after which every query is a dead letter."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig, RetryPolicy
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.index_check import IndexFacts
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.errors import SearchUnavailableError
from connectors.search_port import SearchRequest
from tests.builders import chunk_records, unit_vectors
from tests.fault_proxy import FaultProxy

DIM = 8


@pytest.mark.live_es
def test_a_stalled_server_fails_a_batch_of_64_after_a_bounded_number_of_requests(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = ElasticsearchConfig(hosts=(es_url,), index=es_index, index_options={"type": "flat"})
    vectors = unit_vectors(64, dim=DIM)
    ensure_index(es_client, config, DIM)
    write_chunks(es_client, config, chunk_records(vectors[:4]), refresh=True)
    attempts = 2
    with FaultProxy(es_url, slow_when=(b"query_vector", 1.0)) as proxy:
        stalled = ElasticsearchConfig(hosts=(proxy.url,), index=es_index, request_timeout=0.3,
                                      retry=RetryPolicy(attempts, 0.0, 0.0))
        events: Counter[str] = Counter()
        port = ElasticsearchPort(open_client(stalled, {}), stalled, IndexFacts(DIM),
                                 rng=random.Random(0), on_event=lambda n, v: events.update({n: v}))
        outcomes = port.search([SearchRequest(vector=tuple(v.tolist()), k=2) for v in vectors])
        port.close()
        searches = [p for p in proxy.paths if p.startswith("/_msearch")]
    assert all(isinstance(o, SearchUnavailableError) for o in outcomes)
    assert len(searches) == events["es_requests"] <= 3 + (attempts - 1)
    assert events["es_failures"] == 64
