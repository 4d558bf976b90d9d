"""The chunk-writer port: how the one ingestion pipeline writes into any store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from connectors.chunk_record import ChunkRecord
from connectors.embedder_port import EmbedderInfo


@dataclass
class WriteReport:
    """How many chunks were written, and each failure as (id, reason)."""

    indexed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)


@runtime_checkable
class ChunkWriter(Protocol):
    """Writes batches of chunk records from one worker; `close` when done (in `teardown`).

    `write` reports a chunk it could not store as a failure (never raises for one chunk);
    it raises `RagEvidenceError` only when the whole batch failed.
    """

    def write(self, records: Sequence[ChunkRecord]) -> WriteReport: ...

    def close(self) -> None: ...


@runtime_checkable
class ChunkTarget(Protocol):
    """The store an ingestion job writes, as the driver sees it. Picklable: it holds only
    where the store is, never a connection.

    Lifecycle: `prepare` once before the job (creates or checks the store, records the
    embedder), `open_writer` in each worker, then `commit` once after a successful job, or
    `abort` after a failed one. Until `commit`, readers of the store see the old contents.
    """

    def prepare(self, dimension: int, embedder: EmbedderInfo | None) -> bool:
        """Returns True when the store is new."""
        ...

    def open_writer(self) -> ChunkWriter: ...

    def commit(self) -> str | None:
        """Makes the job's writes visible; returns a line worth reporting, if any."""
        ...

    def abort(self) -> None: ...
