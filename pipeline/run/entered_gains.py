"""Which entered chunks may score above which kept lists' bounds, for a whole shard at once:
the rough pass that tells the standing queries the store's changes may touch
(`shard_continuation.touched`), and the candidates the touched ones are continued with
(`continued_lists`), made once for both."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from connectors.embedded.vector_search import SCORE_TOLERANCE
from core.vectors import unit_rows
from pipeline.run.state_shards import bm25_lists, starting_at_zero


class Gains(NamedTuple):
    """The entered chunks that may score above kept lists' bounds: (list, entered chunk)
    index pairs, lists in order (`lists`, `chunks`), and the lists whose vector cannot be
    scored so (`unusable`, one per list: every entered chunk may gain on them)."""

    lists: np.ndarray
    chunks: np.ndarray
    unusable: np.ndarray

    def of_rows(self, lists: pa.ListArray, rows: np.ndarray) -> Gains:
        """The gains of the lists of `rows` (distinct query rows of `lists`, which these gains
        are of), numbered as `lists.take(rows)` numbers its lists."""
        offsets = starting_at_zero(lists.offsets)
        starts, counts = offsets[rows], offsets[rows + 1] - offsets[rows]
        total = int(counts.sum())
        new_starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        old = np.repeat(starts - new_starts, counts) + np.arange(total)
        renumbered = np.full(len(self.unusable), -1, dtype=np.int64)
        renumbered[old] = np.arange(total)
        at = renumbered[self.lists]
        kept = np.flatnonzero(at >= 0)
        kept = kept[np.argsort(at[kept], kind="stable")]  # lists in order again
        return Gains(at[kept], self.chunks[kept], self.unusable[old])


def entered_gains(lists: pa.ListArray, entered: np.ndarray) -> Gains:
    """Each entered chunk that may score above a kept list's bound: scored roughly, in
    float32, within `SCORE_TOLERANCE` of the exact direction (`search_among`'s own margin)."""
    flat = lists.flatten()
    vectors = flat.field("vector")
    bounds = np.asarray(flat.field("bound").to_numpy(zero_copy_only=False), dtype=np.float64)
    lengths = np.diff(np.asarray(vectors.offsets))
    none = np.empty(0, dtype=np.int64)
    held = ~bm25_lists(flat)
    if not held.any() or np.any(lengths[held] != entered.shape[1]):
        # continued one by one, which says why
        return Gains(none, none, np.ones(len(flat), dtype=bool))
    # a BM25 list has no vector: it is unusable here, and continued one by one
    values = vectors.flatten().to_numpy(zero_copy_only=False).reshape(int(held.sum()), -1)
    unit = np.zeros((len(flat), entered.shape[1]), dtype=np.float32)
    usable = np.zeros(len(flat), dtype=bool)
    unit[held], usable[held] = unit_rows(values, working=np.float32)
    floor = 2.0 * bounds - 1.0 - SCORE_TOLERANCE
    above_lists, above_chunks = np.nonzero((unit @ entered.T) > floor[:, None])
    return Gains(above_lists.astype(np.int64), above_chunks.astype(np.int64), ~usable)
