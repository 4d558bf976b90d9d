"""Continue: a standing query answered from the previous run's kept candidates and the store's
changes alone, exactly as a search of the whole store would answer it.

For each sub-query, the kept list without the chunks that were deleted or rewritten, with the
chunks that were added or rewritten, is searched exactly (`ContinuablePort.search_among`),
above the list's bound: every chunk outside both scores at most the bound, so the hits above it
are the store's true top, in the store's order. A BM25 list's bound is raised first
(`RaisedBound`): every BM25 score moves with the store's statistics, by a bounded factor, and
its kept chunks are scored again with tonight's. The query is then:
- unchanged: its top `retrieve-k` per sub-query is the same chunks with the same scores, none
  of them rewritten; the previous result stands, and no stage runs again;
- moved: the hits go on to the chain, as a recall would have given them;
- run out: fewer than `retrieve-k` hits stand above the bound (too many kept chunks left);
  it is recalled from the whole store, with its kept vector (never embedded again).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Container, Iterator, Sequence

import apache_beam as beam
from apache_beam import pvalue

from connectors.search_port import (
    ChunkHits,
    ContinuablePort,
    KnowledgeSearchPort,
    PortFactory,
    SearchRequest,
    can,
)
from core.errors import KnowledgeSearchError, RagEvidenceError
from stages.candidate_state import (
    NO_BOUND,
    asked_width,
    joined,
    recalled_list,
)
from stages.models import Continuation, QueryHits, RecalledList
from stages.sub_queries import (
    DEFAULT_MAX_SUB_QUERIES,
    RecallMode,
    SubQuery,
    resolve_sub_queries,
)
from stages.support import counters
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import GuardedDoFn
from stages.transforms.recall import STATE

_log = logging.getLogger(__name__)
UNCHANGED = "unchanged"
"""The tag of the previous results that stand (`RawResult`: copied as PREV holds them)."""
RECALL = "recall"
"""The tag of the queries to recall from the whole store (`EmbeddedQuery`)."""
PREVIOUS = "previous"
"""The tag of the previous results of the queries that moved or are recalled (`RawResult`):
what their new results are compared with."""

Outcome = QueryHits | pvalue.TaggedOutput


RaisedBound = Callable[[str, float], float]
"""A kept BM25 list's bound (given its query's text) raised to what an unchanged chunk it left
out can score tonight: BM25 scores move with the store's statistics
(`pipeline.run.lexical_change`)."""


def continue_batch(batch: Sequence[Continuation], port: KnowledgeSearchPort,
                   removed: frozenset[str], entered: Sequence[str], retrieve_k: int,
                   max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES, mode: RecallMode = "dense",
                   raised: RaisedBound | None = None) -> list[Outcome]:
    """Each continued query's outcome (see the module): its hits cut to `retrieve_k` (main)
    and its new state (`STATE`), or its previous result (`UNCHANGED`) and its new state, or
    itself to recall (`RECALL`). One port call for the whole batch. A BM25 list is searched
    above its bound as `raised` raises it (none given: its query is recalled)."""
    return [outcome for outcomes in continue_each(batch, port, removed, entered, retrieve_k,
                                                  max_sub_queries, mode, raised)
            for outcome in outcomes]


def continue_each(batch: Sequence[Continuation], port: KnowledgeSearchPort,
                  removed: frozenset[str], entered: Sequence[str], retrieve_k: int,
                  max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES, mode: RecallMode = "dense",
                  raised: RaisedBound | None = None) -> list[list[Outcome]]:
    """`continue_batch`'s outcomes, query by query."""
    asked = asked_width(retrieve_k)
    requests: list[SearchRequest] = []
    among: list[list[str]] = []
    above: list[float] = []
    planned: list[list[tuple[RecalledList, SubQuery]] | None] = []
    for item in batch:
        lists = _lists_in_order(item, max_sub_queries, mode)
        planned.append(lists)
        for kept, sub in lists or ():
            requests.append(SearchRequest.model_construct(
                vector=sub.vector, text=sub.text, k=asked, filters=item.query.filters))
            among.append([i for i in kept.ids if i not in removed])
            above.append(kept.bound if sub.text is None else
                         raised(sub.text, kept.bound) if raised is not None else math.inf)
    outcomes = _search_among(port, requests, among, above, entered)
    answered: list[list[Outcome]] = []
    at = 0
    for item, lists in zip(batch, planned, strict=True):
        if lists is None:
            answered.append(_recall(item, counters.FULL_QUERY_CHANGED))
            continue
        found = outcomes[at:at + len(lists)]
        bounds = above[at:at + len(lists)]
        at += len(lists)
        if math.inf in bounds:  # a BM25 list with no statistics to raise its bound by
            answered.append(_recall(item, counters.FULL_CONTINUE_FAILED))
            continue
        answered.append(_answer(item, [(k, s.text is not None) for k, s in lists], bounds,
                                found, removed, retrieve_k))
    return answered


