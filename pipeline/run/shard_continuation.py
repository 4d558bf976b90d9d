"""A continued run's first step, one shard at a time: tonight's query ids of the shard (see
`query_shards`) against PREV's state rows of the shard (see `state_shards`).

- A query whose input record has the digest its row holds is the same query: it is not parsed.
  Whether the store's changes touch it is one matrix product for the whole shard: every kept
  list's vector against the entered chunks, scored roughly as `search_among` scores them
  before it scores exactly (`touched`). A query none of whose lists lost a kept chunk, or may
  gain an entered one above its bound, stands as it is: its result line and state row are
  copied as bytes, into files of the shard's own.
- The others are continued here, a batch at a time (`stages.continuation`): those whose top
  did not move stand too, with their new state; the hits of those that moved go on to the
  chain, and those that ran out to a full recall, with their previous results to compare.
- A query whose record changed, whose id repeats, or that PREV has no state for is read and
  parsed as usual (its line number to `PARSE`) and joined with its row by id (`JOIN`), as few
  as they are.
- An id PREV has and tonight does not is gone.

Only the queries that moved leave the step as elements: on the local runner, every element
that crosses a join or a merge of steps is held in memory until the next step runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam import pvalue

from connectors.search_port import ContinuablePort, KnowledgeSearchPort, PortFactory, can
from core.errors import KnowledgeSearchError
from pipeline.io.result_sink import ResultParts
from pipeline.run.continued_audit import ContinuedAudit
from pipeline.run.continued_lists import Continued, continue_lists, list_vectors
from pipeline.run.entered_gains import Gains, entered_gains
from pipeline.run.query_shards import ShardIds
from pipeline.run.state_shards import (
    STATE_SCHEMA,
    KeptRows,
    StateFile,
    bm25_lists,
    one_array,
    starting_at_zero,
    states_of,
    with_lists,
    write_kept,
    write_states,
)
from stages.continuation import PREVIOUS, RECALL, UNCHANGED, RaisedBound, continue_each
from stages.models import Continuation, EmbeddedQuery, QueryState, RawResult, RecalledList
from stages.sub_queries import RecallMode
from stages.support import counters
from stages.support.owning_dofn import OwningDoFn
from stages.transforms.recall import STATE

PARSE = "parse"
"""The tag of the line numbers of the queries to read and parse (`int`)."""
JOIN = "join"
"""The tag of (id, (state or None, previous result)) of the parsed queries PREV has."""
WRITTEN = "written"
"""The tag of the snapshot's parts written here (`str`): the results that stand."""
KEPT = "kept"
"""The tag of the rows of the queries that stand, per shard (`state_shards.KeptRows`)."""
STATES = "states"
"""The tag of the state parts written here (see `shard_parts.PartIndex`): the new states of
the queries that moved, whose results join them later."""
REPEATED = "repeated"
"""The tag of (id, first line) of the ids that more than one line holds."""
GONE = "gone"
"""The tag of PREV's ids that tonight has no query for."""
TAGS = (PARSE, JOIN, WRITTEN, KEPT, STATES, REPEATED, GONE, RECALL, PREVIOUS)


