"""kNN over the store's unit vectors with faiss: exact inner product, or an HNSW graph.

Exact search keeps the store's documented order: higher score first, ties by lower row, and
gives a query the same rows and score bits whatever batch it comes in (see
`exact_neighbours`): faiss picks candidates, `cosines` scores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import faiss
import numpy as np

from connectors.embedded.top_k import NO_ROWS, top_rows
from core.params import PARAMS_CONFIG, Bound, Real, Whole, check_bounds

# faiss >= 1.11 computes batches of fewer than 128,000 queries (its default threshold) one query
# at a time without BLAS, far slower than with it (docs/benchmarks.md). Every batch of 16
# queries or more goes through BLAS.
faiss.cvar.distance_compute_blas_threshold = 16




def one_core_per_search() -> None:
    """Has faiss use one core for the searches of the calling thread (OpenMP's thread count
    is the calling thread's): for threads that search at once, one per core, where faiss's
    own threads would wait on each other whenever another search or Python takes a core."""
    faiss.omp_set_num_threads(1)


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
    # auto by default: a fixed ef left a 100k isotropic store at recall@20 0.30 with only a
    # warning; auto calibrates on the run's own queries and answers exactly where the graph
    # cannot keep its promise
    ef_search: Annotated[Whole, Bound(_HNSW + "ef-search", ge=1, le=MAX_EF_SEARCH)] | Literal[
        "auto"] = "auto"
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


EXTRA_CANDIDATES = 8
"""Rows faiss returns beyond a query's k, rescored to find the k best."""
SCORE_TOLERANCE = 1e-5
"""More than a float32 dot product of unit vectors of a few hundred dimensions moves when its
terms are summed in another order."""
_BLOCK_ROWS = 8192


def cosines(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray | None = None
            ) -> np.ndarray:
    """The float32 similarities of `rows` (all, if None) to `query`, summed in float64 and
    rounded: a row's score does not depend on what else is computed with it (a float32 BLAS
    batch sums in an order that depends on the batch), but for a float64 rounding tie about
    once in 10^8 scores."""
    point = query.astype(np.float64)
    if rows is not None:
        return (vectors[rows].astype(np.float64) @ point).astype(np.float32)
    scores = np.empty(vectors.shape[0], dtype=np.float32)
    for start in range(0, vectors.shape[0], _BLOCK_ROWS):
        scores[start:start + _BLOCK_ROWS] = vectors[start:start + _BLOCK_ROWS].astype(
            np.float64) @ point
    return scores


def exact_neighbours(vectors: np.ndarray, queries: np.ndarray, ks: list[int]) -> Neighbours:
    """The `ks[i]` rows most similar to `queries[i]` (unit rows), exactly, ties by lower row,
    scored by `cosines`: the same rows and scores whatever batch a query comes in.

    faiss finds `EXTRA_CANDIDATES` more rows than asked, scored in float32 by batch; those
    are rescored. If the k-th best rescored does not beat faiss's last candidate by more than
    `SCORE_TOLERANCE`, a row faiss left out could be among the k best, and the query is
    scored against every row instead."""
    rows = vectors.shape[0]
    wanted = min(max(ks, default=0) + EXTRA_CANDIDATES, rows)
    if wanted == 0:
        return [(NO_ROWS, NO_ROWS.astype(np.float32)) for _ in ks]
    bounds, found = faiss.knn(np.ascontiguousarray(queries, dtype=np.float32), vectors,
                              wanted, metric=faiss.METRIC_INNER_PRODUCT)
    result: Neighbours = []
    for i, k in enumerate(ks):
        k = min(k, rows)
        candidates = found[i].astype(np.int64)
        scores = cosines(vectors, queries[i], candidates)
        order = np.lexsort((candidates, -scores))[:k]
        if k > 0 and wanted < rows and scores[order[-1]] <= bounds[i, -1] + SCORE_TOLERANCE:
            ((top, best),) = top_rows(cosines(vectors, queries[i])[np.newaxis, :], k)
            result.append((top, best))
            continue
        result.append((candidates[order], scores[order]))
    return result


def rescored(vectors: np.ndarray, queries: np.ndarray, found: Neighbours) -> Neighbours:
    """Neighbours an approximate index found, scored as exact search scores them (`cosines`),
    best first, ties by lower row: a chunk's score does not depend on the index that found
    it, so a continued HNSW list can mix kept chunks with entered ones scored exactly."""
    answered: Neighbours = []
    for query, (rows, _) in zip(queries, found, strict=True):
        scores = cosines(vectors, query, rows)
        order = np.lexsort((rows, -scores))
        answered.append((rows[order], scores[order]))
    return answered


def subset_neighbours(vectors: np.ndarray, query: np.ndarray, rows: np.ndarray, k: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-`k` among `rows` only (a filter's matches), ties by lower row, scored by
    `cosines`."""
    ((top, best),) = top_rows(cosines(vectors, query, rows)[np.newaxis, :], k)
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
