"""Where results go, decided once from `--out`: a JSON-lines file, a Parquet file, or
`es://INDEX`. Each kind knows its transform, its default dead-letter path, how to count what
it holds, and (files) how to read results back, so that eval, demo and tests use one reader."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.transforms.error_handling import ErrorHandler

from connectors.elasticsearch.config import ElasticsearchConfig
from core.errors import InvalidInputError
from core.input_limits import MAX_LINE_BYTES
from pipeline.io.es_sink import WriteEvidenceToElasticsearch
from pipeline.io.json_lines import read_json_line, shared_json_line, to_json_line
from pipeline.io.parquet import (
    RESULT_SCHEMA,
    is_parquet,
    result_row,
)
from pipeline.io.query_source import QuerySource, query_source
from pipeline.io.records import unreadable_reason
from pipeline.io.single_file_sink import (
    ParquetRows,
    PartFormat,
    TextLines,
    WriteToSingleFile,
    parts_folder,
    write_part,
    write_parts,
)
from stages.models import DeadLetter, QueryResult, RawResult
from stages.support import counters
from stages.support.internal_errors import guarded_step
from stages.support.per_query import PerQueryDoFn

ES_SCHEME = "es://"
DEAD_LETTER_SUFFIX = ".dead-letter.jsonl"


@dataclass(frozen=True)
class ResultSink(ABC):
    """The place `--out` names."""

    location: str

    @property
    def default_dead_letter(self) -> str:
        """Where dead letters go unless `--dead-letter` says."""
        return f"{self.location}{DEAD_LETTER_SUFFIX}"

    @abstractmethod
    def write(self, results: beam.PCollection[QueryResult], errors: ErrorHandler,
              counted: bool = True) -> beam.PCollection[DeadLetter] | None:
        """Writes `results`, counting each unless not `counted` (a second copy); returns the
        dead letters of failed writes, if the kind has any (a record that cannot be encoded
        goes to `errors`)."""

    @abstractmethod
    def count(self) -> int | None:
        """How many results it holds; None when it cannot tell from here."""


class ResultFile(ResultSink):
    """A file of results, readable back: read and counted as a query file of the same format
    is (one reader per format, `query_source`)."""

    def count(self) -> int:
        return self._records().count()

    def write(self, results: beam.PCollection[QueryResult], errors: ErrorHandler,
              counted: bool = True, records: beam.PCollection[RawResult] | None = None,
              parts: ResultParts | None = None,
              written: beam.PCollection[str] | None = None,
              more: Sequence[beam.PCollection[QueryResult]] = ()) -> None:
        """As `ResultSink.write`; `records`, when given, are written too: results as a result
        file held them (read by `read_raw_transform`; a JSON line is copied as it is).
        `written` are part files that other steps wrote with `parts` (see `parts()`); `more`
        are results of other steps, each written into parts of its own (a merge of them
        with `results` would hold them all on the local runner)."""
        parts = parts or self.parts()
        encoded = guarded_step(results, self._ENCODE_LABEL,
                               _Encode(self._encode, counted), errors).main
        extra = [] if written is None else [written]
        for n, others in enumerate(more):
            extra.append(guarded_step(others, f"{self._ENCODE_LABEL}{n + 2}",
                                      _Encode(self._encode, counted), errors).main
                         | f"WriteResultParts{n + 2}" >> write_parts(parts.folder,
                                                                     parts.format))
        if records is not None:
            copied = records | self._COPY_LABEL >> beam.Map(parts.element_of, self.location)
            extra.append(copied | "WriteCopiedParts" >> write_parts(parts.folder, parts.format))
        merged = None
        if extra:
            merged = tuple(extra) | "OtherParts" >> beam.Flatten() if len(extra) > 1 else extra[0]
        encoded | "WriteResults" >> WriteToSingleFile(self.location, parts.format,
                                                      parts.folder, merged)

    def parts(self) -> ResultParts:
        """Where and how steps other than the sink's own write parts of this file (a new
        folder each call: call it once per job)."""
        return ResultParts(parts_folder(self.location), self._format(), self.location)

    _ENCODE_LABEL = "ResultJson"
    _COPY_LABEL = "RecordJson"

    @abstractmethod
    def _encode(self, result: QueryResult) -> Any: ...

    @abstractmethod
    def _format(self) -> PartFormat: ...

    def read(self) -> Iterator[QueryResult]:
        """The results the file holds, in file order."""
        for record in self._records().records():
            yield _as_result(record, self.location)

    def read_transform(self) -> beam.PTransform:
        """PBegin -> the file's results, read on the runner's workers."""
        return _ReadResults(self._records().read(), self.location)

    def read_raw_transform(self) -> beam.PTransform:
        """PBegin -> (query id, the result as the file holds it) per result, each checked to
        be one, read on the runner's workers: what is copied as it is needs no object."""
        return _ReadRawResults(self._records().read(), self.location)

    def _records(self) -> QuerySource:
        return query_source(self.location)