def touched(lists: pa.ListArray, entered: np.ndarray, removed: pa.Array, retrieve_k: int,
            gains: Gains | None = None) -> np.ndarray:
    """For each query (a list of kept lists), whether the store's changes may move its top:
    a kept chunk was removed or rewritten, an entered chunk may score above a list's bound
    (roughly, with `search_among`'s own margin: `gains`, made here when not given), a list
    holds fewer than `retrieve_k` chunks above a bound (it would run out), two of its kept
    chunks score the same (their order is the store's order of rows, which a new version may
    change), or it has a BM25 list (no vector) and the store changed at all."""
    queries = len(lists)
    flat = lists.flatten()
    if not len(flat):
        return np.ones(queries, dtype=bool)
    per_query = np.diff(np.asarray(lists.offsets))
    ids = flat.field("ids")
    sizes = np.diff(np.asarray(ids.offsets))
    bounds = np.asarray(flat.field("bound").to_numpy(zero_copy_only=False), dtype=np.float64)
    hit = np.zeros(len(flat), dtype=bool)
    if len(removed):
        lost = np.asarray(pc.is_in(ids.flatten(), value_set=removed).to_numpy(
            zero_copy_only=False), dtype=np.int64)
        owner = np.repeat(np.arange(len(flat)), sizes)
        hit |= np.bincount(owner, weights=lost, minlength=len(flat)) > 0
    hit |= (sizes < retrieve_k) & np.isfinite(bounds)
    hit |= _has_ties(flat.field("scores"))
    if len(removed) or len(entered):
        # a BM25 list's every score moves with the store's statistics
        hit |= bm25_lists(flat)
    if len(entered):
        found = gains if gains is not None else entered_gains(lists, entered)
        hit |= found.unusable
        hit[found.lists] = True
    owner = np.repeat(np.arange(queries), per_query)
    return (np.bincount(owner, weights=hit.astype(np.int64), minlength=queries) > 0) | (
        per_query == 0)


def _has_ties(scores: pa.ListArray) -> np.ndarray:
    offsets = starting_at_zero(scores.offsets)
    values = scores.flatten().to_numpy(zero_copy_only=False)
    same = np.flatnonzero(values[1:] == values[:-1]) + 1  # ties with the score before
    tied = np.zeros(len(offsets) - 1, dtype=bool)
    if len(same):
        owner = np.searchsorted(offsets, same, side="right") - 1
        first = np.isin(same, offsets)  # a list's first score has no score before in it
        tied[owner[~first]] = True
    return tied


