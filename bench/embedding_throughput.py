"""What the pipeline's Embed step costs on top of the model itself.

Embeds the same texts twice in one run: with the model's own `encode` on one big list, and
through the pipeline's Embed step (Beam DirectRunner: batching, the shared model, counters,
query records in and out; the queries read and parsed from a JSONL file as in a run). Short
queries and 800-character chunks separately. The model is loaded before either is timed, so
both measure embedding only; the pipeline's time includes starting the Beam job (about a
second, a fixed cost). The two alternate `--repeats` times and the medians are compared, since
this machine's speed drifts. Prints texts/s and the ratio pipeline / model throughput (1.0 =
no overhead).

    python bench/embedding_throughput.py [--short 4000] [--long 400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import apache_beam as beam

from connectors.embedders.model_location import MINILM
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from pipeline.io.line_blocks import ReadNumberedLines
from pipeline.run.query_parse import ParseQueries
from stages.support.shared_embedder import SharedEmbedder
from stages.transforms.embed import EmbedQueries

WORDS = ["parse", "json", "file", "string", "list", "dict", "sort", "heap", "queue", "thread",
         "lock", "process", "pipe", "socket", "path", "directory", "archive", "compress", "hash",
         "random", "date", "time", "zone", "format", "print", "log", "error", "retry", "timeout",
         "buffer", "stream", "encode", "decode", "read", "write", "open", "close", "test"]

def texts(count: int, chars: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < chars:
            words.append(rng.choice(WORDS))
        out.append(" ".join(words)[:chars])
    return out


def model_encode(model: SentenceTransformerEmbedder, batch: list[str], batch_size: int
                 ) -> float:
    library = model._model  # the library's own call, as a user would make it
    started = time.perf_counter()
    library.encode(batch, batch_size=batch_size, normalize_embeddings=True,
                 convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - started


def pipeline_embed(shared: SharedEmbedder, batch: list[str], batch_size: int) -> float:
    """Queries read from a JSONL file and parsed as a run does (an in-memory `beam.Create` of
    thousands of elements would time Beam compressing them into the job instead)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "queries.jsonl"
        path.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                                for i, t in enumerate(batch)))
        started = time.perf_counter()
        with beam.Pipeline() as pipeline:
            _ = (pipeline | ReadNumberedLines(str(path)) | ParseQueries()).queries | EmbedQueries(
                shared, batch_size=batch_size)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=4000, help="short queries (~60 chars)")
    parser.add_argument("--long", type=int, default=400, help="800-character chunks")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    # The Embed step's own loader; acquired here first, so the model is loaded (once per
    # process, as in a worker) before anything is timed, and the pipeline finds it shared.
    shared = SharedEmbedder(partial(SentenceTransformerEmbedder, MINILM,
                                    batch_size=args.batch_size), "bench")
    model = shared.acquire()
    assert isinstance(model, SentenceTransformerEmbedder)
    model_encode(model, texts(64, 60, 0), args.batch_size)  # warm-up
    print(f"model {MINILM}, batch size {args.batch_size}, CPU")
    for label, batch in (("short queries (60 chars)", texts(args.short, 60, 1)),
                         ("chunks (800 chars)", texts(args.long, 800, 2))):
        pairs = [(model_encode(model, batch, args.batch_size),
                  pipeline_embed(shared, batch, args.batch_size)) for _ in range(args.repeats)]
        encode = statistics.median(a for a, _ in pairs)
        embed = statistics.median(b for _, b in pairs)
        print(f"{label:<26} model.encode {len(batch) / encode:7.1f} texts/s   "
              f"pipeline Embed {len(batch) / embed:7.1f} texts/s   "
              f"pipeline/model throughput ratio {encode / embed:.3f}")


if __name__ == "__main__":
    main()
