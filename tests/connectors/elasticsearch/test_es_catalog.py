"""What an index holds, read from the index itself (a point in time, page by page): each chunk's
document and fingerprint; and what a rebuild may change of an existing index."""

from __future__ import annotations

from dataclasses import replace

import pytest
from elasticsearch import Elasticsearch

from connectors.chunk_writer_port import StoredChunk
from connectors.elasticsearch.bulk_writer import delete_chunks, write_chunks
from connectors.elasticsearch.catalog import stored_chunks
from connectors.elasticsearch.client import index_mappings, recorded_embedder
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from connectors.embedder_port import EmbedderInfo
from core.chunk_fingerprint import chunk_fingerprint
from core.errors import DimensionMismatchError, EmbedderChangedError
from tests.builders import chunk_records, unit_vectors

pytestmark = pytest.mark.live_es
DIM = 8
HASHING = EmbedderInfo("hashing", None, DIM)


def _config(url: str, index: str) -> ElasticsearchConfig:
    return ElasticsearchConfig(hosts=(url,), index=index, index_options={"type": "flat"})


def test_the_catalog_lists_every_chunk_with_its_document_and_fingerprint_page_by_page(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    records = chunk_records(unit_vectors(12, dim=DIM), chunks_per_doc=3)
    ensure_index(es_client, config, DIM)
    write_chunks(es_client, config, records, refresh=True)
    listed = sorted(stored_chunks(es_client, config, page_size=5), key=lambda c: c.id)
    assert listed == sorted((StoredChunk(r.id, r.metadata["docId"], chunk_fingerprint(
        r.content, r.metadata, None, r.vector)) for r in records), key=lambda c: c.id)


def test_a_chunk_another_tool_wrote_is_its_own_document_without_a_fingerprint(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    ensure_index(es_client, config, DIM)
    es_client.index(index=es_index, id="foreign-1", refresh=True, document={
        "embedding": [1.0] + [0.0] * (DIM - 1), "content": "x", "metadata": {"docId": "d"}})
    assert list(stored_chunks(es_client, config)) == [StoredChunk("foreign-1", "foreign-1",
                                                                  None)]


def test_deleting_chunks_by_id_counts_an_id_already_gone_as_deleted(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    ensure_index(es_client, config, DIM)
    write_chunks(es_client, config, chunk_records(unit_vectors(3, dim=DIM)), refresh=True)
    report = delete_chunks(es_client, config, ["doc1#chunk-0", "never-there"])
    assert (report.indexed, report.failures) == (2, [])
    es_client.indices.refresh(index=es_index)
    assert sorted(c.id for c in stored_chunks(es_client, config)) == ["doc0#chunk-0",
                                                                     "doc2#chunk-0"]


def test_a_rebuild_records_the_new_embedder_and_another_embedder_is_refused_without_it(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    other = replace(HASHING, document_prefix="passage: ")
    assert ensure_index(es_client, config, DIM, HASHING)
    with pytest.raises(EmbedderChangedError, match="index .* holds chunks embedded with "
                                                   r"hashing \(8 dims\)"):
        ensure_index(es_client, config, DIM, other)
    assert ensure_index(es_client, config, DIM, other, rebuild=True) is False
    assert recorded_embedder(index_mappings(es_client, config) or {}) == other


def test_a_rebuild_for_another_dimension_needs_another_index(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    config = _config(es_url, es_index)
    ensure_index(es_client, config, DIM, HASHING)
    with pytest.raises(DimensionMismatchError, match="16 dimensions but the store expects 8"):
        ensure_index(es_client, config, 16, replace(HASHING, dimension=16), rebuild=True)


def test_an_index_another_tool_created_gets_the_catalog_field_mapped(
        es_url: str, es_client: Elasticsearch, es_index: str) -> None:
    es_client.indices.create(index=es_index, mappings={"dynamic": "strict", "properties": {
        "embedding": {"type": "dense_vector", "dims": DIM, "index": True,
                      "similarity": "cosine"},
        "content": {"type": "text"}, "metadata": {"type": "object", "dynamic": True}}})
    config = _config(es_url, es_index)
    assert ensure_index(es_client, config, DIM) is False
    report = write_chunks(es_client, config, chunk_records(unit_vectors(2, dim=DIM)),
                          refresh=True)
    assert (report.indexed, report.failures) == (2, [])
