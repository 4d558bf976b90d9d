"""The backend registry: each search backend described once (`Backend`), looked up once from
`search.backend` (`backend_of`). Nothing outside this module and the backends' own modules
names a backend; adding one is a module like `embedded_backend.py`, its settings section, and
one entry in `BACKENDS`.

Also the picklable factories that open the configured embedder in a worker."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from connectors import events
from connectors.chunk_writer_port import ChunkTarget
from connectors.embedded.lexical_bound import TonightsStatistics
from connectors.embedder_port import EmbedderFactory, EmbedderInfo, EmbedderPort
from connectors.embedders import hashing, sentence_transformer
from connectors.embedders.hashing import HashingEmbedder
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from connectors.search_port import PortFactory
from connectors.store_changes import StoreMark
from core.errors import ConfigError
from pipeline.config import elasticsearch_backend, embedded_backend
from pipeline.config.settings import BACKEND_NAMES, EmbedderSettings, Settings


@dataclass(frozen=True)
class Backend:
    """What the pipeline needs of one search backend, each a function of the settings."""

    name: str
    """Its `search.backend` value (and its settings section, `search.<name>`)."""
    noun: str
    """What messages call it: "the embedded store"."""
    port_factory: Callable[[Settings], PortFactory]
    """The picklable factory of its `KnowledgeSearchPort`: each worker opens its own."""
    pinned_port_factory: Callable[[Settings], AbstractContextManager[
        tuple[PortFactory, Path | None]]]
    """The port factory bound, for a block, to what the store holds now (and that version's
    folder, for a store that has versions)."""
    chunk_target: Callable[[Settings], ChunkTarget]
    """Where `index` writes."""
    display_name: Callable[[Settings], str]
    """Where it is, in a report's words."""
    identity: Callable[[Settings], str]
    """Where it is, as a cache key: two settings that read the same data give the same one."""
    described: Callable[[Settings, Path | None], dict[str, Any]]
    """What a run's manifest records of it (no secret)."""
    counters: tuple[str, ...] = ()
    """The counters of its own that a run's summary reports."""
    store_mark: Callable[[Settings, Path | None], StoreMark | str] | None = None
    """What a run keeps of the store it reads (given the version folder it reads, if any), from
    which the next run tells what changed since; or why it cannot (None: its runs are never
    continued from PREV's state)."""
    lexical_statistics: Callable[[Settings, Path | None, Callable[[], Iterable[str]]],
                                 TonightsStatistics | str] | None = None
    """The BM25 statistics of the store a run reads (given the version folder it reads, if
    any, and the standing queries' texts, read only when called), which a lexical or hybrid
    night is continued by; or why there are none (None: such nights are never continued)."""


EMBEDDED = Backend(
    "embedded", "the embedded store", embedded_backend.port_factory,
    embedded_backend.pinned_port_factory, embedded_backend.chunk_target,
    embedded_backend.display_name, embedded_backend.identity, embedded_backend.described,
    store_mark=embedded_backend.store_mark,
    lexical_statistics=embedded_backend.lexical_statistics)
ELASTICSEARCH = Backend(
    "elasticsearch", "the Elasticsearch index", elasticsearch_backend.port_factory,
    elasticsearch_backend.pinned_port_factory, elasticsearch_backend.chunk_target,
    elasticsearch_backend.display_name, elasticsearch_backend.identity,
    elasticsearch_backend.described, counters=events.REQUEST_EVENTS,
    store_mark=elasticsearch_backend.store_mark,
    lexical_statistics=elasticsearch_backend.lexical_statistics)
BACKENDS = {backend.name: backend for backend in (EMBEDDED, ELASTICSEARCH)}
assert tuple(BACKENDS) == BACKEND_NAMES, "settings accept exactly the registered backends"


def backend_of(settings: Settings) -> Backend:
    """The backend that `search.backend` names.

    Raises:
        ConfigError: an unknown backend (settings validation refuses one first).
    """
    name = settings.search.backend
    if name not in BACKENDS:
        raise ConfigError("search.backend", name, "is not a known backend")
    return BACKENDS[name]


def port_factory_for(settings: Settings) -> PortFactory:
    """The factory of the configured backend's port (picklable: each worker opens its own port
    with it; nothing is opened here).

    Returns:
        A callable that opens the port; it raises `KnowledgeSearchError` (usually
        `StoreNotFoundError` or `SearchUnavailableError`) when the store cannot be opened.

    >>> from pipeline.config.loader import load_settings
    >>> factory = port_factory_for(load_settings(overrides=["search.embedded.path=s"]))
    >>> factory.func.__qualname__
    'EmbeddedStore.open'
    """
    return backend_of(settings).port_factory(settings)


def pinned_port_factory(settings: Settings) -> AbstractContextManager[
        tuple[PortFactory, Path | None]]:
    """The configured port's factory, bound for the block to the store as it is now: for the
    embedded store, to its current version, held (see `VersionLease`) until the block ends,
    so that every worker of a run reads that one version whatever `index` commits meanwhile.
    Yields the factory and the version's folder (None for Elasticsearch).

    Raises:
        StoreNotFoundError: no embedded store at `search.embedded.path`.
    """
    return backend_of(settings).pinned_port_factory(settings)


def chunk_target_for(settings: Settings) -> ChunkTarget:
    """Where `index` writes: the configured backend's target."""
    return backend_of(settings).chunk_target(settings)


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
            expected_dimension=settings.dim, backend=settings.backend)
    return HashingEmbedder(settings.dim or hashing.DEFAULT_DIMENSION)


def embedder_info(settings: EmbedderSettings) -> EmbedderInfo:
    """What the configured embedder is, without loading a model where its files say it (a
    model whose files do not is loaded)."""
    if settings.kind != "sentence-transformers":
        return HashingEmbedder(settings.dim or hashing.DEFAULT_DIMENSION).info
    assert settings.model is not None
    dimension = sentence_transformer.model_dimension(settings.model, backend=settings.backend)
    if dimension is None or (settings.dim is not None and settings.dim != dimension):
        return open_embedder(settings).info  # loading says what is wrong, or the dimension
    return sentence_transformer.model_info(settings.model, dimension, settings.query_prefix,
                                           settings.document_prefix, settings.normalize,
                                           backend=settings.backend)
