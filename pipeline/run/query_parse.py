"""Query JSONL input: numbered lines in, Query or DeadLetter out."""

from __future__ import annotations

from collections.abc import Mapping
from json import JSONDecodeError
from typing import Any

import apache_beam as beam
import orjson
from apache_beam import pvalue
from pydantic import ValidationError

from core.input_limits import (
    MAX_LINE_BYTES,
    MAX_LINE_CHARS,
    UNREAD,
    is_valid_text,
    loads,
    plain_vector,
)
from pipeline.io.line_blocks import decode_line
from pipeline.io.records import (
    InputRecord,
    OverlongLine,
    Unreadable,
    UnreadableRest,
    unreadable_reason,
)
from pipeline.io.validation_messages import describe_validation_error
from pipeline.run.repeated_ids import repeated_id_letter
from stages.models import DeadLetter, Query
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.per_query import PerQueryDoFn

QUERY_FIELDS = tuple(name for field_name, field in Query.model_fields.items()
                     for name in (field_name, field.alias) if name)
"""The fields a query line may hold: an unknown one gets the nearest as a suggestion."""
_SHOWN_CHARS = 10_000
"""How much of a line that is not JSON a dead letter keeps."""


def parse_query_line(line_number: int, line: str | bytes | dict[str, Any] | Unreadable
                     ) -> Query | DeadLetter:
    """Parses one JSONL line (or a Parquet row, already a dict); any problem becomes a
    DeadLetter naming the field and value (a part the reader could not read, naming why).
    A line is read by orjson once: what is not a plain id-and-vector query goes on to the
    full validation with what orjson read."""
    if type(line) is dict:
        plain = _plain_query(line_number, line)
        return plain if plain is not None else parsed_in_full(line_number, line)
    if type(line) is not bytes or len(line) > MAX_LINE_CHARS:
        return parsed_in_full(line_number, line)
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return parsed_in_full(line_number, line)
    plain = _plain_query(line_number, data)
    return plain if plain is not None else parsed_in_full(line_number, line, data)


def plain_vector_query(line_number: int, line: bytes | dict[str, Any]) -> Query | None:
    """The query of a line (or Parquet row) that holds an id and a vector and nothing else,
    both valid, by checks of its own (`plain_vector`); None for any other line, which
    `parsed_in_full` reads."""
    if isinstance(line, dict):
        return _plain_query(line_number, line)
    if len(line) > MAX_LINE_CHARS:
        return None
    try:
        return _plain_query(line_number, orjson.loads(line))
    except orjson.JSONDecodeError:
        return None


def _plain_query(line_number: int, data: Any) -> Query | None:
    if type(data) is not dict or data.keys() != _ID_AND_VECTOR:
        return None
    query_id, vector = data["id"], plain_vector(data["vector"])
    if vector is None or type(query_id) is not str or not query_id or not is_valid_text(
            query_id):
        return None
    return Query.of_checked_vector(query_id, vector, line_number)


_ID_AND_VECTOR = {"id", "vector"}


def parsed_in_full(line_number: int, line: str | bytes | dict[str, Any] | Unreadable,
                   read: Any = UNREAD) -> Query | DeadLetter:
    """`parse_query_line` by the validation of every field; `read`: orjson's value of the
    line, when it was read already."""
    if isinstance(line, OverlongLine | UnreadableRest):
        return DeadLetter(stage="parse", error=unreadable_reason(line, MAX_LINE_BYTES),
                          line_number=line_number)
    if isinstance(line, dict):
        return _validated(line_number, line)
    try:
        text = decode_line(line)
    except ValueError as error:
        assert isinstance(line, bytes)  # only bytes can fail to decode
        shown = line[:_SHOWN_CHARS].decode("utf-8", errors="backslashreplace")
        return DeadLetter(stage="parse", error=str(error), line_number=line_number, input=shown)
    try:
        data = loads(text, read)
    except ValueError as error:
        # the column within the line: the dead letter has the file's line number already
        reason = (f"line is not JSON: {error.msg} at column {error.pos + 1}"
                  if isinstance(error, JSONDecodeError) else str(error))
        return DeadLetter(stage="parse", error=reason, line_number=line_number,
                          input=text[:_SHOWN_CHARS])
    if not isinstance(data, dict):
        return DeadLetter(stage="parse", error="line must be a JSON object",
                          line_number=line_number, input=data)
    return _validated(line_number, data)


def _validated(line_number: int, data: dict[str, Any]) -> Query | DeadLetter:
    try:
        return Query.of_line(data, line_number)
    except ValidationError as error:
        return DeadLetter(stage="parse", error=describe_validation_error(error, QUERY_FIELDS),
                          line_number=line_number, query_id=_query_id(data), input=data)


def _query_id(data: dict[str, object]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) else None


class _ParseDoFn(PerQueryDoFn):
    output_type = Query

    def answer(self, record: InputRecord, first_lines: Mapping[str, int]) -> Query | DeadLetter:
        if not isinstance(record[1], UnreadableRest):  # the rest of a file is no query
            counters.count(counters.QUERIES)
        parsed = parse_query_line(*record)
        if isinstance(parsed, Query):
            parsed = repeated_id_letter(parsed, first_lines) or parsed
        return parsed


class ParseQueries(HandlesErrors,
                   beam.PTransform[beam.PCollection[InputRecord], pvalue.DoOutputsTuple]):
    """(line number, text or row) -> Query (main `queries`) and DeadLetter (tag
    `dead_letter`). `repeated_ids`, (id, first line) pairs, dead-letters every later query
    holding one of those ids.

    Usage::

        parsed = lines | ParseQueries()
        parsed.queries, parsed.dead_letter
    """

    def __init__(self, repeated_ids: beam.PCollection[tuple[str, int]] | None = None) -> None:
        super().__init__()
        self._repeated_ids = repeated_ids

    def expand(self, lines: beam.PCollection[InputRecord]) -> pvalue.DoOutputsTuple:
        repeated = self._repeated_ids
        if repeated is None:
            repeated = lines.pipeline | "NoRepeatedIds" >> beam.Create([])
        first_lines = beam.pvalue.AsDict(repeated)
        return self._guarded_step(lines, "ParseQueryLines", _ParseDoFn(), first_lines,
                               main="queries")
