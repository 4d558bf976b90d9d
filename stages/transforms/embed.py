"""Embed as a Beam step: `embed_queries` over batches of queries, the model loaded once per
worker process, on the first text."""

from __future__ import annotations

import apache_beam as beam
from apache_beam import pvalue

from connectors.embedder_port import EmbedderPort
from core.errors import RagEvidenceError
from stages.embed import embed_queries, needs_embedding
from stages.models import DeadLetter, EmbeddedQuery, Query
from stages.support.internal_errors import HandlesErrors
from stages.support.per_query import GuardedDoFn
from stages.support.shared_embedder import SharedEmbedder


class _EmbedDoFn(GuardedDoFn):
    output_type = EmbeddedQuery

    def __init__(self, embedder: SharedEmbedder, refusal: str | None) -> None:
        self._embedder = embedder
        self._refusal = refusal

    def answers(self, batch: list[Query]) -> list[EmbeddedQuery | DeadLetter]:
        embedder: EmbedderPort | RagEvidenceError | None = (
            None if self._refusal is None else RagEvidenceError(self._refusal))
        if embedder is None and any(needs_embedding(q) for q in batch):
            embedder = self._load()
        return embed_queries(batch, embedder or _NOT_NEEDED)

    def _load(self) -> EmbedderPort | RagEvidenceError:
        try:
            return self._embedder.acquire()
        except RagEvidenceError as error:
            return error


_NOT_NEEDED = RagEvidenceError("no query of this batch needs the embedder")
"""Stands in for the embedder in a batch of vector queries, so that the model is not loaded."""


class EmbedQueries(HandlesErrors, beam.PTransform[beam.PCollection[Query], pvalue.DoOutputsTuple]):
    """Query -> EmbeddedQuery (main `queries`) and DeadLetter (tag `dead_letter`).

    Texts go to the model `batch_size` at a time; the model is loaded once per worker process,
    on the first text. `refusal`, when set, is the error that dead-letters every query that
    would need the embedder.

    Usage::

        embedded = queries | EmbedQueries(SharedEmbedder(open_model, "minilm"),
                                          batch_size=64)
    """

    def __init__(self, embedder: SharedEmbedder, *, batch_size: int,
                 refusal: str | None = None) -> None:
        super().__init__()
        self._fn = _EmbedDoFn(embedder, refusal)
        self._batch_size = batch_size

    def expand(self, queries: beam.PCollection[Query]) -> pvalue.DoOutputsTuple:
        batches = queries | "Batch" >> beam.BatchElements(min_batch_size=self._batch_size,
                                                          max_batch_size=self._batch_size)
        return self._guarded_step(batches, "EmbedTexts", self._fn, main="queries")
