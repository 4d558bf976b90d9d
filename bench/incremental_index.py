"""What a nightly re-index costs when little changed: incremental against a full rebuild.

Writes a corpus of `--docs` documents (a few sentences each, one chunk each), indexes it with
the semantic model (all-MiniLM-L6-v2), changes `--changed` of the documents (a sentence
appended), then, in one run, indexes the changed corpus twice: incrementally (the default)
and with `--rebuild` (every chunk embedded again, the way every run worked before). Both start
from the same store (a copy), with the model's files already extracted. Prints texts embedded
and wall time of each, and the ratios full / incremental.

    python bench/incremental_index.py [--docs 2000] [--changed 0.01] [--hashing]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from connectors.embedders.model_location import CACHE_ENV, MINILM, locate_model
from pipeline.config.loader import load_settings
from pipeline.ingest.index_summary import IndexSummary
from pipeline.ingest.job import run_index

WORDS = ["parse", "json", "file", "string", "list", "dict", "sort", "heap", "queue", "thread",
         "lock", "process", "pipe", "socket", "path", "directory", "archive", "compress", "hash",
         "random", "date", "time", "zone", "format", "print", "log", "error", "retry", "timeout",
         "buffer", "stream", "encode", "decode", "read", "write", "open", "close", "test"]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."


def write_corpus(root: Path, count: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    root.mkdir(parents=True)
    paths = []
    for i in range(count):
        path = root / f"doc{i:05d}.md"
        path.write_text(" ".join(sentence(rng) for _ in range(4)) + "\n")
        paths.append(path)
    return paths


def timed_index(settings_overrides: list[str], docs: Path, rebuild: bool) -> tuple[
        IndexSummary, float]:
    started = time.perf_counter()
    summary = run_index(load_settings(overrides=settings_overrides), docs=str(docs),
                        rebuild=rebuild)
    return summary, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--hashing", action="store_true", help="the hashing embedder instead")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        os.environ.setdefault(CACHE_ENV, str(root / "models"))
        embedder = ([] if args.hashing else
                    ["embedder.kind=sentence-transformers", f"embedder.model={MINILM}"])
        if not args.hashing:
            locate_model(MINILM)  # extracted once, before anything is timed
        paths = write_corpus(root / "docs", args.docs)
        first, seconds = timed_index([f"search.embedded.path={root / 'base'}", *embedder],
                                     root / "docs", rebuild=False)
        print(f"corpus: {args.docs} documents, {first.added} chunks; first index "
              f"{seconds:.1f} s")
        rng = random.Random(11)
        changed = rng.sample(paths, max(1, round(args.changed * len(paths))))
        for path in changed:
            path.write_text(path.read_text().strip() + " " + sentence(rng) + "\n")
        results = {}
        for name, rebuild in (("incremental", False), ("full rebuild", True)):
            store = root / name.replace(" ", "-")
            shutil.copytree(root / "base", store)
            summary, seconds = timed_index([f"search.embedded.path={store}", *embedder],
                                           root / "docs", rebuild)
            results[name] = (summary.texts_embedded, seconds)
            print(f"{name:>13}: {summary.texts_embedded:6d} texts embedded, {seconds:7.1f} s "
                  f"({summary.added} added, {summary.updated} updated, {summary.unchanged} "
                  f"unchanged, {summary.deleted} deleted)")
        (full_texts, full_s), (inc_texts, inc_s) = results["full rebuild"], results["incremental"]
        print(f"{len(changed)} of {args.docs} documents changed: full / incremental texts "
              f"embedded {full_texts / max(inc_texts, 1):.0f}x, wall time "
              f"{full_s / inc_s:.1f}x")


if __name__ == "__main__":
    main()
