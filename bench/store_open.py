"""Opening a big embedded store: seconds and resident memory, beyond the mapped vectors.

Builds (once, in --work) a store of --chunks x --dim (default 1M x 384), then opens it in a
fresh process and reports the time to open and to answer one query, and the resident memory
that the open added, split into file-backed pages (the mapped store files) and the rest.

    python bench/store_open.py [--chunks 1000000] [--dim 384] [--work /tmp/rag-evidence-open]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.embedded.versions import CURRENT_FILE
from connectors.embedded.writer import write_store


def _records(chunks: int, dim: int) -> Iterator[ChunkRecord]:
    rng = np.random.default_rng(1)
    for start in range(0, chunks, 10_000):
        block = rng.normal(size=(min(10_000, chunks - start), dim)).astype(np.float32)
        for i, vector in enumerate(block, start=start):
            doc, index = f"doc{i // 4}", i % 4
            yield ChunkRecord(id=f"{doc}#chunk-{index}", vector=tuple(vector.tolist()),
                              content=f"chunk {i} of {doc}",
                              metadata={"docId": doc, "chunkIndex": index})


def _resident_mb() -> tuple[float, float]:
    """(anonymous, file-backed) resident memory of this process, in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    kb = {name: int(fields[name].split()[0]) for name in ("RssAnon", "RssFile")}
    return kb["RssAnon"] / 1024, kb["RssFile"] / 1024


def child(store: str, dim: int) -> None:
    from connectors.embedded.store import EmbeddedStore
    from connectors.search_port import SearchRequest

    before = _resident_mb()
    started = time.perf_counter()
    opened = EmbeddedStore.open(store)
    open_s = time.perf_counter() - started
    after_open = _resident_mb()
    query = tuple(np.random.default_rng(5).normal(size=dim).tolist())
    started = time.perf_counter()
    opened.search([SearchRequest(vector=query, k=20)])
    search_s = time.perf_counter() - started
    after_search = _resident_mb()
    print(json.dumps({"open_s": open_s, "search_s": search_s, "before": before,
                      "after_open": after_open, "after_search": after_search,
                      "rows": len(opened)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", nargs="?", default="bench", choices=["bench", "child"])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--work", default="/tmp/rag-evidence-open")
    parser.add_argument("--store")
    args = parser.parse_args()
    if args.kind == "child":
        return child(args.store, args.dim)
    store = Path(args.work) / f"store-{args.chunks}-{args.dim}"
    if not (store / CURRENT_FILE).is_file():  # a store names its current version last
        started = time.perf_counter()
        write_store(store, _records(args.chunks, args.dim))
        print(f"built store: {args.chunks} x {args.dim} in {time.perf_counter() - started:.0f}s")
    done = subprocess.run([sys.executable, __file__, "child", "--store", str(store),
                           "--dim", str(args.dim)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    r = json.loads(done.stdout.strip().splitlines()[-1])
    anon = r["after_open"][0] - r["before"][0]
    print(f"open {r['rows']} x {args.dim}: {r['open_s']:.3f}s, resident memory added: "
          f"{anon:.0f} MB anonymous + {r['after_open'][1] - r['before'][1]:.0f} MB of mapped "
          f"files; first exact query {r['search_s']:.2f}s, then {r['after_search'][0]:.0f} MB "
          f"anonymous + {r['after_search'][1]:.0f} MB mapped in all")


if __name__ == "__main__":
    main()
