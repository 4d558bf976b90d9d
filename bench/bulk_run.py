"""A bulk run against the search it wraps: `rag-evidence run` through the CLI, faiss's own exact
search, and the raw embedded-store search, on the same store and query vectors, alternated.

Builds (once, in --work, as `bulk_scale.py` does) a clustered flat store (default 100k x 384)
and a file of vector queries (default 20k), then, round after round, times in fresh processes:
the CLI run (the whole process: start, read, search, write), faiss `IndexFlatIP.search` on the
query vectors in one batch (index built beforehand, not timed), and the raw store search in the
run's batches (`store.search`: every hit's record read, as `bulk_scale.py`'s baseline). Prints
each round's seconds and ratios, then the medians, and the run's output digest (equal outputs
from two versions of the code have equal digests).

    python bench/bulk_run.py [--chunks 100000] [--size 20000] [--rounds 3]
                             [--work /tmp/rag-evidence-bulk] [--base OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from stages.recall import DEFAULT_SEARCH_BATCH

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bulk_scale beside this file
from bulk_scale import bench_store, write_queries


def _vectors(queries: Path) -> np.ndarray:
    with open(queries, "rb") as lines:
        return np.array([orjson.loads(line)["vector"] for line in lines], dtype=np.float32)


def child_faiss(args: argparse.Namespace) -> None:
    import faiss

    from connectors.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(args.store)
    corpus = np.ascontiguousarray(store._vectors, dtype=np.float32)
    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    vectors = _vectors(args.queries)
    started = time.monotonic()
    index.search(vectors, args.k)
    print(json.dumps({"seconds": time.monotonic() - started}))


def child_raw(args: argparse.Namespace) -> None:
    from connectors.embedded.store import EmbeddedStore
    from connectors.search_port import SearchRequest

    store = EmbeddedStore.open(args.store)
    vectors = _vectors(args.queries)
    started = time.monotonic()
    for start in range(0, len(vectors), args.batch):
        store.search([SearchRequest(vector=tuple(v.tolist()), k=args.k)
                      for v in vectors[start:start + args.batch]])
    print(json.dumps({"seconds": time.monotonic() - started}))


def _child(kind: str, args: argparse.Namespace) -> float:
    command = [sys.executable, __file__, kind, "--store", str(args.store), "--queries",
               str(args.queries), "--k", str(args.k), "--batch", str(args.batch)]
    done = subprocess.run(command, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def _cli_run(args: argparse.Namespace, out: Path, code: Path | None = None) -> float:
    """The CLI's run, of this checkout's code or (`code`) of another checkout's."""
    command = [str(Path(sys.executable).with_name("rag-evidence")), "run", "--queries",
               str(args.queries), "--out", str(out),
               "--set", f"search.embedded.path={args.store}", "--set", f"embedder.dim={args.dim}",
               "--set", "search.embedded.index=flat", "--set", f"rag.retrieve-k={args.k}",
               "--set", f"search.batch-size={args.batch}"]
    env = {**os.environ, **({"PYTHONPATH": str(code)} if code else {})}
    started = time.monotonic()
    subprocess.run(command, capture_output=True, check=True, env=env)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", nargs="?", default="bench", choices=["bench", "faiss", "raw"])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--size", type=int, default=20_000, help="queries")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--batch", type=int, default=DEFAULT_SEARCH_BATCH,
                        help="queries per search call (default: the run's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="/tmp/rag-evidence-bulk")
    parser.add_argument("--store", type=Path)
    parser.add_argument("--base", type=Path, help="another checkout whose run is timed too, "
                        "alternated, and whose output must be equal")
    args = parser.parse_args()
    if args.kind == "faiss":
        return child_faiss(args)
    if args.kind == "raw":
        return child_raw(args)

    work = Path(args.work)
    args.store = bench_store(work, args.chunks, args.dim, "flat")
    args.queries = work / f"queries-{args.size}.jsonl"
    if not args.queries.is_file():
        write_queries(args.queries, args.size, args.dim)
    out = work / f"bulk-run-{args.size}.jsonl"
    print(f"{args.chunks} x {args.dim} flat store, {args.size} vector queries, k={args.k}, "
          f"batches of {args.batch}; {os.cpu_count()} cores")
    runs, faiss_s, raw_s, bases = [], [], [], []
    for round_number in range(1, args.rounds + 1):
        if args.base:
            base_out = work / f"bulk-run-{args.size}-base.jsonl"
            bases.append(_cli_run(args, base_out, args.base))
            print(f"round {round_number}: base run {bases[-1]:6.2f}s", flush=True)
        runs.append(_cli_run(args, out))
        if args.base:
            assert out.read_bytes() == base_out.read_bytes(), "the outputs differ"
        faiss_s.append(_child("faiss", args))
        raw_s.append(_child("raw", args))
        print(f"round {round_number}: run {runs[-1]:6.2f}s  faiss {faiss_s[-1]:6.2f}s  raw store "
              f"{raw_s[-1]:6.2f}s | run / faiss {runs[-1] / faiss_s[-1]:.2f}x  run / raw "
              f"{runs[-1] / raw_s[-1]:.2f}x", flush=True)
    run, faiss_m, raw = (statistics.median(x) for x in (runs, faiss_s, raw_s))
    print(f"median: run {run:.2f}s ({args.size / run:.0f} queries/s)  faiss {faiss_m:.2f}s  raw "
          f"store {raw:.2f}s | run / faiss {run / faiss_m:.2f}x  run / raw {run / raw:.2f}x")
    if bases:
        base = statistics.median(bases)
        print(f"median base run {base:.2f}s: run / base {run / base:.2f}x, outputs equal")
    print(f"output sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
