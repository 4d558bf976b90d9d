"""What the Elasticsearch adapter needs to know; built by the pipeline from its settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connectors.elasticsearch.layouts import LayoutName

DEFAULT_API_KEY_ENV = "RAG_EVIDENCE_ES_API_KEY"
DEFAULT_USERNAME_ENV = "RAG_EVIDENCE_ES_USERNAME"
DEFAULT_PASSWORD_ENV = "RAG_EVIDENCE_ES_PASSWORD"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded attempts with exponential backoff and full jitter."""

    max_attempts: int = 4
    initial_backoff: float = 0.2
    max_backoff: float = 5.0


@dataclass(frozen=True)
class ElasticsearchConfig:
    """Connection, index layout and search options. Secrets are never held here, only where
    to read them: environment variable names and an optional credentials file."""

    hosts: tuple[str, ...]
    index: str
    layout: LayoutName = "rag-evidence"
    vector_field: str = "embedding"
    content_field: str = "content"
    metadata_field: str | None = "metadata"
    filter_fields: tuple[str, ...] = ("docId", "source")
    num_candidates: int | None = None
    similarity: float | None = None
    request_timeout: float = 10.0
    verify_certs: bool = True
    ca_certs: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    username_env: str = DEFAULT_USERNAME_ENV
    password_env: str = DEFAULT_PASSWORD_ENV
    credentials_file: str | None = None
    retry: RetryPolicy = RetryPolicy()
    index_options: dict[str, Any] = field(default_factory=lambda: {"type": "int8_hnsw"})
    bulk_chunk_size: int = 500
    max_searches_per_request: int = 64

    def field_path(self, metadata_key: str) -> str:
        """Where a metadata key lives in `_source`."""
        if self.metadata_field is None:
            return metadata_key
        return f"{self.metadata_field}.{metadata_key}"

    def candidates_for(self, k: int) -> int:
        """`num_candidates` for a request of `k`: configured, else max(10 x k, 100), at most
        10,000 and never below k."""
        wanted = self.num_candidates or max(10 * k, 100)
        return max(k, min(wanted, 10_000))
