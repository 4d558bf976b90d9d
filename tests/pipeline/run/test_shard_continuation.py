"""The per-shard pieces of a continued night (issue 46): which standing queries the store's
changes touch, decided for a whole shard at once, and the state rows a shard keeps."""

from __future__ import annotations

from array import array

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.embedded.row_search import _reported
from connectors.embedded.vector_search import cosines
from core.vectors import unit_rows
from pipeline.io.query_ids import line_digest
from pipeline.run.entered_gains import entered_gains
from pipeline.run.query_shards import ShardIds, shard_count, shard_of
from pipeline.run.shard_continuation import touched
from pipeline.run.state_shards import LIST_TYPE, STATE_SCHEMA, compacted, state_row, with_lists
from stages.models import Query, QueryState, RecalledList

DIM = 16


def _lists(rows: list[list[dict]]) -> pa.ListArray:
    return pa.array(rows, pa.list_(LIST_TYPE))


def _kept(vector: np.ndarray, store: np.ndarray, width: int) -> dict:
    """A kept list as a run keeps it: the `width` best of `store`, and the next one's score
    as the bound (every chunk not kept scores at most it)."""
    scores = _reported(cosines(store, unit_rows([vector])[0][0]))
    order = np.argsort(-scores, kind="stable")
    return {"reason": "knn:vector", "vector": vector.tolist(),
            "ids": [f"c{i}" for i in order[:width]],
            "scores": scores[order[:width]].tolist(), "bound": float(scores[order[width]])}


def test_a_query_whose_kept_chunk_was_removed_is_touched() -> None:
    kept = {"reason": "knn:vector", "vector": [1.0] * DIM, "ids": ["a", "b"],
            "scores": [0.9, 0.8], "bound": 0.5}
    lists = _lists([[kept], [{**kept, "ids": ["c", "d"]}]])
    moved = touched(lists, np.empty((0, DIM), np.float32), pa.array(["b"]), retrieve_k=2)
    assert moved.tolist() == [True, False]


def test_a_list_that_would_run_out_is_touched_and_one_that_holds_every_match_is_not() -> None:
    short = {"reason": "knn:vector", "vector": [1.0] * DIM, "ids": ["a"], "scores": [0.9],
             "bound": 0.5}
    lists = _lists([[short], [{**short, "bound": float("-inf")}]])
    moved = touched(lists, np.empty((0, DIM), np.float32), pa.array([], pa.string()), 2)
    assert moved.tolist() == [True, False]


def test_a_query_is_touched_when_any_of_its_lists_is() -> None:
    rng = np.random.default_rng(0)
    entered = unit_rows(rng.normal(size=(1, DIM)))[0]
    near = {"reason": "knn:vector", "vector": entered[0].astype(float).tolist(),
            "ids": ["a", "b"], "scores": [0.99, 0.98], "bound": 0.9}
    far = {**near, "reason": "knn:vectors[0]", "vector": (-entered[0]).astype(float).tolist()}
    moved = touched(_lists([[far], [far, near]]), entered, pa.array([], pa.string()), 2)
    assert moved.tolist() == [False, True]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), entering=st.integers(1, 40),
       magnitude=st.sampled_from([1.0, 1e-30, 1e30]))
def test_an_untouched_query_gains_no_entered_chunk_above_its_bound(seed: int, entering: int,
                                                                    magnitude: float) -> None:
    """The rough test is sound: when it says a query is untouched, no entered chunk scores
    above any of its bounds exactly (so its kept lists are tonight's true top), whatever
    the scale of the query's vector (float32 holds 1e30 and 1e-30; their squares it does
    not)."""
    rng = np.random.default_rng(seed)
    store = unit_rows(rng.normal(size=(200, DIM)))[0]
    entered = unit_rows(rng.normal(size=(entering, DIM)))[0]
    vectors = rng.normal(size=(30, DIM)) * magnitude
    lists = _lists([[_kept(v, store, 12)] for v in vectors])
    moved = touched(lists, entered, pa.array([], pa.string()), retrieve_k=10)
    for vector, was_moved, row in zip(vectors, moved, lists.to_pylist(), strict=True):
        exact = _reported(cosines(entered, unit_rows([vector])[0][0]))
        if not was_moved:
            assert exact.max() <= row[0]["bound"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), per_query=st.lists(st.integers(0, 3), max_size=12),
       picked=st.lists(st.integers(0, 11), max_size=12, unique=True))
def test_the_gains_of_some_rows_are_those_of_those_rows_alone(
        seed: int, per_query: list[int], picked: list[int]) -> None:
    """A shard's gains are made once for all its lists; renumbered for the touched rows, they
    are what the touched rows' lists alone would give, pair for pair."""
    rng = np.random.default_rng(seed)
    store = unit_rows(rng.normal(size=(60, DIM)))[0]
    entered = unit_rows(rng.normal(size=(8, DIM)))[0]
    lists = _lists([[_kept(rng.normal(size=DIM), store, 5) for _ in range(count)]
                    for count in per_query])
    rows = np.asarray([r for r in picked if r < len(per_query)], dtype=np.int64)
    alone = entered_gains(lists.take(pa.array(rows, pa.int64())), entered)
    renumbered = entered_gains(lists, entered).of_rows(lists, rows)
    assert alone.lists.tolist() == renumbered.lists.tolist()
    assert alone.chunks.tolist() == renumbered.chunks.tolist()
    assert alone.unusable.tolist() == renumbered.unusable.tolist()
    assert touched(lists, entered, pa.array([], pa.string()), 5).tolist() == touched(
        lists, entered, pa.array([], pa.string()), 5, entered_gains(lists, entered)).tolist()


