"""Parquet queries in and results out, the format in which people keep embeddings.

Queries: one row per query, columns `id`, and `text` or `vector` (a list of floats), and
optionally `vectors` and `filters`; a null column is absent. Row numbers (from 1) stand in for
line numbers in dead letters. Row groups are the blocks a runner spreads over its workers.
Results: one row per query, the fields of a JSONL result line as nested columns.
"""

from __future__ import annotations

import dataclasses
import hashlib
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import apache_beam as beam
import numpy as np
import orjson
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


def read_row_group(group: RowGroup, columns: Sequence[str] | None = None,
                   wanted: Mapping[int, Any] | None = None) -> Iterator[InputRecord]:
    """The rows of one row group, a batch at a time, holding only `columns` when given (a
    column the file lacks is absent from every row), and only the rows whose numbers are
    `wanted` when given (the others are never made objects). What does not decode ends the
    group as an `UnreadableRest` naming it and its first row not read."""
    for number, batch in _batches(group, columns, wanted):
        if isinstance(batch, UnreadableRest):
            yield number, batch
            return
        if wanted is None:
            numbers: Iterable[int] = range(number, number + batch.num_rows)
        else:
            taken = [at for at in range(batch.num_rows) if number + at in wanted]
            numbers = [number + at for at in taken]
            batch = batch.take(pa.array(taken, pa.int64()))
        for row_number, row in zip(numbers, batch.to_pylist(), strict=True):
            yield row_number, {name: value for name, value in row.items()
                               if value is not None}


def _batches(group: RowGroup, columns: Sequence[str] | None = None,
             wanted: Mapping[int, Any] | None = None
             ) -> Iterator[tuple[int, pa.RecordBatch | UnreadableRest]]:
    """The row group's batches, each with the number of its first row (none when `wanted`
    holds no row of the group); what does not decode ends it as an `UnreadableRest`."""
    path, index, number = group
    try:
        with FileSystems.open(path) as handle:
            parquet = pq.ParquetFile(handle)
            rows = parquet.metadata.row_group(index).num_rows
            if wanted is not None and not any(n in wanted for n in range(number,
                                                                        number + rows)):
                return
            for batch in parquet.iter_batches(BATCH_ROWS, row_groups=[index],
                                              columns=columns):
                yield number, batch
                number += batch.num_rows
    except (OSError, pa.ArrowException) as error:
        yield number, UnreadableRest(f"{path} row group {index} (rows from {number}) cannot "
                                     f"be read: {error}")


def row_group_digests(group: RowGroup) -> Iterator[list[tuple[int, Any, bytes | None]]]:
    """Blocks (one per batch read) of (row number, its id as read, the digest of the whole
    row) of each row of a row group, with no row made an object; an `UnreadableRest` in place
    of the id (and no digest) where the group stops decoding (see `row_digests`)."""
    for number, batch in _batches(group):
        if isinstance(batch, UnreadableRest):
            yield [(number, batch, None)]
            return
        ids = (batch.column("id").to_pylist() if "id" in batch.schema.names
               else [None] * batch.num_rows)
        yield list(zip(range(number, number + batch.num_rows), ids, row_digests(batch),
                       strict=True))


def row_digests(batch: pa.RecordBatch) -> list[bytes]:
    """A digest of each row of `batch`, over every column's name and value: a list of numbers
    by its raw bytes, anything else by its JSON (a null by a byte no JSON starts with)."""
    hashes = [hashlib.blake2b(digest_size=16) for _ in range(batch.num_rows)]
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        label = name.encode("utf-8", "surrogatepass") + b"\x00"
        for sha, value in zip(hashes, _column_bytes(column), strict=True):
            sha.update(label)
            sha.update(len(value).to_bytes(8, "little"))
            sha.update(value)
    return [sha.digest() for sha in hashes]


_NULL = b"\x00"


def _column_bytes(column: pa.Array) -> list[bytes]:
    kind = column.type
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and (
            pa.types.is_floating(kind.value_type) or pa.types.is_integer(kind.value_type)):
        valid = column.is_valid().to_pylist()
        offsets = column.offsets.to_numpy(zero_copy_only=False)
        values = column.flatten().to_numpy(zero_copy_only=False)
        raw = values.tobytes()
        at = ((offsets.astype(np.int64) - int(offsets[0])) * values.itemsize).tolist()
        tag = str(values.dtype).encode()
        return [tag + raw[a:b] if ok else _NULL
                for ok, a, b in zip(valid, at[:-1], at[1:], strict=True)]
    return [_NULL if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
            for value in column.to_pylist()]


def read_all_rows(path: str) -> Iterator[InputRecord]:
    for group in row_groups(path):
        yield from read_row_group(group)


class ReadParquetQueries(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[InputRecord]]):
    """A Parquet file as (row number, {column: value}) records, split by row group; only
    `columns`, when given (the pass over the ids reads no vectors), and only the rows whose
    numbers `wanted` holds (keys of (number, anything) pairs), when given. With `digests`,
    blocks of (row number, id, digest of the row) instead (see `row_group_digests`)."""

    def __init__(self, path: str, columns: Sequence[str] | None = None,
                 wanted: beam.PCollection[tuple[int, Any]] | None = None,
                 digests: bool = False) -> None:
        super().__init__()
        self._path = path
        self._columns = None if columns is None else list(columns)
        self._wanted, self._digests = wanted, digests

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[InputRecord]:
        groups = (begin
                  | "Start" >> beam.Impulse()
                  | "RowGroups" >> beam.FlatMap(_row_groups_of_file, self._path)
                  | "SpreadRowGroups" >> beam.Reshuffle())
        if self._digests:
            return groups | "DigestRowGroups" >> beam.FlatMap(row_group_digests)
        if self._wanted is not None:
            return groups | "ReadRowGroups" >> beam.FlatMap(
                read_row_group, self._columns, beam.pvalue.AsDict(self._wanted))
        return groups | "ReadRowGroups" >> beam.FlatMap(read_row_group, self._columns)


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

