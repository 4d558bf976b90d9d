"""Writes an embedded store from many workers: parts in a staging directory, then one commit
that builds the new store beside the old and renames it into place."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.embedded.layout import (
    HNSW_FILE,
    LEXICAL_DIR,
    MANIFEST_FILE,
    OFFSETS_FILE,
    RECORDS_FILE,
    VECTORS_FILE,
    IndexKind,
    Manifest,
)
from connectors.embedded.lexical import build_lexical_index
from connectors.embedded.records_file import RecordFile, line_offsets, write_records
from connectors.embedded.vector_search import (
    DEFAULT_HNSW,
    HnswGraph,
    HnswParams,
    recall_against_exact,
)
from connectors.embedder_port import EmbedderInfo
from connectors.errors import DimensionMismatchError, InvalidInputError
from connectors.ownership import owned_suffix, release, remove_stale, take
from connectors.vectors import NO_DIRECTION, unit, unit_rows

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_DIGITS = re.compile(r"(\d+)")
_STAGING, _BUILDING = ".staging-", ".new-"
"""Work folders beside the store, named after their owner (see `connectors.ownership`)."""


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
            rows.append(unit(record.vector))
            lines.append(json.dumps({"id": record.id, "content": record.content,
                                     "metadata": record.metadata}, ensure_ascii=False))
        if rows:
            name = uuid.uuid4().hex
            np.save(self._staging / f"{name}.npy", np.vstack(rows))
            written = self._staging / f"{name}.jsonl.part"  # a part counts once renamed
            written.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.rename(written.with_suffix(""))
        report.indexed = len(rows)
        return report

    def close(self) -> None:
        return None

    def _problem(self, record: ChunkRecord) -> str | None:
        if len(record.vector) != self._dimension:
            return str(DimensionMismatchError("vector", len(record.vector), self._dimension))
        if not all(abs(x) <= _FLOAT32_MAX for x in record.vector):
            return "vector has a component outside the float32 range"
        if not unit_rows([record.vector])[1][0]:
            return f"vector {NO_DIRECTION}"
        return None


class EmbeddedStoreTarget:
    """The embedded store at `path` as an ingestion target (see `ChunkTarget`).

    Rows are stored in natural id order (`doc#chunk-2` before `doc#chunk-10`), whatever order
    the workers wrote them in, so a re-index gives the same store. `index: hnsw` also builds
    an HNSW graph (`hnsw` parameters) and measures its recall against exact search.
    """

    def __init__(self, path: str | Path, index: IndexKind = "flat",
                 hnsw: HnswParams = DEFAULT_HNSW) -> None:
        self._path = Path(path)
        self._staging = self._path.parent / f".{self._path.name}{_STAGING}{owned_suffix()}"
        self._dimension = 0
        self._embedder: EmbedderInfo | None = None
        self._index, self._hnsw = index, hnsw

    def prepare(self, dimension: int, embedder: EmbedderInfo | None) -> bool:
        """Takes the store's lock (a second `index` of it is refused, naming the holder),
        removes what killed jobs left beside it, and makes the staging folder."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        take(self._lock, f"the embedded store {str(self._path)!r}")
        for work in (_STAGING, _BUILDING):
            remove_stale(self._path.parent, f".{self._path.name}{work}")
        self._staging.mkdir(parents=True)
        self._dimension, self._embedder = dimension, embedder
        return not (self._path / MANIFEST_FILE).is_file()

    def open_writer(self) -> EmbeddedPartWriter:
        return EmbeddedPartWriter(self._staging, self._dimension)

    def commit(self) -> str | None:
        """Builds the store from the parts beside the old one and swaps it in; the old one
        is kept on any error. Returns a line to report (the HNSW recall), if any.

        Raises:
            InvalidInputError: two chunks share an id, or there is no chunk at all.
        """
        try:
            built, note = self._build()
            _swap_in(built, self._path)
        finally:
            self.abort()
        return note

    def abort(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)
        release(self._lock)

    @property
    def _lock(self) -> Path:
        return self._path.parent / f".{self._path.name}.lock"

    def _build(self) -> tuple[Path, str | None]:
        parts = _Parts(self._staging)
        if not parts.ids:
            raise InvalidInputError("index", str(self._path),
                                    "no chunk to index; the store there is left as it was")
        order = np.asarray(sorted(range(len(parts.ids)), key=lambda i: _natural(parts.ids[i])),
                           dtype=np.int64)
        _check_unique([parts.ids[i] for i in order])
        built = self._path.parent / f".{self._path.name}{_BUILDING}{owned_suffix()}"
        built.mkdir()
        try:
            note = _write_built(built, parts, order, Manifest(
                self._dimension, len(order), self._embedder, index=self._index), self._hnsw)
        except BaseException:
            shutil.rmtree(built, ignore_errors=True)
            raise
        return built, note


