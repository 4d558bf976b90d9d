"""Recall as a Beam step: `recall_batch` over batches of queries, with the port owned by the
step from `setup` to `teardown`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import apache_beam as beam

from connectors.search_port import KnowledgeSearchPort, PortFactory
from core.errors import KnowledgeSearchError, RagEvidenceError
from stages.candidate_state import asked_width, kept_state
from stages.models import DeadLetter, EmbeddedQuery, QueryHits, dead_letter
from stages.recall import DEFAULT_SEARCH_BATCH, recall_batch
from stages.sub_queries import DEFAULT_MAX_SUB_QUERIES, RecallMode, resolve_sub_queries
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import GuardedDoFn

_log = logging.getLogger(__name__)


class _RecallDoFn(OwningDoFn[KnowledgeSearchPort], GuardedDoFn):
    """Owns the port from `setup` to `teardown`; a port that cannot be opened dead-letters
    the batch, and is tried again at the next one, so that the job goes on. Answers
    query by query; what it raises fails the whole batch."""

    output_type = QueryHits

    def __init__(self, port_factory: PortFactory, retrieve_k: int, mode: RecallMode,
                 max_sub_queries: int, keeps_state: bool = False,
                 with_query: bool = False) -> None:
        super().__init__(port_factory)
        self._with_query = with_query
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
                                          self._max_sub_queries, self._with_query)
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
            yield cut._replace(query=result.query) if result.query is not None else cut
            if state is not None:
                yield beam.pvalue.TaggedOutput(STATE, state)


STATE = "state"
"""The tag of what a recall that keeps state keeps of each query (`QueryState`)."""


class Recall(HandlesErrors,
             beam.PTransform[beam.PCollection[EmbeddedQuery], beam.pvalue.DoOutputsTuple]):
    """EmbeddedQuery -> QueryHits (main output `hits`) and DeadLetter (tag `dead_letter`);
    with `keeps_state`, recalls deeper and also gives what each query keeps for the next run
    (tag `state`, see `candidate_state`), its hits cut to `retrieve_k` as without;
    `with_query`: each hits carry their query (for a step that sees it).

    Usage::

        outputs = embedded | Recall(port_factory, retrieve_k=20, mode="hybrid")
        hits, dead_letters = outputs.hits, outputs.dead_letter
    """

    def __init__(self, port_factory: PortFactory, *, retrieve_k: int,
                 batch_size: int = DEFAULT_SEARCH_BATCH,
                 mode: RecallMode = "dense",
                 max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES,
                 keeps_state: bool = False, with_query: bool = False) -> None:
        super().__init__()
        self._fn = _RecallDoFn(port_factory, retrieve_k, mode, max_sub_queries, keeps_state,
                               with_query)
        self._batch_size = batch_size

    def expand(self, queries: beam.PCollection[EmbeddedQuery]) -> beam.pvalue.DoOutputsTuple:
        batches = queries | "Batch" >> beam.BatchElements(min_batch_size=self._batch_size,
                                                          max_batch_size=self._batch_size)
        return self._guarded_step(batches, "Search", self._fn, main="hits", tags=(STATE,))
