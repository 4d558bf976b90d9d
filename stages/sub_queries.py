"""Turns a query into its sub-queries: what to search with, and the reason each one names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.errors import InvalidInputError, RagEvidenceError
from core.params import Bound
from stages.models import EmbeddedQuery

RecallMode = Literal["dense", "lexical", "hybrid"]
LEXICAL_REASON = "bm25:text"
DEFAULT_MAX_SUB_QUERIES = 16
MAX_SUB_QUERIES = Bound("rag.max-sub-queries", ge=1, le=1024)


@dataclass(frozen=True)
class SubQuery:
    """One ranked list to recall: a kNN `vector` or a lexical `text`."""

    reason: str
    vector: tuple[float, ...] | None = None
    text: str | None = None


def resolve_sub_queries(embedded: EmbeddedQuery, mode: RecallMode,
                        max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES
                        ) -> list[SubQuery] | RagEvidenceError:
    """The sub-queries of one query under `mode`, or the error that stops it.

    Dense: each given vector (`knn:vector`, `knn:vectors[i]`), else the embedded text
    (`knn:text`). Lexical: BM25 on the text (`bm25:text`). Hybrid: both. A query with more
    than `max_sub_queries` is refused, so that one query cannot sink its batch.
    """
    given = (query := embedded.query).vector is not None
    count = int(given) + len(query.vectors or ())
    if count > max_sub_queries:
        return InvalidInputError("vectors", f"{count} vectors", f"more than rag.max-sub-queries="
                                 f"{max_sub_queries} sub-queries for one query")
    subs: list[SubQuery] = []
    if mode != "lexical":
        if query.vector is not None:
            subs.append(SubQuery("knn:vector", vector=query.vector))
        subs += [SubQuery(f"knn:vectors[{i}]", vector=v) for i, v in enumerate(query.vectors or ())]
        if not subs and embedded.text_vector is not None:
            subs.append(SubQuery("knn:text", vector=embedded.text_vector))
    has_text = query.text is not None and query.text.strip() != ""
    if mode != "dense" and has_text:
        subs.append(SubQuery(LEXICAL_REASON, text=query.text))
    if not subs:
        needed = "a text" if mode == "lexical" else "a vector or an embedded text"
        return InvalidInputError("text", query.text,
                                 f"rag.recall.mode={mode} needs {needed} to search with")
    return subs
