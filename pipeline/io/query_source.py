"""Where queries come from, decided once from the path: JSON lines (plain or compressed by
Beam's suffix rules) or Parquet. Each kind knows how to read itself on a runner, how to peek
at its first records on the driver, and how to count its records."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from core.errors import InvalidInputError
from pipeline.io.line_blocks import ReadNumberedLines, count_lines, read_numbered_lines
from pipeline.io.parquet import ReadParquetQueries, is_parquet, parquet_rows, read_all_rows
from pipeline.io.query_ids import line_digest
from pipeline.io.records import InputRecord


@dataclass(frozen=True)
class QuerySource(ABC):
    """A query file; `records` are (line or row number, bytes or row) pairs."""

    path: str

    @abstractmethod
    def read(self, wanted: beam.PCollection[tuple[int, Any]] | None = None
             ) -> beam.PTransform:
        """PBegin -> the file's records, split for a runner's workers; only those whose line
        (or row) numbers `wanted` holds as keys, when given."""

    def read_ids(self) -> beam.PTransform:
        """PBegin -> records that hold at least each query's `id` (by default, all of it)."""
        return self.read()

    @abstractmethod
    def read_digests(self) -> beam.PTransform:
        """PBegin -> (line or row number, the id as read or an unreadable part, the digest of
        the whole record or None) per record: what a continued run tells unchanged queries
        by, without parsing them."""

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

    def read(self, wanted: beam.PCollection[tuple[int, Any]] | None = None
             ) -> beam.PTransform:
        if wanted is None:
            return ReadNumberedLines(self.path)
        return _OnlyWanted(ReadNumberedLines(self.path), wanted)

    def read_digests(self) -> beam.PTransform:
        return _Digested(ReadNumberedLines(self.path))

    def records(self) -> Iterator[InputRecord]:
        yield from read_numbered_lines(self.path)

    def count(self) -> int:
        return count_lines(self.path) if FileSystems.exists(self.path) else 0


class ParquetQueries(QuerySource):
    """One row per query; row groups are the blocks a runner spreads."""

    counts_cheaply = True

    def read(self, wanted: beam.PCollection[tuple[int, Any]] | None = None
             ) -> beam.PTransform:
        return ReadParquetQueries(self.path, wanted=wanted)

    def read_digests(self) -> beam.PTransform:
        return ReadParquetQueries(self.path, digests=True)

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


class _OnlyWanted(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[InputRecord]]):
    def __init__(self, read: beam.PTransform, wanted: beam.PCollection[tuple[int, Any]]
                 ) -> None:
        super().__init__()
        self._read, self._wanted = read, wanted

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[InputRecord]:
        return (begin
                | "Records" >> self._read
                | "OnlyWanted" >> beam.Filter(lambda record, wanted: record[0] in wanted,
                                              beam.pvalue.AsDict(self._wanted)))


class _Digested(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[Any]]):
    def __init__(self, read: beam.PTransform) -> None:
        super().__init__()
        self._read = read

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[Any]:
        return begin | "Records" >> self._read | "Digests" >> beam.Map(line_digest)


def query_source(path: str) -> QuerySource:
    """The source that reads `path`, by its name."""
    return ParquetQueries(path) if is_parquet(path) else JsonLinesQueries(path)
