"""One contract, three adapters: the embedded store, the in-memory one that `pipeline.testing`
ships, and Elasticsearch give the same answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from connectors.chunk_record import ChunkRecord
from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.writer import write_store
from connectors.search_port import KnowledgeSearchPort, SearchRequest
from core.errors import KnowledgeSearchError
from pipeline.testing import memory_port_factory
from tests.builders import chunk_records, unit_vectors

DIM = 16
VECTORS = unit_vectors(120, dim=DIM, seed=3)
RECORDS = chunk_records(VECTORS, chunks_per_doc=3)
QUERIES = unit_vectors(10, dim=DIM, seed=4)


BACKENDS = ["embedded", "memory", pytest.param("elasticsearch", marks=pytest.mark.live_es)]


def _opened(request: pytest.FixtureRequest, tmp_path: Path,
            records: list[ChunkRecord]) -> KnowledgeSearchPort:
    """The backend `request.param` names, holding `records`."""
    if request.param == "embedded":
        write_store(tmp_path, records)
        return EmbeddedStore.open(tmp_path)
    if request.param == "memory":
        return memory_port_factory(records)()
    es_client: Elasticsearch = request.getfixturevalue("es_client")
    config = ElasticsearchConfig(hosts=(request.getfixturevalue("es_url"),),
                                 index=request.getfixturevalue("es_index"),
                                 index_options={"type": "flat"}, filter_fields=("docId", "parity"))
    ensure_index(es_client, config, DIM)
    write_chunks(es_client, config, records, refresh=True)
    return ElasticsearchPort.open(config)


@pytest.fixture(params=BACKENDS)
def port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeSearchPort]:
    opened = _opened(request, tmp_path, RECORDS)
    yield opened
    opened.close()


def _exact(vector: tuple[float, ...], k: int, parity: int | None = None) -> list[str]:
    """Brute-force answer from the records themselves."""
    scored = [(-sum(a * b for a, b in zip(vector, r.vector, strict=True)), r.id) for r in RECORDS
              if parity is None or r.metadata["parity"] == parity]
    return [record_id for _, record_id in sorted(scored)[:k]]


def test_port_reports_its_dimension(port: KnowledgeSearchPort) -> None:
    assert isinstance(port, KnowledgeSearchPort) and port.dimension == DIM


def test_exact_knn_ids_scores_and_order(port: KnowledgeSearchPort) -> None:
    requests = [SearchRequest(vector=tuple(q.tolist()), k=7) for q in QUERIES]
    for request, outcome in zip(requests, port.search(requests), strict=True):
        assert isinstance(outcome, list)
        assert [h.id for h in outcome] == _exact(request.vector, 7)
        scores = [h.score for h in outcome]
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)


def test_scores_are_one_plus_cosine_over_two(port: KnowledgeSearchPort) -> None:
    (hits,) = port.search([SearchRequest(vector=tuple(VECTORS[7].tolist()), k=1)])
    assert isinstance(hits, list) and hits[0].id == RECORDS[7].id
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    opposite = tuple(-x for x in VECTORS[7].tolist())
    (far,) = port.search([SearchRequest(vector=opposite, k=120)])
    assert isinstance(far, list) and far[-1].id == RECORDS[7].id
    assert far[-1].score == pytest.approx(0.0, abs=1e-4)


def test_filtered_knn_matches_brute_force(port: KnowledgeSearchPort) -> None:
    vector = tuple(QUERIES[0].tolist())
    (hits,) = port.search([SearchRequest(vector=vector, k=5, filters={"parity": 1})])
    assert isinstance(hits, list) and [h.id for h in hits] == _exact(vector, 5, parity=1)


def test_hits_carry_content_and_metadata(port: KnowledgeSearchPort) -> None:
    (hits,) = port.search([SearchRequest(vector=tuple(VECTORS[4].tolist()), k=1)])
    assert isinstance(hits, list)
    assert (hits[0].content, hits[0].metadata) == (RECORDS[4].content, RECORDS[4].metadata)


def test_a_wrong_dimension_fails_only_that_request(port: KnowledgeSearchPort) -> None:
    bad, good = port.search([SearchRequest(vector=(1.0, 0.0), k=1),
                             SearchRequest(vector=tuple(VECTORS[0].tolist()), k=1)])
    assert isinstance(bad, KnowledgeSearchError) and "2 dimensions" in str(bad)
    assert isinstance(good, list) and good[0].id == RECORDS[0].id


def test_a_vector_without_direction_fails_only_that_request(port: KnowledgeSearchPort) -> None:
    zero, short, first, fifth = port.search([
        SearchRequest(vector=(0.0,) * DIM, k=1), SearchRequest(vector=(1.0, 0.0), k=1),
        SearchRequest(vector=tuple(VECTORS[0].tolist()), k=1),
        SearchRequest(vector=tuple((3 * VECTORS[5]).tolist()), k=1)])  # any length: a direction
    assert isinstance(zero, KnowledgeSearchError) and "no direction" in str(zero)
    assert isinstance(short, KnowledgeSearchError) and "2 dimensions" in str(short)
    assert isinstance(first, list) and first[0].id == RECORDS[0].id
    assert isinstance(fifth, list) and fifth[0].id == RECORDS[5].id
    assert fifth[0].score == pytest.approx(1.0, abs=1e-4)


WORDED = [ChunkRecord(id=f"w{i}#chunk-0", vector=tuple(VECTORS[i].tolist()), content=text,
                      metadata={"docId": f"w{i}", "chunkIndex": 0, "parity": i % 2})
          for i, text in enumerate([
              "parse a json document from a string", "push and pop items on a heap",
              "json encoder and decoder classes", "create a temporary directory",
              "the json module: json json json"])]


@pytest.fixture(params=BACKENDS)
def worded_port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeSearchPort]:
    opened = _opened(request, tmp_path, WORDED)
    yield opened
    opened.close()


def test_lexical_search_returns_only_chunks_that_match_a_term_best_first(
        worded_port: KnowledgeSearchPort) -> None:
    (hits,) = worded_port.search([SearchRequest(text="json", k=10)])
    assert isinstance(hits, list)
    assert {h.id for h in hits} == {"w0#chunk-0", "w2#chunk-0", "w4#chunk-0"}
    assert hits[0].id == "w4#chunk-0"  # the most occurrences in the shortest text
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_lexical_search_honours_k_and_filters(worded_port: KnowledgeSearchPort) -> None:
    top, even = worded_port.search([SearchRequest(text="json heap", k=2),
                                    SearchRequest(text="json", k=10, filters={"parity": 0})])
    assert isinstance(top, list) and len(top) == 2
    assert isinstance(even, list)
    assert {h.id for h in even} == {"w0#chunk-0", "w2#chunk-0", "w4#chunk-0"}
    assert all(h.metadata["parity"] == 0 for h in even)


def test_lexical_search_without_a_matching_term_finds_nothing(
        worded_port: KnowledgeSearchPort) -> None:
    assert worded_port.search([SearchRequest(text="zebra xylophone", k=5)]) == [[]]


def test_dense_and_lexical_requests_share_one_batch(worded_port: KnowledgeSearchPort) -> None:
    dense, lexical = worded_port.search([SearchRequest(vector=tuple(VECTORS[3].tolist()), k=1),
                                         SearchRequest(text="temporary", k=1)])
    assert isinstance(dense, list) and dense[0].id == "w3#chunk-0"
    assert isinstance(lexical, list) and lexical[0].id == "w3#chunk-0"
