"""Recall: ask the KnowledgeSearchPort for `retrieve-k` candidates per sub-query, in batches."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import apache_beam as beam
from apache_beam import pvalue

from connectors.embedder_port import EmbedderFactory, EmbedderPort
from connectors.errors import KnowledgeSearchError, RagEvidenceError
from connectors.search_port import KnowledgeSearchPort, PortFactory, SearchRequest
from stages import counters
from stages.models import DeadLetter, Query, QueryHits, RecalledHit
from stages.sub_queries import SubQuery, resolve_sub_queries

DEAD_LETTER = "dead_letter"
_log = logging.getLogger(__name__)


def dead_letter(query: Query, stage: str, error: Exception) -> DeadLetter:
    return DeadLetter(stage=stage, error=str(error), query_id=query.id,
                      line_number=query.line_number, input=query.model_dump(exclude_none=True))


def recall_batch(
    queries: Sequence[Query], port: KnowledgeSearchPort, embedder: EmbedderPort, retrieve_k: int
) -> list[QueryHits | DeadLetter]:
    """Recalls one batch: one port call for every sub-query of every query in it."""
    resolved = resolve_sub_queries(queries, embedder)
    requests: list[SearchRequest] = []
    owners: list[tuple[int, SubQuery]] = []
    for i, subs in enumerate(resolved):
        for sub in subs if isinstance(subs, list) else []:
            requests.append(SearchRequest(vector=sub.vector, k=retrieve_k,
                                          filters=queries[i].filters))
            owners.append((i, sub))
    counters.count(counters.SEARCH_REQUESTS, len(requests))
    try:
        outcomes = port.search(requests) if requests else []
    except KnowledgeSearchError as error:
        _log.warning("search batch of %d requests failed: %s", len(requests), error)
        outcomes = [error] * len(requests)
    hits: list[list[RecalledHit] | RagEvidenceError] = [
        s if isinstance(s, RagEvidenceError) else [] for s in resolved
    ]
    for (i, sub), outcome in zip(owners, outcomes, strict=True):
        current = hits[i]
        if isinstance(current, RagEvidenceError):
            continue
        if isinstance(outcome, KnowledgeSearchError):
            hits[i] = outcome
            continue
        start = len(current)
        current.extend(RecalledHit(hit=h, reason=sub.reason, recall_order=start + n)
                       for n, h in enumerate(outcome))
    return [_result(q, h) for q, h in zip(queries, hits, strict=True)]


def _result(query: Query, hits: list[RecalledHit] | RagEvidenceError) -> QueryHits | DeadLetter:
    if isinstance(hits, RagEvidenceError):
        return dead_letter(query, "recall", hits)
    return QueryHits(query_id=query.id, hits=tuple(hits))


class _RecallDoFn(beam.DoFn):
    """Owns the port and the embedder: opened in `setup`, closed in `teardown`."""

    def __init__(self, port_factory: PortFactory, embedder_factory: EmbedderFactory,
                 retrieve_k: int) -> None:
        self._port_factory = port_factory
        self._embedder_factory = embedder_factory
        self._retrieve_k = retrieve_k
        self._port: KnowledgeSearchPort | None = None
        self._embedder: EmbedderPort | None = None

    def setup(self) -> None:
        self._embedder = self._embedder_factory()
        self._open_port()

    def _open_port(self) -> KnowledgeSearchError | None:
        """Opens the port if it is not open; an outage is returned, not raised, so that the
        batch becomes dead letters and the job goes on."""
        if self._port is None:
            try:
                self._port = self._port_factory()
            except KnowledgeSearchError as error:
                _log.warning("search port unavailable: %s", error)
                return error
        return None

    def process(self, batch: list[Query]) -> Iterator[QueryHits | pvalue.TaggedOutput]:
        assert self._embedder is not None
        outage = self._open_port()
        results: list[QueryHits | DeadLetter]
        if self._port is None:
            results = [dead_letter(q, "recall", outage or KnowledgeSearchError("no port"))
                       for q in batch]
        else:
            results = recall_batch(batch, self._port, self._embedder, self._retrieve_k)
        for result in results:
            if isinstance(result, DeadLetter):
                counters.count(counters.DEAD_LETTERS)
                yield pvalue.TaggedOutput(DEAD_LETTER, result)
            else:
                counters.count(counters.CANDIDATES, len(result.hits))
                yield result

    def teardown(self) -> None:
        if self._port is not None:
            self._port.close()
            self._port = None

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_port"] = state["_embedder"] = None
        return state


class Recall(beam.PTransform[beam.PCollection[Query], beam.pvalue.DoOutputsTuple]):
    """Queries -> QueryHits (main output) and DeadLetter (tag `dead_letter`).

    >>> outputs = queries | Recall(port_factory, embedder_factory, retrieve_k=20)  # doctest: +SKIP
    >>> hits, dead_letters = outputs.hits, outputs.dead_letter  # doctest: +SKIP
    """

    def __init__(self, port_factory: PortFactory, embedder_factory: EmbedderFactory, *,
                 retrieve_k: int, batch_size: int = 64) -> None:
        super().__init__()
        self._fn = _RecallDoFn(port_factory, embedder_factory, retrieve_k)
        self._batch_size = batch_size

    def expand(self, queries: beam.PCollection[Query]) -> beam.pvalue.DoOutputsTuple:
        return (
            queries
            | "Batch" >> beam.BatchElements(min_batch_size=self._batch_size,
                                            max_batch_size=self._batch_size)
            | "Search" >> beam.ParDo(self._fn).with_outputs(DEAD_LETTER, main="hits")
        )