def _lists_in_order(item: Continuation, max_sub_queries: int, mode: RecallMode
                    ) -> list[tuple[RecalledList, SubQuery]] | None:
    """The kept list and sub-query of each of the query's sub-queries, or None when the
    state's sub-queries are not the query's (a continuation is made only of a query whose
    fingerprint is its state's: see `pipeline.run.continued_queries`)."""
    subs = resolve_sub_queries(item.embedded, mode, max_sub_queries)
    if isinstance(subs, RagEvidenceError):
        return None
    kept = {k.reason: k for k in item.state.lists}
    if [s.reason for s in subs] != [k.reason for k in item.state.lists]:
        return None
    return [(kept[s.reason], s) for s in subs]


def _search_among(port: KnowledgeSearchPort, requests: list[SearchRequest],
                  among: list[list[str]], above: list[float], entered: Sequence[str]
                  ) -> list[ChunkHits | KnowledgeSearchError]:
    if not requests:
        return []
    if not can(port, "search_among"):
        return [KnowledgeSearchError("the store cannot search among named chunks")] * len(
            requests)
    try:
        continuable: ContinuablePort = port  # type: ignore[assignment]
        return continuable.search_among(requests, among, above, entered)
    except KnowledgeSearchError as error:
        _log.warning("continuing a batch of %d requests failed (recalled instead): %s",
                     len(requests), error)
        return [error] * len(requests)


def _answer(item: Continuation, kept: list[tuple[RecalledList, bool]], bounds: list[float],
            found: Sequence[ChunkHits | KnowledgeSearchError], removed: frozenset[str],
            retrieve_k: int) -> list[Outcome]:
    """A query's outcome from its lists' hits above `bounds` (`kept`: each list, and whether
    it is a BM25 list)."""
    asked = asked_width(retrieve_k)
    lists: list[tuple[str, ChunkHits]] = []
    states: list[RecalledList] = []
    same = True
    for (old, _), bound, hits in zip(kept, bounds, found, strict=True):
        if isinstance(hits, KnowledgeSearchError):
            return _recall(item, counters.FULL_CONTINUE_FAILED)
        made = recalled_list(old.reason, hits, asked, bound)
        if made is None:
            return _recall(item, counters.FULL_CONTINUE_FAILED)
        state, held = made
        if held < retrieve_k and state.bound != NO_BOUND:
            return _recall(item, counters.FULL_RAN_OUT)
        top = hits.part(0, min(held, retrieve_k))
        lists.append((old.reason, top))
        states.append(state)
        same = same and same_top(old, top.ids, top.scores, removed, retrieve_k)
    new_state = item.state._replace(lists=tuple(states))
    counters.count(counters.QUERIES_CONTINUED)
    counters.count(counters.LEXICAL_LISTS_CONTINUED, sum(lexical for _, lexical in kept))
    if same:
        counters.count(counters.CONTINUED_UNCHANGED)
        counters.count(counters.EVIDENCE_UNCHANGED)
        return [pvalue.TaggedOutput(UNCHANGED, item.previous),
                pvalue.TaggedOutput(STATE, new_state)]
    moved = joined(item.query.id, lists)
    counters.count(counters.CANDIDATES, len(moved.reasons))
    return [moved, pvalue.TaggedOutput(STATE, new_state),
            pvalue.TaggedOutput(PREVIOUS, item.previous)]


