"""The HNSW search checks itself on the queries it is given: recall@k against exact search on a
sample, a warning below the floor, and with `ef-search: auto`, an ef that reaches the floor or
exact search where that is cheaper."""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from connectors.embedded.hnsw_audit import AuditedGraph, next_step
from connectors.embedded.layout import HNSW_FILE, VECTORS_FILE
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.vector_search import HnswGraph, HnswParams, exact_neighbours
from connectors.embedded.versions import current_version
from connectors.embedded.writer import write_store
from connectors.events import (
    HNSW_AUDITED,
    HNSW_EF,
    HNSW_EXPECTED,
    HNSW_FOUND,
    HNSW_SETTLED,
)
from connectors.search_port import SearchRequest
from tests.builders import chunk_records, unit_vectors

DIM = 64
"""Isotropic random vectors of this many dimensions: hard for a graph at a small ef."""


@pytest.fixture(scope="module")
def hard_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hnsw") / "store"
    write_store(path, chunk_records(unit_vectors(4000, dim=DIM, seed=3)), index="hnsw",
                hnsw=HnswParams(m=8, ef_construction=16))
    return path


def _search(store_path: Path, params: HnswParams, queries: int = 256,
            ) -> tuple[Counter[str], list[list[str]]]:
    seen: Counter[str] = Counter()
    store = EmbeddedStore.open(store_path, "hnsw", params,
                               on_event=lambda name, amount: seen.update({name: amount}))
    vectors = unit_vectors(queries, dim=DIM, seed=9)
    outcomes = store.search_chunks([SearchRequest(vector=tuple(v.tolist()), k=20)
                                    for v in vectors])
    return seen, [[h.id or "" for h in o] for o in outcomes]  # type: ignore[union-attr]


def test_a_share_of_the_queries_is_searched_exactly_too_and_recall_is_reported(
        hard_store: Path) -> None:
    seen, _ = _search(hard_store, HnswParams(ef_search=16, audit_rate=0.1), queries=200)
    assert seen[HNSW_AUDITED] == 20 and seen[HNSW_EXPECTED] == 20 * 20
    assert 0 < seen[HNSW_FOUND] < seen[HNSW_EXPECTED]  # hard data, a small ef


def test_a_recall_below_the_floor_is_a_warning(hard_store: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        seen, _ = _search(hard_store, HnswParams(ef_search=16, audit_rate=1.0))
    assert seen[HNSW_FOUND] / seen[HNSW_EXPECTED] < 0.95
    assert "is below search.embedded.hnsw.audit-floor=0.95 at ef-search=16" in caplog.text


def _graph_then_exact_clock() -> Callable[[], float]:
    """A clock by which exact search takes 10 s and each try of the graph 1 s."""
    ticks = itertools.chain([0.0, 10.0], itertools.count(10.0))
    return lambda: float(next(ticks))


def _audited(store_path: Path, params: HnswParams, seen: Counter[str]) -> AuditedGraph:
    version = current_version(store_path)
    vectors = np.load(version / VECTORS_FILE, mmap_mode="r")
    return AuditedGraph(HnswGraph.load(version / HNSW_FILE, params.first_ef), vectors, params,
                        lambda name, amount: seen.update({name: amount}),
                        _graph_then_exact_clock())


def test_auto_ef_raises_ef_until_the_recall_reaches_the_floor(hard_store: Path) -> None:
    seen: Counter[str] = Counter()
    graph = _audited(hard_store, HnswParams(ef_search="auto", audit_rate=1.0), seen)
    queries = unit_vectors(200, dim=DIM, seed=9)
    graph.neighbours(queries[:100], [20] * 100)  # calibrates
    assert seen[HNSW_SETTLED] == 1 and seen[HNSW_EF] > 64
    graph.neighbours(queries[100:], [20] * 100)  # audited at the ef it settled on
    assert seen[HNSW_AUDITED] == 100 and seen[HNSW_FOUND] / seen[HNSW_EXPECTED] >= 0.9


def test_the_calibration_block_is_answered_exactly(hard_store: Path) -> None:
    seen: Counter[str] = Counter()
    graph = _audited(hard_store, HnswParams(ef_search="auto", audit_rate=0.0), seen)
    queries = unit_vectors(64, dim=DIM, seed=9)
    vectors = np.load(current_version(hard_store) / VECTORS_FILE)
    answered = graph.neighbours(queries, [20] * 64)
    exact = exact_neighbours(vectors, queries, [20] * 64)
    assert all(np.array_equal(a[0], e[0]) for a, e in zip(answered, exact, strict=True))


@pytest.mark.parametrize(("recall", "graph_s", "exact_s", "ef", "step"), [
    (0.96, 1.0, 2.0, 64, "settle"),
    (0.70, 1.0, 2.0, 64, "raise"),
    (0.70, 2.5, 2.0, 512, "exact"),    # the graph costs more than exact search at this ef
    (0.70, 1.0, 2.0, 10_000, "exact"),  # no ef left to try
])
def test_calibration_settles_raises_or_answers_exactly(
        recall: float, graph_s: float, exact_s: float, ef: int, step: str) -> None:
    assert next_step(recall, 0.95, graph_s, exact_s, ef) == step


def test_ef_search_takes_auto_and_refuses_other_words() -> None:
    assert HnswParams(ef_search="auto").first_ef == 16
    with pytest.raises(ValueError, match="ef-search=0: must be at least 1"):
        HnswParams(ef_search=0)


def test_a_chunk_the_graph_finds_has_the_score_exact_search_gives_it(hard_store: Path) -> None:
    # a continued HNSW list mixes kept hits with entered chunks scored exactly: one score a
    # chunk, whatever found it (faiss's own float32 scores depend on the batch)
    params = HnswParams(ef_search=16, audit_rate=0)
    graph = EmbeddedStore.open(hard_store, "hnsw", params)
    flat_scores = {}
    vectors = unit_vectors(64, dim=DIM, seed=11)
    requests = [SearchRequest(vector=tuple(v.tolist()), k=20) for v in vectors]
    every = [f"doc{i}#chunk-0" for i in range(4000)]
    exact = EmbeddedStore.open(hard_store).search_among(
        requests, [every] * len(requests), [-1.0] * len(requests))
    for n, hits in enumerate(exact):
        assert not isinstance(hits, Exception)
        flat_scores.update({(n, i): s for i, s in zip(hits.ids, hits.scores, strict=True)})
    shared = 0
    for n, hits in enumerate(graph.search_chunks(requests)):
        assert not isinstance(hits, Exception)
        assert list(hits.scores) == sorted(hits.scores, reverse=True)
        for chunk, score in zip(hits.ids, hits.scores, strict=True):
            if (n, chunk) in flat_scores:
                shared += 1
                assert score == flat_scores[(n, chunk)]
    assert shared > 64 * 3  # a small ef on isotropic data finds a few of the exact top
