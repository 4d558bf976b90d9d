"""Where queries come from: a JSONL file (the default) or a Parquet file, by its name."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from pipeline.line_blocks import InputRecord, ReadNumberedLines, read_numbered_lines
from pipeline.parquet_io import ReadParquetQueries, is_parquet, read_row_group, row_groups


def read_queries(path: str) -> beam.PTransform:
    """The transform that reads `path` as numbered records, split for a runner's workers."""
    return ReadParquetQueries(path) if is_parquet(path) else ReadNumberedLines(path)


def first_records(path: str, count: int) -> Iterator[InputRecord]:
    """The first `count` records of `path`, read on the driver."""
    if not is_parquet(path):
        return itertools.islice(read_numbered_lines(path), count)
    rows = (row for group in row_groups(path) for row in read_row_group(group))
    return itertools.islice(rows, count)


def count_records(path: str) -> int:
    """How many records `path` holds (non-blank lines, or Parquet rows); 0 if it is missing."""
    if not FileSystems.exists(path):
        return 0
    if is_parquet(path):
        with FileSystems.open(path) as handle:
            return int(pq.ParquetFile(handle).metadata.num_rows)
    with FileSystems.open(path) as handle:
        return sum(1 for line in iter(handle.readline, b"") if line.strip())
