"""The settings model: every key, its default and its bounds (kebab-case keys, as in YAML)."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from connectors.elasticsearch.config import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_PASSWORD_ENV,
    DEFAULT_USERNAME_ENV,
    ElasticsearchConfig,
    RetryPolicy,
)
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


class ElasticsearchSettings(Section):
    hosts: tuple[str, ...] = ("http://localhost:9200",)
    index: str = Field("rag-chunks", min_length=1)
    vector_field: str = "embedding"
    content_field: str = "content"
    metadata_field: str | None = "metadata"
    filter_fields: tuple[str, ...] = ("docId", "source")
    num_candidates: int | None = Field(None, ge=1, le=10_000)
    similarity: float | None = None
    request_timeout: float = Field(10.0, gt=0)
    verify_certs: bool = True
    ca_certs: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    username_env: str = DEFAULT_USERNAME_ENV
    password_env: str = DEFAULT_PASSWORD_ENV
    credentials_file: str | None = None
    max_attempts: int = Field(4, ge=1, le=20)
    initial_backoff: float = Field(0.2, ge=0)
    max_backoff: float = Field(5.0, ge=0)
    index_options: dict[str, Any] = Field(default_factory=lambda: {"type": "int8_hnsw"})
    bulk_chunk_size: int = Field(500, ge=1)

    def adapter_config(self) -> ElasticsearchConfig:
        """The connector's view of these settings."""
        return ElasticsearchConfig(
            hosts=self.hosts, index=self.index, vector_field=self.vector_field,
            content_field=self.content_field, metadata_field=self.metadata_field,
            filter_fields=self.filter_fields, num_candidates=self.num_candidates,
            similarity=self.similarity, request_timeout=self.request_timeout,
            verify_certs=self.verify_certs, ca_certs=self.ca_certs,
            api_key_env=self.api_key_env, username_env=self.username_env,
            password_env=self.password_env, credentials_file=self.credentials_file,
            retry=RetryPolicy(self.max_attempts, self.initial_backoff, self.max_backoff),
            index_options=dict(self.index_options), bulk_chunk_size=self.bulk_chunk_size)


class SearchSettings(Section):
    backend: Literal["embedded", "elasticsearch"] = "embedded"
    batch_size: int = Field(64, ge=1, le=10_000)
    embedded: EmbeddedStoreSettings = EmbeddedStoreSettings()
    elasticsearch: ElasticsearchSettings = ElasticsearchSettings()


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
