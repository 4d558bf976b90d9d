"""A shard's touched queries continued as columns: the kept lists of every query the store's
changes touched, answered together, with the same outcome `stages.continuation` gives each
query one by one (which stays the reference, and answers what this does not).

For each kept list, the candidates are its kept chunks that were not removed, with the scores
the state holds (exact: the chunks did not change, nor did the query), and the entered chunks
that may score above its bound (the rough pass of `shard_continuation.touched`), scored exactly
by the store. Those above the bound, best first, are the list tonight. A query is left to the
one-by-one path (`Pending`) where this would need what only that path does: filters (entered
chunks must match them), two candidates of one list with the same score (their order is the
store's order of rows), a list that runs out (a recall), or a vector with no direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connectors.search_port import ChunkHits, ContinuablePort
from core.vectors import unit_rows
from pipeline.run.entered_gains import Gains
from pipeline.run.state_shards import bm25_lists, starting_at_zero
from stages.candidate_state import NO_BOUND, asked_width, joined, recalled_list
from stages.continuation import same_top
from stages.models import QueryHits, RecalledList

Pending = None
"""A query this module leaves to the one-by-one continuation."""


@dataclass(frozen=True)
class Continued:
    """A query continued here: its new kept lists, and its hits when its top moved (None:
    every sub-query's top `retrieve-k` is the one it kept)."""

    lists: tuple[RecalledList, ...]
    moved: QueryHits | None


def continue_lists(query_ids: Sequence[str], lists: pa.ListArray, filtered: Sequence[bool],
                   entered: tuple[str, ...], gains: Gains | None,
                   removed: frozenset[str], removed_ids: pa.Array, retrieve_k: int,
                   port: ContinuablePort) -> list[Continued | None]:
    """Each query's outcome (`Continued`, or `Pending`): `lists` holds each query's kept lists
    (the state's column), `filtered` whether it has filters, `gains` the `entered` chunks that
    may score above each list's bound (`shard_continuation.entered_gains`; None when nothing
    entered), `removed_ids` the `removed` ids as one Arrow array (made once per run by the
    caller)."""
    per_query = np.diff(starting_at_zero(lists.offsets))
    flat = lists.flatten()
    if flat.field("vector").null_count == len(flat):  # no kNN list (or none at all)
        return [Pending] * len(query_ids)
    reasons = flat.field("reason").to_pylist()
    bounds = np.asarray(flat.field("bound").to_numpy(zero_copy_only=False), dtype=np.float64)
    ids = flat.field("ids")
    id_at = starting_at_zero(ids.offsets)
    id_values = ids.flatten().to_pylist()
    gone = np.asarray(pc.is_in(ids.flatten(), value_set=removed_ids).to_numpy(
        zero_copy_only=False), dtype=bool)
    score_values = np.asarray(flat.field("scores").flatten().to_numpy(zero_copy_only=False),
                              dtype=np.float64)
    queries, usable = unit_rows(list_vectors(flat))
    candidates = _entered_candidates(queries, gains, entered, port)
    owner = np.repeat(np.arange(len(per_query)), per_query)
    pending = np.asarray(filtered, dtype=bool) | (per_query == 0)
    pending[owner[~usable]] = True
    if gains is not None:
        pending[owner[gains.unusable]] = True
    outcomes: list[Continued | None] = []
    moved: list[tuple[int, list[RecalledList]]] = []
    for query, k in enumerate(np.concatenate([[0], np.cumsum(per_query)])[:-1].tolist()):
        if pending[query]:
            outcomes.append(Pending)
            continue
        new: list[RecalledList] = []
        same = True
        for j in range(k, k + int(per_query[query])):
            start, end = id_at[j], id_at[j + 1]
            keep = ~gone[start:end]
            more_ids, more_scores = candidates.get(j, ((), np.empty(0)))
            above = more_scores > bounds[j]
            made = _continued_list(
                reasons[j],
                [i for i, kept in zip(id_values[start:end], keep.tolist(), strict=True) if kept]
                + [i for i, a in zip(more_ids, above.tolist(), strict=True) if a],
                np.concatenate([score_values[start:end][keep], more_scores[above]]),
                bounds[j], retrieve_k)
            if made is None:
                break
            old = RecalledList(reasons[j], tuple(id_values[start:end]),
                               tuple(score_values[start:end].tolist()), bounds[j])
            top = min(len(made.ids), retrieve_k)
            same = same and same_top(old, made.ids[:top], made.scores[:top], removed,
                                     retrieve_k)
            new.append(made)
        else:
            outcomes.append(Continued(tuple(new), None))
            if not same:
                moved.append((query, new))
            continue
        outcomes.append(Pending)
    return _with_hits(outcomes, moved, query_ids, retrieve_k, port)


def list_vectors(flat: pa.StructArray) -> np.ndarray:
    """Each kept list's sub-query vector (`flat`: kept lists, as the state holds them), in
    float64, exactly as the state holds it; zeros (no direction) for a BM25 list's."""
    vector, exact, count = flat.field("vector"), flat.field("exact"), len(flat)
    values = np.asarray(vector.flatten().to_numpy(zero_copy_only=False), dtype=np.float64)
    if not vector.null_count:
        matrix = values.reshape(count, -1) if count else values.reshape(0, 0)
    else:  # the vectors of the kNN lists, one after another
        held = ~bm25_lists(flat)
        matrix = np.zeros((count, len(values) // max(int(held.sum()), 1)))
        matrix[held] = values.reshape(int(held.sum()), -1)
    if exact.null_count < len(exact):
        for k, row in enumerate(exact.to_pylist()):
            if row is not None:
                matrix[k] = row
    return matrix


def _entered_candidates(queries: np.ndarray, gains: Gains | None, entered: tuple[str, ...],
                        port: ContinuablePort
                        ) -> dict[int, tuple[tuple[str, ...], np.ndarray]]:
    """For each list, the entered chunks that may score above its bound (`gains`) and their
    exact scores."""
    if gains is None or not len(gains.lists) or not len(queries):
        return {}
    lists, chunks = gains.lists, gains.chunks
    split = np.flatnonzero(np.diff(lists)) + 1
    owners = [int(group[0]) for group in np.split(lists, split)]
    named = [tuple(entered[c] for c in group.tolist()) for group in np.split(chunks, split)]
    scores = port.scores_of(queries[owners], named)
    return dict(zip(owners, zip(named, scores, strict=True), strict=True))


def _continued_list(reason: str, ids: list[str], scores: np.ndarray, bound: float,
                    retrieve_k: int) -> RecalledList | None:
    """A kept list continued from its candidates (every one above `bound`), kept as
    `candidate_state.recalled_list` keeps a search's hits; None where only the one-by-one
    path can tell (tied scores: their order is the store's order of rows; a list that runs
    out)."""
    order = np.argsort(-scores, kind="stable")
    ordered = scores[order]
    if len(ordered) > 1 and np.any(ordered[1:] == ordered[:-1]):
        return None
    order, ordered = order[:asked_width(retrieve_k)], ordered[:asked_width(retrieve_k)]
    hits = ChunkHits([ids[i] for i in order.tolist()], ordered.tolist(), [], [], [])
    made = recalled_list(reason, hits, asked_width(retrieve_k), bound)
    if made is None or (made[1] < retrieve_k and made[0].bound != NO_BOUND):
        return None
    return made[0]


def _with_hits(outcomes: list[Continued | None], moved: list[tuple[int, list[RecalledList]]],
               query_ids: Sequence[str], retrieve_k: int, port: ContinuablePort
               ) -> list[Continued | None]:
    """The moved queries' hits: each list's top `retrieve-k`, as the store gives them."""
    tops = [(m.ids[:retrieve_k], m.scores[:retrieve_k]) for _, lists in moved for m in lists]
    hits = iter(port.hits_of([t[0] for t in tops], [t[1] for t in tops]))
    for query, lists in moved:
        found: list[tuple[str, ChunkHits]] = [(m.reason, next(hits)) for m in lists]
        outcome = outcomes[query]
        assert outcome is not None
        outcomes[query] = Continued(outcome.lists, joined(query_ids[query], found))
    return outcomes
