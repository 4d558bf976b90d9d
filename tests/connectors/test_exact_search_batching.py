"""Exact search answers a query the same, to the last bit of its scores, whatever batch it
comes in: a distributed engine's bundles are not the local runner's, and BLAS sums a batch's
dot products in another order than one query's (seen on Flink: 1,163 of 20k queries had
scores that differed in the 7th digit)."""

from __future__ import annotations

import numpy as np

from connectors.embedded.vector_search import exact_neighbours, subset_neighbours
from tests.builders import unit_vectors


def test_a_query_gets_the_same_rows_and_score_bits_alone_as_in_a_batch() -> None:
    vectors = unit_vectors(5000, dim=384)
    queries = unit_vectors(40, dim=384, seed=8)
    batch = exact_neighbours(vectors, queries, [10] * 40)
    for i, (rows, scores) in enumerate(batch):
        ((alone_rows, alone_scores),) = exact_neighbours(vectors, queries[i:i + 1], [10])
        assert rows.tolist() == alone_rows.tolist()
        assert scores.tobytes() == alone_scores.tobytes(), f"query {i}"


def test_a_filtered_search_scores_a_row_as_the_unfiltered_search_does() -> None:
    vectors = unit_vectors(500, dim=64)
    query = unit_vectors(1, dim=64, seed=3)[0]
    ((rows, scores),) = exact_neighbours(vectors, query[np.newaxis, :], [5])
    sub_rows, sub_scores = subset_neighbours(vectors, query, np.sort(rows), 5)
    assert sub_rows.tolist() == rows.tolist()
    assert sub_scores.tobytes() == scores.tobytes()


def test_scores_are_the_cosines_to_float32_precision() -> None:
    vectors = unit_vectors(300, dim=32)
    query = unit_vectors(1, dim=32, seed=5)[0]
    ((rows, scores),) = exact_neighbours(vectors, query[np.newaxis, :], [300])
    expected = vectors.astype(np.float64) @ query.astype(np.float64)
    assert scores.dtype == np.float32
    assert np.array_equal(scores, expected[rows].astype(np.float32))
    assert rows.tolist() == np.lexsort((np.arange(300), -expected.astype(np.float32))).tolist()
