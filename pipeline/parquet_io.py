"""Parquet queries in and results out, the format in which people keep embeddings.

Queries: one row per query, columns `id`, and `text` or `vector` (a list of floats), and
optionally `vectors` and `filters`; a null column is absent. Row numbers (from 1) stand in for
line numbers in dead letters. Row groups are the blocks a runner spreads over its workers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipeline.line_blocks import InputRecord
from stages.models import QueryResult

PARQUET_SUFFIX = ".parquet"
RowGroup = tuple[str, int, int]
"""(path, row group, number of the group's first row)."""


def is_parquet(path: str) -> bool:
    return path.lower().endswith(PARQUET_SUFFIX)


def row_groups(path: str) -> Iterator[RowGroup]:
    with FileSystems.open(path) as handle:
        metadata = pq.ParquetFile(handle).metadata
    first = 1
    for group in range(metadata.num_row_groups):
        yield path, group, first
        first += metadata.row_group(group).num_rows


def read_row_group(group: RowGroup) -> Iterator[InputRecord]:
    path, index, first = group
    with FileSystems.open(path) as handle:
        rows = pq.ParquetFile(handle).read_row_group(index).to_pylist()
    for number, row in enumerate(rows, start=first):
        yield number, {name: value for name, value in row.items() if value is not None}


class ReadParquetQueries(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[InputRecord]]):
    """A Parquet file as (row number, {column: value}) records, split by row group."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[InputRecord]:
        return (begin
                | "File" >> beam.Create([self._path])
                | "RowGroups" >> beam.FlatMap(row_groups)
                | "SpreadRowGroups" >> beam.Reshuffle()
                | "ReadRowGroups" >> beam.FlatMap(read_row_group))


_RETRIEVER = pa.struct([("reason", pa.string()), ("rank", pa.int64()), ("score", pa.float64())])
RESULT_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("evidence", pa.list_(pa.struct([
        ("evidence_key", pa.string()), ("doc_id", pa.string()), ("chunk_index", pa.int64()),
        ("source", pa.string()), ("content", pa.string()), ("score", pa.float64()),
        ("rank", pa.int64()), ("hit_reasons", pa.list_(pa.string())),
        ("retrievers", pa.list_(_RETRIEVER))]))),
    ("projected", pa.list_(pa.struct([
        ("document_id", pa.string()), ("source", pa.string()), ("content", pa.string()),
        ("score", pa.float64())]))),
])
"""One row per query result, the same fields as a JSONL result line."""


def result_row(result: QueryResult) -> dict[str, Any]:
    row: dict[str, Any] = result.model_dump(mode="python")
    return row
