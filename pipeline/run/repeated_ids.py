"""Query ids must be unique: the first line (or Parquet row) with an id owns it, and every
later one becomes a dead letter naming that line.

The ids are found by a pass of their own over the input, so that the main pass streams: it
only needs the (usually empty) table of repeated ids, never the queries held back.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping

import apache_beam as beam

from pipeline.io.query_ids import query_id_of
from pipeline.io.records import InputRecord
from stages.models import DeadLetter, Query

IdLine = tuple[str, int]


ID_BUCKETS = 1024
"""Ids are counted in this many buckets, one dict each: a combine per bucket costs a run far
less than one per id, and a bucket stays small however many queries there are."""


def bucketed_id(record: InputRecord) -> Iterator[tuple[int, IdLine]]:
    """(bucket, (id, line number)) of a record that holds an id (see `query_id_of`); the
    bucket is a CRC of the id, the same on every worker (`hash` is salted per process)."""
    for query_id, number in query_id_of(record):
        yield zlib.crc32(query_id.encode("utf-8", "surrogatepass")) % ID_BUCKETS, (
            query_id, number)


IdsSeen = tuple[list[str], array]
"""Ids and their line numbers, in the order seen."""


class _RepeatedInBucket(beam.CombineFn):
    """(id, line number)s -> (id, first line) of each id that more than one line holds.

    Every id is held until the end, when its bucket is searched for repeats: as a string in a
    list and a machine integer, a third of what a dict of (first line, count) pairs holds
    (docs/benchmarks.md)."""

    def create_accumulator(self) -> IdsSeen:
        return [], array("q")

    def add_input(self, seen: IdsSeen, item: IdLine) -> IdsSeen:
        seen[0].append(item[0])
        seen[1].append(item[1])
        return seen

    def merge_accumulators(self, accumulators: Iterable[IdsSeen]) -> IdsSeen:
        ids: list[str] = []
        numbers = array("q")
        for more_ids, more_numbers in accumulators:
            ids += more_ids
            numbers += more_numbers
        return ids, numbers

    def extract_output(self, seen: IdsSeen) -> list[IdLine]:
        return list(first_lines_of_repeated(*seen).items())


def first_lines_of_repeated(ids: Iterable[str], lines: Iterable[int]) -> dict[str, int]:
    """Each id that more than one line holds, with its first line (`ids[i]` is on
    `lines[i]`)."""
    first: dict[str, int] = {}
    repeated: set[str] = set()
    for query_id, number in zip(ids, lines, strict=True):
        known = first.get(query_id)
        if known is None:
            first[query_id] = number
        else:
            repeated.add(query_id)
            first[query_id] = min(known, number)
    return {query_id: first[query_id] for query_id in repeated}


class RepeatedQueryIds(beam.PTransform[beam.PCollection[InputRecord],
                                       beam.PCollection[IdLine]]):
    """Input records -> (id, first line) for each id that more than one record holds."""

    def expand(self, records: beam.PCollection[InputRecord]) -> beam.PCollection[IdLine]:
        return (records
                | "BucketedIds" >> beam.FlatMap(bucketed_id)
                | "RepeatedInBucket" >> beam.CombinePerKey(_RepeatedInBucket())
                | "Repeated" >> beam.FlatMap(lambda bucket_repeated: bucket_repeated[1]))


def repeated_id_letter(query: Query, first_lines: Mapping[str, int]) -> DeadLetter | None:
    """A dead letter when `query` repeats an id that an earlier line holds, else None."""
    first = first_lines.get(query.id)
    if first is None or first == query.line_number:
        return None
    return DeadLetter(stage="parse", query_id=query.id, line_number=query.line_number,
                      error=f"id {query.id!r} is already used by line {first}; query ids "
                            "must be unique (the first line keeps it)",
                      input=query.model_dump(mode="json", exclude_defaults=True))
