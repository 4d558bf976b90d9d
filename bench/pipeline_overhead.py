"""How much the pipeline costs on top of the raw search, and the embedded store against faiss.

Builds a synthetic embedded store (default 100k chunks x 384 dims) and 20k vector queries, then
times, in one run: the raw store search in port-sized batches (the hits' identities, and the
contents of the `return-n` best of each query: what a run must read at the least), the
pipeline's own step functions called in a plain loop (no Beam: what any wiring of them costs at
the least), the whole pipeline on the DirectRunner, and faiss-cpu IndexFlatIP on the same query
batch. Prints ratios, which mean more than the absolute times on a noisy machine.

    python bench/pipeline_overhead.py [--chunks 100000] [--queries 20000] [--dim 384]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.embedded.row_search import BLOCK_ROWS
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.vector_search import exact_neighbours
from connectors.embedded.writer import write_store
from connectors.search_port import SearchRequest
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.io.json_lines import to_json_line
from pipeline.run.chain import candidate_chain, through
from pipeline.run.job import run_job
from pipeline.run.query_parse import parse_query_line
from stages.fetch_content import with_contents
from stages.identity import candidates_of
from stages.models import EmbeddedQuery, Query, QueryCandidates, QueryHits
from stages.projection import assemble_result
from stages.recall import DEFAULT_SEARCH_BATCH, recall_batch


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _records(vectors: np.ndarray, chunks_per_doc: int = 4) -> Iterator[ChunkRecord]:
    for i, vector in enumerate(vectors):
        doc, index = f"doc{i // chunks_per_doc}", i % chunks_per_doc
        yield ChunkRecord(id=f"{doc}#chunk-{index}", vector=tuple(vector.tolist()),
                          content=f"chunk {i} of {doc}",
                          metadata={"docId": doc, "chunkIndex": index})


def _timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def _best_of(repeats: int, fn) -> float:  # type: ignore[no-untyped-def]
    """The fastest of `repeats` runs: the least disturbed by a noisy machine."""
    return min(_timed(fn)[0] for _ in range(repeats))


def raw_search(store: EmbeddedStore, queries: np.ndarray, k: int, batch: int,
               keep: int) -> int:
    """The store's own answer: hits without contents, then the `keep` best ones' contents."""
    hits = 0
    for start in range(0, len(queries), batch):
        requests = [SearchRequest(vector=tuple(q.tolist()), k=k)
                    for q in queries[start:start + batch]]
        for outcome in store.search_chunks(requests):
            assert not isinstance(outcome, Exception)
            hits += len(store.contents([r for r in outcome.refs[:keep] if r]))
    return hits


def steps_without_beam(store: EmbeddedStore, lines: list[bytes], settings: Settings) -> int:
    """The pipeline's step functions, called per query in a plain loop with no Beam around
    them: parse, recall (in batches), identity, the candidate chain, contents, result, JSON."""
    rag, answered, stages = settings.rag, 0, candidate_chain(settings.rag)
    for start in range(0, len(lines), settings.search.batch_size):
        queries = [parse_query_line(number, line) for number, line in enumerate(
            lines[start:start + settings.search.batch_size], start + 1)]
        assert all(isinstance(q, Query) for q in queries)
        for hits in recall_batch([EmbeddedQuery(q) for q in queries if isinstance(q, Query)],
                                 store, rag.retrieve_k):
            assert isinstance(hits, QueryHits)
            kept = through(stages, candidates_of(hits))
            filled = with_contents(QueryCandidates(hits.query_id, tuple(kept)), store.contents)
            assert isinstance(filled, QueryCandidates)
            to_json_line(assemble_result(filled, settings.projection))
            answered += 1
    return answered


def faiss_search(corpus: np.ndarray, queries: np.ndarray, k: int) -> float:
    import faiss  # only in the bench extra

    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    return _timed(lambda: index.search(queries, k))[0]


def store_vector_search(store: EmbeddedStore, queries: np.ndarray, k: int) -> float:
    """The store's kNN alone (faiss and the tie check, in its blocks), without building hits."""
    vectors = store._vectors
    blocks = [queries[s:s + BLOCK_ROWS] for s in range(0, len(queries), BLOCK_ROWS)]
    return _timed(lambda: [exact_neighbours(vectors, block, [k] * len(block))
                           for block in blocks])[0]


