"""Query JSONL input: numbered lines in, Query or DeadLetter out."""

from __future__ import annotations

import json
from collections.abc import Iterator

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io.filesystems import FileSystems
from pydantic import ValidationError

from pipeline.validation_messages import describe_validation_error
from stages import counters
from stages.models import DeadLetter, Query

DEAD_LETTER = "dead_letter"
NumberedLine = tuple[int, str]


def read_numbered_lines(path: str) -> Iterator[NumberedLine]:
    """(line number, text) for each non-blank line of `path` (any Beam filesystem)."""
    with FileSystems.open(path) as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.decode("utf-8", errors="replace").strip()
            if text:
                yield number, text


def parse_query_line(line_number: int, text: str) -> Query | DeadLetter:
    """Parses one JSONL line; any problem becomes a DeadLetter naming the field and value."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return DeadLetter(stage="parse", error=f"line is not JSON: {error}",
                          line_number=line_number, input=text)
    if not isinstance(data, dict):
        return DeadLetter(stage="parse", error="line must be a JSON object",
                          line_number=line_number, input=data)
    try:
        return Query.model_validate(data).from_line(line_number)
    except ValidationError as error:
        return DeadLetter(stage="parse", error=describe_validation_error(error),
                          line_number=line_number, query_id=_query_id(data), input=data)


def _query_id(data: dict[str, object]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) else None


class _ParseDoFn(beam.DoFn):
    def process(self, line: NumberedLine) -> Iterator[Query | pvalue.TaggedOutput]:
        counters.count(counters.QUERIES)
        parsed = parse_query_line(*line)
        if isinstance(parsed, DeadLetter):
            counters.count(counters.DEAD_LETTERS)
            yield pvalue.TaggedOutput(DEAD_LETTER, parsed)
        else:
            yield parsed


class ParseQueries(beam.PTransform[beam.PCollection[NumberedLine], pvalue.DoOutputsTuple]):
    """(line number, text) -> Query (main `queries`) and DeadLetter (tag `dead_letter`).

    >>> parsed = lines | ParseQueries()  # doctest: +SKIP
    >>> parsed.queries, parsed.dead_letter  # doctest: +SKIP
    """

    def expand(self, lines: beam.PCollection[NumberedLine]) -> pvalue.DoOutputsTuple:
        return lines | "ParseQueryLines" >> beam.ParDo(_ParseDoFn()).with_outputs(
            DEAD_LETTER, main="queries")


class ReadQueryLines(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[NumberedLine]]):
    """Reads a query JSONL file as numbered lines, keeping line numbers for dead letters."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[NumberedLine]:
        return (begin
                | "QueryFile" >> beam.Create([self._path])
                | "ReadLines" >> beam.FlatMap(read_numbered_lines))
