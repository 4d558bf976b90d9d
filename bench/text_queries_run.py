"""A whole run with text queries against the model's own `encode` on the same texts.

Indexes `--docs` small documents with all-MiniLM-L6-v2, then, in one process, alternately
times the library's `encode` on `--queries` short query texts and `rag-evidence run` on the
same texts as JSONL queries (parse, embed, recall, identity, dedup, cap, top-n, fetch,
project, write). The run's fixed start (Beam job, store opened, model found) is measured with
one query and shown apart. Medians over `--repeats`; prints texts/s of each and the ratio run
/ encode (1.0 = the run adds nothing to the model).

    python bench/text_queries_run.py [--docs 300] [--queries 2000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ as a package

from bench.embedding_throughput import texts
from bench.incremental_index import write_corpus
from connectors.embedders.model_location import CACHE_ENV, MINILM, locate_model
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from pipeline.config.loader import load_settings
from pipeline.ingest.job import run_index
from pipeline.run.job import run_job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64, help="embedder.batch-size")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as work:
        root = Path(work)
        os.environ.setdefault(CACHE_ENV, str(root / "models"))
        locate_model(MINILM)
        settings = load_settings(overrides=[
            "embedder.kind=sentence-transformers", f"embedder.model={MINILM}",
            f"search.embedded.path={root / 'store'}", f"embedder.batch-size={args.batch_size}"])
        write_corpus(root / "docs", args.docs)
        run_index(settings, docs=str(root / "docs"))
        batch = texts(args.queries, 60, 1)
        query_file, first = root / "queries.jsonl", root / "first.jsonl"
        query_file.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                                      for i, t in enumerate(batch)))
        first.write_text(query_file.read_text().splitlines(True)[0])
        model = SentenceTransformerEmbedder(MINILM)._model  # the library's own, as a user has it

        def encode() -> float:
            started = time.perf_counter()
            model.encode(batch, batch_size=args.batch_size, normalize_embeddings=True,
                         convert_to_numpy=True, show_progress_bar=False)
            return time.perf_counter() - started

        def run(path: Path) -> float:
            started = time.perf_counter()
            run_job(settings, queries_path=str(path), out_path=str(root / "out.jsonl"),
                    dead_letter_path=str(root / "dead.jsonl"))
            return time.perf_counter() - started

        run(first)  # warm: the model loaded once in this process, as in a worker
        pairs = [(encode(), run(query_file), run(first)) for _ in range(args.repeats)]
        encode_s = statistics.median(e for e, _, _ in pairs)
        run_s = statistics.median(r for _, r, _ in pairs)
        start_s = statistics.median(s for _, _, s in pairs)
        n = len(batch)
        print(f"{n} short text queries, store of {args.docs} documents, median of "
              f"{args.repeats}")
        print(f"model.encode              {n / encode_s:7.1f} texts/s")
        print(f"rag-evidence run          {n / run_s:7.1f} queries/s   run / encode "
              f"{encode_s / run_s:.3f}")
        print(f"  its start left out      {n / (run_s - start_s):7.1f} queries/s   run / encode "
              f"{encode_s / (run_s - start_s):.3f}   (start {start_s:.1f} s)")


if __name__ == "__main__":
    main()
