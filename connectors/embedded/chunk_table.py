"""`chunks.arrow`: a compact column table of what each row of a store version is (its id, its
document, the fingerprint of what its vector was computed from), read without the records.

An Arrow IPC file, memory-mapped when read: listing a store's chunks for an incremental index
costs the ids and fingerprints, never the contents or the vectors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from connectors.chunk_identity import document_of
from connectors.chunk_writer_port import StoredChunk
from connectors.embedded.layout import CHUNKS_FILE, OFFSETS_FILE, RECORDS_FILE
from connectors.embedded.records_file import RecordFile

_SCHEMA = pa.schema([("id", pa.string()), ("doc", pa.string()),
                     ("fingerprint", pa.string())])


@dataclass(frozen=True)
class ChunkTable:
    """Per row, in row order: id, document, fingerprint (None where unknown)."""

    ids: list[str]
    docs: list[str]
    fingerprints: list[str | None]

    def __len__(self) -> int:
        return len(self.ids)

    def stored(self) -> Iterator[StoredChunk]:
        for row in zip(self.ids, self.docs, self.fingerprints, strict=True):
            yield StoredChunk(*row)

    def write(self, path: Path) -> None:
        table = pa.table([pa.array(self.ids, pa.string()), pa.array(self.docs, pa.string()),
                          pa.array(self.fingerprints, pa.string())], schema=_SCHEMA)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, _SCHEMA) as writer:
            writer.write_table(table)

    @classmethod
    def load(cls, path: Path) -> ChunkTable:
        with pa.memory_map(str(path), "r") as source:
            table = pa.ipc.open_file(source).read_all()
        return cls(table.column("id").to_pylist(), table.column("doc").to_pylist(),
                   table.column("fingerprint").to_pylist())

    @classmethod
    def of_version(cls, folder: Path) -> ChunkTable:
        """The table of the store version in `folder`; a version written before the table
        existed has its ids and documents read from its records, and no fingerprints."""
        path = folder / CHUNKS_FILE
        return cls.load(path) if path.is_file() else cls._from_records(folder)

    @classmethod
    def _from_records(cls, folder: Path) -> ChunkTable:
        records = RecordFile.open(folder / RECORDS_FILE, folder / OFFSETS_FILE)
        ids, docs = [], []
        for row in range(len(records)):
            record = records.record(row)
            ids.append(str(record["id"]))
            docs.append(document_of(ids[-1], record.get("metadata") or {}))
        return cls(ids, docs, [None] * len(ids))

    def take(self, rows: Sequence[int]) -> ChunkTable:
        return ChunkTable([self.ids[r] for r in rows], [self.docs[r] for r in rows],
                          [self.fingerprints[r] for r in rows])

    @classmethod
    def empty(cls) -> ChunkTable:
        return cls([], [], [])

    @classmethod
    def concatenated(cls, tables: Sequence[ChunkTable]) -> ChunkTable:
        return cls([i for t in tables for i in t.ids], [d for t in tables for d in t.docs],
                   [f for t in tables for f in t.fingerprints])
