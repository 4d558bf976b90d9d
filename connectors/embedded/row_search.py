"""The embedded store's search over row numbers: kNN (exact, or an HNSW graph) in blocks of
queries, exact kNN over a filter's rows, and BM25; hits are (rows, scores), nothing read."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from connectors.embedded.lexical import LexicalIndex
from connectors.embedded.metadata_filter import FilterIndex
from connectors.embedded.top_k import NO_ROWS, top_rows
from connectors.embedded.vector_search import (
    SCORE_TOLERANCE,
    cosines,
    exact_neighbours,
    subset_neighbours,
)
from connectors.search_port import SearchRequest
from core.errors import DimensionMismatchError, KnowledgeSearchError
from core.vectors import NO_DIRECTION, unit_rows

BLOCK_ROWS = 4096
Rows = tuple[np.ndarray, np.ndarray]
"""A request's hits: rows best first, and their scores as reported ((1 + cosine) / 2 for kNN,
BM25 for text)."""
RowOutcome = Rows | KnowledgeSearchError
Neighbours = Callable[[np.ndarray, list[int]], list[tuple[np.ndarray, np.ndarray]]]
"""(unit queries, k of each) -> per query: rows best first and their cosine similarities."""


class RowSearch:
    """Answers search requests with rows and scores; see `EmbeddedStore` for the order of
    hits and the scales of scores."""

    def __init__(self, vectors: np.ndarray, filters: FilterIndex, lexical: LexicalIndex,
                 neighbours: Neighbours | None = None) -> None:
        # a plain view: a memory map's indexing (the rows a search rescores) goes through Python
        self._vectors = vectors.view(np.ndarray) if isinstance(vectors, np.memmap) else vectors
        self._filters = filters
        self._lexical = lexical
        self._neighbours = neighbours or self._exact
        # filters and BM25 read lazily built postings and a stemmer that is not thread-safe:
        # searches from several threads (`EmbeddedStore.parallel_searches`) take turns there
        self._one_at_a_time = threading.Lock()

    def search(self, requests: Sequence[SearchRequest]) -> list[RowOutcome]:
        empty = (np.empty(0, np.int64), np.empty(0, np.float32))
        outcomes: list[RowOutcome] = [empty for _ in requests]
        if not len(self._vectors):
            return outcomes
        dense = [i for i, r in enumerate(requests)
                 if r.vector is not None and self._fits(r, outcomes, i)]
        for start in range(0, len(dense), BLOCK_ROWS):
            self._search_block(requests, dense[start:start + BLOCK_ROWS], outcomes)
        with self._one_at_a_time:
            for i, request in enumerate(requests):
                if request.text is not None:
                    outcomes[i] = self._lexical_top_k(request)
        return outcomes

    def _fits(self, request: SearchRequest, outcomes: list[RowOutcome], i: int) -> bool:
        assert request.vector is not None
        dimension = self._vectors.shape[1]
        if len(request.vector) == dimension:
            return True
        outcomes[i] = KnowledgeSearchError(str(DimensionMismatchError(
            "vector", len(request.vector), dimension)))
        return False

    def _search_block(self, requests: Sequence[SearchRequest], block: list[int],
                      outcomes: list[RowOutcome]) -> None:
        queries, usable = unit_rows([requests[i].vector or () for i in block])
        for unusable in np.flatnonzero(~usable).tolist():
            outcomes[block[unusable]] = KnowledgeSearchError(
                f"vector {NO_DIRECTION}: cosine similarity is undefined")
        block = [i for row, i in enumerate(block) if usable[row]]
        queries = queries[usable]
        plain = [row for row, i in enumerate(block) if not requests[i].filters]
        if plain:
            ks = [requests[block[row]].k for row in plain]
            for row, (top, cosines) in zip(plain, self._neighbours(queries[plain], ks),
                                           strict=True):
                outcomes[block[row]] = top, _reported(cosines)
        filtered = [(row, i) for row, i in enumerate(block) if requests[i].filters]
        if filtered:
            with self._one_at_a_time:
                self._search_filtered(requests, filtered, queries, outcomes)

    def _search_filtered(self, requests: Sequence[SearchRequest],
                         filtered: list[tuple[int, int]], queries: np.ndarray,
                         outcomes: list[RowOutcome]) -> None:
        for row, i in filtered:
            matching = self._filters.matching_rows(requests[i].filters)
            assert matching is not None
            top, cosines = subset_neighbours(self._vectors, queries[row], matching,
                                             requests[i].k)
            outcomes[i] = top, _reported(cosines)

    def search_among(self, requests: Sequence[SearchRequest], among: Sequence[np.ndarray],
                     above: Sequence[float], shared: np.ndarray = NO_ROWS) -> list[RowOutcome]:
        """Per kNN request, its exact top `k` among the rows `among[i]` and `shared` only (those
        that match its filters), keeping only scores strictly above `above[i]` (reported
        scale), ties by lower row: the same rows and scores a search of the whole store gives
        them (a BM25 request likewise: `_lexical_among`). `shared` rows are scored in float32
        first, for the whole batch in one matrix product, and only those that can clear
        `above` are scored exactly (`cosines`), with every row of `among[i]` (a kept list:
        few)."""
        empty = (np.empty(0, np.int64), np.empty(0, np.float32))
        outcomes: list[RowOutcome] = [empty for _ in requests]
        for i, request in enumerate(requests):
            if request.text is not None:
                outcomes[i] = self._lexical_among(request, among[i], above[i], shared)
        dense = [i for i, r in enumerate(requests)
                 if r.vector is not None and (len(among[i]) or len(shared))
                 and self._fits(r, outcomes, i)]
        if not dense:
            return outcomes
        queries, usable = unit_rows([requests[i].vector or () for i in dense])
        vectors = self._vectors
        rough_shared = queries @ np.asarray(vectors[shared], dtype=np.float32).T
        floors = 2.0 * np.asarray([above[i] for i in dense], dtype=np.float64) - 1.0 - (
            SCORE_TOLERANCE)
        for row, i in enumerate(dense):
            if not usable[row]:
                outcomes[i] = KnowledgeSearchError(
                    f"vector {NO_DIRECTION}: cosine similarity is undefined")
                continue
            # a request's own rows are few (a kept list): all of them are scored exactly
            own = np.asarray(among[i], dtype=np.int64)
            rows = np.unique(np.concatenate([own, shared[rough_shared[row] > floors[row]]]))
            matching = self._filters.matching_rows(requests[i].filters)
            if matching is not None:
                rows = np.intersect1d(rows, matching)
            top, cosines = subset_neighbours(vectors, queries[row], rows, requests[i].k)
            reported = _reported(cosines)
            keep = reported > above[i]
            outcomes[i] = top[keep], reported[keep]
        return outcomes

    def _lexical_among(self, request: SearchRequest, own: np.ndarray, above: float,
                       shared: np.ndarray) -> Rows:
        """A BM25 request's top `k` among `own` and `shared` rows (those that match its
        filters), scoring strictly above `above` (and above 0, as a search of the whole store
        keeps only chunks that hold a query word), ties by lower row: the rows and scores a
        search of the whole store gives them."""
        assert request.text is not None
        rows = np.unique(np.concatenate([np.asarray(own, dtype=np.int64), shared]))
        matching = self._filters.matching_rows(request.filters)
        if matching is not None:
            rows = np.intersect1d(rows, matching)
        scores = self._lexical.scores(request.text)[rows]
        keep = (scores > above) & (scores > 0)
        rows, scores = rows[keep], scores[keep]
        ((top, best),) = top_rows(scores[np.newaxis, :], request.k)
        return rows[top], best

    def scores_of(self, queries: np.ndarray, rows: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each unit query's exact scores (reported scale) of its `rows`, as `search_among`
        scores them."""
        vectors = self._vectors
        return [_reported(cosines(vectors, query, named))
                for query, named in zip(queries, rows, strict=True)]

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """The unit float32 vectors of `rows`, as `search_among` scores them roughly."""
        return np.asarray(self._vectors[rows], dtype=np.float32)

    def exact_rows(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """Each unit query's exact top `k` rows over the whole store, whatever index it has
        (what an audit of an approximate answer compares with)."""
        return [rows for rows, _ in exact_neighbours(self._vectors, queries, [k] * len(queries))]

    def _exact(self, queries: np.ndarray, ks: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        return exact_neighbours(self._vectors, queries, ks)

    def _lexical_top_k(self, request: SearchRequest) -> Rows:
        assert request.text is not None
        scores = self._lexical.scores(request.text)
        rows = self._filters.matching_rows(request.filters)
        if rows is None:
            ((top, best),) = top_rows(scores[np.newaxis, :], request.k)
        else:
            ((top, best),) = top_rows(scores[rows][np.newaxis, :], request.k)
            top = rows[top]
        matching = best > 0
        return top[matching], best[matching]


def _reported(cosines: np.ndarray) -> np.ndarray:
    """Cosine similarities on the scale Elasticsearch reports for cosine, (1 + cosine) / 2."""
    return (1.0 + cosines.astype(np.float64)) / 2.0
