"""Would a continued HNSW night keep a full HNSW night's recall? A simulation for issue 47.

On the bench's clustered store (`bulk_scale`'s vectors, 100k x 384) and its queries, with
`bench/affected_queries.change`'s change (1% of the store rewritten, deleted and added in
equal parts), for each ef-search:
- night 1 searches an HNSW graph of the store `retrieve-k + 9` deep, as a run that keeps
  state does: each query keeps its top `retrieve-k + 8` and the next score as its bound;
- night 2 in full searches a graph of the changed store;
- night 2 continued takes each query's kept list less its rewritten and deleted chunks, plus
  the entered chunks (rewritten and added) scored exactly above its bound, as
  `pipeline/run/continued_lists.py` does; a list left with fewer than `retrieve-k` would be
  recalled in full (here: given night 2's full answer, and counted).
Prints recall@retrieve-k of each night against exact search of its own store. Nothing of the
pipeline runs: this tests the idea, not the code.

    python bench/hnsw_continued_recall.py [--ef 16 64] [--queries 20000]
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np
from affected_queries import changed_rows
from bulk_scale import _clustered, query_vectors

from stages.candidate_state import KEPT_BEYOND

CHUNKS, DIM, RETRIEVE_K = 100_000, 384, 20
KEPT = RETRIEVE_K + KEPT_BEYOND


def _graph(vectors: np.ndarray, ef: int) -> faiss.IndexHNSWFlat:
    index = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 200
    index.add(vectors)
    index.hnsw.efSearch = ef
    return index


def _recall(found: list[np.ndarray] | np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[:RETRIEVE_K].tolist()) & set(t.tolist())) / RETRIEVE_K
                          for f, t in zip(found, truth, strict=True)]))


def _changed(base: np.ndarray) -> tuple[np.ndarray, np.ndarray, set[int], np.ndarray]:
    """The changed store (rows by id, deleted ones kept in place), which ids are alive, the
    ids whose old scores cannot be trusted, and the entered ids."""
    rewritten, deleted, fresh = changed_rows(CHUNKS, 0.01)
    count = len(rewritten)
    fresh = fresh.astype(np.float32)
    changed = np.vstack([base, fresh[count:]])
    changed[rewritten] = fresh[:count]
    alive = np.ones(len(changed), dtype=bool)
    alive[deleted] = False
    entered = np.concatenate([rewritten, np.arange(CHUNKS, CHUNKS + count)])
    return changed, alive, set(rewritten.tolist()) | set(deleted.tolist()), entered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ef", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--queries", type=int, default=20_000)
    args = parser.parse_args()
    base = _clustered(CHUNKS, DIM, seed=1).astype(np.float32)
    queries = query_vectors(args.queries, DIM).astype(np.float32)
    changed, alive, untrusted, entered = _changed(base)
    ids = np.flatnonzero(alive)  # a graph's position -> the chunk's id
    _, exact_before = faiss.knn(queries, base, RETRIEVE_K, metric=faiss.METRIC_INNER_PRODUCT)
    _, exact_after = faiss.knn(queries, changed[alive], RETRIEVE_K,
                               metric=faiss.METRIC_INNER_PRODUCT)
    truth = ids[exact_after]
    entered_scores = queries @ changed[entered].T
    for ef in args.ef:
        started = time.perf_counter()
        scores, found = _graph(base, ef).search(queries, KEPT + 1)
        _, after = _graph(changed[alive], ef).search(queries, RETRIEVE_K)
        full = ids[after]
        continued, ran_out = [], 0
        for q in range(len(queries)):
            bound = scores[q, KEPT]
            kept = [(s, r) for s, r in zip(scores[q, :KEPT].tolist(), found[q, :KEPT].tolist(),
                                           strict=True) if r not in untrusted]
            above = entered_scores[q] > bound
            candidates = kept + list(zip(entered_scores[q][above].tolist(),
                                         entered[above].tolist(), strict=True))
            if len(candidates) < RETRIEVE_K:
                ran_out += 1
                continued.append(full[q])
                continue
            candidates.sort(key=lambda c: (-c[0], c[1]))
            continued.append(np.asarray([r for _, r in candidates[:RETRIEVE_K]]))
        print(f"ef {ef}: recall@{RETRIEVE_K} night 1 {_recall(found, exact_before):.4f}, "
              f"night 2 full {_recall(full, truth):.4f}, night 2 continued "
              f"{_recall(continued, truth):.4f} ({ran_out} ran out), "
              f"{time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
