"""Picklable factories that open the configured port, embedder and chunk target in a worker.

The Elasticsearch adapters are imported by the functions that return them: the client is slow
to import (with aiohttp and httpx), which every other job (the embedded default among them)
is spared."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from connectors.chunk_writer_port import ChunkTarget
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import VersionLease
from connectors.embedded.writer import EmbeddedStoreTarget
from connectors.embedder_port import EmbedderFactory, EmbedderInfo, EmbedderPort
from connectors.embedders import hashing, sentence_transformer
from connectors.embedders.hashing import HashingEmbedder
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from connectors.errors import ConfigError
from connectors.search_port import PortFactory
from pipeline.config.settings import EmbedderSettings, Settings
from stages import counters


def port_factory_for(settings: Settings) -> PortFactory:
    """The factory of the port that `search.backend` names: the embedded store at
    `search.embedded.path`, or the Elasticsearch index of `search.elasticsearch`. Picklable:
    each worker opens its own port with it (nothing is opened here).

    Returns:
        A callable that opens the port; it raises `KnowledgeSearchError` (usually
        `StoreNotFoundError` or `SearchUnavailableError`) when the store cannot be opened.

    Raises:
        ConfigError: an unknown backend.

    >>> from pipeline.config.loader import load_settings
    >>> factory = port_factory_for(load_settings(overrides=["search.embedded.path=s"]))
    >>> factory.func.__qualname__
    'EmbeddedStore.open'
    """
    backend = settings.search.backend
    if backend == "embedded":
        embedded = settings.search.embedded
        return partial(EmbeddedStore.open, embedded.path, embedded.index, embedded.hnsw,
                       counters.count)
    if backend == "elasticsearch":
        from connectors.elasticsearch.port import ElasticsearchPort

        return partial(ElasticsearchPort.open, settings.search.elasticsearch, counters.count)
    raise ConfigError("search.backend", backend, "is not a known backend")


@contextlib.contextmanager
def pinned_port_factory(settings: Settings) -> Iterator[tuple[PortFactory, Path | None]]:
    """The configured port's factory, bound for the block to the store as it is now: for the
    embedded store, to its current version, held (see `VersionLease`) until the block ends,
    so that every worker of a run reads that one version whatever `index` commits meanwhile.
    Yields the factory and the version's folder (None for Elasticsearch).

    Raises:
        StoreNotFoundError: no embedded store at `search.embedded.path`.
    """
    if settings.search.backend != "embedded":
        yield port_factory_for(settings), None
        return
    embedded = settings.search.embedded
    lease = VersionLease.take(Path(embedded.path))
    try:
        yield partial(EmbeddedStore.open, str(lease.folder), embedded.index,
                      embedded.hnsw, counters.count), lease.folder
    finally:
        lease.release()


def chunk_target_for(settings: Settings) -> ChunkTarget:
    """Where `index` writes: the embedded store directory or the Elasticsearch index."""
    if settings.search.backend == "elasticsearch":
        from connectors.elasticsearch.target import ElasticsearchTarget

        return ElasticsearchTarget(settings.search.elasticsearch, counters.count)
    embedded = settings.search.embedded
    return EmbeddedStoreTarget(embedded.path, embedded.index, embedded.hnsw)


def embedder_factory_for(settings: Settings) -> EmbedderFactory:
    """The factory of the embedder that `embedder.*` configures (picklable; a model is loaded
    only when a worker calls it, once per process through the evidence transform).

    Returns:
        A callable that builds the embedder; it raises `ConfigError` when the model is not on
        this machine or its dimension is not `embedder.dim`.

    >>> from pipeline.config.loader import load_settings
    >>> embedder_factory_for(load_settings(overrides=["embedder.dim=8"]))().dimension
    8
    """
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
    return HashingEmbedder(settings.dim or hashing.DEFAULT_DIMENSION)


def embedder_info(settings: EmbedderSettings) -> EmbedderInfo:
    """What the configured embedder is, without loading a model where its files say it (a
    model whose files do not is loaded)."""
    if settings.kind != "sentence-transformers":
        return HashingEmbedder(settings.dim or hashing.DEFAULT_DIMENSION).info
    assert settings.model is not None
    dimension = sentence_transformer.model_dimension(settings.model)
    if dimension is None or (settings.dim is not None and settings.dim != dimension):
        return open_embedder(settings).info  # loading says what is wrong, or the dimension
    return sentence_transformer.model_info(settings.model, dimension, settings.query_prefix,
                                           settings.document_prefix, settings.normalize)
