"""The settings model: every key and its default (kebab-case keys, as in YAML).

Bounds are not declared here: each lives on the parameter type or stage that carries it
(`core.params.Bound`), and the sections nest those types or name their bounds.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from connectors.chunk_writer_port import DEFAULT_WRITE_BATCH, WRITE_BATCH
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.embedded.layout import IndexKind
from connectors.embedded.vector_search import HnswParams
from connectors.embedder_port import EMBEDDER_DIM
from connectors.embedders.model_location import MINILM
from connectors.embedders.sentence_transformer import (
    AUTO,
    BACKENDS,
    DEFAULT_BACKEND,
    auto_backend,
    unavailable,
)
from core.params import Bound, Duration, Real, Whole, kebab
from core.stemmer import DEFAULT_STEMMER, StemmerName
from stages.projection import ProjectionBudget
from stages.recall import DEFAULT_SEARCH_BATCH, RETRIEVE_K, SEARCH_BATCH
from stages.steps.dedup import DedupKey
from stages.steps.fusion import RRF_K, RetrieverFamily, RrfSettings, Weight
from stages.steps.mmr import MMR_LAMBDA, MMR_TOP
from stages.steps.per_doc_cap import MAX_CHUNKS_PER_DOCUMENT
from stages.steps.rerank import RERANK_TOP
from stages.steps.top_n import RETURN_N
from stages.sub_queries import DEFAULT_MAX_SUB_QUERIES, MAX_SUB_QUERIES, RecallMode

_log = logging.getLogger(__name__)


class Section(BaseModel):
    """A settings section: frozen, kebab-case keys only, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=kebab,
                              populate_by_name=False)


class RecallSettings(Section):
    """`rag.recall.*`: which retrievers run, and how hybrid recall fuses them."""

    mode: RecallMode = "dense"
    rrf_k: Annotated[Whole, RRF_K] = 60
    weights: dict[RetrieverFamily, Weight] = Field(default_factory=dict)

    def rrf(self) -> RrfSettings:
        return RrfSettings(self.rrf_k, {str(k): v for k, v in self.weights.items()})


class MmrSettings(Section):
    """`rag.mmr.*`: the Mmr step (on when the section is given)."""

    lambda_: Annotated[Real, MMR_LAMBDA] = Field(0.5, alias="lambda")
    top: Annotated[Whole, MMR_TOP] | None = None
    """How many candidates it keeps (None: `rag.return-n`)."""


class RerankSettings(Section):
    """`rag.rerank.*`: the Rerank step (on when the section is given)."""

    kind: Literal["cross-encoder"] = "cross-encoder"
    model: Annotated[str, Field(min_length=1)]
    top: Annotated[Whole, RERANK_TOP] = 20
    batch_size: Annotated[Whole, Bound("rag.rerank.batch-size", ge=1, le=4096)] = 32


class RagSettings(Section):
    """`rag.*`: recall width, evidence count and the per-document cap. A legacy `top-k` fills
    in whichever of `retrieve-k` and `return-n` is absent."""

    retrieve_k: Annotated[Whole, RETRIEVE_K] = 20
    return_n: Annotated[Whole, RETURN_N] = 5
    top_k: Annotated[Whole, Bound("rag.top-k", ge=1, le=10_000)] | None = None
    max_chunks_per_document: Annotated[Whole, MAX_CHUNKS_PER_DOCUMENT] = 2
    min_score: Real | None = None
    max_sub_queries: Annotated[Whole, MAX_SUB_QUERIES] = DEFAULT_MAX_SUB_QUERIES
    dedup_key: DedupKey = "evidence-key"
    recall: RecallSettings = RecallSettings()
    mmr: MmrSettings | None = None
    rerank: RerankSettings | None = None

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

    @model_validator(mode="after")
    def _warn_when_recall_is_narrower_than_the_return(self) -> RagSettings:
        if self.retrieve_k < self.return_n:
            _log.warning("rag.retrieve-k=%d is below rag.return-n=%d: at most %d blocks per "
                         "sub-query can be returned", self.retrieve_k, self.return_n,
                         self.retrieve_k)
        return self

    @model_validator(mode="after")
    def _mmr_needs_a_query_vector(self) -> RagSettings:
        if self.mmr is not None and self.recall.mode == "lexical":
            raise ValueError("rag.mmr measures relevance by the query's vector, and "
                             "rag.recall.mode=lexical embeds no query: use dense or hybrid")
        return self


class EmbeddedStoreSettings(Section):
    """`search.embedded.*`: where the store is; `index` is the kind `index` builds and `run`
    expects (exact `flat`, or approximate `hnsw` for big stores); `stemmer` is the language
    `index` stems the lexical index in (`run` reads it from the store)."""

    path: str = "data/store"
    index: IndexKind = "flat"
    hnsw: HnswParams = HnswParams()
    stemmer: StemmerName = DEFAULT_STEMMER


BackendName = Literal["embedded", "elasticsearch"]
BACKEND_NAMES = get_args(BackendName)
"""The backends of `pipeline/config/backends.py`'s registry, which checks that they agree."""
RENAMED_KEYS = {("elasticsearch", "bulk-chunk-size"): "write-batch-size"}
"""`search.*` keys that were renamed, and their new names: the old ones are still read, with a
warning."""


