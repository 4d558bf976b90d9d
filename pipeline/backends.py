"""Picklable factories that open the configured port and embedder inside a worker."""

from __future__ import annotations

from functools import partial

from connectors.embedded_store import EmbeddedStore
from connectors.embedder_port import EmbedderFactory
from connectors.errors import ConfigError
from connectors.hashing_embedder import HashingEmbedder
from connectors.search_port import PortFactory
from pipeline.settings import Settings


def port_factory_for(settings: Settings) -> PortFactory:
    """The factory of the port named by `search.backend`."""
    backend = settings.search.backend
    if backend == "embedded":
        return partial(EmbeddedStore.open, settings.search.embedded.path)
    raise ConfigError("search.backend", backend, "is not available in this build")


def embedder_factory_for(settings: Settings) -> EmbedderFactory:
    """The factory of the embedder named by `embedder.kind`."""
    return partial(HashingEmbedder, settings.embedder.dim)
