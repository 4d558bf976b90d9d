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

from connectors.embedded.vector_search import SCORE_TOLERANCE
from connectors.search_port import ChunkHits, ContinuablePort
from core.vectors import unit_rows
from stages.candidate_state import NO_BOUND, asked_width, joined
from stages.models import QueryHits, RecalledList

Pending = None
"""A query this module leaves to the one-by-one continuation."""


@dataclass(frozen=True)
class Continued:
    """A query continued here: its new kept lists, and its hits when its top moved (None:
    every sub-query's top `retrieve-k` is the one it kept)."""

    lists: tuple[RecalledList, ...]
    moved: QueryHits | None


@dataclass(frozen=True)
class _List:
    reason: str
    ids: tuple[str, ...]
    scores: tuple[float, ...]
    bound: float


def continue_lists(query_ids: Sequence[str], lists: pa.ListArray, filtered: Sequence[bool],
                   entered: tuple[str, ...], entered_vectors: np.ndarray, removed: pa.Array,
                   retrieve_k: int, port: ContinuablePort) -> list[Continued | None]:
    """Each query's outcome (`Continued`, or `Pending`): `lists` holds each query's kept lists
    (the state's column), `filtered` whether it has filters, `entered_vectors` the entered
    chunks' unit vectors (`ContinuablePort.vectors_of`)."""
    per_query = np.diff(_offsets(lists))
    flat = lists.flatten()
    count = len(flat)
    fields = {name: flat.field(name) for name in ("reason", "ids", "scores", "vector", "exact",
                                                  "bound")}
    reasons = fields["reason"].to_pylist()
    bounds = np.asarray(fields["bound"].to_numpy(zero_copy_only=False), dtype=np.float64)
    ids = fields["ids"]
    id_at = _offsets(ids)
    id_values = ids.flatten().to_pylist()
    gone = np.asarray(pc.is_in(ids.flatten(), value_set=removed).to_numpy(
        zero_copy_only=False), dtype=bool) if len(removed) else np.zeros(len(id_values), bool)
    score_values = np.asarray(fields["scores"].flatten().to_numpy(zero_copy_only=False),
                              dtype=np.float64)
    queries, usable = unit_rows(_vectors(fields["vector"], fields["exact"], count))
    candidates = _entered_candidates(queries, bounds, entered, entered_vectors, port)
    owner = np.repeat(np.arange(len(per_query)), per_query)
    pending = np.zeros(len(per_query), dtype=bool)
    pending[owner[~usable]] = True
    pending |= np.asarray(filtered, dtype=bool)
    made: list[_List | None] = []
    for k in range(count):
        start, end = id_at[k], id_at[k + 1]
        keep = ~gone[start:end]
        own_ids = [i for i, kept in zip(id_values[start:end], keep.tolist(), strict=True)
                   if kept]
        own_scores = score_values[start:end][keep]
        more_ids, more_scores = candidates.get(k, ((), np.empty(0)))
        above = more_scores > bounds[k]
        all_ids = own_ids + [i for i, a in zip(more_ids, above.tolist(), strict=True) if a]
        all_scores = np.concatenate([own_scores, more_scores[above]])
        made.append(_continued_list(reasons[k], all_ids, all_scores, bounds[k], retrieve_k))
    outcomes: list[Continued | None] = []
    moved_lists: list[tuple[int, list[_List]]] = []
    k = 0
    for query, n in enumerate(per_query.tolist()):
        mine = made[k:k + n]
        old = [(id_values[id_at[j]:id_at[j + 1]], score_values[id_at[j]:id_at[j + 1]],
                gone[id_at[j]:id_at[j + 1]]) for j in range(k, k + n)]
        k += n
        if pending[query] or any(m is None for m in mine) or not n:
            outcomes.append(Pending)
            continue
        new = [m for m in mine if m is not None]
        kept = tuple(RecalledList(m.reason, m.ids, m.scores, m.bound) for m in new)
        if all(_same_top(m, *o, retrieve_k) for m, o in zip(new, old, strict=True)):
            outcomes.append(Continued(kept, None))
            continue
        outcomes.append(Continued(kept, None))
        moved_lists.append((query, new))
    return _with_hits(outcomes, moved_lists, query_ids, retrieve_k, port)


def _offsets(values: pa.ListArray) -> np.ndarray:
    offsets = np.asarray(values.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    return offsets - offsets[0] if len(offsets) else offsets


def _vectors(vector: pa.ListArray, exact: pa.ListArray, count: int) -> np.ndarray:
    """Each list's sub-query vector, in float64, exactly as the state holds it."""
    values = np.asarray(vector.flatten().to_numpy(zero_copy_only=False), dtype=np.float64)
    matrix = values.reshape(count, -1) if count else values.reshape(0, 0)
    if exact.null_count < len(exact):
        for k, row in enumerate(exact.to_pylist()):
            if row is not None:
                matrix[k] = row
    return matrix


def _entered_candidates(queries: np.ndarray, bounds: np.ndarray, entered: tuple[str, ...],
                        entered_vectors: np.ndarray, port: ContinuablePort
                        ) -> dict[int, tuple[tuple[str, ...], np.ndarray]]:
    """For each list, the entered chunks that may score above its bound (scored roughly, with
    `search_among`'s margin) and their exact scores."""
    if not len(entered) or not len(queries):
        return {}
    rough = queries @ entered_vectors.T
    floors = 2.0 * bounds - 1.0 - SCORE_TOLERANCE
    lists, chunks = np.nonzero(rough > floors[:, None])
    if not len(lists):
        return {}
    split = np.flatnonzero(np.diff(lists)) + 1
    owners = [int(group[0]) for group in np.split(lists, split)]
    named = [tuple(entered[c] for c in group.tolist()) for group in np.split(chunks, split)]
    scores = port.scores_of(queries[owners], named)
    return dict(zip(owners, zip(named, scores, strict=True), strict=True))


def _continued_list(reason: str, ids: list[str], scores: np.ndarray, bound: float,
                    retrieve_k: int) -> _List | None:
    """A kept list continued from its candidates (every one above `bound`), as
    `candidate_state.recalled_list` keeps a search's hits; None where only the one-by-one path
    can tell (tied scores, a list that runs out)."""
    order = np.argsort(-scores, kind="stable")
    ordered = scores[order]
    if len(ordered) > 1 and np.any(ordered[1:] == ordered[:-1]):
        return None
    asked = asked_width(retrieve_k)
    order, ordered = order[:asked], ordered[:asked]
    held = len(order)
    if held >= asked:
        bound, held = float(ordered[-1]), asked - 1
    if held < retrieve_k and bound != NO_BOUND:
        return None
    return _List(reason, tuple(ids[i] for i in order[:held].tolist()),
                 tuple(ordered[:held].tolist()), bound)


def _same_top(new: _List, old_ids: list[str], old_scores: np.ndarray, old_gone: np.ndarray,
              retrieve_k: int) -> bool:
    """Whether a sub-query's top `retrieve_k` is the one it kept: same chunks, same scores,
    none of them rewritten since (`stages.continuation._same_top`)."""
    top = min(len(new.ids), retrieve_k)
    return (new.ids[:top] == tuple(old_ids[:retrieve_k])
            and new.scores[:top] == tuple(old_scores[:retrieve_k].tolist())
            and not old_gone[:retrieve_k].any())


def _with_hits(outcomes: list[Continued | None], moved: list[tuple[int, list[_List]]],
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
