"""One embedder per worker process, shared by its DoFn instances, threads and bundles."""

from __future__ import annotations

import logging
import time

from apache_beam.utils import shared

from connectors.embedder_port import EmbedderFactory, EmbedderPort

_progress = logging.getLogger("rag_evidence.progress")


class SharedEmbedder:
    """Loads the embedder on first use in a process (Beam's `Shared`), never when unused.

    Picklable: it holds the factory and a `Shared` handle; DoFns unpickled from the same
    pipeline share one model per process, as `RunInference` does.
    """

    def __init__(self, factory: EmbedderFactory, tag: str, model: str | None = None) -> None:
        self._factory = factory
        self._tag = tag
        self._model = model
        self._handle = shared.Shared()

    def acquire(self) -> EmbedderPort:
        """The process's embedder; raises what the factory raises when it cannot load. Loading
        a `model` (seconds) is said as it starts and ends."""
        return self._handle.acquire(self._load, tag=self._tag)

    def _load(self) -> EmbedderPort:
        if self._model is None:
            return self._factory()
        _progress.info("loading the model %s (once per worker process)...", self._model)
        started = time.perf_counter()
        embedder = self._factory()
        _progress.info("model %s loaded in %.1f s", self._model, time.perf_counter() - started)
        return embedder
