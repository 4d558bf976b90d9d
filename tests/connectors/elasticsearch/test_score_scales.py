"""Every similarity an index may use is reported on the (1 + cosine) / 2 scale."""

from __future__ import annotations

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.search_port import SearchRequest
from tests.builders import unit_vectors

pytestmark = pytest.mark.live_es


@pytest.mark.parametrize("similarity", ["cosine", "dot_product", "max_inner_product",
                                        "l2_norm"])
def test_knn_scores_are_one_plus_cosine_over_two_for_every_similarity(
        es_url: str, es_client: Elasticsearch, es_index: str, similarity: str) -> None:
    vectors = unit_vectors(12, dim=8, seed=3)
    es_client.indices.create(index=es_index, mappings={"properties": {
        "embedding": {"type": "dense_vector", "dims": 8, "index": True,
                      "similarity": similarity, "index_options": {"type": "flat"}},
        "content": {"type": "text"},
        "metadata": {"properties": {"docId": {"type": "keyword"},
                                    "chunkIndex": {"type": "integer"}}}}})
    for i, vector in enumerate(vectors):
        es_client.index(index=es_index, id=f"c{i}", document={
            "embedding": [float(x) for x in vector], "content": f"chunk {i}",
            "metadata": {"docId": f"d{i}", "chunkIndex": 0}})
    es_client.indices.refresh(index=es_index)
    query = vectors[0] * 0.6 + vectors[1] * 0.8
    query /= np.linalg.norm(query)
    port = ElasticsearchPort.open(ElasticsearchConfig((es_url,), es_index))
    try:
        [hits] = port.search([SearchRequest(vector=tuple(float(x) for x in query), k=12)])
    finally:
        port.close()
    assert not isinstance(hits, Exception)
    expected = {f"c{i}": (1 + float(v @ query)) / 2 for i, v in enumerate(vectors)}
    assert {h.id: round(h.score, 4) for h in hits} == {
        k: round(v, 4) for k, v in expected.items()}
    assert [h.id for h in hits] == sorted(expected, key=lambda k: -expected[k])