class SearchSettings(Section):
    backend: BackendName = "embedded"
    batch_size: Annotated[Whole, SEARCH_BATCH] = DEFAULT_SEARCH_BATCH
    write_batch_size: Annotated[Whole, WRITE_BATCH] = DEFAULT_WRITE_BATCH
    embedded: EmbeddedStoreSettings = EmbeddedStoreSettings()
    elasticsearch: ElasticsearchConfig = ElasticsearchConfig()

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys_read(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for (section, old), new in RENAMED_KEYS.items():
            spelled = data.get(section)
            if isinstance(spelled, dict) and old in spelled:
                _log.warning("search.%s.%s is deprecated: it is search.%s now", section, old,
                             new)
                data[section] = {k: v for k, v in spelled.items() if k != old}
                data.setdefault(new, spelled[old])
        return data

    @field_validator("elasticsearch", mode="before")
    @classmethod
    def _elasticsearch_as_spelled(cls, data: Any) -> Any:
        return ElasticsearchConfig.settings_input(data)

    @model_validator(mode="after")
    def _one_write_batch(self) -> SearchSettings:
        if self.elasticsearch.bulk_chunk_size != self.write_batch_size:
            es = dataclasses.replace(self.elasticsearch, bulk_chunk_size=self.write_batch_size)
            object.__setattr__(self, "elasticsearch", es)  # frozen; set once, while validating
        return self


class EmbedderSettings(Section):
    """`embedder.*`: the hashing fallback, or a local sentence-transformers model. `auto`
    values are resolved when the settings are read: `kind: auto` is the model where it can run,
    else the hashing fallback with a warning naming the extra to install; `backend: auto` is
    onnx where the model has ONNX weights, else torch where it is installed."""

    kind: Literal["auto", "hashing", "sentence-transformers"] = "hashing"
    model: str | None = None
    backend: Literal["auto", "onnx", "torch"] = "auto"
    dim: Annotated[Whole, EMBEDDER_DIM] | None = None
    batch_size: Annotated[Whole, Bound("embedder.batch-size", ge=1, le=4096)] = 64
    query_prefix: str = ""
    document_prefix: str = ""
    normalize: bool = True

    @model_validator(mode="before")
    @classmethod
    def _auto_resolved(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kind, backend = data.get("kind", "hashing"), data.get("backend", AUTO)
        model = data.get("model") or MINILM
        if kind not in ("auto", "sentence-transformers") or not isinstance(model, str):
            # no model runs (or a value its field names): the backend is not used
            return {**data, "backend": DEFAULT_BACKEND} if backend == AUTO else data
        if backend == AUTO:
            backend = auto_backend(model)
        if kind == "sentence-transformers":
            return {**data, "backend": backend}
        reason = unavailable(model, backend) if backend in BACKENDS else None
        if reason is None:
            _log.info("embedder.kind=auto: sentence-transformers %s on %s", model, backend)
            return {**data, "kind": "sentence-transformers", "model": model, "backend": backend}
        _log.warning("embedder.kind=auto: the hashing embedder, which matches words, not "
                     "meaning, because %s cannot run here (%s)", model, reason)
        return {**data, "kind": "hashing", "backend": backend}

    @model_validator(mode="after")
    def _model_named_when_needed(self) -> EmbedderSettings:
        if self.kind == "sentence-transformers" and not self.model:
            raise ValueError("embedder.model is required when embedder.kind is "
                             "sentence-transformers (a model directory, or a cached model's name)")
        return self


class ChunkingSettings(Section):
    """`chunking.*`: how `index --docs` cuts documents (see `pipeline/ingest/chunking.py`):
    chunks of at most `max-chars` characters, consecutive ones sharing `overlap`."""

    max_chars: Annotated[Whole, Bound("chunking.max-chars", ge=50)] = 800
    overlap: Annotated[Whole, Bound("chunking.overlap", ge=0)] = 0

    @model_validator(mode="after")
    def _overlap_below_the_size(self) -> ChunkingSettings:
        if self.overlap >= self.max_chars:
            raise ValueError(f"chunking.overlap={self.overlap} must be less than "
                             f"chunking.max-chars={self.max_chars}")
        return self


class JobSettings(Section):
    """How long a job may run, and whether a run with `--snapshot` keeps its state."""

    max_wall_time: Duration | None = None
    keep_state: bool = True


FOLDED: dict[tuple[str, ...], tuple[str, ...]] = {
    ("search", "elasticsearch", "retry"): ("search", "elasticsearch")}
"""Sections that settings spell flat in their parent (`search.elasticsearch.max-attempts`)."""


class Settings(Section):
    """All of rag-evidence's settings. Precedence: defaults < YAML < environment < --set."""

    rag: RagSettings = RagSettings()
    search: SearchSettings = SearchSettings()
    projection: ProjectionBudget = ProjectionBudget()
    embedder: EmbedderSettings = EmbedderSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    job: JobSettings = JobSettings()
