from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from connectors.chunk_record import ChunkRecord
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.writer import write_store
from connectors.search_port import KnowledgeSearchPort, SearchRequest
from core.errors import (
    DimensionMismatchError,
    InvalidInputError,
    KnowledgeSearchError,
    StoreNotFoundError,
)
from tests.builders import chunk_records, embedded_store, unit_vectors


@pytest.fixture
def vectors() -> np.ndarray:
    return unit_vectors(200, dim=16)


@pytest.fixture
def store(tmp_path: Path, vectors: np.ndarray) -> EmbeddedStore:
    return embedded_store(tmp_path, chunk_records(vectors, chunks_per_doc=4))()  # type: ignore[return-value]


def test_store_implements_the_port(store: EmbeddedStore) -> None:
    assert isinstance(store, KnowledgeSearchPort)
    assert store.dimension == 16 and len(store) == 200


def test_search_is_exact_cosine_knn_on_the_elasticsearch_scale(
        store: EmbeddedStore, vectors: np.ndarray) -> None:
    query = unit_vectors(1, dim=16, seed=99)[0]
    (hits,) = store.search([SearchRequest(vector=tuple(query.tolist()), k=7)])
    cosine = vectors @ query
    expected = np.argsort(-cosine)[:7]
    assert [h.id for h in hits] == [f"doc{i // 4}#chunk-{i % 4}" for i in expected]
    assert [h.score for h in hits] == pytest.approx(list((1 + cosine[expected]) / 2), abs=1e-5)


def test_one_batch_answers_every_request_in_order(store: EmbeddedStore,
                                                  vectors: np.ndarray) -> None:
    requests = [SearchRequest(vector=tuple(v.tolist()), k=1) for v in vectors[:5]]
    outcomes = store.search(requests)
    assert [o[0].content for o in outcomes] == [f"content {i}" for i in range(5)]  # type: ignore[index]


def test_filters_keep_only_matching_metadata(store: EmbeddedStore, vectors: np.ndarray) -> None:
    request = SearchRequest(vector=tuple(vectors[0].tolist()), k=10, filters={"parity": 1})
    (hits,) = store.search([request])
    assert len(hits) == 10 and all(h.metadata["parity"] == 1 for h in hits)  # type: ignore[union-attr]


def test_list_filter_matches_any_value_and_filters_combine(store: EmbeddedStore,
                                                          vectors: np.ndarray) -> None:
    request = SearchRequest(vector=tuple(vectors[0].tolist()), k=50,
                            filters={"docId": ["doc0", "doc1"], "parity": 0})
    (hits,) = store.search([request])
    assert sorted(h.id for h in hits) == [  # type: ignore[union-attr]
        "doc0#chunk-0", "doc0#chunk-2", "doc1#chunk-0", "doc1#chunk-2"]


def test_filter_matching_nothing_gives_no_hits(store: EmbeddedStore, vectors: np.ndarray) -> None:
    request = SearchRequest(vector=tuple(vectors[0].tolist()), k=5, filters={"docId": "nope"})
    assert store.search([request]) == [[]]


def test_wrong_dimension_fails_only_its_own_request(store: EmbeddedStore,
                                                    vectors: np.ndarray) -> None:
    good = SearchRequest(vector=tuple(vectors[0].tolist()), k=1)
    bad = SearchRequest(vector=(1.0, 0.0, 0.0), k=1)
    outcomes = store.search([bad, good])
    assert isinstance(outcomes[0], KnowledgeSearchError)
    assert "3 dimensions" in str(outcomes[0]) and "expects 16" in str(outcomes[0])
    assert isinstance(outcomes[1], list) and len(outcomes[1]) == 1


def test_k_larger_than_the_store_returns_everything(tmp_path: Path) -> None:
    store = embedded_store(tmp_path, chunk_records(unit_vectors(3, dim=4)))()
    (hits,) = store.search([SearchRequest(vector=(1.0, 0.0, 0.0, 0.0), k=10)])
    assert len(hits) == 3  # type: ignore[arg-type]


def test_opening_a_missing_store_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError, match="search.embedded.path=.*nothing-here"):
        EmbeddedStore.open(tmp_path / "nothing-here")


def test_duplicate_ids_are_rejected_with_the_id(tmp_path: Path) -> None:
    record = ChunkRecord(id="a#chunk-0", vector=(1.0, 0.0), content="x")
    with pytest.raises(InvalidInputError, match="a#chunk-0"):
        write_store(tmp_path, [record, record])


def test_mixed_dimensions_are_rejected_naming_both_sizes(tmp_path: Path) -> None:
    records = [ChunkRecord(id="a", vector=(1.0, 0.0), content=""),
               ChunkRecord(id="b", vector=(1.0, 0.0, 0.0), content="")]
    with pytest.raises(DimensionMismatchError, match="3 dimensions but the store expects 2"):
        write_store(tmp_path, records)


@pytest.mark.parametrize("vector", [(float("nan"), 1.0), (0.0, 0.0)])
def test_records_with_unusable_vectors_are_invalid(vector: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="vector"):
        ChunkRecord(id="a", vector=vector, content="")


def test_vectors_are_memory_mapped_on_load(store: EmbeddedStore, tmp_path: Path) -> None:
    reopened = EmbeddedStore.open(tmp_path)
    assert isinstance(reopened._vectors, np.memmap)
