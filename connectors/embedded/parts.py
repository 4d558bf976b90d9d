"""What the workers of an `index` job stage for the embedded store: parts of written chunks and
lists of deleted ids, in a staging folder that the commit reads."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.embedded.chunk_table import ChunkTable
from connectors.embedded.records_file import RecordFile, line_offsets
from connectors.embedder_port import EmbedderInfo
from core.chunk_fingerprint import chunk_fingerprint
from core.errors import DimensionMismatchError
from core.vectors import NO_DIRECTION, unit, unit_rows

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_LINES, _TABLE, _DELETED = ".jsonl", ".chunks.arrow", ".deleted.json"


class EmbeddedPartWriter:
    """A worker's writer: each batch written becomes one part (vectors, record lines, chunk
    table), each batch deleted one list of ids, in the staging folder."""

    def __init__(self, staging: Path, dimension: int, embedder: EmbedderInfo | None) -> None:
        self._staging = staging
        self._dimension = dimension
        self._embedder = embedder

    def write(self, records: Sequence[ChunkRecord]) -> WriteReport:
        report = WriteReport()
        rows, lines, table = [], [], ChunkTable.empty()
        for record in records:
            problem = self._problem(record)
            if problem is not None:
                report.failures.append((record.id, problem))
                continue
            rows.append(unit(record.vector))
            lines.append(json.dumps({"id": record.id, "content": record.content,
                                     "metadata": record.metadata}, ensure_ascii=False))
            table.append(record.id, record.metadata, chunk_fingerprint(
                record.content, record.metadata, self._embedder,
                None if self._embedder else record.vector))
        if rows:
            name = uuid.uuid4().hex
            np.save(self._staging / f"{name}.npy", np.vstack(rows))
            table.write(self._staging / f"{name}{_TABLE}")
            written = self._staging / f"{name}{_LINES}.part"  # a part counts once renamed
            written.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.rename(written.with_suffix(""))
        report.indexed = len(rows)
        return report

    def delete(self, ids: Sequence[str]) -> WriteReport:
        if ids:
            staged = self._staging / f"{uuid.uuid4().hex}{_DELETED}.part"
            staged.write_text(json.dumps(list(ids)), encoding="utf-8")
            os.replace(staged, staged.with_suffix(""))
        return WriteReport(indexed=len(ids))

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


class StagedParts:
    """The parts in a staging folder, mapped: the written chunks' table (in part order), their
    vectors and record lines; and the ids deleted."""

    def __init__(self, staging: Path) -> None:
        tables: list[ChunkTable] = []
        self.vectors: list[np.ndarray] = []
        self._lines: list[tuple[RecordFile, int]] = []
        for part in sorted(staging.glob(f"*{_LINES}")):
            with open(part, "rb") as handle:
                records = RecordFile(part, line_offsets(handle))
            name = part.name[:-len(_LINES)]
            tables.append(ChunkTable.load(staging / f"{name}{_TABLE}"))
            self.vectors.append(np.load(staging / f"{name}.npy", mmap_mode="r"))
            self._lines += [(records, row) for row in range(len(records))]
        self.table = ChunkTable.concatenated(tables)
        self.deleted: set[str] = set()
        for listing in staging.glob(f"*{_DELETED}"):
            self.deleted.update(json.loads(listing.read_text(encoding="utf-8")))

    def line(self, row: int) -> bytes:
        records, at = self._lines[row]
        return records.line(at)
