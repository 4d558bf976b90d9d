"""HNSW recall and speed against exact search, on clustered and on isotropic data.

Builds two embedded stores of `--chunks` unit vectors (default 100k x 384): one clustered (a
mixture of `--clusters` tight Gaussian clusters, as sentence embeddings of a corpus are), one
isotropic (uniform on the sphere: the hard case). Queries come from the same distribution as
the data, never stored rows. For each ef-search, prints recall@k of the graph against exact
search and queries/s, beside exact search's queries/s measured in the same run: the table of
docs/embedded-store.md.

    python bench/hnsw_recall.py [--chunks 100000] [--queries 2000] [--dim 384]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.embedded.layout import HNSW_FILE
from connectors.embedded.vector_search import HnswGraph, HnswParams, exact_neighbours
from connectors.embedded.versions import current_version
from connectors.embedded.writer import write_store

BLOCK = 256


def clustered(centres: np.ndarray, rows: int, seed: int) -> np.ndarray:
    """Points around `centres` (unit vectors), each cluster's spread a third of its radius."""
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(centres), size=rows)
    noise = rng.normal(scale=0.33 / np.sqrt(centres.shape[1]), size=(rows, centres.shape[1]))
    points = centres[picked] + noise.astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def isotropic(rows: int, dim: int, seed: int) -> np.ndarray:
    points = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def records(vectors: np.ndarray):  # type: ignore[no-untyped-def]
    for i, vector in enumerate(vectors):
        yield ChunkRecord(id=f"doc{i}#chunk-0", vector=tuple(vector.tolist()), content="x")


def timed_blocks(search, queries: np.ndarray, k: int) -> tuple[list, float]:  # type: ignore[no-untyped-def]
    started, found = time.perf_counter(), []
    for start in range(0, len(queries), BLOCK):
        block = queries[start:start + BLOCK]
        found += search(block, [k] * len(block))
    return found, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1_000)
    parser.add_argument("--k", type=int, default=20)
    args = parser.parse_args()
    centres = isotropic(args.clusters, args.dim, 5)
    kinds = {  # queries from the same distribution as the data, never stored rows
        "clustered": (clustered(centres, args.chunks, 1), clustered(centres, args.queries, 2)),
        "isotropic": (isotropic(args.chunks, args.dim, 1), isotropic(args.queries, args.dim, 2)),
    }
    print(f"| data | ef-search | recall@{args.k} | queries/s | exact queries/s |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for kind, (corpus, queries) in kinds.items():
            store = Path(scratch) / kind
            started = time.perf_counter()
            write_store(store, records(corpus), index="hnsw", hnsw=HnswParams())
            built = time.perf_counter() - started
            version = current_version(store)
            vectors = np.load(version / "vectors.npy", mmap_mode="r")
            exact, exact_s = timed_blocks(partial(exact_neighbours, vectors), queries, args.k)
            graph = HnswGraph.load(version / HNSW_FILE, 64)
            for ef in (16, 32, 64, 128, 256, 512):
                graph.ef_search = ef
                found, seconds = timed_blocks(graph.neighbours, queries, args.k)
                hits = sum(len(np.intersect1d(f[0], e[0])) for f, e in zip(found, exact,
                                                                           strict=True))
                recall = hits / sum(len(e[0]) for e in exact)
                print(f"| {kind} | {ef} | {recall:.3f} | {len(queries) / seconds:,.0f} | "
                      f"{len(queries) / exact_s:,.0f} |", flush=True)
            print(f"(built {kind} store with its graph in {built:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
