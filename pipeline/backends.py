"""Picklable factories that open the configured port, embedder and chunk target in a worker."""

from __future__ import annotations

from functools import partial

from connectors.chunk_writer_port import ChunkTarget
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.elasticsearch.target import ElasticsearchTarget
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.writer import EmbeddedStoreTarget
from connectors.embedder_port import EmbedderFactory, EmbedderPort
from connectors.embedders.hashing import HashingEmbedder
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from connectors.errors import ConfigError
from connectors.search_port import PortFactory
from pipeline.settings import HASHING_DIM, EmbedderSettings, Settings
from stages import counters


def port_factory_for(settings: Settings) -> PortFactory:
    """The factory of the port named by `search.backend`."""
    backend = settings.search.backend
    if backend == "embedded":
        embedded = settings.search.embedded
        return partial(EmbeddedStore.open, embedded.path, embedded.index, embedded.hnsw.params())
    if backend == "elasticsearch":
        return partial(ElasticsearchPort.open, settings.search.elasticsearch.adapter_config(),
                       counters.count)
    raise ConfigError("search.backend", backend, "is not a known backend")


def chunk_target_for(settings: Settings) -> ChunkTarget:
    """Where `index` writes: the embedded store directory or the Elasticsearch index."""
    if settings.search.backend == "elasticsearch":
        return ElasticsearchTarget(settings.search.elasticsearch.adapter_config())
    embedded = settings.search.embedded
    return EmbeddedStoreTarget(embedded.path, embedded.index, embedded.hnsw.params())


def embedder_factory_for(settings: Settings) -> EmbedderFactory:
    """The factory of the embedder named by `embedder.kind`."""
    return partial(open_embedder, settings.embedder)


def embedder_tag(settings: Settings) -> str:
    """Identifies the configured embedder, so that a worker shares one model per config."""
    return settings.embedder.model_dump_json()


def open_embedder(settings: EmbedderSettings) -> EmbedderPort:
    """Builds the configured embedder (loads the model: seconds for a transformer)."""
    if settings.kind == "sentence-transformers":
        assert settings.model is not None
        return SentenceTransformerEmbedder(
            settings.model, batch_size=settings.batch_size, query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix, normalize=settings.normalize,
            expected_dimension=settings.dim)
    return HashingEmbedder(settings.dim or HASHING_DIM)
