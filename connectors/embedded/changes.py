"""What changed between two versions of an embedded store, from their chunk tables alone: the
ids whose earlier vectors no longer stand (deleted or rewritten), and the ids to search again
(added or rewritten). A run continued from the previous night's candidates needs nothing else
(see `stages.continuation`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from connectors.embedded.chunk_table import ChunkTable
from connectors.store_changes import MARK_FILES, StoreChanges

STATE_CHUNKS_FILE = MARK_FILES[0]
"""The name of the copy of the store's chunk table that a run's state keeps."""


def changes_between(previous: ChunkTable, current: ChunkTable) -> StoreChanges | str:
    """The changes from `previous` to `current`, or why they cannot be told exactly: a chunk
    without a fingerprint (a store from before fingerprints), or an id held twice."""
    for table, which in ((previous, "the previous"), (current, "the current")):
        if any(fingerprint is None for fingerprint in table.fingerprints):
            return f"{which} store version has chunks without fingerprints"
        if len(set(table.ids)) != len(table.ids):
            twice = next(i for i, n in Counter(table.ids).items() if n > 1)
            return f"{which} store version holds the chunk id {twice!r} more than once"
    before = dict(zip(previous.ids, previous.fingerprints, strict=True))
    now = dict(zip(current.ids, current.fingerprints, strict=True))
    entered = tuple(i for i, f in now.items() if before.get(i) != f)
    removed = frozenset(i for i, f in before.items() if now.get(i) != f)
    return StoreChanges(removed, entered)


@dataclass(frozen=True)
class ChunkTableMark:
    """The `StoreMark` of an embedded store version: its name and chunk table, kept whole and
    compared whole (`changes_between`)."""

    name: str
    table: ChunkTable
    file: str = STATE_CHUNKS_FILE

    @property
    def size(self) -> int:
        return len(self.table)

    def keep(self, folder: Path) -> None:
        keep_chunk_table(self.table, folder)

    def changes_since(self, folder: Path) -> StoreChanges | str:
        return changes_between(kept_chunk_table(folder), self.table)


def keep_chunk_table(chunks: ChunkTable, folder: Path) -> None:
    """Writes the chunk table of the store version a run read into `folder` (its state), so
    that the next run can tell what changed after this version is gone."""
    chunks.write(folder / STATE_CHUNKS_FILE)


def kept_chunk_table(folder: Path) -> ChunkTable:
    """The chunk table `keep_chunk_table` kept in `folder`."""
    return ChunkTable.load(folder / STATE_CHUNKS_FILE)
