"""Parquet queries in and results out, the format in which people keep embeddings.

Queries: one row per query, columns `id`, and `text` or `vector` (a list of floats), and
optionally `vectors` and `filters`; a null column is absent. Row numbers (from 1) stand in for
line numbers in dead letters. Row groups are the blocks a runner spreads over its workers.
Results: one row per query, the fields of a JSONL result line as nested columns.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from pydantic import BaseModel

from pipeline.io.records import InputRecord, UnreadableRest
from stages.models import QueryResult

PARQUET_SUFFIX = ".parquet"
RowGroup = tuple[str, int, int]
"""(path, row group, number of the group's first row)."""


def is_parquet(path: str) -> bool:
    return path.lower().endswith(PARQUET_SUFFIX)


def parquet_rows(path: str) -> int:
    with FileSystems.open(path) as handle:
        return int(pq.ParquetFile(handle).metadata.num_rows)


def row_groups(path: str) -> Iterator[RowGroup]:
    with FileSystems.open(path) as handle:
        metadata = pq.ParquetFile(handle).metadata
    first = 1
    for group in range(metadata.num_row_groups):
        yield path, group, first
        first += metadata.row_group(group).num_rows


BATCH_ROWS = 4096
"""Rows turned into Python objects at a time: a row group of 50k vectors of 384 floats, made
Python lists all at once, takes half a gigabyte."""


def _row_groups_of_file(_impulse: bytes, path: str) -> Iterator[RowGroup]:
    return row_groups(path)


def read_row_group(group: RowGroup, columns: Sequence[str] | None = None
                   ) -> Iterator[InputRecord]:
    """The rows of one row group, a batch at a time, holding only `columns` when given (a
    column the file lacks is absent from every row). What does not decode ends the group as
    an `UnreadableRest` naming it and its first row not read."""
    path, index, number = group
    try:
        with FileSystems.open(path) as handle:
            for batch in pq.ParquetFile(handle).iter_batches(
                    BATCH_ROWS, row_groups=[index], columns=columns):
                for row in batch.to_pylist():
                    yield number, {name: value for name, value in row.items()
                                   if value is not None}
                    number += 1
    except (OSError, pa.ArrowException) as error:
        yield number, UnreadableRest(f"{path} row group {index} (rows from {number}) cannot "
                                     f"be read: {error}")


def read_all_rows(path: str) -> Iterator[InputRecord]:
    for group in row_groups(path):
        yield from read_row_group(group)


class ReadParquetQueries(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[InputRecord]]):
    """A Parquet file as (row number, {column: value}) records, split by row group; only
    `columns`, when given (the pass over the ids reads no vectors)."""

    def __init__(self, path: str, columns: Sequence[str] | None = None) -> None:
        super().__init__()
        self._path = path
        self._columns = None if columns is None else list(columns)

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[InputRecord]:
        return (begin
                | "Start" >> beam.Impulse()
                | "RowGroups" >> beam.FlatMap(_row_groups_of_file, self._path)
                | "SpreadRowGroups" >> beam.Reshuffle()
                | "ReadRowGroups" >> beam.FlatMap(read_row_group, self._columns))


_SCALARS = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


def arrow_type(annotation: Any) -> pa.DataType:
    """The Arrow type of a field of our records: scalars, `X | None`, `tuple[X, ...]`,
    nested models, named tuples and dataclasses."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        (present,) = [a for a in args if a is not type(None)]
        return arrow_type(present)
    if origin in (tuple, list):
        return pa.list_(arrow_type(args[0]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([(name, arrow_type(field.annotation))
                          for name, field in annotation.model_fields.items()])
    if isinstance(annotation, type) and issubclass(annotation, tuple) and hasattr(
            annotation, "_fields"):  # a NamedTuple: a struct of its fields
        hints = typing.get_type_hints(annotation)
        return pa.struct([(name, arrow_type(hints[name])) for name in annotation._fields])
    if dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        return pa.struct([(f.name, arrow_type(hints[f.name]))
                          for f in dataclasses.fields(annotation)])
    raise TypeError(f"no Arrow type for {annotation!r}")


RESULT_SCHEMA = pa.schema(list(arrow_type(QueryResult)))
"""One row per query result, derived from `QueryResult`: the fields of a JSONL result line."""


def result_row(result: QueryResult) -> dict[str, Any]:
    row: dict[str, Any] = result.model_dump(mode="python")
    return row

