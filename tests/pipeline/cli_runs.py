"""The CLI run as a user runs it, for tests: a small indexed store and `run` over lines."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.cli.main import main
from tests.builders import chunk_records, unit_vectors

DIM = 8


def index_store(root: Path) -> Path:
    """A store of 40 chunks (10 docs x 4) of DIM dims under `root`; returns its config."""
    chunks = root / "chunks.jsonl"
    records = chunk_records(unit_vectors(40, dim=DIM), chunks_per_doc=4)
    chunks.write_text("".join(r.model_dump_json() + "\n" for r in records))
    config = root / "config.yaml"
    config.write_text(
        f"search:\n  embedded:\n    path: {root / 'store'}\nembedder:\n  dim: {DIM}\n"
        "rag:\n  retrieve-k: 10\n  return-n: 3\n"
    )
    assert main(["index", "--config", str(config), "--chunks", str(chunks)]) == 0
    return config


def lines_of(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()
    ]


def run_cli(config: Path, tmp: Path, lines: list[str], *extra: str) -> tuple[list, list, int]:
    """`run` over `lines` as a JSONL query file: (results, dead letters, exit code)."""
    queries = tmp / "queries.jsonl"
    queries.write_text("\n".join(lines) + "\n")
    out, dead = tmp / "out.jsonl", tmp / "dead.jsonl"
    code = main(["run", "--config", str(config), "--queries", str(queries), "--out", str(out),
                 "--dead-letter", str(dead), *extra])
    return lines_of(out), lines_of(dead), code


def vector_run(config: Path, tmp: Path, *extra: str, queries: int = 1) -> tuple[list[str], Path]:
    """`run`'s command line over `queries` vector queries of DIM dims: (argv, the --out path)."""
    path = tmp / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "vector": [1.0] * DIM}) + "\n"
                            for i in range(queries)))
    out = tmp / "out.jsonl"
    return ["run", "--config", str(config), "--queries", str(path), "--out", str(out),
            *extra], out
