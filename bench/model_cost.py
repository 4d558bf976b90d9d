"""What each packaged model costs to embed: all-MiniLM-L6-v2 (onnx, the default; torch) and
all-mpnet-base-v2 (onnx, exported here; torch), on the same short queries and 800-character
chunks, in one run.

Each model is loaded before it is timed; the models alternate `--repeats` times and the medians
are compared, since this machine's speed drifts. Prints texts/s per model and kind of text, and
each model's time over the default's (MiniLM on onnx).

    python bench/model_cost.py [--short 400] [--long 100] [--repeats 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ as a package

from bench.embedding_throughput import texts
from connectors.embedders.model_location import MINILM
from connectors.embedders.packaged_models import MPNET
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder

MODELS = ((MINILM, "onnx"), (MINILM, "torch"), (MPNET, "onnx"), (MPNET, "torch"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=400, help="short queries (~60 chars)")
    parser.add_argument("--long", type=int, default=100, help="800-character chunks")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    loads = {}
    embedders = {}
    for name, backend in MODELS:
        started = time.perf_counter()
        embedders[(name, backend)] = embedder = SentenceTransformerEmbedder(
            name, batch_size=args.batch_size, backend=backend)
        embedder.embed(["warm up"])
        loads[(name, backend)] = time.perf_counter() - started
    batches = {"short": texts(args.short, 60, seed=1), "long": texts(args.long, 800, seed=2)}
    seconds: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(args.repeats):
        for kind, batch in batches.items():
            for model, embedder in embedders.items():
                started = time.perf_counter()
                embedder.embed(batch)
                seconds.setdefault((*model, kind), []).append(time.perf_counter() - started)
    print(f"{args.short} short queries, {args.long} 800-character chunks, batch "
          f"{args.batch_size}, median of {args.repeats}")
    for kind, batch in batches.items():
        base = statistics.median(seconds[(MINILM, "onnx", kind)])
        for name, backend in MODELS:
            median = statistics.median(seconds[(name, backend, kind)])
            print(f"{kind:>5} {name:>18} {backend:>5}: {len(batch) / median:8.1f} texts/s, "
                  f"time / MiniLM onnx {median / base:5.2f}, loaded in "
                  f"{loads[(name, backend)]:.1f} s")


if __name__ == "__main__":
    main()
