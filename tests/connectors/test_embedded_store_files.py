"""The embedded store at bulk size: faiss search with the documented ties, HNSW, records read
on demand, streaming and atomic writes, and open checks that name what disagrees."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from connectors.chunk_record import ChunkRecord
from connectors.embedded import chunk_table
from connectors.embedded.layout import OFFSETS_FILE, RECORDS_FILE, VECTORS_FILE
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.top_k import top_rows
from connectors.embedded.vector_search import HnswParams
from connectors.embedded.versions import current_version
from connectors.embedded.writer import EmbeddedStoreTarget, write_store
from connectors.search_port import SearchRequest
from core.errors import ConfigError, InvalidInputError, StoreNotFoundError
from tests.builders import chunk_records, unit_vectors


def _ids(store: EmbeddedStore, vector: np.ndarray, k: int) -> list[str]:
    (hits,) = store.search([SearchRequest(vector=tuple(vector.tolist()), k=k)])
    return [h.id for h in hits]  # type: ignore[union-attr]


def test_exact_search_equals_numpy_top_k_over_many_queries(tmp_path: Path) -> None:
    vectors = unit_vectors(3000, dim=32)
    write_store(tmp_path, chunk_records(vectors))
    store = EmbeddedStore.open(tmp_path)
    queries = unit_vectors(300, dim=32, seed=3)
    outcomes = store.search([SearchRequest(vector=tuple(q.tolist()), k=10) for q in queries])
    expected = top_rows(queries @ vectors.T, 10)
    for outcome, (rows, _) in zip(outcomes, expected, strict=True):
        assert [h.id for h in outcome] == [f"doc{r}#chunk-0" for r in rows]  # type: ignore[union-attr]


@pytest.mark.parametrize("copies_at", [[0, 5, 9], [2, 8, 11, 40]])
def test_ties_go_to_the_lower_row_even_across_the_k_boundary(tmp_path: Path,
                                                            copies_at: list[int]) -> None:
    vectors = unit_vectors(64, dim=8)
    for row in copies_at[1:]:
        vectors[row] = vectors[copies_at[0]]
    write_store(tmp_path, chunk_records(vectors))
    store = EmbeddedStore.open(tmp_path)
    for k in range(1, len(copies_at) + 1):
        assert _ids(store, vectors[copies_at[0]], k) == [
            f"doc{r}#chunk-0" for r in copies_at[:k]]


def test_an_hnsw_store_reports_its_recall_and_finds_the_exact_neighbours(
        tmp_path: Path) -> None:
    vectors = unit_vectors(2000, dim=16)
    target = EmbeddedStoreTarget(tmp_path / "store", "hnsw", HnswParams(m=16, ef_search=64))
    target.prepare(16, None)
    target.open_writer().write(chunk_records(vectors))
    note = target.commit()
    assert note is not None and note.startswith("hnsw index (m=16, ef-construction=200, "
                                                "ef-search=64): recall@20 ")
    assert float(note.split("recall@20 ")[1].split()[0]) >= 0.9
    assert "on 500 perturbed stored rows, which lie next to the data" in note
    store = EmbeddedStore.open(tmp_path / "store", "hnsw", HnswParams(ef_search=200))
    query = unit_vectors(1, dim=16, seed=5)[0]
    exact = top_rows((vectors @ query)[np.newaxis, :], 10)[0][0]
    assert _ids(store, query, 10) == [f"doc{r}#chunk-0" for r in exact]


def test_run_with_another_index_kind_than_the_store_has_names_both(tmp_path: Path) -> None:
    write_store(tmp_path, chunk_records(unit_vectors(10)))
    with pytest.raises(ConfigError, match="search.embedded.index='hnsw': the store at .* was "
                                          "built with index 'flat'"):
        EmbeddedStore.open(tmp_path, "hnsw")


def test_records_are_read_by_row_from_disk(tmp_path: Path) -> None:
    write_store(tmp_path, chunk_records(unit_vectors(50), chunks_per_doc=5))
    store = EmbeddedStore.open(tmp_path)
    version = current_version(tmp_path)
    offsets = np.load(version / OFFSETS_FILE)
    assert len(offsets) == 51 and offsets[-1] == (version / RECORDS_FILE).stat().st_size
    (hits,) = store.search([SearchRequest(vector=tuple(unit_vectors(50)[7].tolist()), k=1,
                                          filters={"docId": "doc1"})])
    assert [(h.id, h.content) for h in hits] == [("doc1#chunk-2", "content 7")]  # type: ignore[union-attr]


def test_a_store_without_an_offsets_table_still_opens(tmp_path: Path) -> None:
    write_store(tmp_path, chunk_records(unit_vectors(20)))
    (current_version(tmp_path) / OFFSETS_FILE).unlink()
    assert _ids(EmbeddedStore.open(tmp_path), unit_vectors(20)[3], 1) == ["doc3#chunk-0"]


def test_open_names_records_that_disagree_with_their_offsets(tmp_path: Path) -> None:
    write_store(tmp_path, chunk_records(unit_vectors(20)))
    with open(current_version(tmp_path) / RECORDS_FILE, "ab") as records:
        records.write(b'{"id": "stray"}\n')
    with pytest.raises(StoreNotFoundError, match=r"files disagree: records.jsonl: its offsets "
                                                 r"end at byte \d+ but the file has \d+ bytes"):
        EmbeddedStore.open(tmp_path)


def test_open_names_vectors_that_disagree_with_the_manifest(tmp_path: Path) -> None:
    write_store(tmp_path, chunk_records(unit_vectors(20)))
    np.save(current_version(tmp_path) / VECTORS_FILE, unit_vectors(19))
    with pytest.raises(StoreNotFoundError, match="manifest says 20 rows of 8 dims, vectors.npy "
                                                 "holds 19 rows of 8 dims"):
        EmbeddedStore.open(tmp_path)


def _failing_after(count: int) -> Iterator[ChunkRecord]:
    yield from chunk_records(unit_vectors(count, seed=11))
    raise OSError("the chunk source broke")


def test_a_failed_write_leaves_the_old_store_working(tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    write_store(store_path, chunk_records(unit_vectors(30)))
    with pytest.raises(OSError, match="the chunk source broke"):
        write_store(store_path, _failing_after(10_000), batch_size=1000)
    reopened = EmbeddedStore.open(store_path)
    assert len(reopened) == 30 and _ids(reopened, unit_vectors(30)[4], 1) == ["doc4#chunk-0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_writing_no_chunk_is_an_error_and_keeps_the_old_store(tmp_path: Path) -> None:
    write_store(tmp_path / "store", chunk_records(unit_vectors(5)))
    with pytest.raises(InvalidInputError, match="no chunk to index; the store there is left"):
        write_store(tmp_path / "store", iter([]))
    assert len(EmbeddedStore.open(tmp_path / "store")) == 5


def test_write_store_stages_each_batch_on_disk_before_taking_the_next(tmp_path: Path) -> None:
    staged_when_taken: dict[int, int] = {}

    def records() -> Iterator[ChunkRecord]:
        for i, record in enumerate(chunk_records(unit_vectors(2500))):
            if i % 1000 == 0:
                staged_when_taken[i] = len(list(tmp_path.glob(".store.staging-*/*.npy")))
            yield record

    assert write_store(tmp_path / "store", records(), batch_size=1000) == 2500
    assert staged_when_taken == {0: 0, 1000: 1, 2000: 2}
    lines = (current_version(tmp_path / "store") / RECORDS_FILE).read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines[:3]] == ["doc0#chunk-0", "doc1#chunk-0",
                                                              "doc2#chunk-0"]


def test_metadata_holding_nan_reads_back(tmp_path: Path) -> None:
    record = ChunkRecord(id="d#chunk-0", vector=(1.0, 0.0), content="x",
                         metadata={"docId": "d", "weight": float("nan")})
    write_store(tmp_path, [record])
    (hits,) = EmbeddedStore.open(tmp_path).search([SearchRequest(vector=(1.0, 0.0), k=1)])
    assert np.isnan(hits[0].metadata["weight"])  # type: ignore[index]


@pytest.mark.parametrize("kept", [0, 3, 1_000_000])
def test_rows_read_again_give_the_same_ids_and_identities_whatever_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int) -> None:
    write_store(tmp_path, chunk_records(unit_vectors(12, dim=8), chunks_per_doc=3))
    monkeypatch.setattr(chunk_table, "KEPT_IDENTITIES", kept)
    columns = chunk_table.ChunkColumns.of_version(current_version(tmp_path))
    assert columns is not None
    whole = columns.whole()
    for rows in ([5, 0, 5, 11], [11, 5, 2], [], [2, 2, 2, 7, 0, 11]):
        ids, identities = columns.take(np.array(rows, dtype=np.int64))
        assert ids == [whole.ids[r] for r in rows]
        assert identities == [whole.identities[r] for r in rows]
    assert ids[1] == "doc0#chunk-2" and identities[1].chunk_index == 2
    assert sum(pair is not None for pair in columns._kept) == min(kept, 5)  # rows 0, 2, 5, 7, 11
