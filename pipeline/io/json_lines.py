"""Our records as JSON lines."""

from __future__ import annotations

import json

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError


def to_json_line(record: BaseModel) -> str:
    """One JSON line; text that UTF-8 cannot encode (a lone surrogate) is written escaped."""
    try:
        return record.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(record.model_dump(), ensure_ascii=True)
