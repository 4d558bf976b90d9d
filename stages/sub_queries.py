"""Turns a query into its sub-queries: the vectors to search with and the reason each names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from connectors.embedder_port import EmbedderPort
from connectors.errors import RagEvidenceError
from stages.models import Query


@dataclass(frozen=True)
class SubQuery:
    vector: tuple[float, ...]
    reason: str


def resolve_sub_queries(
    queries: Sequence[Query], embedder: EmbedderPort
) -> list[list[SubQuery] | RagEvidenceError]:
    """Sub-queries for each query, or the error that stops that query alone.

    A query with `vector` and/or `vectors` searches with those as given (reasons `knn:vector`,
    `knn:vectors[i]`); otherwise its `text` is embedded (reason `knn:text`).
    """
    texts = [q.text or "" for q in queries if _needs_embedding(q)]
    embedded = iter(_embed_each(texts, embedder))
    resolved: list[list[SubQuery] | RagEvidenceError] = []
    for query in queries:
        if not _needs_embedding(query):
            resolved.append(_given(query))
            continue
        vector = next(embedded)
        resolved.append(vector if isinstance(vector, RagEvidenceError)
                        else [SubQuery(vector, "knn:text")])
    return resolved


def _needs_embedding(query: Query) -> bool:
    return query.vector is None and query.vectors is None


def _given(query: Query) -> list[SubQuery]:
    subs = [SubQuery(query.vector, "knn:vector")] if query.vector is not None else []
    for i, vector in enumerate(query.vectors or ()):
        subs.append(SubQuery(vector, f"knn:vectors[{i}]"))
    return subs


def _embed_each(
    texts: list[str], embedder: EmbedderPort
) -> list[tuple[float, ...] | RagEvidenceError]:
    if not texts:
        return []
    try:
        matrix = embedder.embed(texts)
        return [tuple(float(x) for x in row) for row in matrix]
    except RagEvidenceError:
        return [_embed_one(text, embedder) for text in texts]


def _embed_one(text: str, embedder: EmbedderPort) -> tuple[float, ...] | RagEvidenceError:
    try:
        return tuple(float(x) for x in embedder.embed([text])[0])
    except RagEvidenceError as error:
        return error
