"""A million vector queries against a clustered 100k x 384 HNSW store, as `rag-evidence run`
answers them: wall time, queries/s, the audited recall, and peak memory at 100k queries and at
1M (flat memory: nothing grows with the number of queries).

The queries are a Parquet file (a column of float32 vectors: a million JSON lines of 384 floats
would be 8 GB), drawn from the store's own distribution, never stored rows. Each run is a
child process, so that its peak memory is its own.

    python bench/million_queries.py [--queries 1000000] [--small 100000] [--ef-search auto]
                                    [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ as a package
import pyarrow as pa
import pyarrow.parquet as pq

from bench.hnsw_recall import clustered, isotropic, records
from bench.peak_rss import run_watching_peak
from connectors.embedded.vector_search import HnswParams
from connectors.embedded.writer import write_store

ROW_GROUP = 50_000


def write_queries(path: Path, centres: np.ndarray, count: int) -> None:
    schema = pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32()))])
    with pq.ParquetWriter(str(path), schema) as writer:
        for start in range(0, count, ROW_GROUP):
            n = min(ROW_GROUP, count - start)
            vectors = clustered(centres, n, seed=1_000 + start)
            writer.write_table(pa.table({
                "id": [f"q{i}" for i in range(start, start + n)],
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.reshape(-1)), vectors.shape[1]).cast(
                        pa.list_(pa.float32()))}, schema=schema))


def run(store: Path, queries: Path, out: Path, ef_search: str, settings: list[str]
        ) -> tuple[float, int, dict]:
    """`rag-evidence run` in a child: seconds, the child's peak RSS in MiB, its summary."""
    summary = out.with_suffix(".summary.json")
    seconds, peak, code = run_watching_peak([
        sys.executable, "-m", "pipeline.cli.main", "run", "--queries", str(queries), "--out",
        str(out), "--summary", str(summary), "--set", f"search.embedded.path={store}",
        "--set", "search.embedded.index=hnsw",
        "--set", f"search.embedded.hnsw.ef-search={ef_search}",
        *(arg for setting in settings for arg in ("--set", setting))])
    if code != 0:
        raise subprocess.CalledProcessError(code, "rag-evidence run")
    return seconds, peak, json.loads(summary.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--ef-search", default="auto")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="another setting for the runs (search.batch-size=64, say)")
    args = parser.parse_args()
    centres = isotropic(1_000, args.dim, 5)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        started = time.perf_counter()
        write_store(root / "store", records(clustered(centres, args.chunks, 1)), index="hnsw",
                    hnsw=HnswParams())
        print(f"store: {args.chunks} x {args.dim} clustered, HNSW built in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        for count in (args.small, args.queries):
            queries = root / f"queries-{count}.parquet"
            write_queries(queries, centres, count)
            seconds, peak, summary = run(root / "store", queries, root / f"out-{count}.jsonl",
                                         args.ef_search, args.set)
            counts = summary["counts"]
            expected = counts.get("hnsw_audit_expected", 0)
            recall = counts.get("hnsw_audit_found", 0) / expected if expected else float("nan")
            settled = counts.get("hnsw_settled_ef_sum", 0) / max(1, counts.get(
                "hnsw_settlements", 0))
            print(f"{count:>9} queries: {seconds:7.0f} s wall ({seconds / 60:.1f} min), "
                  f"{count / seconds:6.0f} queries/s, peak RSS {peak} MiB, audited recall@20 "
                  f"{recall:.3f} on {counts.get('hnsw_audited_queries', 0)} queries, ef "
                  f"{settled:.0f}, balanced {summary['balanced']}", flush=True)
            queries.unlink()


if __name__ == "__main__":
    main()