class ContinueShardsDoFn(OwningDoFn[KnowledgeSearchPort]):
    """(shard, ShardIds) -> QueryHits of the queries that moved (main), and the outputs of
    the module's tags."""

    def __init__(self, port_factory: PortFactory, state_path: str, removed: frozenset[str],
                 entered: tuple[str, ...], retrieve_k: int, max_sub_queries: int,
                 batch_size: int, kept_dir: str | None, snapshot: ResultParts | None,
                 audit_rate: float = 0.0, mode: RecallMode = "dense",
                 raised: RaisedBound | None = None) -> None:
        super().__init__(port_factory)
        self._mode, self._raised = mode, raised
        self._state_path, self._removed, self._entered = state_path, removed, entered
        self._retrieve_k, self._max_sub_queries = retrieve_k, max_sub_queries
        self._batch_size, self._kept_dir, self._snapshot = batch_size, kept_dir, snapshot
        self._audit = ContinuedAudit(audit_rate, retrieve_k)
        self._state: StateFile | None = None
        self._entered_vectors: np.ndarray | None = None
        self._removed_array: pa.Array | None = None

    def setup(self) -> None:
        # a shard that still cannot open it continues its queries one by one, which
        # recalls them in full
        with contextlib.suppress(KnowledgeSearchError):
            self.owned()

    def process(self, element: tuple[int, ShardIds]) -> Iterator[Any]:
        shard, tonight = element
        if self._state is None:
            self._state = StateFile(self._state_path)
        previous = pa.Table.from_batches([self._state.shard(shard)])
        previous_ids = previous.column("query_id").to_pylist()
        row_of = {query_id: at for at, query_id in enumerate(previous_ids)}
        digests = previous.column("digest").to_pylist()
        has_state = previous.column("lists").is_valid().to_pylist()
        repeated = tonight.repeated()
        for item in repeated.items():
            yield pvalue.TaggedOutput(REPEATED, item)
        standing: list[int] = []
        lines: list[int] = []
        joined: set[int] = set()
        for at, query_id in enumerate(tonight.ids):
            line = tonight.lines[at]
            row = row_of.get(query_id)
            if (row is not None and query_id not in repeated and has_state[row]
                    and digests[row] == tonight.digest(at)):
                standing.append(row)
                lines.append(line)
                continue
            yield pvalue.TaggedOutput(PARSE, line)
            if row is not None and row not in joined:
                joined.add(row)
                yield pvalue.TaggedOutput(JOIN, (query_id, self._joined(previous, row, line)))
        tonight_ids = set(tonight.ids)
        for query_id in previous_ids:
            if query_id not in tonight_ids:
                counters.count(counters.PREVIOUS_GONE)
                yield pvalue.TaggedOutput(GONE, query_id)
        yield from self._standing(shard, previous, np.asarray(standing, np.int64), lines)

    def _joined(self, previous: pa.Table, row: int, line: int
                ) -> tuple[QueryState | None, RawResult]:
        values = previous.slice(row, 1)
        state = states_of(values, [line])[0] if has_lists(values) else None
        return state, values.column("result")[0].as_py()

    def _standing(self, shard: int, previous: pa.Table, standing: np.ndarray, lines: list[int]
                  ) -> Iterator[Any]:
        """The queries of PREV's rows `standing` (whose records did not change; `lines`: their
        line numbers tonight): those the changes do not touch are copied, the others
        continued."""
        counters.count(counters.QUERIES, len(standing))
        lists = one_array(previous.column("lists"))  # not a copy of the rows
        gains = self._gains(lists)
        moved = self._touched(lists, gains)[standing]
        stand = np.flatnonzero(~moved)
        counters.count(counters.QUERIES_CONTINUED, len(stand))
        counters.count(counters.CONTINUED_UNCHANGED, len(stand))
        counters.count(counters.EVIDENCE_UNCHANGED, len(stand))
        results: list[RawResult] = previous.column("result").take(standing[stand]).to_pylist()
        at = np.flatnonzero(moved)
        touched_rows = previous.take(standing[at])
        previous_results = touched_rows.column("result").to_pylist()
        unchanged: list[int] = []
        unchanged_lists: list[tuple[RecalledList, ...]] = []
        moved_rows: list[int] = []
        moved_lists: list[tuple[RecalledList, ...]] = []
        continued_lists: dict[int, tuple[RecalledList, ...]] = {}  # by row of touched_rows
        pending: list[int] = []
        touched_gains = None if gains is None else gains.of_rows(lists, standing[at])
        for row, outcome in enumerate(self._continued_columns(touched_rows, touched_gains)):
            if outcome is None:
                pending.append(row)
                continue
            counters.count(counters.QUERIES_CONTINUED)
            continued_lists[row] = outcome.lists
            if outcome.moved is None:
                counters.count(counters.CONTINUED_UNCHANGED)
                counters.count(counters.EVIDENCE_UNCHANGED)
                results.append(previous_results[row])
                unchanged.append(row)
                unchanged_lists.append(outcome.lists)
                continue
            counters.count(counters.CANDIDATES, len(outcome.moved.reasons))
            yield outcome.moved
            yield pvalue.TaggedOutput(PREVIOUS, previous_results[row])
            moved_rows.append(row)
            moved_lists.append(outcome.lists)
        states = states_of(touched_rows.take(np.asarray(pending, np.int64)),
                           [lines[at[row]] for row in pending])
        for start in range(0, len(states), self._batch_size):
            batch = pending[start:start + self._batch_size]
            items = [Continuation(EmbeddedQuery(s.query, s.text_vector), s,  # type: ignore[arg-type]
                                  previous_results[row])
                     for s, row in zip(states[start:start + len(batch)], batch, strict=True)]
            for row, item, outcomes in zip(batch, items, self._continued(items), strict=True):
                tags = {o.tag: o.value for o in outcomes if isinstance(o, pvalue.TaggedOutput)}
                if STATE in tags:
                    continued_lists[row] = tags[STATE].lists
                if UNCHANGED in tags:
                    results.append(item.previous)
                    if STATE in tags:
                        unchanged.append(row)
                        unchanged_lists.append(tags[STATE].lists)
                    continue
                if STATE in tags:
                    moved_rows.append(row)
                    moved_lists.append(tags[STATE].lists)
                for outcome in outcomes:
                    if not isinstance(outcome, pvalue.TaggedOutput) or outcome.tag != STATE:
                        yield outcome
        self._audited(previous, lists, standing, at, continued_lists)
        if self._snapshot is not None and results:
            yield pvalue.TaggedOutput(WRITTEN, self._snapshot.write(results))
        if self._kept_dir is not None:
            # the rows that stand: PREV's, by row number, and those continued with new lists
            continued = with_lists(touched_rows.take(np.asarray(unchanged, np.int64)),
                                   unchanged_lists)
            yield pvalue.TaggedOutput(KEPT, KeptRows(
                shard, standing[stand].astype(np.int64).tobytes(),
                write_kept(self._kept_dir, shard, continued) if continued.num_rows else ""))
            if moved_rows:
                # their results join them per shard, once answered
                moved_states = with_lists(touched_rows.take(np.asarray(moved_rows, np.int64)),
                                          moved_lists)
                moved_states = moved_states.set_column(
                    STATE_SCHEMA.get_field_index("result"), STATE_SCHEMA.field("result"),
                    pa.nulls(moved_states.num_rows, pa.binary()))
                yield pvalue.TaggedOutput(STATES, write_states(self._kept_dir, shard,
                                                               moved_states))

    def _audited(self, previous: pa.Table, lists: pa.ListArray, standing: np.ndarray,
                 touched_at: np.ndarray, continued: dict[int, tuple[RecalledList, ...]]
                 ) -> None:
        """Audits the sampled continued queries of PREV's rows `standing` (see
        `continued_audit`): those at `touched_at` were continued with the lists `continued`
        holds (by their order among the touched; one it lacks was recalled in full), the
        others stand with their kept lists."""
        sampled = self._audit.sample(len(standing))
        if not sampled:
            return
        touched_row = {int(p): r for r, p in enumerate(touched_at.tolist())}
        filters = previous.column("filters")
        offsets = starting_at_zero(lists.offsets)
        flat = lists.flatten()
        vectors: list[np.ndarray] = []
        tops: list[Sequence[str]] = []
        for position in sampled:
            row = int(standing[position])
            if filters[row].as_py() not in (None, "{}"):
                continue  # searched exactly, with its filters
            start, end = int(offsets[row]), int(offsets[row + 1])
            if position in touched_row:
                now = continued.get(touched_row[position])
                if now is None:
                    continue  # recalled in full: the graph's audit samples it
                ids = [kept.ids for kept in now]
            else:
                ids = flat.field("ids")[start:end].to_pylist()
            own = flat.slice(start, end - start)
            knn = ~bm25_lists(own)  # a BM25 list is not the graph's
            if knn.any():
                vectors.append(list_vectors(own)[knn])
                tops.extend(i for i, searched in zip(ids, knn.tolist(), strict=True)
                            if searched)
        if vectors:
            self._audit.add(self._port_or_none(), np.concatenate(vectors), tops)

    def finish_bundle(self) -> None:
        self._audit.flush(self._port_or_none())

    def _continued_columns(self, rows: pa.Table, gains: Gains | None
                           ) -> list[Continued | None]:
        """`continued_lists` of the touched rows (`gains`: their lists' `Gains`, None when
        nothing entered), or every query pending where the store cannot answer it (continued
        one by one, which says why)."""
        entered = self._entered_matrix()
        port: Any = self._port_or_none()
        if (entered is None or port is None or not can(port, "scores_of")
                or not can(port, "hits_of") or not rows.num_rows):
            return [None] * rows.num_rows
        try:
            lists = one_array(rows.column("lists"))
            return continue_lists(rows.column("query_id").to_pylist(), lists,
                                  (np.asarray([f not in (None, "{}") for f in
                                               rows.column("filters").to_pylist()], dtype=bool)
                                   | has_lexical(lists)).tolist(),
                                  self._entered, gains, self._removed,
                                  self._removed_ids(), self._retrieve_k, port)
        except KnowledgeSearchError:
            return [None] * rows.num_rows

    def _port_or_none(self) -> KnowledgeSearchPort | None:
        try:
            return self.owned()
        except KnowledgeSearchError:
            return None

    def _gains(self, lists: pa.ListArray) -> Gains | None:
        """The entered chunks that may gain on each of `lists`; None when nothing entered or
        the store cannot give their vectors."""
        entered = self._entered_matrix()
        if entered is None or not len(entered):
            return None
        return entered_gains(lists, entered)

    def _touched(self, lists: pa.ListArray, gains: Gains | None) -> np.ndarray:
        entered = self._entered_matrix()
        if entered is None:
            return np.ones(len(lists), dtype=bool)
        return touched(lists, entered, self._removed_ids(), self._retrieve_k, gains)

    def _removed_ids(self) -> pa.Array:
        """The removed ids as one Arrow array, made once for every shard."""
        if self._removed_array is None:
            self._removed_array = pa.array(sorted(self._removed), pa.string())
        return self._removed_array

    def _entered_matrix(self) -> np.ndarray | None:
        """The entered chunks' vectors; None when the store cannot give them, or they do not
        give its scores (every standing query is then continued one by one)."""
        if self._entered_vectors is None:
            if not self._entered:
                self._entered_vectors = np.empty((0, 0), dtype=np.float32)
                return self._entered_vectors
            try:
                port = self.owned()
            except KnowledgeSearchError:
                return None
            if not can(port, "vectors_of"):
                return None
            continuable: ContinuablePort = port  # type: ignore[assignment]
            try:
                self._entered_vectors = continuable.vectors_of(self._entered)
            except KnowledgeSearchError:
                return None
        return self._entered_vectors

    def _continued(self, items: Sequence[Continuation]) -> list[list[Any]]:
        port: Any
        try:
            port = self.owned()
        except KnowledgeSearchError:
            port = _Unavailable()
        return continue_each(items, port, self._removed, self._entered, self._retrieve_k,
                             self._max_sub_queries, self._mode, self._raised)


