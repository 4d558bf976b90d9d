"""An index's store versions (issue 47): what `index` records so that a run can tell what
changed since a version, and the port's exact search among named chunks, against the session's
server (or ES_URL)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.layouts import VERSION_FIELD
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.elasticsearch.store_version import (
    DELETIONS_SUFFIX,
    IndexMark,
    changes_since,
    recorded_version,
)
from connectors.elasticsearch.target import ElasticsearchTarget
from connectors.embedder_port import EmbedderInfo
from connectors.search_port import ChunkHits, SearchRequest
from connectors.store_changes import StoreChanges
from core.errors import KnowledgeSearchError
from tests.builders import chunk_records, unit_vectors

pytestmark = pytest.mark.live_es

DIM = 8
VECTORS = unit_vectors(60, dim=DIM, seed=3)


@pytest.fixture
def config(es_url: str, es_client: Elasticsearch, es_index: str
           ) -> Iterator[ElasticsearchConfig]:
    yield ElasticsearchConfig(hosts=(es_url,), index=es_index,
                              filter_fields=("docId", "parity"))
    es_client.options(ignore_status=404).indices.delete(index=es_index + DELETIONS_SUFFIX)


def _index(config: ElasticsearchConfig, write: list[int], delete: list[str],
           commit: bool = True, embedder: EmbedderInfo | None = None) -> int:
    """One `index` as the ingestion job drives a target: prepare, write, delete, commit."""
    target = ElasticsearchTarget(config)
    target.prepare(DIM, embedder)
    writer = target.open_writer()
    records = chunk_records(VECTORS, chunks_per_doc=3)
    assert writer.write([records[n] for n in write]).failures == []
    assert writer.delete(delete).failures == []
    writer.close()
    if commit:
        target.commit()
    assert target._version is not None
    return target._version


def test_each_index_writes_the_next_version_and_a_run_learns_what_changed_since(
        config: ElasticsearchConfig, es_client: Elasticsearch) -> None:
    assert _index(config, list(range(30)), []) == 1
    assert _index(config, [3, 4, 40], ["doc1#chunk-0", "doc9#chunk-9"]) == 2
    assert recorded_version(es_client, config).committed == 2
    changes = changes_since(es_client, config, 1)
    assert changes.entered == ("doc1#chunk-1", "doc13#chunk-1")  # in id order

    assert changes.removed == {"doc1#chunk-0", "doc1#chunk-1", "doc13#chunk-1",
                               "doc9#chunk-9"}
    assert changes_since(es_client, config, 2).chunks == 0
    nothing = changes_since(es_client, config, 0)
    assert len(nothing.entered) == 30  # everything written since the index began


def test_an_unfinished_index_leaves_its_chunks_changed_until_a_later_one_commits(
        config: ElasticsearchConfig, es_client: Elasticsearch) -> None:
    _index(config, list(range(30)), [])
    assert _index(config, [5], [], commit=False) == 2
    assert recorded_version(es_client, config).committed == 1
    es_client.indices.refresh(index=config.index)
    assert "doc1#chunk-2" in changes_since(es_client, config, 1).entered
    assert _index(config, [6], []) == 3  # after the unfinished one, never the same number
    assert changes_since(es_client, config, 1).entered == ("doc1#chunk-2", "doc2#chunk-0")


def test_a_rebuild_for_another_embedder_keeps_the_store_versions(
        config: ElasticsearchConfig, es_client: Elasticsearch) -> None:
    first = EmbedderInfo(kind="hashing", model="a", dimension=DIM)
    _index(config, list(range(6)), [], embedder=first)
    target = ElasticsearchTarget(config)
    target.prepare(DIM, EmbedderInfo(kind="hashing", model="b", dimension=DIM), rebuild=True)
    target.commit()
    assert recorded_version(es_client, config).committed == 2
    mark = IndexMark.read(config)
    assert isinstance(mark, IndexMark) and (mark.version, mark.size, mark.unversioned) == (
        2, 6, 0)


@pytest.mark.parametrize("metadata_field", ["metadata", None])
def test_a_hit_never_shows_the_version_as_metadata(config: ElasticsearchConfig,
                                                   metadata_field: str | None) -> None:
    config = replace(config, metadata_field=metadata_field)
    _index(config, list(range(6)), [])
    port = ElasticsearchPort.open(config)
    (hits,) = port.search([SearchRequest(vector=tuple(VECTORS[0].tolist()), k=3)])
    port.close()
    assert isinstance(hits, list) and hits
    assert all(VERSION_FIELD not in hit.metadata for hit in hits)
    assert VERSION_FIELD not in port.metadata_keys


def _hits(outcome: object) -> ChunkHits:
    assert isinstance(outcome, ChunkHits)
    return outcome


@pytest.mark.parametrize("filters", [{}, {"parity": 1}])
@pytest.mark.parametrize("kind", ["vector", "text"])
def test_among_the_whole_indexs_top_it_gives_the_same_hits_and_scores(
        config: ElasticsearchConfig, filters: dict, kind: str) -> None:
    _index(config, list(range(60)), [])
    port = ElasticsearchPort.open(config)
    rng = np.random.default_rng(1)
    for n, query in enumerate(rng.normal(size=(8, DIM))):
        request = SearchRequest(vector=tuple(query.tolist()), k=40, filters=filters) \
            if kind == "vector" else SearchRequest(text=f"content {n} {n + 7}", k=40,
                                                   filters=filters)
        whole = _hits(port.search_chunks([request])[0])
        named = [*whole.ids, "doc0#chunk-0", "absent#chunk-1"]
        rng.shuffle(named)
        own, shared = named[:len(named) // 2], named[len(named) // 2:]
        among = _hits(port.search_among([request.model_copy(update={"k": 25})], [own],
                                        [float("-inf")], shared)[0])
        assert list(among.ids) == list(whole.ids[:25])
        assert list(among.scores) == list(whole.scores[:25])
        assert list(among.contents) == list(whole.contents[:25])
        bound = whole.scores[min(5, len(whole) - 1)]
        above = _hits(port.search_among([request], [list(whole.ids)], [bound])[0])
        assert all(score > bound for score in above.scores)
        assert list(above.ids) == [i for i, s in zip(whole.ids, whole.scores, strict=True)
                                   if s > bound]
    port.close()


def test_named_chunks_scores_vectors_and_hits_are_the_searchs_own(
        config: ElasticsearchConfig) -> None:
    _index(config, list(range(30)), [])
    port = ElasticsearchPort.open(config)
    request = SearchRequest(vector=tuple(VECTORS[4].tolist()), k=10)
    whole = _hits(port.search_chunks([request])[0])
    ids = list(whole.ids)[::-1]
    query = np.asarray([VECTORS[4]], dtype=np.float32)
    (scores,) = port.scores_of(query, [ids])
    assert scores.tolist() == list(whole.scores)[::-1]
    vectors = port.vectors_of(ids[:3])
    assert vectors.shape == (3, DIM) and np.allclose(
        vectors @ VECTORS[4], (np.asarray(whole.scores[::-1][:3]) * 2 - 1), atol=1e-5)
    (hits,) = port.hits_of([ids], [scores.tolist()])
    assert list(hits.ids) == ids and list(hits.contents) == list(whole.contents)[::-1]
    assert list(hits.identities) == list(whole.identities)[::-1]
    with pytest.raises(KnowledgeSearchError, match="holds no chunk 'absent#chunk-0'"):
        port.scores_of(query, [["absent#chunk-0"]])
    port.close()


def test_a_mark_tells_why_the_changes_cannot_be_told(config: ElasticsearchConfig,
                                                     es_client: Elasticsearch,
                                                     tmp_path: Path) -> None:
    _index(config, list(range(6)), [])
    kept = IndexMark.read(config)
    assert isinstance(kept, IndexMark)
    kept.keep(tmp_path)
    _index(config, [7], ["doc0#chunk-0"])
    tonight = IndexMark.read(config)
    assert isinstance(tonight, IndexMark)
    assert tonight.changes_since(tmp_path) == StoreChanges(
        frozenset({"doc0#chunk-0", "doc2#chunk-1"}), ("doc2#chunk-1",))
    other = replace(tonight, config=replace(config, index="another"))
    assert "PREV read index" in str(other.changes_since(tmp_path))
    es_client.indices.delete(index=config.index + DELETIONS_SUFFIX)
    assert "cannot be read" in str(tonight.changes_since(tmp_path))
    assert "keeps no store version" in str(tonight.changes_since(tmp_path / "nothing"))


def test_an_index_no_rag_evidence_index_wrote_is_not_continued_and_says_why(
        config: ElasticsearchConfig, es_client: Elasticsearch) -> None:
    es_client.indices.create(index=config.index, mappings={"properties": {
        "embedding": {"type": "dense_vector", "dims": DIM, "similarity": "cosine"}}})
    assert "records no store version" in str(IndexMark.read(config))


def test_an_index_created_again_or_an_alias_moved_is_another_index(
        config: ElasticsearchConfig, es_client: Elasticsearch, tmp_path: Path) -> None:
    _index(config, list(range(6)), [])
    kept = IndexMark.read(config)
    assert isinstance(kept, IndexMark)
    kept.keep(tmp_path)
    _index(config, [], ["doc9#chunk-9"])  # a deletion record of version 2
    es_client.indices.delete(index=config.index)
    _index(config, list(range(6)), [])  # the same name, versions begun again
    tonight = IndexMark.read(config)
    assert isinstance(tonight, IndexMark) and tonight.version == 1
    assert "is another index than PREV read" in str(tonight.changes_since(tmp_path))
    # the earlier index's deletion records are gone with it: none names a chunk of this one
    assert changes_since(es_client, config, 0).removed == set(tonight_ids(es_client, config))


def tonight_ids(client: Elasticsearch, config: ElasticsearchConfig) -> list[str]:
    found = client.search(index=config.index, size=100, source=False)
    return [hit["_id"] for hit in found["hits"]["hits"]]


def test_an_alias_of_several_indexes_is_not_continued_and_says_why(
        config: ElasticsearchConfig, es_client: Elasticsearch) -> None:
    first, second = replace(config, index=config.index + "-a"), replace(
        config, index=config.index + "-b")
    try:
        for each in (first, second):
            _index(each, list(range(3)), [])
            es_client.indices.put_alias(index=each.index, name=config.index)
        assert "names 2 indexes" in str(IndexMark.read(config))
    finally:
        es_client.options(ignore_status=404).indices.delete(
            index=",".join(f"{each.index},{each.index}{DELETIONS_SUFFIX}"
                           for each in (first, second)))