def write_store(path: str | Path, records: Iterable[ChunkRecord],
                embedder: EmbedderInfo | None = None, index: IndexKind = "flat",
                hnsw: HnswParams = DEFAULT_HNSW, batch_size: int = 4096) -> int:
    """Writes `records` as a new store at `path` (replacing one there, atomically) and returns
    the count. Records are written in batches as they come, never all held at once.

    Raises:
        InvalidInputError: two records share an id, a vector is unusable, or there are none
            (the store at `path` is then left as it was).
        DimensionMismatchError: their vector lengths differ.
    """
    stream = iter(records)
    first = next(stream, None)
    dimension = len(first.vector) if first is not None else 0
    target = EmbeddedStoreTarget(path, index, hnsw)
    target.prepare(dimension, embedder)
    indexed = 0
    try:
        writer = target.open_writer()
        batch = [first] if first is not None else []
        for record in stream:
            batch.append(record)
            if len(batch) == batch_size:
                indexed += _write_batch(writer, batch, dimension)
                batch = []
        indexed += _write_batch(writer, batch, dimension)
    except BaseException:
        target.abort()
        raise
    target.commit()
    return indexed


def _write_batch(writer: EmbeddedPartWriter, batch: list[ChunkRecord], dimension: int) -> int:
    for record in batch:
        if len(record.vector) != dimension:
            raise DimensionMismatchError(f"vector of {record.id!r}", len(record.vector), dimension)
    report = writer.write(batch)
    if report.failures:
        raise InvalidInputError(f"vector of {report.failures[0][0]!r}", "...",
                                report.failures[0][1])
    return report.indexed


class _Parts:
    """The staged parts, mapped: each row's id, and where its vector and JSON line are."""

    def __init__(self, staging: Path) -> None:
        self.ids: list[str] = []
        self.vectors: list[np.ndarray] = []
        self._lines: list[tuple[RecordFile, int]] = []
        for part in sorted(staging.glob("*.jsonl")):
            with open(part, "rb") as handle:
                records = RecordFile(part, line_offsets(handle))
            self.vectors.append(np.load(part.with_suffix(".npy"), mmap_mode="r"))
            for row in range(len(records)):
                self.ids.append(records.record(row)["id"])
                self._lines.append((records, row))

    def line(self, row: int) -> bytes:
        records, at = self._lines[row]
        return records.line(at)


def _write_built(built: Path, parts: _Parts, order: np.ndarray, manifest: Manifest,
                 hnsw: HnswParams) -> str | None:
    """Writes every file of the new store into `built`, rows in `order`, vectors streamed
    into a mapped file; returns a line on the HNSW index's recall, when one is built."""
    vectors = np.lib.format.open_memmap(built / VECTORS_FILE, mode="w+", dtype=np.float32,
                                        shape=(len(order), manifest.dimension))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    start = 0
    for block in parts.vectors:
        vectors[position[start:start + len(block)]] = block
        start += len(block)
    vectors.flush()
    offsets = write_records(built / RECORDS_FILE, (parts.line(int(i)) for i in order))
    np.save(built / OFFSETS_FILE, offsets)
    records = RecordFile(built / RECORDS_FILE, offsets)
    lexical = build_lexical_index([records.record(row)["content"] for row in range(len(order))],
                                  built / LEXICAL_DIR)
    note = None
    if manifest.index == "hnsw":
        graph = HnswGraph.build(vectors, hnsw, built / HNSW_FILE)
        recall, sample = recall_against_exact(graph, vectors)
        note = (f"hnsw index (m={hnsw.m}, ef-construction={hnsw.ef_construction}, "
                f"ef-search={hnsw.ef_search}): recall@20 {recall:.3f} against exact search, "
                f"on {sample} sampled chunks")
    Manifest(manifest.dimension, manifest.count, manifest.embedder, lexical,
             manifest.index).write(built)
    return note


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
