from __future__ import annotations

from functools import partial
from pathlib import Path

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from connectors.chunk_record import ChunkRecord
from connectors.embedded.store import EmbeddedStore
from connectors.embedders.hashing import HashingEmbedder
from stages.embed import embed_queries
from stages.models import DeadLetter, EmbeddedQuery, Query, QueryHits
from stages.recall import recall_batch
from stages.transforms.recall import Recall
from tests.builders import chunk_records, embedded_store, unit_vectors

DIM = 8


@pytest.fixture
def vectors() -> np.ndarray:
    return unit_vectors(30, dim=DIM)


@pytest.fixture
def store(tmp_path: Path, vectors: np.ndarray) -> EmbeddedStore:
    return embedded_store(tmp_path, chunk_records(vectors))()  # type: ignore[return-value]


def _vec(v: np.ndarray) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


def _embedded(*queries: Query) -> list[EmbeddedQuery]:
    out = embed_queries(queries, HashingEmbedder(DIM))
    assert all(isinstance(q, EmbeddedQuery) for q in out)
    return out  # type: ignore[return-value]


def test_each_vector_of_a_query_is_a_sub_query_named_in_the_reasons(
        store: EmbeddedStore, vectors: np.ndarray) -> None:
    query = Query(id="q", vector=_vec(vectors[0]), vectors=(_vec(vectors[1]),))
    (result,) = recall_batch(_embedded(query), store, 3)
    assert isinstance(result, QueryHits)
    assert [h.reason for h in result.hits] == ["knn:vector"] * 3 + ["knn:vectors[0]"] * 3
    assert [h.recall_order for h in result.hits] == list(range(6))
    assert [h.rank for h in result.hits] == [1, 2, 3, 1, 2, 3]


def test_text_queries_search_with_their_embedded_vector(store: EmbeddedStore) -> None:
    (result,) = recall_batch(_embedded(Query(id="q", text="find things")), store, 4)
    assert isinstance(result, QueryHits)
    assert {h.reason for h in result.hits} == {"knn:text"} and len(result.hits) == 4


def test_a_bad_query_fails_alone_with_both_sizes_named(store: EmbeddedStore,
                                                       vectors: np.ndarray) -> None:
    queries = _embedded(Query(id="short", vector=(1.0, 2.0)),
                        Query(id="ok", vector=_vec(vectors[3])))
    short, ok = recall_batch(queries, store, 2)
    assert isinstance(short, DeadLetter) and short.stage == "recall"
    assert "2 dimensions" in short.error and f"expects {DIM}" in short.error
    assert isinstance(ok, QueryHits) and len(ok.hits) == 2


def test_a_failed_batch_dead_letters_each_of_its_queries(tmp_path: Path,
                                                          vectors: np.ndarray) -> None:
    store = embedded_store(tmp_path, chunk_records(vectors))()
    store.close()  # a closed store fails whole batches
    results = recall_batch(_embedded(Query(id="a", vector=_vec(vectors[0])),
                                     Query(id="b", vector=_vec(vectors[1]))), store, 2)
    assert [r.query_id for r in results] == ["a", "b"]
    assert all(isinstance(r, DeadLetter) and "closed" in r.error for r in results)


@pytest.fixture
def worded_store(tmp_path: Path) -> EmbeddedStore:
    texts = ["parse a json document", "heap queue push pop", "json encoder and decoder",
             "temporary directory cleanup"]
    embedder = HashingEmbedder(DIM)
    records = [ChunkRecord(id=f"d{i}#chunk-0", vector=tuple(embedder.embed([t])[0].tolist()),
                           content=t, metadata={"docId": f"d{i}", "chunkIndex": 0})
               for i, t in enumerate(texts)]
    return embedded_store(tmp_path / "worded", records)()  # type: ignore[return-value]


def test_lexical_recall_searches_the_text_with_bm25_only(worded_store: EmbeddedStore) -> None:
    (result,) = recall_batch([EmbeddedQuery(query=Query(id="q", text="json"))], worded_store,
                             10, "lexical")
    assert isinstance(result, QueryHits)
    assert {h.reason for h in result.hits} == {"bm25:text"}
    assert sorted(h.hit.id for h in result.hits) == ["d0#chunk-0", "d2#chunk-0"]


def test_hybrid_recall_runs_knn_and_bm25_sub_queries(worded_store: EmbeddedStore) -> None:
    (result,) = recall_batch(_embedded(Query(id="q", text="json document")), worded_store, 2,
                             "hybrid")
    assert isinstance(result, QueryHits)
    assert [h.reason for h in result.hits] == ["knn:text"] * 2 + ["bm25:text"] * 2


def test_lexical_recall_of_a_vector_only_query_is_a_dead_letter(
        worded_store: EmbeddedStore) -> None:
    (result,) = recall_batch([EmbeddedQuery(query=Query(id="q", vector=(1.0,) * DIM))],
                             worded_store, 2, "lexical")
    assert isinstance(result, DeadLetter) and "rag.recall.mode=lexical needs a text" in result.error


def test_recall_transform_splits_hits_and_dead_letters(tmp_path: Path, vectors: np.ndarray) -> None:
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    queries = [EmbeddedQuery(query=Query(id=f"q{i}", vector=_vec(vectors[i]))) for i in range(10)]
    queries.append(EmbeddedQuery(query=Query(id="bad", vector=(1.0,))))
    with TestPipeline() as p:
        outputs = p | beam.Create(queries) | Recall(open_store, retrieve_k=5, batch_size=4)
        assert_that(outputs.hits | "HitIds" >> beam.Map(lambda r: (r.query_id, len(r.hits))),
                    equal_to([(f"q{i}", 5) for i in range(10)]), label="hits")
        assert_that(outputs.dead_letter | beam.Map(lambda d: d.query_id), equal_to(["bad"]),
                    label="dead")


def test_a_port_that_cannot_be_opened_dead_letters_queries_and_the_job_goes_on(
        tmp_path: Path) -> None:
    missing = partial(EmbeddedStore.open, tmp_path / "missing")
    queries = [EmbeddedQuery(query=Query(id=f"q{i}", vector=(1.0,) * DIM)) for i in range(3)]
    with TestPipeline() as p:
        outputs = p | beam.Create(queries) | Recall(missing, retrieve_k=2)
        assert_that(outputs.dead_letter | beam.Map(lambda d: (d.query_id, "no embedded store"
                                                              in d.error)),
                    equal_to([("q0", True), ("q1", True), ("q2", True)]))


def test_a_query_with_more_sub_queries_than_allowed_is_a_dead_letter(
        store: EmbeddedStore) -> None:
    many = EmbeddedQuery(query=Query(id="many", vectors=((1.0,) * DIM,) * 5))
    few = EmbeddedQuery(query=Query(id="few", vectors=((1.0,) * DIM,) * 2))
    dead, ok = recall_batch([many, few], store, 2, max_sub_queries=4)
    assert isinstance(dead, DeadLetter) and "rag.max-sub-queries=4" in dead.error
    assert isinstance(ok, QueryHits) and len(ok.hits) == 4