def same_top(old: RecalledList, ids: Sequence[str | None], scores: Sequence[float],
             removed: Container[str], retrieve_k: int) -> bool:
    """Whether a sub-query's top `retrieve_k` (`ids`, `scores`) is the one it kept: same
    chunks, same scores, none of them rewritten since."""
    before = old.ids[:retrieve_k]
    return (tuple(ids) == before and tuple(scores) == old.scores[:retrieve_k]
            and not any(i in removed for i in before))


def _recall(item: Continuation, reason: str) -> list[Outcome]:
    counters.count(reason)
    return [pvalue.TaggedOutput(RECALL, item.embedded),
            pvalue.TaggedOutput(PREVIOUS, item.previous)]


class _ContinueDoFn(OwningDoFn[KnowledgeSearchPort], GuardedDoFn):
    output_type = QueryHits

    def __init__(self, port_factory: PortFactory, removed: frozenset[str],
                 entered: tuple[str, ...], retrieve_k: int, max_sub_queries: int,
                 mode: RecallMode, raised: RaisedBound | None) -> None:
        super().__init__(port_factory)
        self._removed, self._entered = removed, entered
        self._retrieve_k, self._max_sub_queries = retrieve_k, max_sub_queries
        self._mode, self._raised = mode, raised

    def setup(self) -> None:
        # each batch tries again, and is recalled in full if it still cannot open it
        with contextlib.suppress(KnowledgeSearchError):
            self.owned()

    def answers(self, batch: list[Continuation]) -> Iterator[Outcome]:
        try:
            port = self.owned()
        except KnowledgeSearchError as error:
            _log.warning("search port unavailable (the batch is recalled instead): %s", error)
            for item in batch:
                yield from _recall(item, counters.FULL_CONTINUE_FAILED)
            return
        yield from continue_batch(batch, port, self._removed, self._entered,
                                  self._retrieve_k, self._max_sub_queries, self._mode,
                                  self._raised)


class Continue(HandlesErrors,
               beam.PTransform[beam.PCollection[Continuation], pvalue.DoOutputsTuple]):
    """Continuation -> QueryHits (main `hits`, cut to `retrieve_k`), QueryState (tag `state`),
    the previous result that stands (tag `unchanged`, raw, counted as evidence_unchanged),
    EmbeddedQuery to recall in full (tag `recall`), and the previous raw result of each query
    that did not stand (tag `previous`); see the module. `removed` and `entered` are the
    store's changes since the state was kept (ids).

    Usage::

        outputs = continuations | Continue(open_port, removed=..., entered=..., retrieve_k=20)
    """

    def __init__(self, port_factory: PortFactory, *, removed: frozenset[str],
                 entered: tuple[str, ...], retrieve_k: int, batch_size: int,
                 max_sub_queries: int = DEFAULT_MAX_SUB_QUERIES, mode: RecallMode = "dense",
                 raised: RaisedBound | None = None) -> None:
        super().__init__()
        self._fn = _ContinueDoFn(port_factory, removed, entered, retrieve_k, max_sub_queries,
                                 mode, raised)
        self._batch_size = batch_size

    def expand(self, items: beam.PCollection[Continuation]) -> pvalue.DoOutputsTuple:
        batches = items | "Batch" >> beam.BatchElements(min_batch_size=self._batch_size,
                                                        max_batch_size=self._batch_size)
        return self._guarded_step(batches, "SearchChanges", self._fn, main="hits",
                                  tags=(STATE, UNCHANGED, RECALL, PREVIOUS))
