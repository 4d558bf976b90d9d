"""The Elasticsearch adapter over HTTP against the session's server (or ES_URL)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.search_port import KnowledgeSearchPort, SearchRequest
from core.errors import (
    ConfigError,
    DimensionMismatchError,
    SearchRejectedError,
    SearchUnavailableError,
    StoreNotFoundError,
)
from tests.builders import chunk_records, unit_vectors

pytestmark = pytest.mark.live_es
DIM = 8


def _config(url: str, index: str, **overrides: object) -> ElasticsearchConfig:
    base = ElasticsearchConfig(hosts=(url,), index=index, filter_fields=("docId", "parity"),
                               index_options={"type": "flat"})
    return replace(base, **overrides)  # type: ignore[arg-type]


def _load(client: Elasticsearch, config: ElasticsearchConfig, vectors: np.ndarray) -> None:
    assert ensure_index(client, config, DIM)
    report = write_chunks(client, config, chunk_records(vectors, chunks_per_doc=4), refresh=True)
    assert report.indexed == len(vectors) and report.failures == []


def _loaded_port(config: ElasticsearchConfig, client: Elasticsearch,
                 count: int) -> tuple[ElasticsearchPort, np.ndarray]:
    """Loads `count` chunks into the config's index and opens the port on it."""
    vectors = unit_vectors(count, dim=DIM)
    _load(client, config, vectors)
    return ElasticsearchPort.open(config), vectors


@pytest.mark.parametrize("metadata_field", ["metadata", None])
def test_knn_hits_map_id_score_content_and_metadata_in_both_layouts(
        es_url: str, es_client: Elasticsearch, es_index: str, metadata_field: str | None) -> None:
    port, vectors = _loaded_port(_config(es_url, es_index, metadata_field=metadata_field),
                                 es_client, 24)
    assert isinstance(port, KnowledgeSearchPort) and port.dimension == DIM
    (hits,) = port.search([SearchRequest(vector=tuple(vectors[5].tolist()), k=3)])
    port.close()
    assert isinstance(hits, list) and len(hits) == 3
    assert hits[0].id == "doc1#chunk-1" and hits[0].content == "content 5"
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert hits[0].metadata == {"docId": "doc1", "chunkIndex": 1, "source": "doc1.md",
                                "parity": 1}


def test_declared_filters_become_term_and_terms_filters(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    port, vectors = _loaded_port(_config(es_url, es_index), es_client, 24)
    query = tuple(vectors[0].tolist())
    one, many = port.search([
        SearchRequest(vector=query, k=20, filters={"parity": 1}),
        SearchRequest(vector=query, k=20, filters={"docId": ["doc0", "doc2"], "parity": 0}),
    ])
    port.close()
    assert isinstance(one, list) and len(one) == 12 and {h.metadata["parity"] for h in one} == {1}
    assert isinstance(many, list)
    assert sorted(h.id or "" for h in many) == [
        "doc0#chunk-0", "doc0#chunk-2", "doc2#chunk-0", "doc2#chunk-2"]


def test_an_undeclared_filter_fails_only_its_own_request(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    port, vectors = _loaded_port(_config(es_url, es_index), es_client, 8)
    bad, good = port.search([
        SearchRequest(vector=tuple(vectors[0].tolist()), k=2, filters={"colour": "red"}),
        SearchRequest(vector=tuple(vectors[0].tolist()), k=2)])
    port.close()
    assert isinstance(bad, SearchRejectedError)
    assert "filters.colour='red'" in str(bad) and "filter-fields" in str(bad)
    assert isinstance(good, list) and len(good) == 2


def test_an_undeclared_filter_on_a_lexical_request_fails_only_that_request(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    port, _ = _loaded_port(_config(es_url, es_index), es_client, 8)
    bad, good = port.search([SearchRequest(text="content", k=2, filters={"colour": "red"}),
                             SearchRequest(text="content", k=2, filters={"parity": 1})])
    port.close()
    assert isinstance(bad, SearchRejectedError) and "filters.colour='red'" in str(bad)
    assert isinstance(good, list) and len(good) == 2
    assert all(h.metadata["parity"] == 1 for h in good)


def test_wrong_query_dimension_names_both_sizes(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    _load(es_client, config, unit_vectors(4, dim=DIM))
    port = ElasticsearchPort.open(config)
    (outcome,) = port.search([SearchRequest(vector=(1.0, 0.0), k=1)])
    port.close()
    assert isinstance(outcome, SearchRejectedError)
    assert "2 dimensions" in str(outcome) and f"expects {DIM}" in str(outcome)


def test_start_up_fails_fast_on_a_missing_index(es_url: str, es_index: str) -> None:
    with pytest.raises(StoreNotFoundError, match=f"search.elasticsearch.index='{es_index}'"):
        ElasticsearchPort.open(_config(es_url, es_index))


def test_start_up_fails_fast_on_a_missing_vector_field(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    _load(es_client, config, unit_vectors(4, dim=DIM))
    with pytest.raises(StoreNotFoundError, match="vector-field='vec'"):
        ElasticsearchPort.open(replace(config, vector_field="vec"))


def test_start_up_fails_fast_naming_an_unreachable_host() -> None:
    config = _config("http://127.0.0.1:9", "any", retry=replace(
        ElasticsearchConfig(("x",), "y").retry, max_attempts=1))
    with pytest.raises(SearchUnavailableError, match=r"127\.0\.0\.1:9"):
        ElasticsearchPort.open(config)


def test_existing_index_with_other_dimension_is_an_error_not_a_remap(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    _load(es_client, config, unit_vectors(4, dim=DIM))
    assert ensure_index(es_client, config, DIM) is False
    with pytest.raises(DimensionMismatchError, match=f"16 dimensions but the store expects {DIM}"):
        ensure_index(es_client, config, 16)


def test_reindexing_updates_instead_of_duplicating(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    vectors = unit_vectors(12, dim=DIM)
    _load(es_client, config, vectors)
    report = write_chunks(es_client, config, chunk_records(vectors, chunks_per_doc=4),
                          refresh=True)
    assert report.indexed == 12
    assert es_client.count(index=es_index)["count"] == 12


def test_existing_index_with_other_similarity_is_an_error_not_a_remap(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    es_client.indices.create(index=es_index, mappings={"properties": {"embedding": {
        "type": "dense_vector", "dims": DIM, "index": True, "similarity": "dot_product"}}})
    with pytest.raises(ConfigError, match="similarity 'dot_product'"):
        ensure_index(es_client, _config(es_url, es_index), DIM)


def test_created_mapping_types_identity_fields(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index, index_options={"type": "hnsw"})
    assert ensure_index(es_client, config, DIM)
    properties = es_client.indices.get_mapping(index=es_index)[es_index]["mappings"]["properties"]
    vector = properties["embedding"]
    assert (vector["type"], vector["dims"], vector["similarity"]) == ("dense_vector", DIM, "cosine")
    assert vector["index_options"]["type"] == "hnsw"
    assert properties["content"]["type"] == "text"
    metadata = properties["metadata"]["properties"]
    assert metadata["docId"]["type"] == "keyword" and metadata["chunkIndex"]["type"] == "integer"
