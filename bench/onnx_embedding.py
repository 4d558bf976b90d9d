"""The onnx backend against the torch backend for all-MiniLM-L6-v2, as the project runs them.

Both are `SentenceTransformerEmbedder`s: `backend="onnx"` runs the packaged int8 ONNX file
with ONNX Runtime, `backend="torch"` the original weights with sentence-transformers. Prints,
in one run: texts/s of each on short queries and on 800-character chunks (best of --repeats,
after a warm-up) and the ratio onnx / torch; the lowest cosine between the two embeddings of
a text; and top-1 agreement: for --queries queries (the first 8 words of sentences of the
standard library's docs), whether each backend's nearest paragraph of those docs, embedded by
that same backend, is the same one.

    python bench/onnx_embedding.py [--short 2000] [--long 200] [--queries 400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ as a package

from bench.embedding_throughput import texts
from connectors.embedders.model_location import CACHE_ENV, MINILM
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from pipeline.eval.stdlib_corpus import write_corpus


def best(repeats: int, embed: Callable[[list[str]], np.ndarray], batch: list[str]) -> float:
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        embed(batch)
        seconds.append(time.perf_counter() - started)
    return min(seconds)


def paragraphs(folder: Path) -> list[str]:
    write_corpus(folder)
    found = []
    for page in sorted(folder.glob("*.md")):
        found += [p.strip()[:800] for p in page.read_text().split("\n\n")
                  if len(p.split()) >= 8]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=2000)
    parser.add_argument("--long", type=int, default=200)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ.setdefault(CACHE_ENV, scratch)
        backends = {name: SentenceTransformerEmbedder(MINILM, batch_size=args.batch,
                                                      backend=name)
                    for name in ("torch", "onnx")}
        for label, batch in (("short queries", texts(args.short, 40, 1)),
                             ("800-char chunks", texts(args.long, 800, 2))):
            for embedder in backends.values():
                embedder.embed(batch[:8])  # warm up
            seconds = {name: best(args.repeats, e.embed, batch) for name, e in backends.items()}
            cosine = float(np.min(np.sum(backends["torch"].embed(batch)
                                         * backends["onnx"].embed(batch), axis=1)))
            print(f"{label:>15}: torch {len(batch) / seconds['torch']:7.1f} texts/s, onnx "
                  f"{len(batch) / seconds['onnx']:7.1f} texts/s, onnx / torch "
                  f"{seconds['torch'] / seconds['onnx']:.2f}x, lowest cosine {cosine:.6f}",
                  flush=True)

        corpus = paragraphs(Path(scratch) / "docs")
        sentences = [s for p in corpus for s in p.split(". ") if len(s.split()) >= 6]
        queries = [" ".join(s.split()[:8])
                   for s in random.Random(3).sample(sentences, args.queries)]
        top = {}
        for name, embedder in backends.items():
            chunks = embedder.embed(corpus, "document")
            top[name] = np.argmax(embedder.embed(queries) @ chunks.T, axis=1)
        agree = int(np.sum(top["torch"] == top["onnx"]))
        print(f"top-1 agreement: {agree}/{len(queries)} queries "
              f"({agree / len(queries):.3f}) over {len(corpus)} paragraphs")


if __name__ == "__main__":
    main()
