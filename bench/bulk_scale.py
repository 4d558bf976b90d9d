"""Bulk scale: vector queries at growing sizes against one store, per runner mode.

Builds (once, in --work) a synthetic clustered store (default 100k chunks x 384 dims, `flat`
or `hnsw`) and query files of each size, then for each size and mode runs `rag-evidence run`
in a fresh process (so that its peak RSS is its own) and times the raw store search on the
same query vectors in another fresh process. Prints seconds, queries/s, peak RSS, and the
ratios the bulk goals are stated in: pipeline / raw search, RSS against the 100k run, and
seconds per query against the smallest size (linear time: 1.0).

    python bench/bulk_scale.py [--sizes 10000,100000,1000000] [--modes memory,multi]
                               [--index hnsw] [--work /tmp/bulk]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import orjson
from peak_rss import high_water_kib

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import ChunkTarget
from connectors.embedded.layout import HNSW_FILE, VECTORS_FILE
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.vector_search import HnswGraph, HnswParams, exact_neighbours
from connectors.embedded.versions import CURRENT_FILE
from connectors.embedded.writer import EmbeddedStoreTarget
from connectors.search_port import SearchRequest

MODES = {
    "memory": [],
    "multi": ["--direct_running_mode=multi_processing", "--direct_num_workers=2"],
}
CENTRES = 1000


def _clustered(rows: int, dim: int, seed: int, noise: float = 0.6) -> np.ndarray:
    """Unit vectors around `CENTRES` random centres: clustered, as real embeddings are."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).normal(size=(CENTRES, dim)).astype(np.float32)
    matrix = centres[rng.integers(0, CENTRES, rows)] + rng.normal(
        scale=noise, size=(rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _records(vectors: np.ndarray, first: int, chunks_per_doc: int = 4,
             words: Sequence[str] = (), salt: int = 0) -> Iterator[ChunkRecord]:
    """Chunk `first` on, one per vector; with `words`, each content also holds 8 of them,
    drawn by its number (and `salt`: a rewritten chunk's differ)."""
    for i, vector in enumerate(vectors, start=first):
        doc, index = f"doc{i // chunks_per_doc}", i % chunks_per_doc
        content = f"chunk {i} of {doc}"
        if words:
            content += ": " + " ".join(random.Random(2 * i + salt).choices(words, k=8))
        yield ChunkRecord(id=f"{doc}#chunk-{index}", vector=tuple(vector.tolist()),
                          content=content, metadata={"docId": doc, "chunkIndex": index})


def build_store(path: Path, chunks: int, dim: int, index: str, words: Sequence[str] = (),
                target: ChunkTarget | None = None) -> str | None:
    """The bench's clustered chunks written through `index`'s own target: an embedded store
    at `path`, or `target` when given."""
    target = target or EmbeddedStoreTarget(path, index, HnswParams())  # type: ignore[arg-type]
    target.prepare(dim, None)
    writer = target.open_writer()
    vectors = _clustered(chunks, dim, seed=1)
    for start in range(0, chunks, 10_000):
        writer.write(list(_records(vectors[start:start + 10_000], start, words=words)))
    return target.commit()


def bench_store(work: Path, chunks: int, dim: int, index: str) -> Path:
    """The bench's store in `work`, built (and said so) the first time it is asked for."""
    work.mkdir(parents=True, exist_ok=True)
    store = work / f"store-{chunks}-{dim}-{index}"
    if not (store / CURRENT_FILE).is_file():  # a store names its current version last
        started = time.monotonic()
        note = build_store(store, chunks, dim, index)
        print(f"built {index} store: {chunks} x {dim} in {time.monotonic() - started:.0f}s; "
              f"{note or 'exact search'}", flush=True)
    return store


def query_vectors(size: int, dim: int) -> np.ndarray:
    return _clustered(size, dim, seed=2 + size)


def write_queries(path: Path, size: int, dim: int) -> None:
    """Written beside and renamed, so that an interrupted bench leaves no short file."""
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as out:
        for i, vector in enumerate(query_vectors(size, dim)):
            out.write(orjson.dumps({"id": f"q{i}", "vector": vector},
                                   option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    partial.rename(path)


def _peak_rss_mb() -> float:
    """This child's own peak (see `peak_rss`)."""
    return high_water_kib() / 1024


def child_run(args: argparse.Namespace) -> None:
    """One `rag-evidence run`, in this fresh process; prints seconds and peak RSS."""
    from pipeline.cli.main import main

    out = Path(args.work) / f"out-{args.size}-{args.mode}.jsonl"
    started = time.monotonic()
    code = main(["run", "--queries", str(args.queries), "--out", str(out),
                 "--set", f"search.embedded.path={args.store}", "--set", f"embedder.dim={args.dim}",
                 "--set", f"search.embedded.index={args.index}",
                 "--set", f"rag.retrieve-k={args.k}", "--set", f"search.batch-size={args.batch}",
                 *MODES[args.mode]])
    seconds = time.monotonic() - started
    with open(out, "rb") as lines:
        results = sum(1 for _ in lines)
    out.unlink()
    print(json.dumps({"code": code, "seconds": seconds, "rss_mb": _peak_rss_mb(),
                      "results": results}))


def child_raw(args: argparse.Namespace) -> None:
    """The raw store search on the same vectors, in batches of the pipeline's size."""
    store = EmbeddedStore.open(args.store, args.index)
    vectors = query_vectors(args.size, args.dim)
    started = time.monotonic()
    for start in range(0, args.size, args.batch):
        store.search([SearchRequest(vector=tuple(v.tolist()), k=args.k)
                      for v in vectors[start:start + args.batch]])
    print(json.dumps({"seconds": time.monotonic() - started, "rss_mb": _peak_rss_mb()}))


def _child(kind: str, args: argparse.Namespace, size: int, mode: str = "memory") -> dict:
    command = [sys.executable, __file__, kind, "--size", str(size), "--mode", mode,
               "--work", args.work, "--store", str(args.store), "--dim", str(args.dim),
               "--index", args.index, "--k", str(args.k), "--batch", str(args.batch),
               "--queries", str(Path(args.work) / f"queries-{size}.jsonl")]
    done = subprocess.run(command, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", nargs="?", default="bench", choices=["bench", "run", "raw"])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--modes", default="memory,multi")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--index", default="hnsw", choices=["flat", "hnsw"])
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--work", default="/tmp/rag-evidence-bulk")
    parser.add_argument("--store", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--size", type=int)
    parser.add_argument("--mode", default="memory")
    args = parser.parse_args()
    if args.kind == "run":
        return child_run(args)
    if args.kind == "raw":
        return child_raw(args)

    work = Path(args.work)
    args.store = bench_store(work, args.chunks, args.dim, args.index)
    if args.index == "hnsw":
        print(_hnsw_recall(args), flush=True)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        queries = work / f"queries-{size}.jsonl"
        if not queries.is_file():
            write_queries(queries, size, args.dim)
        raw = _child("raw", args, size)
        for mode in args.modes.split(","):
            run = _child("run", args, size, mode)
            assert run["code"] == 0 and run["results"] == size, run
            rows.append((size, mode, run, raw))
            print(f"{size:>8} queries {mode:>6}: {run['seconds']:8.1f}s "
                  f"{size / run['seconds']:7.0f} q/s  peak RSS {run['rss_mb']:6.0f} MB | raw "
                  f"search {raw['seconds']:7.1f}s {size / raw['seconds']:6.0f} q/s | pipeline "
                  f"/ raw {run['seconds'] / raw['seconds']:.2f}x", flush=True)
    _print_ratios(rows)


def _hnsw_recall(args: argparse.Namespace, sample: int = 2000) -> str:
    """recall@k of the HNSW store against exact search, on the bench's own queries."""
    vectors = np.load(args.store / VECTORS_FILE, mmap_mode="r")
    graph = HnswGraph.load(args.store / HNSW_FILE, HnswParams().ef_search)
    queries = query_vectors(10_000, args.dim)[:sample]
    ks = [args.k] * sample
    exact, approximate = exact_neighbours(vectors, queries, ks), graph.neighbours(queries, ks)
    found = sum(len(np.intersect1d(a[0], e[0])) for a, e in zip(approximate, exact, strict=True))
    return (f"hnsw recall@{args.k} against exact on {sample} of the bench's queries: "
            f"{found / (sample * args.k):.3f}")


def _print_ratios(rows: list[tuple[int, str, dict, dict]]) -> None:
    for mode in dict.fromkeys(r[1] for r in rows):
        mine = [r for r in rows if r[1] == mode]
        first_size, first_run = mine[0][0], mine[0][2]
        base_rss = next((r[2]["rss_mb"] for r in mine if r[0] == 100_000), None)
        for size, _, run, raw in mine:
            linear = (run["seconds"] / size) / (first_run["seconds"] / first_size)
            rss = f", RSS / RSS at 100k {run['rss_mb'] / base_rss:.2f}" if base_rss else ""
            outside = (run["seconds"] - raw["seconds"]) / size * 1000
            print(f"{mode:>6} {size:>8}: time per query / at {first_size}: {linear:.2f}{rss}; "
                  f"outside the search {outside:.2f} ms/query")


if __name__ == "__main__":
    main()
