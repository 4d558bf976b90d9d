"""RepeatedQueryIds: which ids more than one line holds, and the first line of each."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.run.repeated_ids import ID_BUCKETS, RepeatedQueryIds, _RepeatedInBucket


def _records(ids: list[str]) -> list[tuple[int, bytes]]:
    return [(number, json.dumps({"id": query_id, "text": "t"}).encode())
            for number, query_id in enumerate(ids, start=1)]


def test_every_repeated_id_and_its_first_line_across_many_ids_and_bundles() -> None:
    ids = [f"q{i}" for i in range(5 * ID_BUCKETS)]  # several ids share each bucket
    ids += ["q7", "q7", "q4000", "ünï", "ünï"]
    records = _records(ids)
    records.reverse()  # the first line is the smallest number, not the first seen
    with TestPipeline() as pipeline:
        repeated = (pipeline | beam.Create(records, reshuffle=True) | RepeatedQueryIds())
        assert_that(repeated, equal_to([("q7", 8), ("q4000", 4001), ("ünï", 5 * ID_BUCKETS + 4)]))


def test_lines_without_a_usable_id_hold_none() -> None:
    records = [(1, b'{"id": 7}'), (2, b"not json"), (3, b'{"id": "a"}'), (4, b'[1]'),
               (5, b'{"id": "a"}'), (6, {"id": "b"}), (7, {"id": "b"})]
    with TestPipeline() as pipeline:
        repeated = pipeline | beam.Create(records) | RepeatedQueryIds()
        assert_that(repeated, equal_to([("a", 3), ("b", 6)]))


@pytest.mark.slow
def test_an_id_lands_in_the_same_bucket_in_every_process() -> None:
    # workers must agree on an id's bucket: Python's hash() of a str differs per process
    code = ("from pipeline.run.repeated_ids import bucketed_id; "
            "print([next(bucketed_id((1, {'id': f'q{i}'})))[0] for i in range(50)])")
    buckets = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2")}
    assert len(buckets) == 1
    assert len(set(ast.literal_eval(buckets.pop()))) > 10


def test_accumulators_merged_from_many_parts_find_each_repeat_and_its_first_line() -> None:
    combine = _RepeatedInBucket()
    parts = []
    for lines in ([("a", 9), ("b", 2)], [("c", 4), ("a", 3)], [], [("b", 7), ("a", 11)]):
        seen = combine.create_accumulator()
        for item in lines:
            seen = combine.add_input(seen, item)
        parts.append(seen)
    merged = combine.merge_accumulators([combine.merge_accumulators(parts[:2]), *parts[2:]])
    assert sorted(combine.extract_output(merged)) == [("a", 3), ("b", 2)]
