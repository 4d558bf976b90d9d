"""Which standing queries can a store change move? The premise of continuing a run (issue 32).

Builds (in --work) a clustered store (default 100k chunks x 384 dims, exact search) and answers
standing vector queries (default 100k) at k=20 through the store's own port. Then changes 1% of
the store through `index`'s own writer (a third of the changed chunks rewritten, a third
deleted, a third added) and, in one run:
- finds the queries whose top k can have changed, from the previous answers alone: one of
  their hits was rewritten or deleted, or a rewritten or added chunk scores at least their k-th
  score (one matrix product against the delta);
- answers every query again on the new version (the full run's search, the baseline);
- checks that every query the test calls unaffected has the same ids and scores as before.
Prints the share of queries affected, the test's time against the full search's, and the
count of unaffected queries whose answer moved (must be 0).

    python bench/affected_queries.py [--chunks 100000] [--queries 100000] [--work /tmp/affected]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from bulk_scale import _clustered, _records, build_store, query_vectors

from connectors.chunk_writer_port import ChunkTarget
from connectors.embedded.layout import IndexKind
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.writer import EmbeddedStoreTarget
from connectors.search_port import ChunkHits, SearchRequest

K, BATCH, DIM = 20, 256, 384
MARGIN = 8
"""Candidates kept beyond k: a query that lost at most this many can be continued exactly."""


def answers(store: Path, queries: np.ndarray, k: int = K
            ) -> tuple[list[list[str]], np.ndarray, float]:
    """Each query's ids and scores at `k` from the store's port, and the seconds it took."""
    port = EmbeddedStore.open(store)
    ids: list[list[str]] = []
    scores = np.zeros((len(queries), k), dtype=np.float64)
    started = time.perf_counter()
    for start in range(0, len(queries), BATCH):
        batch = queries[start:start + BATCH]
        outcomes = port.search_chunks([SearchRequest.model_construct(
            vector=tuple(v.tolist()), text=None, k=k, filters={}) for v in batch])
        for i, hits in enumerate(outcomes, start=start):
            assert isinstance(hits, ChunkHits)
            ids.append([str(x) for x in hits.ids])
            scores[i, :len(hits)] = hits.scores
    seconds = time.perf_counter() - started
    port.close()
    return ids, scores, seconds


def changed_rows(chunks: int, share: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows `change` rewrites and deletes (`share` / 3 of `chunks` each), and the new
    vectors: the rewritten rows' first, then the added rows'."""
    count = int(chunks * share) // 3
    rows = np.random.default_rng(7).choice(chunks, size=2 * count, replace=False)
    return rows[:count], rows[count:], _clustered(2 * count, DIM, seed=9)


def change(store: Path, chunks: int, share: float, index: IndexKind = "flat",
           words: Sequence[str] = (), target: ChunkTarget | None = None
           ) -> tuple[set[str], np.ndarray]:
    """Rewrites, deletes and adds `share` of the store (built with `index`, and contents of
    `words`; or of `target` when given) in equal parts; returns the ids whose old answers can
    no longer be trusted (rewritten, deleted) and the delta's vectors."""
    rewritten, deleted, new_vectors = changed_rows(chunks, share)
    count = len(rewritten)
    target = target or EmbeddedStoreTarget(store, index)
    target.prepare(DIM, None)
    writer = target.open_writer()
    rewritten_records = [r for i, row in enumerate(rewritten)
                         for r in _records(new_vectors[i:i + 1], int(row), words=words, salt=1)]
    added_records = list(_records(new_vectors[count:], chunks, words=words))
    writer.write(rewritten_records + added_records)
    deleted_ids = [r.id for row in deleted for r in _records(new_vectors[:1], int(row))]
    writer.delete(deleted_ids)
    target.commit()
    untrusted = {r.id for r in rewritten_records} | set(deleted_ids)
    return untrusted, new_vectors


def affected(ids: list[list[str]], scores: np.ndarray, queries: np.ndarray,
             untrusted: set[str], delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which queries' top K can have moved, from their top K + MARGIN; and which of them
    lost more than MARGIN of those (only those need a search of the whole store)."""
    lost_counts = np.fromiter((sum(i in untrusted for i in hit_ids) for hit_ids in ids), int,
                              count=len(ids))
    lost_in_k = np.fromiter((any(i in untrusted for i in hit_ids[:K]) for hit_ids in ids),
                            bool, count=len(ids))
    kth = scores[:, K - 1]
    entering = np.zeros(len(queries), dtype=bool)
    for start in range(0, len(queries), 8192):
        block = (1.0 + queries[start:start + 8192] @ delta.T) / 2.0
        entering[start:start + 8192] = (block >= kth[start:start + 8192, None] - 1e-6).any(1)
    return lost_in_k | entering, lost_counts > MARGIN


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--work", default="/tmp/affected")
    args = parser.parse_args()
    store = Path(args.work) / "store"
    if store.exists():
        raise SystemExit(f"{store} exists: the bench changes its store; remove it first")
    build_store(store, args.chunks, DIM, "flat")
    queries = query_vectors(args.queries, DIM)
    old_ids, old_scores, _ = answers(store, queries, K + MARGIN)
    untrusted, delta = change(store, args.chunks, args.share)
    started = time.perf_counter()
    moved_maybe, whole_search = affected(old_ids, old_scores, queries, untrusted, delta)
    old_ids, old_scores = [i[:K] for i in old_ids], old_scores[:, :K]
    test_seconds = time.perf_counter() - started
    new_ids, new_scores, full_seconds = answers(store, queries)
    changed = np.fromiter((a != b for a, b in zip(old_ids, new_ids, strict=True)), bool,
                          count=len(old_ids)) | (np.abs(old_scores - new_scores) > 0).any(1)
    missed = int(np.sum(changed & ~moved_maybe))
    print(f"store {args.chunks} x {DIM}, {args.queries} standing vector queries, k={K}, "
          f"{args.share:.0%} of the store changed")
    print(f"affected by the test   {int(moved_maybe.sum()):>7} "
          f"({moved_maybe.mean():.1%}); answers that moved {int(changed.sum())}")
    print(f"unaffected but moved   {missed:>7} (must be 0)")
    print(f"lost more than {MARGIN} of their top {K + MARGIN}: {int(whole_search.sum())} "
          "(only these need a search of the whole store)")
    print(f"test {test_seconds:.2f} s, full search {full_seconds:.2f} s: "
          f"ratio test / full search {test_seconds / full_seconds:.3f}")


if __name__ == "__main__":
    main()
