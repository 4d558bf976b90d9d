"""What the Elasticsearch adapter needs to know; built by the pipeline from its settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, StrictBool

from connectors.chunk_writer_port import DEFAULT_WRITE_BATCH, WRITE_BATCH
from connectors.elasticsearch.layouts import PRESETS, LayoutName
from connectors.retry import RetryPolicy
from core.params import PARAMS_CONFIG, Bound, Real, Whole, check_bounds, kebab
from core.stemmer import DEFAULT_STEMMER, StemmerName

DEFAULT_API_KEY_ENV = "RAG_EVIDENCE_ES_API_KEY"
DEFAULT_USERNAME_ENV = "RAG_EVIDENCE_ES_USERNAME"
DEFAULT_PASSWORD_ENV = "RAG_EVIDENCE_ES_PASSWORD"
RETRY_KEYS = ("max-attempts", "initial-backoff", "max-backoff")


def _no_credentials_in_hosts(hosts: tuple[str, ...]) -> tuple[str, ...]:
    if any("@" in host for host in hosts):  # also `user:pa/ss@host`, whose netloc has no @
        raise ValueError(
            "a host URL must not hold credentials (user:password@); set "
            f"{DEFAULT_USERNAME_ENV} and {DEFAULT_PASSWORD_ENV}, or {DEFAULT_API_KEY_ENV}, on "
            "every machine that runs the job (or name a credentials-file)")
    return hosts


_ES = "search.elasticsearch."
Hosts = Annotated[tuple[str, ...], AfterValidator(_no_credentials_in_hosts)]


@dataclass(frozen=True)
class ElasticsearchConfig:
    """Connection, index layout and search options. Secrets are never held here, only where
    to read them: environment variable names and an optional credentials file. Settings:
    `search.elasticsearch.*` (see `settings_input` for how those keys are read)."""

    __pydantic_config__: ClassVar = PARAMS_CONFIG

    hosts: Hosts = ("http://localhost:9200",)
    index: Annotated[str, Bound(_ES + "index", min_length=1)] = "rag-chunks"
    layout: LayoutName = "rag-evidence"
    vector_field: str = PRESETS["rag-evidence"].vector_field
    content_field: str = PRESETS["rag-evidence"].content_field
    metadata_field: str | None = PRESETS["rag-evidence"].metadata_field
    filter_fields: tuple[str, ...] = PRESETS["rag-evidence"].filter_fields
    num_candidates: Annotated[Whole, Bound(_ES + "num-candidates", ge=1, le=10_000)] | None = None
    similarity: Real | None = None
    request_timeout: Annotated[Real, Bound(_ES + "request-timeout", gt=0)] = 10.0
    verify_certs: StrictBool = True
    ca_certs: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    username_env: str = DEFAULT_USERNAME_ENV
    password_env: str = DEFAULT_PASSWORD_ENV
    credentials_file: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    index_options: dict[str, Any] = field(default_factory=lambda: {"type": "flat"})
    """The vector field's `index_options` when `index` creates the index: exact (`flat`) by
    default, so both backends rank alike; `int8_hnsw` for a big index, approximate."""
    stemmer: StemmerName = DEFAULT_STEMMER
    """The language of the content field's analyzer when `index` creates the index (`english`:
    Elasticsearch's `english` analyzer; `none`: the `standard` analyzer)."""
    bulk_chunk_size: Annotated[Whole, WRITE_BATCH] = DEFAULT_WRITE_BATCH
    """Set from `search.write-batch-size` by the settings."""
    max_searches_per_request: Annotated[Whole, Bound(_ES + "max-searches-per-request",
                                                     ge=1, le=10_000)] = 64

    def __post_init__(self) -> None:
        check_bounds(self)
        _no_credentials_in_hosts(self.hosts)

    @staticmethod
    def settings_input(data: Any) -> Any:
        """The `search.elasticsearch` section as settings spell it, in this type's shape: the
        layout's preset fills the field keys that are not set, and the flat retry keys
        (`max-attempts`, `initial-backoff`, `max-backoff`) form `retry`."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        if data.get("layout") in PRESETS:
            preset = {kebab(k): v for k, v in asdict(PRESETS[data["layout"]]).items()}
            data = {**preset, **data}
        retry = {k: data.pop(k) for k in RETRY_KEYS if k in data}
        if retry and "retry" not in data:
            data["retry"] = retry
        return data

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
