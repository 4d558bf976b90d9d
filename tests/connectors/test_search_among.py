"""`ContinuablePort.search_among` on the embedded store: an exact search of a few named chunks
gives the ids, scores and order a search of the whole store gives them (issue 32)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from connectors.embedded.store import EmbeddedStore
from connectors.search_port import ChunkHits, SearchRequest
from core.errors import KnowledgeSearchError
from core.vectors import unit_rows
from tests.builders import chunk_records, embedded_store, unit_vectors

VECTORS = unit_vectors(300, dim=16, seed=4)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedStore:
    opened = embedded_store(tmp_path_factory.mktemp("among") / "store",
                            chunk_records(VECTORS, chunks_per_doc=3))()
    assert isinstance(opened, EmbeddedStore)
    return opened


def _hits(outcome: object) -> ChunkHits:
    assert isinstance(outcome, ChunkHits)
    return outcome


@pytest.mark.parametrize("filters", [{}, {"parity": 1}])
def test_among_the_whole_stores_top_it_gives_the_same_hits(store: EmbeddedStore,
                                                           filters: dict) -> None:
    rng = np.random.default_rng(1)
    for query in rng.normal(size=(20, 16)):
        request = SearchRequest(vector=tuple(query.tolist()), k=40, filters=filters)
        whole = _hits(store.search_chunks([request])[0])
        named = list(whole.ids[:40]) + [f"doc{n}#chunk-0" for n in range(0, 90, 7)]
        rng.shuffle(named)
        own, shared = named[:len(named) // 2], named[len(named) // 2:]
        among = _hits(store.search_among([request.model_copy(update={"k": 25})], [own],
                                         [float("-inf")], shared)[0])
        assert list(among.ids) == list(whole.ids[:25])
        assert list(among.scores) == list(whole.scores[:25])
        assert [ref[1] for ref in among.refs] == [ref[1] for ref in whole.refs[:25]]


def test_only_hits_strictly_above_the_bound_are_kept(store: EmbeddedStore) -> None:
    request = SearchRequest(vector=tuple(VECTORS[0].tolist()), k=30)
    whole = _hits(store.search_chunks([request])[0])
    bound = whole.scores[9]
    among = _hits(store.search_among([request], [list(whole.ids)], [bound])[0])
    assert list(among.ids) == list(whole.ids[:9])


def test_ids_the_store_does_not_hold_and_empty_lists_give_no_hits(store: EmbeddedStore,
                                                                  tmp_path: Path) -> None:
    request = SearchRequest(vector=tuple(VECTORS[1].tolist()), k=5)
    outcomes = store.search_among([request, request], [["nowhere#chunk-0"], []],
                                  [float("-inf")] * 2)
    assert [len(_hits(o)) for o in outcomes] == [0, 0]


def test_a_vector_of_the_wrong_dimension_fails_its_request_alone(store: EmbeddedStore) -> None:
    good = SearchRequest(vector=tuple(VECTORS[2].tolist()), k=3)
    bad = SearchRequest(vector=(1.0, 0.0), k=3)
    outcomes = store.search_among([bad, good], [["doc0#chunk-0"], ["doc0#chunk-0"]],
                                  [float("-inf")] * 2)
    assert not isinstance(outcomes[0], ChunkHits) and "dimension" in str(outcomes[0])
    assert list(_hits(outcomes[1]).ids) == ["doc0#chunk-0"]


def test_hits_of_and_scores_of_name_chunks_as_search_among_finds_them(
        store: EmbeddedStore) -> None:
    """The columns a continued shard asks for: exact scores of named chunks, and their hits
    with the scores given, as `search_among` gives both; none for no lists."""
    query = np.random.default_rng(3).normal(size=16)
    request = SearchRequest(vector=tuple(query.tolist()), k=8)
    named = [f"doc{n}#chunk-{n % 3}" for n in range(0, 60, 4)]
    found = _hits(store.search_among([request], [named], [0.0])[0])
    (unit,), _ = unit_rows([request.vector])
    scores = store.scores_of(unit[None, :], [list(found.ids)])[0]
    assert scores.tolist() == list(found.scores)
    (hits,) = store.hits_of([list(found.ids)], [list(found.scores)])
    assert (hits.ids, hits.scores, hits.identities, hits.refs) == (
        found.ids, found.scores, found.identities, found.refs)
    assert store.hits_of([], []) == []
    with pytest.raises(KnowledgeSearchError, match="holds no chunk"):
        store.hits_of([["nowhere#chunk-0"]], [[0.5]])


WORDS = ["apple", "banana", "cherry", "date", "fig", "grape"]


@pytest.fixture(scope="module")
def worded(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedStore:
    """A store whose chunks share a few words often: BM25 ties are common."""
    rng = np.random.default_rng(5)
    records = [r.model_copy(update={"content": " ".join(rng.choice(WORDS, rng.integers(1, 6)))})
               for r in chunk_records(VECTORS, chunks_per_doc=3)]
    opened = embedded_store(tmp_path_factory.mktemp("worded") / "store", records)()
    assert isinstance(opened, EmbeddedStore)
    return opened


@pytest.mark.parametrize("filters", [{}, {"parity": 1}])
def test_a_bm25_request_among_the_whole_stores_top_gives_the_same_hits(
        worded: EmbeddedStore, filters: dict) -> None:
    rng = np.random.default_rng(2)
    for _ in range(20):
        text = " ".join(rng.choice(WORDS, 2))
        request = SearchRequest(text=text, k=60, filters=filters)
        whole = _hits(worded.search_chunks([request])[0])
        cut = int(rng.integers(1, 40))
        # the top `cut` and the chunks tied with the next, and some others, in any order
        named = [i for i, s in zip(whole.ids, whole.scores, strict=True)
                 if s >= whole.scores[cut]] + [f"doc{n}#chunk-1" for n in range(0, 90, 7)]
        rng.shuffle(named)
        own, shared = named[::2], named[1::2]
        bound = whole.scores[cut]
        among = _hits(worded.search_among([request], [own], [bound], shared)[0])
        expected = [(i, s) for i, s in zip(whole.ids, whole.scores, strict=True) if s > bound]
        assert list(zip(among.ids, among.scores, strict=True)) == expected
        everything = _hits(worded.search_among([request], [named], [float("-inf")])[0])
        assert set(everything.ids) <= set(named) and min(everything.scores) > 0
