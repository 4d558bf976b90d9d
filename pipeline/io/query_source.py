"""Where queries come from, decided once from the path: JSON lines (plain or compressed by
Beam's suffix rules) or Parquet. Each kind knows how to read itself on a runner, how to peek
at its first records on the driver, and how to count its records."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from core.errors import InvalidInputError
from pipeline.io.line_blocks import ReadNumberedLines, count_lines, read_numbered_lines
from pipeline.io.parquet import ReadParquetQueries, is_parquet, parquet_rows, read_all_rows
from pipeline.io.records import InputRecord


@dataclass(frozen=True)
class QuerySource(ABC):
    """A query file; `records` are (line or row number, bytes or row) pairs."""

    path: str

    @abstractmethod
    def read(self) -> beam.PTransform:
        """PBegin -> the file's records, split for a runner's workers."""

    def read_ids(self) -> beam.PTransform:
        """PBegin -> records that hold at least each query's `id` (by default, all of it)."""
        return self.read()

    @abstractmethod
    def records(self) -> Iterator[InputRecord]:
        """The file's records in order, read here (on the driver)."""

    @abstractmethod
    def count(self) -> int:
        """How many records the file holds (non-blank lines, or rows); 0 when it is missing."""

    counts_cheaply = False
    """Whether `count` costs next to nothing (it reads a footer, not the file)."""

    def first_records(self, count: int) -> Iterator[InputRecord]:
        return itertools.islice(self.records(), count)

    def check(self) -> None:  # noqa: B027 (a line file is checked line by line)
        """Raises InvalidInputError when the file cannot be read at all."""


class JsonLinesQueries(QuerySource):
    """One JSON object per line; `.gz`, `.bz2`... files are read whole, others in blocks."""

    def read(self) -> beam.PTransform:
        return ReadNumberedLines(self.path)

    def records(self) -> Iterator[InputRecord]:
        yield from read_numbered_lines(self.path)

    def count(self) -> int:
        return count_lines(self.path) if FileSystems.exists(self.path) else 0


class ParquetQueries(QuerySource):
    """One row per query; row groups are the blocks a runner spreads."""

    counts_cheaply = True

    def read(self) -> beam.PTransform:
        return ReadParquetQueries(self.path)

    def read_ids(self) -> beam.PTransform:
        return ReadParquetQueries(self.path, columns=["id"])

    def records(self) -> Iterator[InputRecord]:
        yield from read_all_rows(self.path)

    def count(self) -> int:
        return parquet_rows(self.path) if FileSystems.exists(self.path) else 0

    def check(self) -> None:
        try:
            parquet_rows(self.path)
        except (OSError, pa.ArrowException) as error:
            raise InvalidInputError("--queries", self.path,
                                    f"is not a readable Parquet file ({error})") from None


def query_source(path: str) -> QuerySource:
    """The source that reads `path`, by its name."""
    return ParquetQueries(path) if is_parquet(path) else JsonLinesQueries(path)
