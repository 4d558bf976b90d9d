"""A night's run continued from the previous night's state, against a full run (issue 32).

Builds (in --work) a clustered flat store (default 100k chunks x 384 dims) and a Parquet file of
standing vector queries (default 100k), and runs `rag-evidence run` in child processes:
1. night 1: `--previous EMPTY --snapshot S1` (a full run that keeps its state);
2. changes 1% of the store through `index`'s own writer (a third rewritten, a third deleted,
   a third added);
3. night 2, full: `--previous EMPTY --snapshot F2` (the baseline, same day, same store);
4. night 2, continued: `--previous S1 --snapshot S2`;
5. night 2 in full again, keeping no state (`job.keep-state=false`): what keeping it costs;
6. a run with no `--previous` and no `--snapshot`.
With `--text`, the standing queries are short texts embedded by all-MiniLM-L6-v2 (searched in
the same store of vectors: the cost is a real run's, the answers are not meaningful). Prints
wall seconds and peak RSS of each, the ratio continued / full, the continued run's counters,
and the number of queries whose snapshot line differs between S2 and F2 (must be 0).

With `--index hnsw` (issue 47), the store has an HNSW graph searched at `--ef`, and nights
are approximate: S2 and F2 may differ. A flat twin of the store (the same chunks and change)
is then answered in full too, and each night 2's evidence is compared with its exact
evidence (the share of the exact evidence keys it holds), beside the audited recalls the
runs' summaries give (the graph's, of F2, at the width it searches; the continued lists',
of S2, at `retrieve-k`).

With `--mode lexical` or `hybrid` (and `--text`), the nights recall by BM25 too, and each
chunk's content holds 8 of the words the query texts are made of (a rewritten chunk other
ones), so that BM25 finds chunks for every query.

With `--backend elasticsearch`, the store is an index (flat `index_options`: exact) on the
Elasticsearch-compatible test server, started here, or on ES_URL when set; it is built and
changed through `index`'s own target, so that each chunk carries its store version.

    python bench/continued_run.py [--chunks 100000] [--queries 100000] [--text]
                                  [--mode hybrid] [--index hnsw --ef 16]
                                  [--backend elasticsearch] [--work /tmp/continued]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' server

from affected_queries import change
from bulk_scale import build_store, query_vectors
from embedding_throughput import WORDS, texts
from peak_rss import run_watching_peak

from connectors.chunk_writer_port import ChunkTarget
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.target import ElasticsearchTarget
from connectors.embedders.model_location import MINILM
from tests.es_server import running_server

DIM = 384
ROW_GROUP = 50_000


def write_queries(path: Path, count: int) -> None:
    schema = pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32()))])
    vectors = query_vectors(count, DIM)
    with pq.ParquetWriter(str(path), schema) as writer:
        for start in range(0, count, ROW_GROUP):
            block = vectors[start:start + ROW_GROUP]
            writer.write_table(pa.table({
                "id": [f"q{i}" for i in range(start, start + len(block))],
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(block.reshape(-1)), DIM).cast(pa.list_(pa.float32()))},
                schema=schema))


def write_texts(path: Path, count: int) -> None:
    path.write_text("".join(json.dumps({"id": f"q{i}", "text": text}) + "\n"
                            for i, text in enumerate(texts(count, 60, seed=5))))


ES_INDEX = "bench-continued"


@contextlib.contextmanager
def es_server(work: Path) -> Iterator[str]:
    if os.environ.get("ES_URL"):
        yield os.environ["ES_URL"]
        return
    (work / "es").mkdir(parents=True, exist_ok=True)
    with running_server(work / "es") as url:
        yield url


def es_target(url: str) -> ChunkTarget:
    return ElasticsearchTarget(ElasticsearchConfig(hosts=(url,), index=ES_INDEX,
                                                   request_timeout=120))


def es_flags(url: str) -> tuple[str, ...]:
    return ("--set", "search.backend=elasticsearch", "--set",
            f"search.elasticsearch.hosts=[{url}]", "--set",
            f"search.elasticsearch.index={ES_INDEX}", "--set",
            "search.elasticsearch.request-timeout=120")


def run(store: Path, queries: Path, out: Path, *flags: str) -> tuple[float, int, dict]:
    """`rag-evidence run` in a child: seconds, its own peak RSS in MiB, its summary's
    counts."""
    summary = out.with_suffix(".summary.json")
    seconds, peak, code = run_watching_peak([
        sys.executable, "-m", "pipeline.cli.main", "run", "--queries", str(queries), "--out",
        str(out), "--summary", str(summary), "--set", f"search.embedded.path={store}", *flags])
    if code != 0:
        raise SystemExit(f"run {flags} exited {code}")
    return seconds, peak, json.loads(summary.read_text())["counts"]


def lines_by_id(path: Path) -> dict[str, str]:
    with open(path, encoding="utf-8") as lines:
        return {json.loads(line)["query_id"]: line for line in lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--text", action="store_true", help="text queries, embedded by the model")
    parser.add_argument("--work", default="/tmp/continued")
    parser.add_argument("--index", choices=("flat", "hnsw"), default="flat")
    parser.add_argument("--mode", choices=("dense", "lexical", "hybrid"), default="dense",
                        help="rag.recall.mode (lexical and hybrid need --text)")
    parser.add_argument("--ef", type=int, default=16, help="HNSW ef-search (--index hnsw)")
    parser.add_argument("--backend", choices=("embedded", "elasticsearch"), default="embedded")
    parser.add_argument("--no-baselines", action="store_true",
                        help="skip runs 5 and 6 (for a million queries, an hour less)")
    args = parser.parse_args()
    if args.backend == "elasticsearch":
        if args.index != "flat":
            raise SystemExit("--backend elasticsearch: the index is flat (its own kNN)")
        with es_server(Path(args.work)) as url:
            night(args, es_target(url), es_flags(url))
    else:
        night(args, None, ())


def night(args: argparse.Namespace, target: ChunkTarget | None, store_flags: tuple[str, ...]
          ) -> None:
    """Builds the store (embedded, or `target`), runs the nights and prints them."""
    embedder: tuple[str, ...] = ("--set", "embedder.kind=sentence-transformers",
                                 "--set", f"embedder.model={MINILM}") if args.text else ()
    if args.mode != "dense" and not args.text:
        raise SystemExit("--mode lexical or hybrid needs --text (queries with a text)")
    embedder += ("--set", f"rag.recall.mode={args.mode}")
    model = embedder + store_flags + (("--set", "search.embedded.index=hnsw",
                                       "--set", f"search.embedded.hnsw.ef-search={args.ef}")
                                      if args.index == "hnsw" else ())
    work = Path(args.work)
    store = work / "store"
    if store.exists():
        raise SystemExit(f"{store} exists: the bench changes its store; remove it first")
    words = WORDS if args.mode != "dense" else ()
    build_store(store, args.chunks, DIM, args.index, words, target)
    empty = work / "empty.jsonl"
    if args.text:
        queries = work / "queries.jsonl"
        write_texts(queries, args.queries)
    else:
        queries = work / "queries.parquet"
        write_queries(queries, args.queries)
    empty.write_text("")
    night1 = run(store, queries, work / "n1.jsonl", "--previous", str(empty),
                 "--snapshot", str(work / "s1.jsonl"), *model)
    change(store, args.chunks, args.share, args.index, words, target)
    full = run(store, queries, work / "full.jsonl", "--previous", str(empty),
               "--snapshot", str(work / "f2.jsonl"), *model)
    continued = run(store, queries, work / "n2.jsonl", "--previous", str(work / "s1.jsonl"),
                    "--snapshot", str(work / "s2.jsonl"), *model)
    stateless = plain = None
    if not args.no_baselines:
        stateless = run(store, queries, work / "stateless.jsonl", "--previous", str(empty),
                        "--snapshot", str(work / "f2n.jsonl"), "--set",
                        "job.keep-state=false", *model)
        plain = run(store, queries, work / "plain.jsonl", *model)
    expected, got = lines_by_id(work / "f2.jsonl"), lines_by_id(work / "s2.jsonl")
    differ = sum(1 for query_id, line in expected.items() if got.get(query_id) != line)
    kind = "text" if args.text else "vector"
    ef = f" (ef-search {args.ef})" if args.index == "hnsw" else ""
    where = "Elasticsearch index" if target is not None else "store"
    print(f"{where} {args.chunks} x {DIM} {args.index}{ef}, {args.queries} standing {kind} "
          f"queries, {args.mode} recall, {args.share:.0%} of the store changed")
    for name, measured in (("night 1 (full, keeps state)", night1),
                           ("night 2 full (baseline)", full),
                           ("night 2 continued", continued),
                           ("night 2 full, keeping no state", stateless),
                           ("full run without --previous", plain)):
        if measured is not None:
            print(f"{name:>30}: {measured[0]:7.1f} s, peak RSS {measured[1]} MiB")
    counts = continued[2]
    print(f"ratio continued / full: {continued[0] / full[0]:.3f}")
    if stateless is not None and plain is not None:
        print(f"keeping state / keeping none: {full[0] / stateless[0]:.3f}; full / without "
              f"--previous: {full[0] / plain[0]:.3f}")
    print("continued run: " + ", ".join(f"{name} {counts.get(name, 0)}" for name in (
        "queries_continued", "continued_unchanged", "full_new_query", "full_query_changed",
        "full_ran_out", "full_continue_failed", "delta_chunks", "texts_embedded",
        "lexical_lists_continued")))
    if args.index == "flat":
        print(f"snapshot lines that differ from the full run's: {differ} of {len(expected)} "
              "(must be 0)")
        return
    print(f"snapshot lines that differ from the full run's: {differ} of {len(expected)} "
          "(HNSW: approximate)")
    exact = exact_evidence(work, args, embedder)
    full_counts = full[2]
    print(f"evidence recall against exact search: full {evidence_recall(expected, exact):.4f},"
          f" continued {evidence_recall(got, exact):.4f}")
    graph = ratio(full_counts, "hnsw_audit_found", "hnsw_audit_expected")
    lists = ratio(counts, "hnsw_continued_audit_found", "hnsw_continued_audit_expected")
    print(f"audited: the graph's recall@k in the full night {graph} (on "
          f"{full_counts.get('hnsw_audited_queries', 0)} queries); the continued lists' "
          f"recall@retrieve-k {lists} (on {counts.get('hnsw_continued_audited_lists', 0)} "
          "lists)")


def exact_evidence(work: Path, args: argparse.Namespace, model: tuple[str, ...]
                   ) -> dict[str, str]:
    """Night 2's evidence on a flat twin of the store: the same chunks, changed the same
    way, searched exactly."""
    twin = work / "exact-store"
    words = WORDS if args.mode != "dense" else ()
    build_store(twin, args.chunks, DIM, "flat", words)
    change(twin, args.chunks, args.share, "flat", words)
    queries = work / ("queries.jsonl" if args.text else "queries.parquet")
    run(twin, queries, work / "exact.jsonl", *model)
    return lines_by_id(work / "exact.jsonl")


def evidence_recall(lines: dict[str, str], exact: dict[str, str]) -> float:
    """The share of the exact evidence keys that `lines` holds, over every query."""
    held = wanted = 0
    for query_id, line in exact.items():
        keys = {e["evidence_key"] for e in json.loads(line)["evidence"]}
        mine = lines.get(query_id)
        found = {e["evidence_key"] for e in json.loads(mine)["evidence"]} if mine else set()
        held, wanted = held + len(keys & found), wanted + len(keys)
    return held / wanted if wanted else 1.0


def ratio(counts: dict, found: str, expected: str) -> str:
    return f"{counts[found] / counts[expected]:.4f}" if counts.get(expected) else "n/a"


if __name__ == "__main__":
    main()
