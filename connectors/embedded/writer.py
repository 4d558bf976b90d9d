"""Writes an embedded store from many workers: parts in a staging directory, then one commit
that builds the new store beside the old and renames it into place."""

from __future__ import annotations

import json
import math
import re
import shutil
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.embedded.layout import LEXICAL_DIR, RECORDS_FILE, VECTORS_FILE, Manifest
from connectors.embedded.lexical import build_lexical_index
from connectors.embedder_port import EmbedderInfo
from connectors.errors import DimensionMismatchError, InvalidInputError

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_DIGITS = re.compile(r"(\d+)")


class EmbeddedPartWriter:
    """A worker's writer: each batch becomes one part (rows + records) in the staging folder."""

    def __init__(self, staging: Path, dimension: int) -> None:
        self._staging = staging
        self._dimension = dimension

    def write(self, records: Sequence[ChunkRecord]) -> WriteReport:
        report = WriteReport()
        rows, lines = [], []
        for record in records:
            problem = self._problem(record)
            if problem is not None:
                report.failures.append((record.id, problem))
                continue
            vector = np.asarray(record.vector, dtype=np.float32)
            rows.append(vector / np.linalg.norm(vector))
            lines.append(json.dumps({"id": record.id, "content": record.content,
                                     "metadata": record.metadata}, ensure_ascii=False))
        if rows:
            name = uuid.uuid4().hex
            np.save(self._staging / f"{name}.npy", np.vstack(rows))
            (self._staging / f"{name}.jsonl").write_text("\n".join(lines) + "\n",
                                                         encoding="utf-8")
        report.indexed = len(rows)
        return report

    def close(self) -> None:
        return None

    def _problem(self, record: ChunkRecord) -> str | None:
        if len(record.vector) != self._dimension:
            return str(DimensionMismatchError("vector", len(record.vector), self._dimension))
        if not all(abs(x) <= _FLOAT32_MAX for x in record.vector):
            return "vector has a component outside the float32 range"
        if not math.isfinite(float(np.linalg.norm(np.asarray(record.vector, np.float32)))):
            return "vector's length overflows float32"
        return None


class EmbeddedStoreTarget:
    """The embedded store at `path` as an ingestion target (see `ChunkTarget`).

    Rows are stored in natural id order (`doc#chunk-2` before `doc#chunk-10`), whatever order
    the workers wrote them in, so a re-index gives the same store.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._staging = self._path.parent / f".{self._path.name}.staging-{uuid.uuid4().hex[:8]}"
        self._dimension = 0
        self._embedder: EmbedderInfo | None = None

    def prepare(self, dimension: int, embedder: EmbedderInfo | None) -> bool:
        self._staging.mkdir(parents=True)
        self._dimension, self._embedder = dimension, embedder
        return not (self._path / "manifest.json").is_file()

    def open_writer(self) -> EmbeddedPartWriter:
        return EmbeddedPartWriter(self._staging, self._dimension)

    def commit(self) -> None:
        """Builds the store from the parts and swaps it in; the old one is kept on error.

        Raises:
            InvalidInputError: two chunks share an id, or there is no chunk at all.
        """
        try:
            built = self._build()
            _swap_in(built, self._path)
        finally:
            self.abort()

    def abort(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)

    def _build(self) -> Path:
        records, vectors = _read_parts(self._staging)
        if not records:
            raise InvalidInputError("index", str(self._path),
                                    "no chunk to index; the store there is left as it was")
        order = sorted(range(len(records)), key=lambda i: _natural(records[i]["id"]))
        _check_unique([records[i]["id"] for i in order])
        built = self._path.parent / f".{self._path.name}.new-{uuid.uuid4().hex[:8]}"
        built.mkdir()
        try:
            np.save(built / VECTORS_FILE, vectors[order])
            with open(built / RECORDS_FILE, "w", encoding="utf-8") as out:
                out.writelines(json.dumps(records[i], ensure_ascii=False) + "\n" for i in order)
            lexical = build_lexical_index([records[i]["content"] for i in order],
                                          built / LEXICAL_DIR)
            Manifest(self._dimension, len(order), self._embedder, lexical).write(built)
        except BaseException:
            shutil.rmtree(built, ignore_errors=True)
            raise
        return built


def write_store(path: str | Path, records: Iterable[ChunkRecord],
                embedder: EmbedderInfo | None = None) -> int:
    """Writes `records` as a new store at `path` (replacing one there) and returns the count.

    Raises:
        InvalidInputError: two records share an id, or there are none.
        DimensionMismatchError: their vector lengths differ.
    """
    batch = list(records)
    dimension = len(batch[0].vector) if batch else 0
    for record in batch:
        if len(record.vector) != dimension:
            raise DimensionMismatchError(f"vector of {record.id!r}", len(record.vector), dimension)
    target = EmbeddedStoreTarget(path)
    target.prepare(dimension, embedder)
    try:
        report = target.open_writer().write(batch)
        if report.failures:
            raise InvalidInputError(f"vector of {report.failures[0][0]!r}", "...",
                                    report.failures[0][1])
    except BaseException:
        target.abort()
        raise
    target.commit()
    return report.indexed


def _read_parts(staging: Path) -> tuple[list[dict[str, Any]], np.ndarray]:
    records: list[dict[str, Any]] = []
    blocks = []
    for part in sorted(staging.glob("*.jsonl")):
        with open(part, encoding="utf-8") as lines:
            records.extend(json.loads(line) for line in lines)
        blocks.append(np.load(part.with_suffix(".npy")))
    return records, (np.vstack(blocks) if blocks else np.zeros((0, 0), np.float32))


def _check_unique(ids: list[object]) -> None:
    seen: set[object] = set()
    for record_id in ids:
        if record_id in seen:
            raise InvalidInputError("id", record_id, "appears twice; chunk ids must be unique")
        seen.add(record_id)


def _natural(record_id: object) -> list[object]:
    return [int(p) if p.isdigit() else p for p in _DIGITS.split(str(record_id))]


def _swap_in(built: Path, path: Path) -> None:
    old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
    if path.exists():
        path.rename(old)
    built.rename(path)
    shutil.rmtree(old, ignore_errors=True)
