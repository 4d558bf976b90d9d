"""The pass over a run's query ids by shard (`query_shards`): one element per shard, whatever
the number of queries, with every usable id once in input order, and the others' line numbers
apart."""

from __future__ import annotations

import os
import tempfile

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.io.query_ids import DIGEST_BYTES
from pipeline.run import query_shards
from pipeline.run.query_shards import ShardedQueryIds, shard_of

SHARDS = 3


def _check_sharded(records: list, shards: list, no_id: list) -> None:
    """Through the local runner, combined in memory and through part files: `records`
    (digest records, or lists of them) give `shards` ((shard, ids, lines, digests) of each)
    and the NO_ID line numbers `no_id`, to every step that reads them."""
    with tempfile.TemporaryDirectory() as folder:
        for parts in (None, os.path.join(folder, "parts")):
            _check_through(records, shards, no_id, parts)


def _check_through(records: list, shards: list, no_id: list, parts: str | None) -> None:
    with beam.Pipeline() as pipeline:
        ids = pipeline | beam.Create(records, reshuffle=False) | ShardedQueryIds(SHARDS, parts)
        assert_that(ids.every_shard("Second") | "SecondAsTuples" >> beam.Map(
            lambda shard: (shard[0], tuple(shard[1].ids))),
            equal_to([(shard, names) for shard, names, _, _ in shards]), label="Second")
        assert_that(ids.every_shard("First") | "AsTuples" >> beam.Map(
            lambda shard: (shard[0], tuple(shard[1].ids), tuple(shard[1].lines),
                           bytes(shard[1].digests))), equal_to(shards), label="Shards")
        assert_that(ids.no_id, equal_to(no_id), label="NoId")


def _expected(rows: list[tuple[int, object, bytes | None]]) -> tuple[list, list]:
    shards: dict[int, tuple[list, list, bytearray]] = {
        k: ([], [], bytearray()) for k in range(SHARDS)}
    no_id = []
    for number, query_id, digest in rows:
        if not isinstance(query_id, str) or digest is None:
            no_id.append(number)
            continue
        ids, lines, digests = shards[shard_of(query_id, SHARDS)]
        ids.append(query_id)
        lines.append(number)
        digests.extend(digest)
    return sorted((k, tuple(i), tuple(n), bytes(d)) for k, (i, n, d) in shards.items()), no_id


_ROW = st.tuples(st.one_of(st.sampled_from(["a", "b", "c", "d", "é", "q7"]), st.none(),
                           st.integers(0, 3)),
                 st.one_of(st.binary(min_size=DIGEST_BYTES, max_size=DIGEST_BYTES), st.none()))


@settings(max_examples=10, deadline=None)
@given(rows=st.lists(_ROW, max_size=30), block=st.integers(1, 8), held=st.integers(1, 5))
def test_every_usable_id_lands_in_its_shard_once_in_input_order(
        rows: list, block: int, held: int) -> None:
    numbered = [(number, query_id, digest) for number, (query_id, digest) in enumerate(rows)]
    # records one at a time and in blocks, as the two kinds of input give them
    records = [r for start in range(0, len(numbered), block)
               for r in ([numbered[start:start + block]] if (start // block) % 2 else
                         numbered[start:start + block])]
    old = query_shards.GATHERED_ROWS
    query_shards.GATHERED_ROWS = held  # pieces given on mid-bundle too
    try:
        _check_sharded(records, *_expected(numbered))
    finally:
        query_shards.GATHERED_ROWS = old


def test_every_shard_appears_with_no_query() -> None:
    _check_sharded([], [(k, (), (), b"") for k in range(SHARDS)], [])
