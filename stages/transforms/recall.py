"""Recall as a Beam step: `recall_batch` over batches of queries, with the port owned by the
step from `setup` to `teardown`; batches searched on worker threads where the port allows."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import apache_beam as beam

from connectors.search_port import ChunkOutcome, KnowledgeSearchPort, PortFactory, can
from core.errors import KnowledgeSearchError, RagEvidenceError
from stages.candidate_state import asked_width, kept_state
from stages.models import DeadLetter, EmbeddedQuery, QueryHits, dead_letter
from stages.recall import (
    DEFAULT_SEARCH_BATCH,
    SEARCH_BATCH,
    RecallRequests,
    recall_requests,
    recalled,
    searched,
)
from stages.sub_queries import DEFAULT_MAX_SUB_QUERIES, RecallMode, resolve_sub_queries
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.look_ahead import LookAheadDoFn
from stages.support.owning_dofn import OwningDoFn

_log = logging.getLogger(__name__)


class _RecallDoFn(LookAheadDoFn, OwningDoFn[KnowledgeSearchPort]):
    """Owns the port from `setup` to `teardown`; a port that cannot be opened dead-letters
    the batch, and is tried again at the next one, so that the job goes on. A port that can be
    searched from several threads has its batches searched on worker threads while this one
    answers those before (see `LookAheadDoFn`); what a search raises fails its whole batch."""

    output_type = QueryHits

    def __init__(self, port_factory: PortFactory, retrieve_k: int, mode: RecallMode,
                 max_sub_queries: int, keeps_state: bool = False,
                 with_query: bool = False, batch_size: int = DEFAULT_SEARCH_BATCH) -> None:
        super().__init__(port_factory)
        self._batch_size = batch_size
        self._with_query = with_query
        self._retrieve_k = retrieve_k
        self._keeps_state = keeps_state
        self._mode = mode
        self._max_sub_queries = max_sub_queries

    def setup(self) -> None:
        self._open_port()

    def gathers(self) -> int:
        return self._batch_size

    def _open_port(self) -> KnowledgeSearchPort | KnowledgeSearchError:
        try:
            return self.owned()
        except KnowledgeSearchError as error:
            _log.warning("search port unavailable: %s", error)
            return error

    def parallel_calls(self) -> int:
        """As many searches at once as the port allows (`parallel_searches`), else one at a
        time on the step's thread."""
        port = self._owned
        return port.parallel_searches() if port is not None and can(  # type: ignore[attr-defined]
            port, "parallel_searches") else 0

    def worker_started(self) -> None:
        port = self._owned
        if port is not None and can(port, "on_search_thread"):
            port.on_search_thread()  # type: ignore[attr-defined]

    def started(self, batch: list[EmbeddedQuery]
                ) -> Callable[[], tuple[RecallRequests, list[ChunkOutcome]]
                              | KnowledgeSearchError]:
        port = self._open_port()
        if isinstance(port, KnowledgeSearchError):
            return lambda: port
        asked = asked_width(self._retrieve_k) if self._keeps_state else self._retrieve_k
        requests = recall_requests(batch, asked, self._mode, self._max_sub_queries)
        return partial(_searched, port, requests)

    def finished(self, batch: list[EmbeddedQuery],
                 result: tuple[RecallRequests, list[ChunkOutcome]] | KnowledgeSearchError
                 ) -> list[QueryHits | DeadLetter]:
        if isinstance(result, KnowledgeSearchError):
            return [dead_letter(q.query, "recall", result) for q in batch]
        results: list[Any] = recalled(*result, with_query=self._with_query)
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


def _searched(port: KnowledgeSearchPort, requests: RecallRequests
              ) -> tuple[RecallRequests, list[ChunkOutcome]]:
    return requests, searched(port, requests)


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
        SEARCH_BATCH.check(batch_size)
        self._fn = _RecallDoFn(port_factory, retrieve_k, mode, max_sub_queries, keeps_state,
                               with_query, batch_size)

    def expand(self, queries: beam.PCollection[EmbeddedQuery]) -> beam.pvalue.DoOutputsTuple:
        # the queries are gathered into batches by the step itself (`LookAheadDoFn.gathers`)
        return self._guarded_step(queries, "Search", self._fn, main="hits", tags=(STATE,))
