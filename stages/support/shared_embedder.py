"""One embedder per worker process, shared by its DoFn instances, threads and bundles."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from apache_beam.utils import shared

from connectors.embedder_port import EmbedderFactory, EmbedderPort, Purpose
from core.errors import RagEvidenceError
from stages.support import counters

_progress = logging.getLogger("rag_evidence.progress")
Embedded = tuple[float, ...] | RagEvidenceError
"""A text's vector, or the error that stops that text alone."""


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


def embed_texts(embedder: EmbedderPort, texts: Sequence[str],
                purpose: Purpose = "query") -> list[Embedded]:
    """Embeds `texts` in one call, counting texts and milliseconds; when the batch has a text
    the embedder refuses, each text is embedded alone so that only that one fails."""
    if not texts:
        return []
    started = time.perf_counter()
    try:
        matrix = embedder.embed(texts, purpose)
        vectors: list[Embedded] = [tuple(row.tolist()) for row in matrix]
    except RagEvidenceError:
        vectors = [_embed_one(embedder, text, purpose) for text in texts]
    counters.count(counters.TEXTS_EMBEDDED, len(texts))
    counters.count(counters.EMBEDDING_MS, round((time.perf_counter() - started) * 1000))
    return vectors


def _embed_one(embedder: EmbedderPort, text: str, purpose: Purpose) -> Embedded:
    try:
        return tuple(embedder.embed([text], purpose)[0].tolist())
    except RagEvidenceError as error:
        return error
