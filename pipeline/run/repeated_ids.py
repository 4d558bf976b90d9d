"""Query ids must be unique: the first line (or Parquet row) with an id owns it, and every
later one becomes a dead letter naming that line.

The ids are found by a pass of their own over the input, so that the main pass streams: it
only needs the (usually empty) table of repeated ids, never the queries held back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import apache_beam as beam
import orjson

from connectors.input_limits import check_text, loads
from pipeline.io.line_blocks import decode_line
from pipeline.io.records import InputRecord, OverlongLine, UnreadableRest
from stages.models import DeadLetter, Query

FirstAndCount = tuple[int, int]


def query_id_of(record: InputRecord) -> Iterator[tuple[str, int]]:
    """(id, line number) of a record that holds a string `id` within the input limits (the
    parser's own: `loads` and `check_text`); nothing for any other, which the parse pass
    dead-letters by itself."""
    number, raw = record
    if isinstance(raw, OverlongLine | UnreadableRest):
        return
    if isinstance(raw, dict):
        data: Any = raw
    else:
        try:
            data = _id_holder(raw)
        except ValueError:
            return
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        try:
            yield check_text(data["id"]), number
        except ValueError:
            return


def _id_holder(raw: bytes | str) -> Any:
    """The line's JSON value: orjson's where it reads the line at all (a whole number too long
    for 64 bits, which it reads otherwise than the parser does, never changes an id), else the
    parser's own `loads`."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return loads(decode_line(raw))


class _FirstLineAndCount(beam.CombineFn):
    def create_accumulator(self) -> FirstAndCount:
        return (0, 0)

    def add_input(self, accumulator: FirstAndCount, line: int) -> FirstAndCount:
        return self.merge_accumulators([accumulator, (line, 1)])

    def merge_accumulators(self, accumulators: Any) -> FirstAndCount:
        seen = [a for a in accumulators if a[1]]
        return (min(a[0] for a in seen), sum(a[1] for a in seen)) if seen else (0, 0)

    def extract_output(self, accumulator: FirstAndCount) -> FirstAndCount:
        return accumulator


class RepeatedQueryIds(beam.PTransform[beam.PCollection[InputRecord],
                                       beam.PCollection[tuple[str, int]]]):
    """Input records -> (id, first line) for each id that more than one record holds."""

    def expand(self, records: beam.PCollection[InputRecord]
               ) -> beam.PCollection[tuple[str, int]]:
        return (records
                | "QueryIds" >> beam.FlatMap(query_id_of)
                | "FirstLineAndCount" >> beam.CombinePerKey(_FirstLineAndCount())
                | "Repeated" >> beam.Filter(lambda item: item[1][1] > 1)
                | "FirstLine" >> beam.MapTuple(lambda query_id, seen: (query_id, seen[0])))


def repeated_id_letter(query: Query, first_lines: Mapping[str, int]) -> DeadLetter | None:
    """A dead letter when `query` repeats an id that an earlier line holds, else None."""
    first = first_lines.get(query.id)
    if first is None or first == query.line_number:
        return None
    return DeadLetter(stage="parse", query_id=query.id, line_number=query.line_number,
                      error=f"id {query.id!r} is already used by line {first}; query ids "
                            "must be unique (the first line keeps it)",
                      input=query.model_dump(mode="json", exclude_defaults=True))