def has_lexical(lists: pa.ListArray) -> np.ndarray:
    """For each query (a list of kept lists), whether one of its lists is a BM25 list (kept
    without a vector): those are continued one by one."""
    per_query = np.diff(starting_at_zero(lists.offsets))
    lexical = bm25_lists(lists.flatten()).astype(np.int64)
    owner = np.repeat(np.arange(len(per_query)), per_query)
    return np.bincount(owner, weights=lexical, minlength=len(per_query)) > 0


def has_lists(row: pa.Table) -> bool:
    return bool(row.column("lists").is_valid()[0].as_py())


class _Unavailable:
    """A port that cannot be opened: continuing through it recalls every query."""

    def close(self) -> None:
        pass


class ContinueShards(beam.PTransform[beam.PCollection[tuple[int, ShardIds]],
                                     pvalue.DoOutputsTuple]):
    """(shard, ShardIds) of every shard -> QueryHits of the queries that moved (main `hits`),
    and the tags of the module (see `ContinueShardsDoFn`).

    Usage::

        split = shards | ContinueShards(open_port, "PREV.state/queries.arrow", ...)
        split.hits, split[PARSE], split[JOIN], split[WRITTEN], split[GONE]
    """

    def __init__(self, port_factory: PortFactory, state_path: str, *,
                 removed: frozenset[str], entered: tuple[str, ...], retrieve_k: int,
                 max_sub_queries: int, batch_size: int, kept_dir: str | None,
                 snapshot: ResultParts | None, audit_rate: float = 0.0,
                 mode: RecallMode = "dense", raised: RaisedBound | None = None) -> None:
        super().__init__()
        self._fn = ContinueShardsDoFn(port_factory, state_path, removed, entered, retrieve_k,
                                      max_sub_queries, batch_size, kept_dir, snapshot,
                                      audit_rate, mode, raised)

    def expand(self, shards: beam.PCollection[tuple[int, ShardIds]]) -> pvalue.DoOutputsTuple:
        return shards | "ContinueShard" >> beam.ParDo(self._fn).with_outputs(
            *TAGS, main="hits")
