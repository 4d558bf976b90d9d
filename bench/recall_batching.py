"""Recall the way a user would without us (one `es.search` per query) against the pipeline
(`_msearch` batches), on the same index and the same post-processing.

Indexes 2k chunks x 384 dims into the test server (noida-db, started here) or into ES_URL when
set, then answers 500 queries both ways through a counting proxy in its own process, and prints
queries/s, HTTP requests per query, and client CPU seconds per query (this process's CPU time:
the server and the proxy run elsewhere).

    python bench/recall_batching.py [--chunks 2000] [--queries 500] [--dim 384]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from elasticsearch import Elasticsearch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from connectors.chunk_record import ChunkRecord
from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.index_admin import ensure_index
from connectors.search_port import ChunkHit, SearchHit
from engines.processes import free_port
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.run.chain import candidate_chain, through
from pipeline.run.job import run_job
from pipeline.testing import query_hits
from stages.identity import candidates_of
from stages.models import QueryCandidates, RecalledHit
from stages.projection import assemble_result
from tests.es_server import running_server, wait_until_up

CAVEAT = ("caveat: the test server emulates the Elasticsearch API and is far slower at kNN "
          "than Elasticsearch; its queries/s are not Elasticsearch's. Set ES_URL for real figures.")


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@contextlib.contextmanager
def _server(scratch: Path) -> Iterator[str]:
    if os.environ.get("ES_URL"):
        yield os.environ["ES_URL"]
    else:
        with running_server(scratch) as url:
            yield url


@contextlib.contextmanager
def _counting_proxy(upstream: str, scratch: Path) -> Iterator[str]:
    port = free_port()
    log = scratch / "proxy.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "tests.fault_proxy", upstream,
                                    str(port)], stdout=out, stderr=subprocess.STDOUT,
                                   cwd=Path(__file__).resolve().parents[1])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(f"{url}/__proxy_requests", process, log)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _proxy_count(url: str) -> int:
    with urllib.request.urlopen(f"{url}/__proxy_requests") as response:
        return int(response.read())


def _index(url: str, settings: Settings, corpus: np.ndarray) -> None:
    config = settings.search.elasticsearch
    client = Elasticsearch(url, request_timeout=120)
    ensure_index(client, config, corpus.shape[1])
    records = (ChunkRecord(id=f"doc{i // 4}#chunk-{i % 4}", vector=tuple(v.tolist()),
                           content=f"chunk {i}", metadata={"docId": f"doc{i // 4}",
                                                           "chunkIndex": i % 4})
               for i, v in enumerate(corpus))
    report = write_chunks(client, config, records, refresh=True)
    client.close()
    print(f"indexed {report.indexed} chunks x {corpus.shape[1]} dims ({len(report.failures)} "
          "failed)")


def naive_loop(url: str, settings: Settings, queries: np.ndarray) -> int:
    """One es.search per query, then the same post-processing, in a plain Python loop."""
    es = settings.search.elasticsearch
    client = Elasticsearch(url, request_timeout=120)
    budget = settings.projection
    answered = 0
    for vector in queries:
        response = client.search(index=es.index, knn={
            "field": es.vector_field, "query_vector": vector.tolist(),
            "k": settings.rag.retrieve_k, "num_candidates": max(10 * settings.rag.retrieve_k, 100)},
            size=settings.rag.retrieve_k, source=[es.content_field, es.metadata_field or ""])
        hits = [RecalledHit(ChunkHit.of(SearchHit(
                    id=h["_id"], score=h["_score"], content=h["_source"].get(es.content_field, ""),
                    metadata=h["_source"].get(es.metadata_field, {}))), "knn:vector", n, n + 1)
                for n, h in enumerate(response["hits"]["hits"])]
        kept = through(candidate_chain(settings.rag), candidates_of(query_hits("q", hits)))
        assemble_result(QueryCandidates("q", tuple(kept)), budget)
        answered += 1
    client.close()
    return answered


def _measure(label: str, proxy: str, n: int, run, fixed_cpu: float = 0.0  # type: ignore[no-untyped-def]
             ) -> float:
    """Runs `run` (n queries) and prints its rates; `fixed_cpu` is CPU time that does not
    grow with the queries (a Beam job's start), left out of the per-query figure."""
    before = _proxy_count(proxy)
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    requests = _proxy_count(proxy) - before
    print(f"{label:<34} {n / wall:8.1f} queries/s  {requests / n:6.3f} HTTP requests/query  "
          f"{1000 * (cpu - fixed_cpu) / n:7.2f} ms client CPU/query", flush=True)
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    corpus, queries = _unit(args.chunks, args.dim, 1), _unit(args.queries, args.dim, 2)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch_dir:
        scratch = Path(scratch_dir)
        with _server(scratch) as url, _counting_proxy(url, scratch) as proxy:
            settings = load_settings(overrides=[
                "search.backend=elasticsearch", f"search.elasticsearch.hosts=[{proxy}]",
                "search.elasticsearch.index=bench-recall-batching",
                f"embedder.dim={args.dim}", "search.elasticsearch.request-timeout=120"])
            _index(url, settings, corpus)
            query_file = scratch / "queries.jsonl"
            query_file.write_text("".join(json.dumps({"id": f"q{i}", "vector": q.tolist()}) + "\n"
                                          for i, q in enumerate(queries)))
            n = args.queries
            _measure("(a) loop of es.search per query", proxy, n,
                     lambda: naive_loop(proxy, settings, queries))
            first = scratch / "first.jsonl"
            first.write_text("".join(query_file.read_text().splitlines(True)[:1]))
            fixed = _measure("(b0) pipeline, one query (its start)", proxy, 1,
                             lambda: run_job(settings, queries_path=str(first),
                                             out_path=str(scratch / "out0.jsonl"),
                                             dead_letter_path=str(scratch / "dead0.jsonl")))
            _measure(f"(b) pipeline, _msearch x{settings.search.batch_size}, its start left "
                     "out", proxy, n,
                     lambda: run_job(settings, queries_path=str(query_file),
                                     out_path=str(scratch / "out.jsonl"),
                                     dead_letter_path=str(scratch / "dead.jsonl")), fixed)
            Elasticsearch(url).options(ignore_status=404).indices.delete(
                index="bench-recall-batching")
    print(CAVEAT)


if __name__ == "__main__":
    main()
