"""Picklable factories that open the configured port and embedder inside a worker."""

from __future__ import annotations

from functools import partial

from connectors.elasticsearch.port import ElasticsearchPort
from connectors.embedded_store import EmbeddedStore
from connectors.embedder_port import EmbedderFactory
from connectors.errors import ConfigError
from connectors.hashing_embedder import HashingEmbedder
from connectors.search_port import PortFactory
from pipeline.settings import Settings
from stages import counters


def port_factory_for(settings: Settings) -> PortFactory:
    """The factory of the port named by `search.backend`."""
    backend = settings.search.backend
    if backend == "embedded":
        return partial(EmbeddedStore.open, settings.search.embedded.path)
    if backend == "elasticsearch":
        return partial(ElasticsearchPort.open, settings.search.elasticsearch.adapter_config(),
                       counters.count)
    raise ConfigError("search.backend", backend, "is not a known backend")


def embedder_factory_for(settings: Settings) -> EmbedderFactory:
    """The factory of the embedder named by `embedder.kind`."""
    return partial(HashingEmbedder, settings.embedder.dim)
