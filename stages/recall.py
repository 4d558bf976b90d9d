"""Recall: ask the KnowledgeSearchPort for `retrieve-k` candidates per sub-query, in batches."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple, cast

from connectors.search_port import (
    ChunkHits,
    ChunkOutcome,
    ColumnPort,
    KnowledgeSearchPort,
    SearchRequest,
    can,
)
from core.errors import KnowledgeSearchError, RagEvidenceError
from core.params import Bound
from stages.candidate_state import joined
from stages.models import DeadLetter, EmbeddedQuery, QueryHits, dead_letter
from stages.sub_queries import (
    DEFAULT_MAX_SUB_QUERIES,
    RecallMode,
    SubQuery,
    resolve_sub_queries,
)
from stages.support import counters

_log = logging.getLogger(__name__)
RETRIEVE_K = Bound("rag.retrieve-k", ge=1, le=10_000)
SEARCH_BATCH = Bound("search.batch-size", ge=1, le=10_000)
DEFAULT_SEARCH_BATCH = 1024
"""Queries per port call: an exact kNN reads every row once per batch, so larger batches cost
less a query, up to the last batches, which fewer searches share (docs/benchmarks.md)."""


def recall_batch(queries: Sequence[EmbeddedQuery], port: KnowledgeSearchPort, retrieve_k: int,
                 mode: RecallMode = "dense", max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES,
                 with_query: bool = False) -> list[QueryHits | DeadLetter]:
    """Recalls one batch: one port call for every sub-query of every query in it. A port that
    reads contents late (`LateContentPort`) answers without them. `with_query`: each hits
    carry their query (for a chain with a step that sees it)."""
    asked = recall_requests(queries, retrieve_k, mode, max_sub_queries)
    return recalled(asked, searched(port, asked), with_query)


class RecallRequests(NamedTuple):
    """A batch's queries, their sub-queries (or why they have none), and one search request
    per sub-query with the query and sub-query it answers."""

    queries: Sequence[EmbeddedQuery]
    resolved: list[list[SubQuery] | RagEvidenceError]
    requests: list[SearchRequest]
    owners: list[tuple[int, SubQuery]]


def recall_requests(queries: Sequence[EmbeddedQuery], retrieve_k: int,
                    mode: RecallMode = "dense", max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES
                    ) -> RecallRequests:
    """What `recall_batch` asks the port for `queries`."""
    RETRIEVE_K.check(retrieve_k)
    resolved = [resolve_sub_queries(q, mode, max_sub_queries) for q in queries]
    requests: list[SearchRequest] = []
    owners: list[tuple[int, SubQuery]] = []
    for i, subs in enumerate(resolved):
        for sub in subs if isinstance(subs, list) else []:
            # built from a validated query and a checked width: not validated again
            requests.append(SearchRequest.model_construct(
                vector=sub.vector, text=sub.text, k=retrieve_k, filters=queries[i].query.filters))
            owners.append((i, sub))
    counters.count(counters.SEARCH_REQUESTS, len(requests))
    return RecallRequests(queries, resolved, requests, owners)


def searched(port: KnowledgeSearchPort, asked: RecallRequests) -> list[ChunkOutcome]:
    """The port's outcome for each request; a failed batch fails each of its requests."""
    try:
        return _search(port, asked.requests) if asked.requests else []
    except KnowledgeSearchError as error:
        _log.warning("search batch of %d requests failed: %s", len(asked.requests), error)
        return [error] * len(asked.requests)


def recalled(asked: RecallRequests, outcomes: list[ChunkOutcome], with_query: bool = False
             ) -> list[QueryHits | DeadLetter]:
    """Each query's hits (or dead letter) from the port's outcomes for `asked`."""
    queries = asked.queries
    found: list[list[tuple[SubQuery, ChunkHits]] | RagEvidenceError] = [
        s if isinstance(s, RagEvidenceError) else [] for s in asked.resolved]
    for (i, sub), outcome in zip(asked.owners, outcomes, strict=True):
        current = found[i]
        if isinstance(current, RagEvidenceError):
            continue
        found[i] = outcome if isinstance(outcome, KnowledgeSearchError) else [
            *current, (sub, outcome)]
    results = [_result(q, f) for q, f in zip(queries, found, strict=True)]
    if with_query:
        return [r._replace(query=q) if isinstance(r, QueryHits) else r
                for q, r in zip(queries, results, strict=True)]
    return results


def _search(port: KnowledgeSearchPort, requests: list[SearchRequest]) -> list[ChunkOutcome]:
    if can(port, "search_chunks"):
        return cast(ColumnPort, port).search_chunks(requests)
    return [outcome if isinstance(outcome, KnowledgeSearchError) else ChunkHits.of(outcome)
            for outcome in port.search(requests)]


def _result(embedded: EmbeddedQuery, found: list[tuple[SubQuery, ChunkHits]] | RagEvidenceError
            ) -> QueryHits | DeadLetter:
    """One query's sub-queries' hits, one after another, as the columns of its QueryHits."""
    if isinstance(found, RagEvidenceError):
        return dead_letter(embedded.query, "recall", found)
    if len(found) == 1:
        sub, hits = found[0]
        return QueryHits(embedded.query.id, hits, [sub.reason] * len(hits),
                         range(1, len(hits) + 1))
    return joined(embedded.query.id, [(sub.reason, hits) for sub, hits in found])
