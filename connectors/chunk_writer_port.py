"""The chunk-writer port: how the one ingestion pipeline reads what a store holds and writes
into it, for any store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from connectors.chunk_record import ChunkRecord
from connectors.embedder_port import EmbedderInfo
from core.params import Bound

WRITE_BATCH = Bound("search.write-batch-size", ge=1, le=100_000)
DEFAULT_WRITE_BATCH = 500
"""Chunks per write request (a `_bulk`, a store part): one setting for every backend."""


@dataclass
class WriteReport:
    """How many chunks were written (or deleted), and each failure as (id, reason)."""

    indexed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the store holds it: its id, its document, and the fingerprint of what its
    vector was computed from (None for a chunk written without one, e.g. by another tool)."""

    id: str
    doc: str
    fingerprint: str | None


@runtime_checkable
class ChunkWriter(Protocol):
    """Writes and deletes batches of chunks from one worker; `close` when done (in
    `teardown`).

    `write` adds a chunk or replaces the one of the same id, and records its fingerprint
    (see `core.chunk_fingerprint`); `delete` removes chunks by id (an id the store does
    not hold counts as deleted). Both report a chunk they could not store or remove as a
    failure (never raise for one chunk); they raise `RagEvidenceError` only when the whole
    batch failed.
    """

    def write(self, records: Sequence[ChunkRecord]) -> WriteReport: ...

    def delete(self, ids: Sequence[str]) -> WriteReport: ...

    def close(self) -> None: ...


@runtime_checkable
class ChunkTarget(Protocol):
    """The store an ingestion job writes, as the driver sees it. Picklable: it holds only
    where the store is, never a connection.

    Lifecycle: `prepare` once before the job (creates or checks the store, records the
    embedder), `catalog` and `open_writer` in workers, then `commit` once after a successful
    job, or `abort` after a failed one. Until `commit`, readers of the store see the old
    contents (Elasticsearch has no transactions: its readers see each write once refreshed).
    """

    def prepare(self, dimension: int, embedder: EmbedderInfo | None,
                rebuild: bool = False) -> bool:
        """Returns True when the store is new.

        Raises:
            EmbedderChangedError: the store holds chunks of another embedder (or of another
                dimension), and `rebuild` is not set.
        """
        ...

    def catalog(self) -> Iterator[StoredChunk]:
        """Every chunk the store holds now (as `prepare` found it), read from the store itself;
        never the vectors."""
        ...

    def open_writer(self) -> ChunkWriter: ...

    def commit(self) -> str | None:
        """Makes the job's writes and deletes visible; returns a line worth reporting, if any."""
        ...

    def abort(self) -> None: ...
