"""A stalled server costs a bounded number of timed-out requests per batch (the
worst-case time in docs/guarantees.md counts them), after which every query is a dead letter."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig, RetryPolicy
from connectors.elasticsearch.index_check import IndexFacts
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.search_port import SearchRequest
from core.errors import SearchUnavailableError
from tests.builders import unit_vectors
from tests.fault_proxy import FaultProxy

DIM = 8


@pytest.mark.live_es
def test_a_stalled_server_fails_a_batch_of_64_after_a_bounded_number_of_requests(
        es_url: str, es_chunks: tuple[ElasticsearchConfig, np.ndarray]) -> None:
    es_index, vectors = es_chunks[0].index, unit_vectors(64, dim=DIM)
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
    assert len(searches) == events["backend_requests"] <= 3 + (attempts - 1)
    assert events["backend_failures"] == 64
