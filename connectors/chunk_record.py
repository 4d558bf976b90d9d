"""A chunk as it is written into a store: id, vector, content and metadata."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ChunkRecord(BaseModel):
    """One indexable chunk. `id` is the stored document id (the evidence key when known)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    vector: tuple[float, ...] = Field(min_length=1)
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("vector")
    @classmethod
    def _finite_and_nonzero(cls, vector: tuple[float, ...]) -> tuple[float, ...]:
        if not all(math.isfinite(x) for x in vector):
            raise ValueError("every component must be a finite number (no NaN or inf)")
        if not any(vector):
            raise ValueError("must not be all zeros (cosine similarity is undefined)")
        return vector
