"""`chunks.arrow`: a compact column table of what each row of a store version is: its id, its
identity as its metadata says it (document id, chunk index, source, what resolving them ran
into), and the fingerprint of what its vector was computed from.

An Arrow IPC file, memory-mapped when read: a search takes the identities of the rows it found
from here, never parsing a record (late materialization), and an incremental index lists a
store's chunks from here, never reading contents or vectors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from connectors.chunk_writer_port import StoredChunk
from connectors.embedded.layout import CHUNKS_FILE, OFFSETS_FILE, RECORDS_FILE, damaged
from connectors.embedded.records_file import RecordFile
from core.chunk_identity import Identity, resolve_identity
from core.errors import StoreNotFoundError

_SCHEMA = pa.schema([("id", pa.string()), ("doc_id", pa.string()),
                     ("chunk_index", pa.int64()), ("source", pa.string()),
                     ("flags", pa.int8()), ("fingerprint", pa.string())])


@dataclass(frozen=True)
class ChunkTable:
    """Per row, in row order: id, identity, fingerprint (None where unknown)."""

    ids: list[str]
    identities: list[Identity]
    fingerprints: list[str | None]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def docs(self) -> list[str]:
        """Each row's document: its document id, else its own id."""
        return [identity.doc_id or chunk_id
                for chunk_id, identity in zip(self.ids, self.identities, strict=True)]

    def stored(self) -> Iterator[StoredChunk]:
        for row in zip(self.ids, self.docs, self.fingerprints, strict=True):
            yield StoredChunk(*row)

    def take(self, rows: Sequence[int]) -> ChunkTable:
        return ChunkTable([self.ids[r] for r in rows], [self.identities[r] for r in rows],
                          [self.fingerprints[r] for r in rows])

    def append(self, chunk_id: str, metadata: dict[str, Any], fingerprint: str | None) -> None:
        self.ids.append(chunk_id)
        self.identities.append(resolve_identity(metadata))
        self.fingerprints.append(fingerprint)

    def write(self, path: Path) -> None:
        columns = list(zip(*self.identities, strict=True)) or [(), (), (), ()]
        table = pa.table([pa.array(self.ids, pa.string()), *(
            pa.array(column, kind) for column, kind in zip(
                columns, (pa.string(), pa.int64(), pa.string(), pa.int8()), strict=True)),
            pa.array(self.fingerprints, pa.string())], schema=_SCHEMA)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, _SCHEMA) as writer:
            writer.write_table(table)

    @classmethod
    def empty(cls) -> ChunkTable:
        return cls([], [], [])

    @classmethod
    def load(cls, path: Path) -> ChunkTable:
        return ChunkColumns.open(path).whole()

    @classmethod
    def of_version(cls, folder: Path) -> ChunkTable:
        """The table of the store version in `folder`; a version written before the table
        existed has its ids and identities read from its records, and no fingerprints."""
        columns = ChunkColumns.of_version(folder)
        if columns is not None:
            return columns.whole()
        records = RecordFile.open(folder / RECORDS_FILE, folder / OFFSETS_FILE)
        ids, identities = RecordIdentities(records).take(np.arange(len(records)))
        return cls(ids, identities, [None] * len(ids))

    @classmethod
    def concatenated(cls, tables: Sequence[ChunkTable]) -> ChunkTable:
        return cls([i for t in tables for i in t.ids],
                   [i for t in tables for i in t.identities],
                   [f for t in tables for f in t.fingerprints])


class RowIdentities(Protocol):
    """Where a search reads the ids and identities of the rows it found."""

    def take(self, rows: np.ndarray) -> tuple[list[str], list[Identity]]: ...


KEPT_IDENTITIES = 1_000_000
"""How many rows' ids and identities a store keeps once read (about 300 bytes each)."""


class ChunkColumns:
    """`chunks.arrow`, mapped: ids and identities by row, many rows at once. A row read once
    is kept as Python objects (up to `KEPT_IDENTITIES` rows): searches return the same rows
    again and again, and decoding them from Arrow costs far more than a list lookup."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self._kept: list[tuple[str, Identity] | None] = [None] * table.num_rows
        self._room = KEPT_IDENTITIES

    @classmethod
    def open(cls, path: Path) -> ChunkColumns:
        """Raises StoreNotFoundError naming the file when it is no Arrow file (damaged)."""
        try:
            with pa.memory_map(str(path), "r") as source:
                return cls(pa.ipc.open_file(source).read_all())
        except (pa.ArrowInvalid, OSError) as error:
            raise StoreNotFoundError(damaged(path, error)) from None

    @classmethod
    def of_version(cls, folder: Path) -> ChunkColumns | None:
        """The table of the store version in `folder`; None when it has none (or one of
        another layout: its records then say the same, more slowly)."""
        path = folder / CHUNKS_FILE
        if not path.is_file():
            return None
        columns = cls.open(path)
        return columns if columns._table.schema.equals(_SCHEMA) else None

    def __len__(self) -> int:
        return int(self._table.num_rows)

    def take(self, rows: np.ndarray) -> tuple[list[str], list[Identity]]:
        kept, numbers = self._kept, rows.tolist()
        found = [kept[row] for row in numbers]
        missing = [at for at, pair in enumerate(found) if pair is None]
        if missing:
            unread = [numbers[at] for at in missing]
            ids, identities = self._identities(self._table.take(pa.array(unread, pa.int64())))
            pairs = zip(ids, identities, strict=True)
            for at, row, pair in zip(missing, unread, pairs, strict=True):
                found[at] = pair
                if self._room > 0 and kept[row] is None:
                    kept[row] = pair
                    self._room -= 1
        return [pair[0] for pair in found], [pair[1] for pair in found]

    def whole(self) -> ChunkTable:
        ids, identities = self._identities(self._table)
        return ChunkTable(ids, identities, self._table.column("fingerprint").to_pylist())

    @staticmethod
    def _identities(table: pa.Table) -> tuple[list[str], list[Identity]]:
        ids, doc_ids, indexes, sources, flags = (
            table.column(name).to_pylist() for name in _SCHEMA.names[:5])
        # tuple.__new__ builds the same named tuples without their Python-level __new__:
        # this runs for every hit
        return ids, list(map(tuple.__new__, repeat(Identity),
                             zip(doc_ids, indexes, sources, flags, strict=True)))


class RecordIdentities:
    """Ids and identities read from the records themselves (a store without `chunks.arrow`,
    or one held in memory)."""

    def __init__(self, records: Any) -> None:
        self._records = records

    def take(self, rows: np.ndarray) -> tuple[list[str], list[Identity]]:
        ids, identities = [], []
        for row in rows.tolist():
            record = self._records.record(row)
            ids.append(str(record["id"]))
            identities.append(resolve_identity(record.get("metadata") or {}))
        return ids, identities