def store_batch_search(store: EmbeddedStore, queries: np.ndarray, k: int, keep: int) -> float:
    """One batch through the store, `keep` contents read per query."""
    requests = [SearchRequest(vector=tuple(q.tolist()), k=k) for q in queries]

    def search() -> None:
        for outcome in store.search_chunks(requests):
            assert not isinstance(outcome, Exception)
            store.contents([r for r in outcome.refs[:keep] if r])
    return _timed(search)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--batch", type=int, default=DEFAULT_SEARCH_BATCH)
    parser.add_argument("--return-n", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()

    corpus, queries = _unit(args.chunks, args.dim, 1), _unit(args.queries, args.dim, 2)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        build_s, _ = _timed(lambda: write_store(root / "store", _records(corpus)))
        print(f"built store: {args.chunks} chunks x {args.dim} dims in {build_s:.1f}s")
        query_file = root / "queries.jsonl"
        query_file.write_text("".join(json.dumps({"id": f"q{i}", "vector": q.tolist()}) + "\n"
                                      for i, q in enumerate(queries)))
        store = EmbeddedStore.open(root / "store")
        raw_s = _best_of(args.repeats, lambda: raw_search(store, queries, args.k, args.batch,
                                                          args.return_n))
        settings = load_settings(overrides=[
            f"search.embedded.path={root / 'store'}", f"embedder.dim={args.dim}",
            f"rag.retrieve-k={args.k}", f"search.batch-size={args.batch}",
            f"rag.return-n={args.return_n}"])
        lines = query_file.read_bytes().splitlines()
        loop_s = _best_of(args.repeats, lambda: steps_without_beam(store, lines, settings))
        summaries = [run_job(settings, queries_path=str(query_file),
                             out_path=str(root / f"out{i}.jsonl"),
                             dead_letter_path=str(root / f"dead{i}.jsonl"))
                     for i in range(args.repeats)]
        summary = min(summaries, key=lambda s: s.seconds)
        pipe_s = summary.seconds
        ours_s = min(store_batch_search(store, queries, args.k, args.return_n)
                     for _ in range(args.repeats))
        cold_s = min(store_batch_search(EmbeddedStore.open(root / "store"), queries, args.k,
                                        args.return_n) for _ in range(args.repeats))
        faiss_s = min(faiss_search(corpus, queries, args.k) for _ in range(args.repeats))
        knn_s = min(store_vector_search(store, queries, args.k) for _ in range(args.repeats))

    n = args.queries
    print(f"raw embedded-store search : {raw_s:7.2f}s  {n / raw_s:8.0f} queries/s "
          f"(batches of {args.batch}, k={args.k})")
    print(f"its steps without Beam:    {loop_s:7.2f}s  {n / loop_s:8.0f} queries/s "
          f"(the same functions in a plain loop: what no wiring of them can beat)")
    print(f"full pipeline (DirectRunner): {pipe_s:5.2f}s  {n / pipe_s:8.0f} queries/s "
          f"(parse, recall, identity, dedup, cap, top-n, project, write)")
    print(f"pipeline / raw search ratio: {pipe_s / raw_s:.2f}x   (steps without Beam / raw: "
          f"{loop_s / raw_s:.2f}x)")
    print(f"one batch of {n}: embedded store {ours_s:.2f}s, faiss IndexFlatIP {faiss_s:.2f}s, "
          f"embedded / faiss ratio: {ours_s / faiss_s:.2f}x")
    print(f"  a store just opened (no identity read yet) {cold_s:.2f}s, embedded / faiss "
          f"ratio: {cold_s / faiss_s:.2f}x")
    print(f"  of which the kNN alone {knn_s:.2f}s: kNN / faiss ratio {knn_s / faiss_s:.2f}x; "
          f"the rest takes {n * args.k} hits' identities and {n * args.return_n} contents")
    print(f"inputs = outputs + dead letters: {summary.balanced}   (each time: best of "
          f"{args.repeats})")


if __name__ == "__main__":
    main()
