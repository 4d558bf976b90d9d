"""Query JSONL input: numbered lines in, Query or DeadLetter out."""

from __future__ import annotations

from collections.abc import Iterator
from json import JSONDecodeError

import apache_beam as beam
from apache_beam import pvalue
from pydantic import ValidationError

from connectors.input_limits import loads
from pipeline.line_blocks import NumberedLine
from pipeline.validation_messages import describe_validation_error
from stages import counters
from stages.dead_letters import DEAD_LETTER, routed
from stages.internal_errors import HandlesErrors
from stages.models import DeadLetter, Query

_SHOWN_CHARS = 10_000
"""How much of a line that is not JSON a dead letter keeps."""


def decode_line(line: str | bytes) -> str:
    """The text of a line; raises ValueError naming the first byte that is not UTF-8."""
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"line is not valid UTF-8 (byte 0x{line[error.start]:02x} at "
                         f"position {error.start})") from None


def parse_query_line(line_number: int, line: str | bytes) -> Query | DeadLetter:
    """Parses one JSONL line; any problem becomes a DeadLetter naming the field and value."""
    try:
        text = decode_line(line)
    except ValueError as error:
        assert isinstance(line, bytes)  # only bytes can fail to decode
        shown = line[:_SHOWN_CHARS].decode("utf-8", errors="backslashreplace")
        return DeadLetter(stage="parse", error=str(error), line_number=line_number, input=shown)
    try:
        data = loads(text)
    except ValueError as error:
        reason = f"line is not JSON: {error}" if isinstance(error, JSONDecodeError) else str(error)
        return DeadLetter(stage="parse", error=reason, line_number=line_number,
                          input=text[:_SHOWN_CHARS])
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
        yield from routed([parse_query_line(*line)])


class ParseQueries(HandlesErrors,
                   beam.PTransform[beam.PCollection[NumberedLine], pvalue.DoOutputsTuple]):
    """(line number, text) -> Query (main `queries`) and DeadLetter (tag `dead_letter`).

    >>> parsed = lines | ParseQueries()  # doctest: +SKIP
    >>> parsed.queries, parsed.dead_letter  # doctest: +SKIP
    """

    def expand(self, lines: beam.PCollection[NumberedLine]) -> pvalue.DoOutputsTuple:
        return lines | "ParseQueryLines" >> self._guarded(beam.ParDo(_ParseDoFn()).with_outputs(
            DEAD_LETTER, main="queries"))
