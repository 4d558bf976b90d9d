"""Recall: ask the KnowledgeSearchPort for `retrieve-k` candidates per sub-query, in batches."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, cast

import apache_beam as beam

from connectors.search_port import (
    ChunkHits,
    ChunkOutcome,
    ColumnPort,
    KnowledgeSearchPort,
    PortFactory,
    SearchRequest,
    can,
)
from core.errors import KnowledgeSearchError, RagEvidenceError
from core.params import Bound
from stages.candidate_state import asked_width, joined, kept_state
from stages.models import DeadLetter, EmbeddedQuery, QueryHits
from stages.sub_queries import (
    DEFAULT_MAX_SUB_QUERIES,
    RecallMode,
    SubQuery,
    resolve_sub_queries,
)
from stages.support import counters
from stages.support.dead_letters import dead_letter
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import GuardedDoFn

_log = logging.getLogger(__name__)
RETRIEVE_K = Bound("rag.retrieve-k", ge=1, le=10_000)
SEARCH_BATCH = Bound("search.batch-size", ge=1, le=10_000)
DEFAULT_SEARCH_BATCH = 256
"""Queries per port call: an exact kNN reads every row once per batch, so larger batches cost
less a query (docs/benchmarks.md)."""


def recall_batch(queries: Sequence[EmbeddedQuery], port: KnowledgeSearchPort, retrieve_k: int,
                 mode: RecallMode = "dense", max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES
                 ) -> list[QueryHits | DeadLetter]:
    """Recalls one batch: one port call for every sub-query of every query in it. A port that
    reads contents late (`LateContentPort`) answers without them."""
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
    try:
        outcomes = _search(port, requests) if requests else []
    except KnowledgeSearchError as error:
        _log.warning("search batch of %d requests failed: %s", len(requests), error)
        outcomes = [error] * len(requests)
    found: list[list[tuple[SubQuery, ChunkHits]] | RagEvidenceError] = [
        s if isinstance(s, RagEvidenceError) else [] for s in resolved]
    for (i, sub), outcome in zip(owners, outcomes, strict=True):
        current = found[i]
        if isinstance(current, RagEvidenceError):
            continue
        found[i] = outcome if isinstance(outcome, KnowledgeSearchError) else [
            *current, (sub, outcome)]
    return [_result(q, f) for q, f in zip(queries, found, strict=True)]


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


class _RecallDoFn(OwningDoFn[KnowledgeSearchPort], GuardedDoFn):
    """Owns the port from `setup` to `teardown`; a port that cannot be opened dead-letters
    the batch, and is tried again at the next one, so that the job goes on. Answers
    query by query; what it raises fails the whole batch."""

    output_type = QueryHits

    def __init__(self, port_factory: PortFactory, retrieve_k: int, mode: RecallMode,
                 max_sub_queries: int, keeps_state: bool = False) -> None:
        super().__init__(port_factory)
        self._retrieve_k = retrieve_k
        self._keeps_state = keeps_state
        self._mode = mode
        self._max_sub_queries = max_sub_queries

    def setup(self) -> None:
        self._open_port()

    def _open_port(self) -> KnowledgeSearchPort | KnowledgeSearchError:
        try:
            return self.owned()
        except KnowledgeSearchError as error:
            _log.warning("search port unavailable: %s", error)
            return error

    def answers(self, batch: list[EmbeddedQuery]) -> list[QueryHits | DeadLetter]:
        port = self._open_port()
        if isinstance(port, KnowledgeSearchError):
            return [dead_letter(q.query, "recall", port) for q in batch]
        asked = asked_width(self._retrieve_k) if self._keeps_state else self._retrieve_k
        results: list[Any] = recall_batch(batch, port, asked, self._mode,
                                          self._max_sub_queries)
        if self._keeps_state:
            results = list(self._with_state(batch, results))
        counters.count(counters.CANDIDATES,
                       sum(len(r.reasons) for r in results if isinstance(r, QueryHits)))
        return results

    def _with_state(self, batch: list[EmbeddedQuery], results: list[QueryHits | DeadLetter]
                    ) -> Iterator[QueryHits | DeadLetter | beam.pvalue.TaggedOutput]:
        """Each query's hits cut to retrieve-k, and what it keeps to tag `state`."""
        for embedded, result in zip(batch, results, strict=True):
            if isinstance(result, DeadLetter):
                yield result
                continue
            subs = resolve_sub_queries(embedded, self._mode, self._max_sub_queries)
            assert not isinstance(subs, RagEvidenceError)  # it was recalled
            cut, state = kept_state(embedded, [s.reason for s in subs], result,
                                    self._retrieve_k)
            yield cut
            if state is not None:
                yield beam.pvalue.TaggedOutput(STATE, state)


STATE = "state"
"""The tag of what a recall that keeps state keeps of each query (`QueryState`)."""


class Recall(HandlesErrors,
             beam.PTransform[beam.PCollection[EmbeddedQuery], beam.pvalue.DoOutputsTuple]):
    """EmbeddedQuery -> QueryHits (main output `hits`) and DeadLetter (tag `dead_letter`);
    with `keeps_state`, recalls deeper and also gives what each query keeps for the next run
    (tag `state`, see `candidate_state`), its hits cut to `retrieve_k` as without.

    Usage::

        outputs = embedded | Recall(port_factory, retrieve_k=20, mode="hybrid")
        hits, dead_letters = outputs.hits, outputs.dead_letter
    """

    def __init__(self, port_factory: PortFactory, *, retrieve_k: int,
                 batch_size: int = DEFAULT_SEARCH_BATCH,
                 mode: RecallMode = "dense",
                 max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES,
                 keeps_state: bool = False) -> None:
        super().__init__()
        self._fn = _RecallDoFn(port_factory, retrieve_k, mode, max_sub_queries, keeps_state)
        self._batch_size = batch_size

    def expand(self, queries: beam.PCollection[EmbeddedQuery]) -> beam.pvalue.DoOutputsTuple:
        batches = queries | "Batch" >> beam.BatchElements(min_batch_size=self._batch_size,
                                                          max_batch_size=self._batch_size)
        return self._guarded_step(batches, "Search", self._fn, main="hits", tags=(STATE,))
