"""The embedded vector store: exact cosine kNN over a memory-mapped float32 matrix.

On disk a store is a directory holding `vectors.npy` (unit rows, float32), `records.jsonl`
(id, content, metadata per row, same order) and `manifest.json` (dimension, count).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.errors import (
    DimensionMismatchError,
    InvalidInputError,
    KnowledgeSearchError,
    StoreNotFoundError,
)
from connectors.metadata_filter import FilterIndex
from connectors.search_port import SearchHit, SearchOutcome, SearchRequest

VECTORS_FILE = "vectors.npy"
RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"
_BLOCK_ROWS = 256
_NO_ROWS = np.zeros(0, dtype=np.int64)


class EmbeddedStore:
    """Exact kNN: one BLAS matrix product per batch, top-k by argpartition.

    Scores are (1 + cosine) / 2, the scale Elasticsearch reports for cosine similarity.

    >>> store = EmbeddedStore.open("data/store")          # doctest: +SKIP
    >>> store.search([SearchRequest(vector=(1.0, 0.0), k=3)])  # doctest: +SKIP
    """

    def __init__(self, vectors: np.ndarray, records: list[dict[str, Any]]) -> None:
        self._vectors = vectors
        self._records = records
        self._filters = FilterIndex([r["metadata"] for r in records])
        self._closed = False

    @classmethod
    def open(cls, path: str | Path) -> EmbeddedStore:
        """Opens a store directory, memory-mapping its vectors."""
        root = Path(path)
        if not (root / MANIFEST_FILE).is_file():
            raise StoreNotFoundError(
                f"search.embedded.path={str(root)!r}: no embedded store there "
                "(build one with `rag-evidence index`)"
            )
        vectors = np.load(root / VECTORS_FILE, mmap_mode="r")
        with open(root / RECORDS_FILE, encoding="utf-8") as lines:
            records = [json.loads(line) for line in lines]
        return cls(vectors, records)

    @property
    def dimension(self) -> int:
        return int(self._vectors.shape[1])

    def __len__(self) -> int:
        return len(self._records)

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]:
        if self._closed:
            raise KnowledgeSearchError("the embedded store was closed; open it again to search")
        outcomes: list[SearchOutcome] = [[] for _ in requests]
        valid = [i for i, r in enumerate(requests) if self._check(r, outcomes, i)]
        if not valid or not self._records:
            return outcomes
        for start in range(0, len(valid), _BLOCK_ROWS):
            self._search_block(requests, valid[start:start + _BLOCK_ROWS], outcomes)
        return outcomes

    def close(self) -> None:
        self._closed = True

    def _check(self, request: SearchRequest, outcomes: list[SearchOutcome], i: int) -> bool:
        error: KnowledgeSearchError | None = None
        if len(request.vector) != self.dimension:
            mismatch = DimensionMismatchError("vector", len(request.vector), self.dimension)
            error = KnowledgeSearchError(str(mismatch), causes=[mismatch])
        elif not np.any(np.asarray(request.vector)):
            error = KnowledgeSearchError("vector is all zeros: cosine similarity is undefined")
        if error is not None:
            outcomes[i] = error
        return error is None

    def _search_block(self, requests: Sequence[SearchRequest], block: list[int],
                      outcomes: list[SearchOutcome]) -> None:
        queries = np.asarray([requests[i].vector for i in block], dtype=np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        similarities = queries @ self._vectors.T
        plain = [row for row, i in enumerate(block) if not requests[i].filters]
        if plain:
            k_max = max(requests[block[row]].k for row in plain)
            tops = _top_rows(similarities[plain], k_max)
            for row, (top, scores) in zip(plain, tops, strict=True):
                k = requests[block[row]].k
                outcomes[block[row]] = self._hits(top[:k], scores[:k])
        for row, i in enumerate(block):
            if requests[i].filters:
                outcomes[i] = self._filtered_top_k(similarities[row], requests[i])

    def _filtered_top_k(self, similarities: np.ndarray, request: SearchRequest) -> list[SearchHit]:
        rows = self._filters.matching_rows(request.filters)
        assert rows is not None
        ((top, scores),) = _top_rows(similarities[rows][np.newaxis, :], request.k)
        return self._hits(rows[top], scores)

    def _hits(self, rows: np.ndarray, cosines: np.ndarray) -> list[SearchHit]:
        return [self._hit(int(row), float(c)) for row, c in zip(rows, cosines, strict=True)]

    def _hit(self, row: int, cosine: float) -> SearchHit:
        record = self._records[row]
        return SearchHit(
            id=record["id"],
            score=(1.0 + cosine) / 2.0,
            content=record["content"],
            metadata=record["metadata"],
        )


def _top_rows(similarities: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per row: the column numbers of the `k` best scores, best first (ties: lower column), and
    those scores."""
    columns = similarities.shape[1]
    k = min(k, columns)
    if k == 0:
        return [(_NO_ROWS, _NO_ROWS) for _ in range(similarities.shape[0])]
    candidates = np.argpartition(similarities, columns - k, axis=1)[:, columns - k:]
    result = []
    for row, picked in zip(similarities, candidates, strict=True):
        scores = row[picked]
        order = np.lexsort((picked, -scores))
        result.append((picked[order], scores[order]))
    return result


def write_store(path: str | Path, records: Iterable[ChunkRecord]) -> int:
    """Writes `records` as a new store at `path` (replacing one there) and returns the count.

    Raises:
        InvalidInputError: two records share an id, or their vector lengths differ.
    """
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    rows: list[np.ndarray] = []
    with open(root / RECORDS_FILE, "w", encoding="utf-8") as out:
        for record in records:
            _check_record(record, seen, rows)
            vector = np.asarray(record.vector, dtype=np.float32)
            rows.append(vector / np.linalg.norm(vector))
            line = {"id": record.id, "content": record.content, "metadata": record.metadata}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    dimension = rows[0].shape[0] if rows else 0
    matrix = np.vstack(rows) if rows else np.zeros((0, dimension), dtype=np.float32)
    np.save(root / VECTORS_FILE, matrix.astype(np.float32))
    manifest = {"dimension": dimension, "count": len(rows), "format": 1}
    (root / MANIFEST_FILE).write_text(json.dumps(manifest) + "\n", encoding="utf-8")
    return len(rows)


def _check_record(record: ChunkRecord, seen: set[str], rows: list[np.ndarray]) -> None:
    if record.id in seen:
        raise InvalidInputError("id", record.id, "appears twice; chunk ids must be unique")
    seen.add(record.id)
    if rows and len(record.vector) != rows[0].shape[0]:
        expected = rows[0].shape[0]
        raise DimensionMismatchError(f"vector of {record.id!r}", len(record.vector), expected)
