"""The start-up checks against an index's mapping: each names host, index, field and what was
found, instead of letting a wrong setting give wrong answers silently."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_check import read_mapping
from core.errors import ConfigError, StoreNotFoundError

HOST = "http://es.example:9200"
TEXT_WITH_KEYWORD = {"type": "text", "fields": {"keyword": {"type": "keyword",
                                                            "ignore_above": 256}}}


def _config(**fields: Any) -> ElasticsearchConfig:
    return ElasticsearchConfig(hosts=(HOST,), index="chunks", **fields)


def _mapping(vector: dict[str, Any] | None = None, content: dict[str, Any] | None = None,
             metadata: dict[str, Any] | None = None, content_field: str = "content",
             vector_field: str = "embedding") -> dict[str, Any]:
    properties: dict[str, Any] = {
        vector_field: vector or {"type": "dense_vector", "dims": 4, "similarity": "cosine"},
        content_field: content or {"type": "text"}}
    if metadata is not None:
        properties["metadata"] = {"properties": metadata}
    return {"properties": properties}


OURS = {"docId": {"type": "keyword"}, "chunkIndex": {"type": "integer"},
        "source": {"type": "keyword"}}
LANGCHAIN = {"docId": TEXT_WITH_KEYWORD, "chunkIndex": {"type": "long"},
             "source": TEXT_WITH_KEYWORD}


def test_a_mapping_that_fits_gives_dims_similarity_and_filter_paths() -> None:
    facts = read_mapping(_mapping(metadata=OURS), _config())
    assert (facts.dimension, facts.similarity, facts.warnings) == (4, "cosine", ())
    assert facts.filter_paths == {"docId": "metadata.docId", "source": "metadata.source"}


def test_a_missing_content_field_is_an_error_listing_the_text_fields() -> None:
    mapping = _mapping(content_field="text", metadata=OURS)
    with pytest.raises(ConfigError) as error:
        read_mapping(mapping, _config())
    assert str(error.value) == (
        "config search.elasticsearch.content-field='content': index 'chunks' on "
        "['http://es.example:9200'] has no such field; the content must be a text or keyword "
        "field (its text fields: ['text']); a wrong name would give every block empty content")


def test_a_content_field_of_another_kind_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"content-field='content': .* has a 'long' field"):
        read_mapping(_mapping(content={"type": "long"}, metadata=OURS), _config())


@pytest.mark.parametrize("similarity", ["cosine", "dot_product", "max_inner_product",
                                        "l2_norm", None])
def test_each_known_similarity_is_accepted(similarity: str | None) -> None:
    vector = {"type": "dense_vector", "dims": 4} | ({"similarity": similarity}
                                                    if similarity else {})
    facts = read_mapping(_mapping(vector=vector, metadata=OURS), _config())
    assert facts.similarity == (similarity or "cosine")


def test_an_unknown_similarity_is_refused() -> None:
    vector = {"type": "dense_vector", "dims": 4, "similarity": "hamming"}
    with pytest.raises(ConfigError) as error:
        read_mapping(_mapping(vector=vector, metadata=OURS), _config())
    assert str(error.value) == (
        "config search.elasticsearch.vector-field='embedding': index 'chunks' on "
        "['http://es.example:9200'] maps it with similarity 'hamming', whose score rag-evidence "
        "cannot put on its scale; known: ['cosine', 'dot_product', 'max_inner_product', "
        "'l2_norm']")


@pytest.mark.parametrize("vector", [{"type": "dense_vector", "dims": 4, "index": False},
                                    {"type": "dense_vector", "dims": 32, "element_type": "bit"}])
def test_a_vector_field_that_knn_cannot_search_is_refused(vector: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="kNN search needs an indexed float or byte vector"):
        read_mapping(_mapping(vector=vector, metadata=OURS), _config())


def test_a_wrong_vector_field_lists_the_dense_vector_fields() -> None:
    with pytest.raises(StoreNotFoundError) as error:
        read_mapping(_mapping(vector_field="vector", metadata=OURS), _config())
    assert "vector-field='embedding'" in str(error.value)
    assert "dense_vector fields: ['vector']" in str(error.value)


def test_a_text_filter_field_is_used_through_its_keyword_sub_field() -> None:
    facts = read_mapping(_mapping(metadata=LANGCHAIN), _config())
    assert facts.filter_paths == {"docId": "metadata.docId.keyword",
                                  "source": "metadata.source.keyword"}


def test_a_plain_text_filter_field_is_an_error() -> None:
    metadata = OURS | {"source": {"type": "text"}}
    with pytest.raises(ConfigError) as error:
        read_mapping(_mapping(metadata=metadata), _config())
    assert str(error.value) == (
        "config search.elasticsearch.filter-fields='source': index 'chunks' on "
        "['http://es.example:9200'] maps 'metadata.source' as 'text' with no keyword "
        "sub-field: an exact filter on it would match nothing; map it as keyword (or add a "
        "keyword sub-field), or remove it from filter-fields")


def test_an_unmapped_filter_field_is_a_warning() -> None:
    facts = read_mapping(_mapping(metadata=OURS), _config(filter_fields=("docId", "lang")))
    assert facts.warnings == (
        "search.elasticsearch.filter-fields: 'lang' (metadata.lang) is not in the mapping of "
        "index 'chunks' on ['http://es.example:9200']; filters on it match nothing",)


def test_identity_keys_missing_where_the_layout_looks_are_warnings() -> None:
    """metadata-field: null on an index that keeps them under `metadata`."""
    facts = read_mapping(_mapping(metadata=LANGCHAIN),
                         _config(metadata_field=None, filter_fields=()))
    assert facts.warnings == (
        "index 'chunks' on ['http://es.example:9200'] (layout rag-evidence) maps no document "
        "id under the top level (looked for ['docId', 'doc_id']): per-document caps count each "
        "chunk alone",
        "index 'chunks' on ['http://es.example:9200'] (layout rag-evidence) maps no chunk "
        "index under the top level (looked for ['chunkIndex', 'chunk_index']): evidence keys "
        "fall back to `vector:{_id}`")


def test_llamaindex_document_ids_count_as_identity_keys() -> None:
    metadata = {"ref_doc_id": {"type": "keyword"}, "source": {"type": "keyword"},
                "doc_id": {"type": "keyword"}}
    facts = read_mapping(_mapping(metadata=metadata), _config(layout="llamaindex",
                                                               filter_fields=("doc_id",)))
    assert [w.split(": ")[-1] for w in facts.warnings] == [
        "evidence keys fall back to `vector:{_id}`"]


def test_warnings_are_logged_once_per_process(caplog: pytest.LogCaptureFixture) -> None:
    from connectors.elasticsearch import index_check

    facts = read_mapping(_mapping(metadata=OURS), _config(filter_fields=("once-only",)))
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            index_check.log_warnings(facts)
    assert [r.getMessage() for r in caplog.records] == list(facts.warnings)
