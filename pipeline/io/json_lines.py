"""Our records as JSON lines."""

from __future__ import annotations

import json
import threading

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError


def to_json_line(record: BaseModel) -> str:
    """One JSON line; text that UTF-8 cannot encode (a lone surrogate) is written escaped."""
    try:
        return record.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(record.model_dump(), ensure_ascii=True)


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
