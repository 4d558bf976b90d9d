"""A chunk as it is written into a store: id, vector, content and metadata."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.input_limits import Vector, check_text


class ChunkRecord(BaseModel):
    """One indexable chunk. `id` is the stored document id (the evidence key when known)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    vector: Vector = Field(min_length=1)
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "content")
    @classmethod
    def _valid_unicode(cls, value: str) -> str:
        return check_text(value)

    @field_validator("metadata")
    @classmethod
    def _metadata_is_valid_unicode(cls, metadata: dict[str, Any]) -> dict[str, Any]:
        _check_strings(metadata)
        return metadata


def _check_strings(value: Any) -> None:
    if isinstance(value, str):
        check_text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key))
            _check_strings(item)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)
