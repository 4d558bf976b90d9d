"""The settings model: every key, its default and its bounds (kebab-case keys, as in YAML)."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stages.projection import ProjectionBudget

_log = logging.getLogger(__name__)


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class Section(BaseModel):
    """A settings section: frozen, kebab-case keys only, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=_kebab,
                              populate_by_name=False)


class RagSettings(Section):
    retrieve_k: int = Field(20, ge=1, le=10_000)
    return_n: int = Field(5, ge=1, le=10_000)
    top_k: int | None = Field(None, ge=1, le=10_000)
    max_chunks_per_document: int = Field(2, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _legacy_top_k_fills_absent_widths(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("top-k") is None:
            return data
        filled = [k for k in ("retrieve-k", "return-n") if k not in data]
        if filled:
            _log.info("legacy rag.top-k=%s used for %s", data["top-k"], " and ".join(filled))
        return {**{k: data["top-k"] for k in filled}, **data}


class EmbeddedStoreSettings(Section):
    path: str = "data/store"


class SearchSettings(Section):
    backend: Literal["embedded", "elasticsearch"] = "embedded"
    batch_size: int = Field(64, ge=1, le=10_000)
    embedded: EmbeddedStoreSettings = EmbeddedStoreSettings()


class ProjectionSettings(Section):
    max_items: int = Field(5, ge=1)
    max_chars: int = Field(6000, ge=1)
    max_chars_per_item: int = Field(2000, ge=1)

    def budget(self) -> ProjectionBudget:
        return ProjectionBudget(self.max_items, self.max_chars, self.max_chars_per_item)


class EmbedderSettings(Section):
    kind: Literal["hashing"] = "hashing"
    dim: int = Field(384, ge=2, le=65_536)


class ChunkingSettings(Section):
    max_chars: int = Field(800, ge=50)


class Settings(Section):
    """All of rag-evidence's settings. Precedence: defaults < YAML < environment < --set."""

    rag: RagSettings = RagSettings()
    search: SearchSettings = SearchSettings()
    projection: ProjectionSettings = ProjectionSettings()
    embedder: EmbedderSettings = EmbedderSettings()
    chunking: ChunkingSettings = ChunkingSettings()
