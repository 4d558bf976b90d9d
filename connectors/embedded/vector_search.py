"""kNN over the store's unit vectors with faiss: exact inner product, or an HNSW graph.

Exact search keeps the store's documented order: higher score first, ties by lower row. faiss
breaks ties by higher row, so each query asks for one hit more than it needs; when that extra
hit ties the last one kept, the query is answered by numpy's exact top-k instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import faiss
import numpy as np

from connectors.embedded.top_k import top_rows
from core.params import PARAMS_CONFIG, Bound, Real, Whole, check_bounds

# faiss >= 1.11 computes batches of fewer than 128,000 queries (its default threshold) one query
# at a time without BLAS, far slower than with it (docs/benchmarks.md). Every batch of 16
# queries or more goes through BLAS.
faiss.cvar.distance_compute_blas_threshold = 16


_HNSW = "search.embedded.hnsw."
MAX_EF_SEARCH = 10_000
AUTO_EF_START = 16


@dataclass(frozen=True)
class HnswParams:
    """faiss `IndexHNSWFlat` parameters: `m` links per node, `ef_construction` and
    `ef_search` candidate-list sizes while building and searching (larger: better recall,
    slower; `auto`: found by the audit), and the audit of a run's own queries: the share
    searched exactly too (`audit_rate`), and the recall below which it warns (or, with `auto`,
    raises ef) (`audit_floor`). Settings: `search.embedded.hnsw.*`."""

    __pydantic_config__: ClassVar = PARAMS_CONFIG

    m: Annotated[Whole, Bound(_HNSW + "m", ge=4, le=256)] = 32
    ef_construction: Annotated[Whole, Bound(_HNSW + "ef-construction", ge=8, le=4096)] = 200
    ef_search: Annotated[Whole, Bound(_HNSW + "ef-search", ge=1, le=MAX_EF_SEARCH)] | Literal[
        "auto"] = 128
    audit_rate: Annotated[Real, Bound(_HNSW + "audit-rate", ge=0, le=1)] = 0.01
    audit_floor: Annotated[Real, Bound(_HNSW + "audit-floor", gt=0, le=1)] = 0.95

    def __post_init__(self) -> None:
        check_bounds(self)

    @property
    def first_ef(self) -> int:
        """The ef a search starts with."""
        return AUTO_EF_START if self.ef_search == "auto" else self.ef_search


DEFAULT_HNSW = HnswParams()

Neighbours = list[tuple[np.ndarray, np.ndarray]]
"""Per query: rows best first and their cosine similarities."""


def exact_neighbours(vectors: np.ndarray, queries: np.ndarray, ks: list[int]) -> Neighbours:
    """The `ks[i]` rows most similar to `queries[i]` (unit rows), exactly, ties by lower row."""
    rows = vectors.shape[0]
    wanted = min(max(ks) + 1, rows)
    scores, found = faiss.knn(np.ascontiguousarray(queries, dtype=np.float32), vectors,
                              wanted, metric=faiss.METRIC_INNER_PRODUCT)
    result: Neighbours = []
    for i, k in enumerate(ks):
        k = min(k, rows)
        if k < wanted and k > 0 and scores[i, k] == scores[i, k - 1]:
            ((top, best),) = top_rows(queries[i:i + 1] @ vectors.T, k)
            result.append((top, best))
            continue
        top, best = found[i, :k], scores[i, :k]
        order = np.lexsort((top, -best))
        result.append((top[order].astype(np.int64), best[order]))
    return result


def subset_neighbours(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray, k: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-`k` among `rows` only (a filter's matches), ties by lower row."""
    ((top, best),) = top_rows((vectors[rows] @ query)[np.newaxis, :], k)
    return rows[top], best


class HnswGraph:
    """An HNSW index over the store's rows, saved as one faiss file."""

    def __init__(self, index: faiss.Index, ef_search: int) -> None:
        self._index = index
        self.ef_search = ef_search

    @property
    def ef_search(self) -> int:
        return int(self._params.efSearch)

    @ef_search.setter
    def ef_search(self, ef: int) -> None:
        self._params = faiss.SearchParametersHNSW(efSearch=ef)  # type: ignore[attr-defined]

    @classmethod
    def build(cls, vectors: np.ndarray, params: HnswParams, path: Path) -> HnswGraph:
        index = faiss.IndexHNSWFlat(vectors.shape[1], params.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params.ef_construction
        for start in range(0, vectors.shape[0], 65_536):
            index.add(np.ascontiguousarray(vectors[start:start + 65_536], dtype=np.float32))
        faiss.write_index(index, str(path))
        return cls(index, params.first_ef)

    @classmethod
    def load(cls, path: Path, ef_search: int) -> HnswGraph:
        return cls(faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC), ef_search)

    def neighbours(self, queries: np.ndarray, ks: list[int]) -> Neighbours:
        scores, found = self._index.search(np.ascontiguousarray(queries, dtype=np.float32),
                                           max(ks), params=self._params)
        result: Neighbours = []
        for i, k in enumerate(ks):
            keep = found[i, :k] >= 0
            result.append((found[i, :k][keep].astype(np.int64), scores[i, :k][keep]))
        return result


def recall_against_exact(graph: HnswGraph, vectors: np.ndarray, k: int = 20,
                         sample: int = 500, seed: int = 7) -> tuple[float, int]:
    """HNSW's recall@k against exact search, on up to `sample` stored rows (with a little
    noise, so that a row is not trivially its own best match) as queries."""
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(vectors.shape[0], min(sample, vectors.shape[0]), replace=False))
    queries = np.asarray(vectors[picked], dtype=np.float32)
    queries = queries + rng.normal(scale=0.5 / np.sqrt(vectors.shape[1]),
                                   size=queries.shape).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ks = [k] * len(picked)
    exact = exact_neighbours(vectors, queries, ks)
    approximate = graph.neighbours(queries, ks)
    found = sum(len(np.intersect1d(a[0], e[0])) for a, e in zip(approximate, exact, strict=True))
    wanted = sum(len(e[0]) for e in exact)
    return (found / wanted if wanted else 1.0), len(picked)
