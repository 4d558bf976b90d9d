"""Our records as JSON lines."""

from __future__ import annotations

import json
import threading
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from stages.models import QueryResult

_Record = TypeVar("_Record", bound=BaseModel)


def to_json_line(record: BaseModel) -> str:
    """One JSON line; text that UTF-8 cannot encode (a lone surrogate) is written escaped."""
    try:
        if type(record) is QueryResult:
            return _result_line(record)
        return record.model_dump_json()
    except (PydanticSerializationError, orjson.JSONEncodeError):
        return json.dumps(record.model_dump(), ensure_ascii=True)


def _result_line(result: QueryResult) -> str:
    """`result.model_dump_json()`, by orjson from the records' fields: the same line (floats
    and escapes alike; a test holds the two to each other), without pydantic's serializer
    walking every block of every result. orjson refuses a lone surrogate, as pydantic does."""
    return orjson.dumps({
        "query_id": result.query_id,
        "evidence": [{**block.__dict__, "retrievers": [r._asdict() for r in block.retrievers]}
                     for block in result.evidence],
        "projected": [item.__dict__ for item in result.projected]}).decode()


class _Last(threading.local):
    record: BaseModel | None = None
    line = ""


_last = _Last()


def shared_json_line(record: BaseModel) -> str:
    """`to_json_line(record)`, encoded once for the sinks that take the same record one after
    another (the snapshot, the state and the results of a fused chain each write a result):
    the last record encoded in this thread is held, and a record is its own key (records are
    frozen; one that is not the same object is encoded anew)."""
    last = _last
    if last.record is not record:
        last.line = to_json_line(record)
        last.record = record
    return last.line


def known_json_line(record: BaseModel, line: str) -> BaseModel:
    """`record`, read from `line` as `to_json_line` wrote it: the next `shared_json_line` of
    it in this thread gives `line` without encoding it again."""
    _last.record, _last.line = record, line
    return record


def read_json_line(model: type[_Record], line: bytes) -> _Record:
    """A record from a line `to_json_line` wrote: one with a lone surrogate is JSON that only
    Python's own parser reads (its escape is not UTF-8)."""
    try:
        return model.model_validate_json(line)
    except ValidationError as error:
        if not any(e["type"] == "json_invalid" for e in error.errors()):
            raise
    return model.model_validate(json.loads(line))


def loads_json_line(line: bytes) -> Any:
    """A line `to_json_line` wrote, as plain values (see `read_json_line`)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)
