"""Nights of `run` for the continuation tests: a store of random chunks in clusters, random
changes to it, standing queries of every kind, and runs through the CLI with `--previous` and
`--snapshot`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from connectors.chunk_record import ChunkRecord
from pipeline.cli.main import main
from pipeline.io.result_sink import read_results

DIM, DOCS, PER_DOC = 8, 100, 4


def random_records(rng: np.random.Generator, count: int, start: int) -> list[ChunkRecord]:
    centres = rng.normal(size=(12, DIM))
    rows = centres[rng.integers(0, 12, count)] + rng.normal(scale=0.4, size=(count, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    records = []
    for n, vector in enumerate(rows, start=start):
        doc, index = f"doc{n // PER_DOC}", n % PER_DOC
        records.append(ChunkRecord(id=f"{doc}#chunk-{index}", vector=tuple(map(float, vector)),
                                   content=f"content {n}", metadata={
                                       "docId": doc, "chunkIndex": index,
                                       "source": f"{doc}.md", "parity": n % 2}))
    return records


def changed_records(rng: np.random.Generator, records: list[ChunkRecord], each: int
                    ) -> list[ChunkRecord]:
    """`each` chunks rewritten (new vector and content), `each` deleted, `each` added."""
    picked = rng.choice(len(records), 2 * each, replace=False)
    rewritten, deleted = set(picked[:each].tolist()), set(picked[each:].tolist())
    fresh = random_records(rng, each, start=DOCS * PER_DOC + 1000 * int(rng.integers(1, 99)))
    kept = []
    for n, record in enumerate(records):
        if n in deleted:
            continue
        if n in rewritten:
            (new,) = random_records(rng, 1, start=n)
            record = record.model_copy(update={"vector": new.vector,
                                               "content": record.content + " (rewritten)"})
        kept.append(record)
    return kept + fresh


def standing_queries(rng: np.random.Generator, count: int, prefix: str) -> list[dict]:
    queries: list[dict] = []
    for n in range(count):
        vector = rng.normal(size=DIM).tolist()
        query: dict = {"id": f"{prefix}{n}"}
        kind = n % 5
        if kind == 3:
            query["vectors"] = [vector, rng.normal(size=DIM).tolist()]
        elif kind == 4:
            query["text"] = f"words {n} of {prefix} about topic {n % 7}"
        else:
            query["vector"] = vector
        if kind == 2:
            query["filters"] = {"parity": n % 2}
        queries.append(query)
    return queries


def write(path: Path, rows: list) -> Path:
    path.write_text("".join((r.model_dump_json() if isinstance(r, ChunkRecord)
                             else json.dumps(r)) + "\n" for r in rows))
    return path


def index(config: Path, chunks: Path) -> None:
    assert main(["index", "--config", str(config), "--chunks", str(chunks),
                 "--cleanup", "full"]) == 0


def run(config: Path, queries: Path, folder: Path, previous: Path, suffix: str = "jsonl"
         ) -> tuple[Path, dict]:
    folder.mkdir()
    snapshot, summary = folder / f"snapshot.{suffix}", folder / "summary.json"
    assert main(["run", "--config", str(config), "--queries", str(queries),
                 "--out", str(folder / "out.jsonl"), "--previous", str(previous),
                 "--snapshot", str(snapshot), "--summary", str(summary)]) == 0
    return snapshot, json.loads(summary.read_text())["counts"]


def by_id(path: Path) -> dict[str, dict]:
    return {result.query_id: result.model_dump() for result in read_results(str(path))}