class JsonLinesResults(ResultFile):
    def _encode(self, result: QueryResult) -> str:
        return shared_json_line(result)

    def _format(self) -> PartFormat:
        return TextLines()


class ParquetResults(ResultFile):
    _ENCODE_LABEL = "ResultRow"
    _COPY_LABEL = "RecordRow"

    def _encode(self, result: QueryResult) -> dict[str, Any]:
        return result_row(result)

    def _format(self) -> PartFormat:
        return ParquetRows(RESULT_SCHEMA)


@dataclass(frozen=True)
class ResultParts:
    """A result file's parts folder and format, for steps that write parts of it (the sink
    merges them with its own): a raw result becomes a part's element with `element_of`."""

    folder: str
    format: PartFormat
    location: str

    def element_of(self, raw: RawResult, location: str | None = None) -> Any:
        """A raw result as this file's part holds it: a JSON line copied as it is, or a row."""
        if isinstance(self.format, TextLines):
            return raw if isinstance(raw, bytes) else _json_line_of(raw, self.location)
        return result_row(result_of_raw(raw, location or self.location))

    def write(self, raws: Iterable[RawResult]) -> str:
        """Writes `raws` into a part of their own; returns it."""
        return write_part(self.folder, self.format, (self.element_of(r) for r in raws))


@dataclass(frozen=True)
class ElasticsearchResults(ResultSink):
    """Each result as one document of `index`, `_id` = query id (re-runs overwrite)."""

    config: ElasticsearchConfig = field(default_factory=ElasticsearchConfig)

    @property
    def index(self) -> str:
        return self.location[len(ES_SCHEME):]

    @property
    def default_dead_letter(self) -> str:
        return f"{self.index}{DEAD_LETTER_SUFFIX}"

    def write(self, results: beam.PCollection[QueryResult], errors: ErrorHandler,
              counted: bool = True) -> beam.PCollection[DeadLetter]:
        return results | "WriteResultsToElasticsearch" >> WriteEvidenceToElasticsearch(
            self.config, self.index).with_error_handler(errors)

    def count(self) -> None:
        return None


def result_sink(location: str, config: ElasticsearchConfig | None = None) -> ResultSink:
    """The sink `location` names; `config` is the cluster of an `es://` sink."""
    if location.startswith(ES_SCHEME):
        return ElasticsearchResults(location, config or ElasticsearchConfig())
    if is_parquet(location):
        return ParquetResults(location)
    return JsonLinesResults(location)


def read_results(path: str) -> Iterator[QueryResult]:
    """The results of a result file (JSON lines or Parquet)."""
    sink = result_sink(path)
    if not isinstance(sink, ResultFile):
        raise ValueError(f"{path} is not a result file")
    return sink.read()


class _ReadResults(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[QueryResult]]):
    """A result file's records as QueryResults; a record that is none fails the job, naming
    the file and record (it is no input of this run, but what the output is compared with)."""

    def __init__(self, records: beam.PTransform, location: str) -> None:
        super().__init__()
        self._records, self._location = records, location

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[QueryResult]:
        return (begin
                | "Records" >> self._records
                | "AsResults" >> beam.Map(_as_result, self._location).with_output_types(
                    QueryResult))


class _ReadRawResults(beam.PTransform[beam.pvalue.PBegin,
                                      beam.PCollection[tuple[str, RawResult]]]):
    """A result file's records, each checked to be a result, keyed by query id."""

    def __init__(self, records: beam.PTransform, location: str) -> None:
        super().__init__()
        self._records, self._location = records, location

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[tuple[str, RawResult]]:
        return (begin
                | "Records" >> self._records
                | "Keyed" >> beam.Map(
                    lambda record, where: (_as_result(record, where).query_id, record[1]),
                    self._location))


def result_of_raw(raw: RawResult, location: str) -> QueryResult:
    """A result read raw (`read_raw_transform`) as a QueryResult."""
    return _as_result((0, raw), location)


def _json_line_of(raw: RawResult, location: str) -> str:
    """A raw result as a JSON line: a line is copied as it is (written by `to_json_line`)."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8")
    return to_json_line(result_of_raw(raw, location))


def _as_result(record: tuple[int, Any], location: str) -> QueryResult:
    number, raw = record
    try:
        if isinstance(raw, dict):
            return QueryResult.model_validate(raw)
        if isinstance(raw, bytes):
            return read_json_line(QueryResult, raw)
        raise ValueError(unreadable_reason(raw, MAX_LINE_BYTES))
    except ValueError as error:
        raise InvalidInputError(f"{location}:{number}", "...",
                                f"is not a result record ({error})") from None


class _Encode(PerQueryDoFn):
    """A result as its file holds it (a JSON line, a Parquet row), counted unless a copy."""

    def __init__(self, encode: Callable[[QueryResult], Any], counted: bool) -> None:
        self._encode, self._counted = encode, counted

    def answer(self, result: QueryResult) -> Any:
        encoded = self._encode(result)
        if self._counted:
            counters.count(counters.RESULTS)
        return encoded
