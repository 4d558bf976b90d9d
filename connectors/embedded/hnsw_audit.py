"""An HNSW search that checks itself on the queries it is given, not on data like its own.

A share of the queries (`audit-rate`) is also searched exactly, and the graph's recall@k
against exact search is reported (the `hnsw_*` events). Below `audit-floor` it warns. With
`ef-search: auto` it calibrates on its first block of queries: it searches the block exactly
(and answers it so) and with the graph, doubling ef until the graph's recall reaches the floor,
or until the graph is no faster than exact search at that ef, and then answers exactly
instead; it calibrates again when the audited recall falls below the floor. The recall it
reports is that of the answers it gave.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal

import numpy as np

from connectors.embedded.vector_search import (
    MAX_EF_SEARCH,
    HnswGraph,
    HnswParams,
    Neighbours,
    exact_neighbours,
    rescored,
)
from connectors.events import (
    HNSW_AUDITED,
    HNSW_EF,
    HNSW_EXACT,
    HNSW_EXPECTED,
    HNSW_FOUND,
    HNSW_SETTLED,
    EventHook,
    ignore_event,
)

_log = logging.getLogger(__name__)
MIN_WINDOW = 100
"""Audited queries the running recall must hold before it says anything."""


class AuditedGraph:
    """`HnswGraph.neighbours` with the audit (see the module); one per open store."""

    def __init__(self, graph: HnswGraph, vectors: np.ndarray, params: HnswParams,
                 on_event: EventHook = ignore_event,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._graph, self._vectors, self._params = graph, vectors, params
        self._on_event, self._clock = on_event, clock
        self._auto = params.ef_search == "auto"
        self._calibrated = not self._auto
        self._exact_instead = False
        self._seen = 0
        self._window = [0, 0, 0]  # found, expected, queries: since the last calibration
        self._warned = False

    def neighbours(self, queries: np.ndarray, ks: list[int]) -> Neighbours:
        if self._exact_instead:
            return exact_neighbours(self._vectors, queries, ks)
        if not self._calibrated:
            return self._calibrate(queries, ks)
        found = rescored(self._vectors, queries, self._graph.neighbours(queries, ks))
        sample = self._sample(len(queries))
        if sample:
            exact = exact_neighbours(self._vectors, queries[sample], [ks[i] for i in sample])
            self._audit([found[i] for i in sample], exact)
        return found

    def _sample(self, count: int) -> list[int]:
        first, self._seen = self._seen, self._seen + count
        return audit_sample(first, count, self._params.audit_rate)

    def _audit(self, found: Neighbours, exact: Neighbours) -> float:
        hits, expected = _overlap(found, exact)
        self._on_event(HNSW_AUDITED, len(exact))
        self._on_event(HNSW_EXPECTED, expected)
        self._on_event(HNSW_FOUND, hits)
        self._window = [self._window[0] + hits, self._window[1] + expected,
                        self._window[2] + len(exact)]
        recall = self._window[0] / self._window[1] if self._window[1] else 1.0
        audited = self._window[2]
        if audited >= MIN_WINDOW and recall < self._params.audit_floor:
            if self._auto:
                self._calibrated = False
            elif not self._warned:
                self._warned = True
                _log.warning("hnsw recall@k %.3f on %d audited queries is below "
                             "search.embedded.hnsw.audit-floor=%s at ef-search=%d: raise "
                             "ef-search (or set it to auto), or use index: flat", recall,
                             audited, self._params.audit_floor, self._graph.ef_search)
        return recall

    def _calibrate(self, queries: np.ndarray, ks: list[int]) -> Neighbours:
        started = self._clock()
        exact = exact_neighbours(self._vectors, queries, ks)
        exact_seconds = self._clock() - started
        while True:
            started = self._clock()
            found = self._graph.neighbours(queries, ks)
            graph_seconds = self._clock() - started
            hits, expected = _overlap(found, exact)
            recall = hits / expected if expected else 1.0
            ef = self._graph.ef_search
            step = next_step(recall, self._params.audit_floor, graph_seconds, exact_seconds, ef)
            if step == "settle":
                self._settle(f"settled on ef-search={ef}: audited recall@k {recall:.3f} on "
                             f"{len(queries)} queries")
                return exact
            if step == "exact":
                self._exact_instead = True
                self._on_event(HNSW_EXACT, 1)
                self._settle(f"exact search instead: at ef-search={ef} the graph's recall@k "
                             f"is {recall:.3f} and it takes {graph_seconds:.3f}s for "
                             f"{len(queries)} queries, exact search {exact_seconds:.3f}s")
                return exact
            self._graph.ef_search = min(2 * ef, MAX_EF_SEARCH)

    def _settle(self, how: str) -> None:
        self._calibrated = True
        self._window = [0, 0, 0]
        self._on_event(HNSW_SETTLED, 1)
        self._on_event(HNSW_EF, self._graph.ef_search)
        _log.info("hnsw ef-search auto: %s", how)


def next_step(recall: float, floor: float, graph_seconds: float, exact_seconds: float,
              ef: int) -> Literal["settle", "exact", "raise"]:
    """What calibration does after trying `ef`: settle on it (recall at the floor), answer
    exactly from now on (the graph is no faster than exact search, or ef is at its most), or
    raise ef."""
    if recall >= floor:
        return "settle"
    if graph_seconds >= exact_seconds or ef >= MAX_EF_SEARCH:
        return "exact"
    return "raise"


def audit_sample(first: int, count: int, rate: float) -> list[int]:
    """Of `count` queries, numbered from `first` in what an audit has seen, the positions of
    every (1 / `rate`)-th (none at rate 0)."""
    if rate <= 0:
        return []
    period = max(1, round(1 / rate))
    return [i for i in range(count) if (first + i) % period == 0]


def _overlap(found: Neighbours, exact: Neighbours) -> tuple[int, int]:
    """How many of the exact rows the graph found, and how many there were."""
    hits = sum(len(np.intersect1d(f[0], e[0])) for f, e in zip(found, exact, strict=True))
    return hits, sum(len(e[0]) for e in exact)
