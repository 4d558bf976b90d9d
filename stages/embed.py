"""Embed: the step between Parse and Recall that turns query texts into vectors, in batches."""

from __future__ import annotations

import time
from collections.abc import Sequence

from connectors.embedder_port import EmbedderPort, Purpose
from core.errors import RagEvidenceError
from stages.models import DeadLetter, EmbeddedQuery, Query, dead_letter
from stages.support import counters

Embedded = tuple[float, ...] | RagEvidenceError
"""A text's vector, or the error that stops that text alone."""


def needs_embedding(query: Query) -> bool:
    """A query is embedded only when it carries no vector of its own."""
    return query.vector is None and query.vectors is None


def embed_queries(queries: Sequence[Query], embedder: EmbedderPort | RagEvidenceError
                  ) -> list[EmbeddedQuery | DeadLetter]:
    """Embeds the texts of the queries that need it in one call; the others pass as they are.

    `embedder` may be the error that stops every text (no model, the wrong embedder for the
    store): then the queries that need it become dead letters and the rest go on.
    """
    texts = [q.text or "" for q in queries if needs_embedding(q)]
    vectors = iter(embed_texts(embedder, texts, "query")
                   if not isinstance(embedder, RagEvidenceError) else [embedder] * len(texts))
    out: list[EmbeddedQuery | DeadLetter] = []
    for query in queries:
        if not needs_embedding(query):
            out.append(EmbeddedQuery(query=query))
            continue
        vector = next(vectors)
        out.append(dead_letter(query, "embed", vector) if isinstance(vector, RagEvidenceError)
                   else EmbeddedQuery(query=query, text_vector=vector))
    return out


def not_embedded(query: Query) -> EmbeddedQuery:
    """A query that goes to recall as it is (lexical recall embeds nothing)."""
    return EmbeddedQuery(query=query)


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
