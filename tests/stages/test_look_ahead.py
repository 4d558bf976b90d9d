"""Recall searches batches on worker threads, as many at once as the port allows, while the step's
thread answers the batches before and reads the next: the outputs are those of searching batch
after batch, every counter a search bumps is counted, a search that raises fails its own batch
only, and a port that allows no parallel search is searched on the step's thread."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.error_handling import CollectingErrorHandler
from apache_beam.transforms.window import FixedWindows, TimestampedValue
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.embedded.store import EmbeddedStore
from connectors.search_port import ChunkOutcome, SearchRequest
from stages.models import EmbeddedQuery, Query, QueryHits
from stages.recall import recall_batch
from stages.support import counters
from stages.support.internal_errors import InternalDeadLetters
from stages.support.look_ahead import _shares
from stages.transforms.recall import Recall
from tests.builders import chunk_records, embedded_store, unit_vectors

DIM = 8
BATCH = 4
_read_upstream = {"count": 0}
_upstream_ran_on = threading.Event()
_overlaps: list[bool] = []
_prepared_threads: list[str] = []
_counting = threading.Lock()
_search_threads: list[str] = []
_request_sizes: list[int] = []


def _queries(vectors: np.ndarray, count: int) -> list[EmbeddedQuery]:
    return [EmbeddedQuery(query=Query(id=f"q{i}", vector=tuple(map(float, vectors[i]))))
            for i in range(count)]


class _WatchedStore:
    """The embedded store, whose first search waits (30 s at most) for the step upstream of
    Recall to read the next batch's queries, and notes whether it did."""

    def __init__(self, store: EmbeddedStore, parallel: int = 2) -> None:
        self._store = store
        self.dimension, self.embedder = store.dimension, store.embedder
        self._searched = 0
        self._parallel = parallel

    def parallel_searches(self) -> int:
        return self._parallel

    def on_search_thread(self) -> None:
        _prepared_threads.append(threading.current_thread().name)

    def search(self, requests: Sequence[SearchRequest]) -> list[object]:
        return list(self._store.search(requests))

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]:
        self._searched += 1
        _search_threads.append(threading.current_thread().name)
        if self._searched == 1:
            _overlaps.append(_upstream_ran_on.wait(timeout=30 if self._parallel > 1 else 0))
        return self._store.search_chunks(requests)

    def close(self) -> None:
        self._store.close()


def _read(query: EmbeddedQuery) -> EmbeddedQuery:
    _read_upstream["count"] += 1
    # Recall gathers a batch and starts its search at the batch's last query: the query
    # after the second batch is read only if the first is searched off this thread
    if _read_upstream["count"] > 2 * BATCH:
        _upstream_ran_on.set()
    return query


def _watched_run(tmp_path: Path, parallel: int) -> None:
    vectors = unit_vectors(40, dim=DIM)
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    queries = _queries(vectors, 4 * BATCH)
    expected = [(r.query_id, tuple(h.hit.id for h in r.hits))
                for r in recall_batch(queries, open_store(), 5) if isinstance(r, QueryHits)]
    _read_upstream["count"] = 0
    for noted in (_overlaps, _prepared_threads, _search_threads):
        noted.clear()
    _upstream_ran_on.clear()
    with TestPipeline() as p:
        outputs = (p | beam.Create(queries) | beam.Map(_read)
                   | Recall(lambda: _WatchedStore(open_store(), parallel), retrieve_k=5,
                            batch_size=BATCH))
        assert_that(outputs.hits | beam.Map(lambda r: (r.query_id,
                                                       tuple(h.hit.id for h in r.hits))),
                    equal_to(expected))


def test_the_next_batch_is_read_while_a_batch_is_searched(tmp_path: Path) -> None:
    _watched_run(tmp_path, parallel=2)
    assert _overlaps == [True]
    assert len(_search_threads) == 4 and all(t.startswith("_RecallDoFn")
                                             for t in _search_threads)
    # each worker thread was prepared once, before it searched
    assert sorted(_prepared_threads) == sorted(set(_search_threads))


def test_a_port_that_allows_no_parallel_search_is_searched_on_the_steps_thread(
        tmp_path: Path) -> None:
    _watched_run(tmp_path, parallel=1)
    assert _overlaps == [False] and _prepared_threads == []
    assert len(_search_threads) == 4 and not any(t.startswith("_RecallDoFn")
                                                 for t in _search_threads)


class _FailsItsSecondSearch:
    """A store, searched two batches at a time, whose second search raises something
    unexpected (a bug in a backend)."""

    def __init__(self, store: EmbeddedStore) -> None:
        self._store = store
        self.dimension, self.embedder = store.dimension, store.embedder
        self._searched = 0

    def parallel_searches(self) -> int:
        return 2

    def on_search_thread(self) -> None:
        return None

    def search(self, requests: Sequence[SearchRequest]) -> list[object]:
        return list(self._store.search(requests))

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]:
        with _counting:
            self._searched += 1
            searched = self._searched
        if searched == 2:
            raise RuntimeError(f"backend bug on {len(requests)} requests")
        counters.count(counters.DELTA_CHUNKS, len(requests))  # a count made in the search
        return self._store.search_chunks(requests)

    def close(self) -> None:
        self._store.close()


