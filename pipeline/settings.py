"""The settings model: every key, its default and its bounds (kebab-case keys, as in YAML)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from connectors.elasticsearch.config import ElasticsearchConfig, RetryPolicy
from connectors.elasticsearch.layouts import PRESETS, LayoutName
from connectors.embedded.layout import IndexKind
from connectors.embedded.vector_search import DEFAULT_HNSW, HnswParams
from stages.dedup import DedupKey
from stages.fusion import RrfSettings
from stages.projection import ProjectionBudget
from stages.sub_queries import DEFAULT_MAX_SUB_QUERIES, RecallMode

_log = logging.getLogger(__name__)


_NUMBERS = (int, float, int | None, float | None)


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class Section(BaseModel):
    """A settings section: frozen, kebab-case keys only, unknown keys rejected, and `true` is
    never a number."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=_kebab,
                              populate_by_name=False)

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_not_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name or ""].annotation
        if isinstance(value, bool) and annotation in _NUMBERS:
            raise ValueError("must be a number, not true or false")
        return value


class RecallSettings(Section):
    """`rag.recall.*`: which retrievers run, and how hybrid recall fuses them."""

    mode: RecallMode = "dense"
    rrf_k: int = Field(60, ge=1)
    weights: dict[Literal["knn", "bm25"], Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict)

    def rrf(self) -> RrfSettings:
        return RrfSettings(self.rrf_k, {str(k): v for k, v in self.weights.items()})


class RagSettings(Section):
    retrieve_k: int = Field(20, ge=1, le=10_000)
    return_n: int = Field(5, ge=1, le=10_000)
    top_k: int | None = Field(None, ge=1, le=10_000)
    max_chunks_per_document: int = Field(2, ge=1)
    max_sub_queries: int = Field(DEFAULT_MAX_SUB_QUERIES, ge=1, le=1024)
    dedup_key: DedupKey = "evidence-key"
    recall: RecallSettings = RecallSettings()

    @model_validator(mode="before")
    @classmethod
    def _legacy_top_k_fills_absent_widths(cls, data: Any) -> Any:
        top_k = data.get("top-k") if isinstance(data, dict) else None
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            return data  # nothing to fill, or a bad top-k that its own field reports
        filled = [k for k in ("retrieve-k", "return-n") if k not in data]
        if filled:
            _log.info("legacy rag.top-k=%s used for %s", data["top-k"], " and ".join(filled))
        return {**{k: data["top-k"] for k in filled}, **data}


_HNSW = DEFAULT_HNSW


class HnswSettings(Section):
    """`search.embedded.hnsw.*`: faiss HNSW parameters (see `HnswParams`)."""

    m: int = Field(_HNSW.m, ge=4, le=256)
    ef_construction: int = Field(_HNSW.ef_construction, ge=8, le=4096)
    ef_search: int = Field(_HNSW.ef_search, ge=1, le=10_000)

    def params(self) -> HnswParams:
        return HnswParams(self.m, self.ef_construction, self.ef_search)


class EmbeddedStoreSettings(Section):
    """`search.embedded.*`: where the store is; `index` is the kind `index` builds and `run`
    expects (exact `flat`, or approximate `hnsw` for big stores)."""

    path: str = "data/store"
    index: IndexKind = "flat"
    hnsw: HnswSettings = HnswSettings()


_ES = ElasticsearchConfig(hosts=("http://localhost:9200",), index="rag-chunks")
_RETRY = _ES.retry


class ElasticsearchSettings(Section):
    """`search.elasticsearch.*`; defaults are the adapter's own (connectors/elasticsearch), and
    `layout` fills in the field names of the index's writer wherever they are not set."""

    hosts: tuple[str, ...] = _ES.hosts
    index: str = Field(_ES.index, min_length=1)
    layout: LayoutName = _ES.layout
    vector_field: str = _ES.vector_field
    content_field: str = _ES.content_field
    metadata_field: str | None = _ES.metadata_field
    filter_fields: tuple[str, ...] = _ES.filter_fields
    num_candidates: int | None = Field(_ES.num_candidates, ge=1, le=10_000)
    similarity: float | None = _ES.similarity
    request_timeout: float = Field(_ES.request_timeout, gt=0)
    verify_certs: StrictBool = _ES.verify_certs
    ca_certs: str | None = _ES.ca_certs
    api_key_env: str = _ES.api_key_env
    username_env: str = _ES.username_env
    password_env: str = _ES.password_env
    credentials_file: str | None = _ES.credentials_file
    max_attempts: int = Field(_RETRY.max_attempts, ge=1, le=20)
    initial_backoff: float = Field(_RETRY.initial_backoff, ge=0)
    max_backoff: float = Field(_RETRY.max_backoff, ge=0)
    index_options: dict[str, Any] = Field(default_factory=lambda: dict(_ES.index_options))
    bulk_chunk_size: int = Field(_ES.bulk_chunk_size, ge=1)
    max_searches_per_request: int = Field(_ES.max_searches_per_request, ge=1, le=10_000)

    @model_validator(mode="before")
    @classmethod
    def _layout_fills_absent_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("layout") not in PRESETS:
            return data  # the default layout, or a bad one that its own field reports
        preset = asdict(PRESETS[data["layout"]])
        return {**{_kebab(k): v for k, v in preset.items()}, **data}

    @field_validator("hosts")
    @classmethod
    def _no_credentials_in_hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        if any("@" in urlsplit(host).netloc for host in hosts):
            raise ValueError(
                "a host URL must not hold credentials (user:password@); set "
                f"{_ES.username_env} and {_ES.password_env}, or {_ES.api_key_env}, on every "
                "machine that runs the job (or name a credentials-file)")
        return hosts

    def adapter_config(self) -> ElasticsearchConfig:
        """The connector's view of these settings."""
        retry_keys = {"max_attempts", "initial_backoff", "max_backoff"}
        retry = RetryPolicy(self.max_attempts, self.initial_backoff, self.max_backoff)
        return ElasticsearchConfig(**self.model_dump(exclude=retry_keys), retry=retry)


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


HASHING_DIM = 384


class EmbedderSettings(Section):
    """`embedder.*`: the hashing fallback, or a local sentence-transformers model."""

    kind: Literal["hashing", "sentence-transformers"] = "hashing"
    model: str | None = None
    dim: int | None = Field(None, ge=2, le=65_536)
    batch_size: int = Field(64, ge=1, le=4096)
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True

    @model_validator(mode="after")
    def _model_named_when_needed(self) -> EmbedderSettings:
        if self.kind == "sentence-transformers" and not self.model:
            raise ValueError("embedder.model is required when embedder.kind is "
                             "sentence-transformers (a model directory, or a cached model's name)")
        return self


class ChunkingSettings(Section):
    max_chars: int = Field(800, ge=50)


class Settings(Section):
    """All of rag-evidence's settings. Precedence: defaults < YAML < environment < --set."""

    rag: RagSettings = RagSettings()
    search: SearchSettings = SearchSettings()
    projection: ProjectionSettings = ProjectionSettings()
    embedder: EmbedderSettings = EmbedderSettings()
    chunking: ChunkingSettings = ChunkingSettings()