def test_shards_and_digests_are_the_same_on_every_worker() -> None:
    assert shard_of("q1", 7) == shard_of("q1", 7) and 0 <= shard_of("q1", 7) < 7
    assert line_digest((1, b'{"id":"q1"}')) == (1, "q1", line_digest((1, '{"id":"q1"}'))[2])
    assert line_digest((1, b'{"id":"q1"}'))[2] != line_digest((1, b'{"id": "q1"}'))[2]
    assert line_digest((2, b'{"id": 7}'))[1] is None
    assert shard_count(0) == 1 and shard_count(1000) == 1 and shard_count(1001) == 2


def _ids(*rows: tuple[str, int]) -> ShardIds:
    ids = ShardIds([], array("q"), bytearray())
    for query_id, line in rows:
        ids.ids.append(query_id)
        ids.lines.append(line)
        ids.digests.extend(line_digest((line, f"{query_id}:{line}".encode()))[2] or b"")
    return ids


def _batch(rows: list[dict]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(rows, schema=STATE_SCHEMA)


def test_a_shard_keeps_state_with_result_and_digest_and_results_alone_for_the_rest() -> None:
    lists = [{"reason": "knn:vector", "vector": [1.0], "ids": ["c"], "scores": [0.9],
              "bound": 0.1}]
    states = [_batch([{"shard": 0, "query_id": q, "fingerprint": "f", "filters": "{}",
                       "lists": lists} for q in ("a", "b", "twice", "failed")])]
    results = [_batch([{"shard": 0, "query_id": q, "result": q.encode()}
                       for q in ("a", "twice", "stateless")])]
    results.append(_batch([{"shard": 0, "query_id": "old", "result": b"again"}]))
    tonight = _ids(("a", 1), ("b", 2), ("twice", 3), ("twice", 4), ("failed", 5),
                   ("stateless", 6), ("old", 7))
    table = compacted(0, tonight, {"old"}, states, results).to_pylist()
    by_id = {row["query_id"]: row for row in table}
    # b, failed: no result; old: stands (its row is PREV's, copied by the merge)
    assert sorted(by_id) == ["a", "stateless", "twice"]
    assert by_id["a"]["digest"] == tonight.digest(0) and by_id["a"]["result"] == b"a"
    assert by_id["a"]["lists"] is not None
    assert by_id["twice"]["lists"] is None and by_id["twice"]["digest"] is None
    assert by_id["stateless"]["lists"] is None and by_id["stateless"]["result"] == b"stateless"


def test_a_query_with_two_kept_chunks_of_the_same_score_is_touched() -> None:
    """Their order is the store's order of rows, which another version may change."""
    kept = {"reason": "knn:vector", "vector": [1.0] * DIM, "ids": ["a", "b", "c"],
            "scores": [0.9, 0.8, 0.8], "bound": 0.5}
    untied = {**kept, "scores": [0.8, 0.7, 0.6]}
    across = [{**kept, "scores": [0.9, 0.8]}, {**kept, "ids": ["d"], "scores": [0.8]}]
    lists = _lists([[kept], [untied], across])
    moved = touched(lists, np.empty((0, DIM), np.float32), pa.array([], pa.string()), 1)
    assert moved.tolist() == [True, False, False]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=5), st.integers(0, 2**16))
def test_new_lists_keep_each_sub_query_vector_as_the_row_holds_it(per_query: list[int],
                                                                  seed: int) -> None:
    """A continued query's new row is its old row with the new lists: the same as the row a
    run builds from the query (`state_row`), vectors (float64 ones too) kept exactly."""
    rng = np.random.default_rng(seed)
    states, new_lists = [], []
    for n, subs in enumerate(per_query):
        vectors = [tuple(rng.normal(size=DIM).tolist()) for _ in range(subs)]
        if subs == 1:
            query = Query(id=f"q{n}", vector=vectors[0])
            reasons = ["knn:vector"]
        else:
            query = Query(id=f"q{n}", vectors=vectors)
            reasons = [f"knn:vectors[{i}]" for i in range(subs)]
        old = tuple(RecalledList(r, ("a", "b"), (0.9, 0.8), 0.5) for r in reasons)
        new = tuple(RecalledList(r, ("c", f"d{n}", "e"), (0.95, 0.9, 0.85), 0.7)
                    for r in reasons)
        states.append(QueryState(query.id, "fp", None, old, query))
        new_lists.append(new)
    rows = pa.Table.from_pylist([{**state_row(s, 4), "digest": b"d", "result": b"r"}
                                 for s in states], schema=STATE_SCHEMA)
    expected = pa.Table.from_pylist(
        [{**state_row(s._replace(lists=new), 4), "digest": b"d", "result": b"r"}
         for s, new in zip(states, new_lists, strict=True)], schema=STATE_SCHEMA)
    assert with_lists(rows, new_lists).equals(expected)