def test_a_search_that_raises_fails_its_own_batch_and_its_counts_are_kept(
        tmp_path: Path) -> None:
    vectors = unit_vectors(40, dim=DIM)
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    queries = _queries(vectors, 3 * BATCH)
    with TestPipeline() as p:
        handler = CollectingErrorHandler()
        batches = (p | beam.Create([queries[:BATCH], queries[BATCH:2 * BATCH],
                                    queries[2 * BATCH:]])
                   | beam.FlatMap(lambda batch: batch))
        outputs = batches | Recall(lambda: _FailsItsSecondSearch(open_store()), retrieve_k=5,
                                   batch_size=BATCH).with_error_handler(handler)
        handler.close()
        letters = handler.output() | InternalDeadLetters()
        answered = outputs.hits | "Answered" >> beam.Map(lambda r: r.query_id)
        failed = letters | "Failed" >> beam.Map(lambda d: (d.query_id, "backend bug" in d.error))
        assert_that(answered | "CountAnswered" >> beam.combiners.Count.Globally(),
                    equal_to([2 * BATCH]), label="answered")
        assert_that(failed | "CountFailed" >> beam.combiners.Count.Globally(),
                    equal_to([BATCH]), label="failed")
        assert_that(failed | beam.Map(lambda f: f[1]) | "Distinct" >> beam.Distinct(),
                    equal_to([True]), label="named")
    totals = counters.totals(p.result)
    assert totals[counters.DELTA_CHUNKS] == 2 * BATCH
    assert totals[counters.INTERNAL_ERRORS] == BATCH


class _OneAtATime(_WatchedStore):
    """The embedded store, searched on Recall's own thread."""

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]:
        return self._store.search_chunks(requests)


def _in_window(hits: QueryHits, window: Any = beam.DoFn.WindowParam) -> tuple[str, int]:
    return hits.query_id, int(window.start)


@pytest.mark.parametrize("parallel", [2, 1], ids=["worker threads", "the step's thread"])
def test_queries_are_gathered_into_batches_by_window_and_keep_their_window(
        tmp_path: Path, parallel: int) -> None:
    # 7 queries in windows [0, 10) and [10, 20), interleaved, in batches of 3: each batch
    # holds one window's queries, full ones as they fill and the rest at the bundle's end
    vectors = unit_vectors(40, dim=DIM)
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    queries = _queries(vectors, 7)
    seconds = [1, 12, 2, 13, 3, 4, 14]
    with TestPipeline() as p:
        timed = (p | beam.Create(list(zip(queries, seconds, strict=True)))
                 | beam.Map(lambda pair: TimestampedValue(*pair))
                 | beam.WindowInto(FixedWindows(10)))
        outputs = timed | Recall(lambda: _OneAtATime(open_store(), parallel), retrieve_k=5,
                                 batch_size=3)
        assert_that(outputs.hits | beam.Map(_in_window),
                    equal_to([(f"q{i}", 0 if s < 10 else 10) for i, s in enumerate(seconds)]))


class _CountsRequests(_OneAtATime):
    """The embedded store, noting how many queries each search holds."""

    def search_chunks(self, requests: Sequence[SearchRequest]) -> list[ChunkOutcome]:
        with _counting:
            _request_sizes.append(len(requests))
        return self._store.search_chunks(requests)


def test_the_last_batch_is_shared_among_the_workers(tmp_path: Path) -> None:
    # batches of 9: one full, then 8 queries left at the bundle's end; on one worker the
    # other would wait idle, so they go in 4 shares per worker (8 shares of 1 here)
    vectors = unit_vectors(40, dim=DIM)
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    queries = _queries(vectors, 9 + 8)
    expected = [(r.query_id, tuple(h.hit.id for h in r.hits))
                for r in recall_batch(queries, open_store(), 5) if isinstance(r, QueryHits)]
    _request_sizes.clear()
    with TestPipeline() as p:
        outputs = p | beam.Create(queries) | Recall(
            lambda: _CountsRequests(open_store(), 2), retrieve_k=5, batch_size=9)
        assert_that(outputs.hits | beam.Map(lambda r: (r.query_id,
                                                       tuple(h.hit.id for h in r.hits))),
                    equal_to(expected))
    assert sorted(_request_sizes) == [1] * 8 + [9]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=40))
def test_shares_keep_every_item_in_order_and_differ_by_one_at_most(items: int,
                                                                   calls: int) -> None:
    shares = _shares(list(range(items)), calls)
    assert [x for share in shares for x in share] == list(range(items))
    assert len(shares) == min(max(calls, 1), items)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_without_workers_the_last_batch_is_searched_whole(tmp_path: Path) -> None:
    # a port searched on the step's thread (HNSW, whose first batch calibrates it) gets the
    # last queries of a bundle in one call, as any batch
    vectors = unit_vectors(40, dim=DIM)
    open_store = embedded_store(tmp_path, chunk_records(vectors))
    _request_sizes.clear()
    with TestPipeline() as p:
        outputs = p | beam.Create(_queries(vectors, 9 + 8)) | Recall(
            lambda: _CountsRequests(open_store(), 1), retrieve_k=5, batch_size=9)
        assert_that(outputs.hits | beam.combiners.Count.Globally(), equal_to([17]))
    assert sorted(_request_sizes) == [8, 9]
