"""The embedded store held in memory: the same search (exact kNN, BM25, filters) over a few
chunk records, for unit tests of pipelines that use the evidence transform."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from connectors.chunk_record import ChunkRecord
from connectors.embedded.lexical import LexicalIndex, indexed
from connectors.embedded.store import EmbeddedStore
from connectors.embedder_port import EmbedderInfo
from connectors.search_port import PortFactory
from core.errors import InvalidInputError
from core.vectors import unit_rows


class MemoryRecords:
    """Records by row number, held as dicts (what `RecordFile` reads from disk)."""

    def __init__(self, records: Sequence[ChunkRecord]) -> None:
        self._rows: list[dict[str, Any]] = [
            {"id": r.id, "content": r.content, "metadata": dict(r.metadata)} for r in records]
        digest = hashlib.sha256(json.dumps(self._rows, sort_keys=True, default=str).encode())
        self.name = f"memory:{digest.hexdigest()[:16]}"
        """The same for every copy of the same records: a hit of one copy reads its content
        from another."""

    def __len__(self) -> int:
        return len(self._rows)

    def record(self, row: int) -> dict[str, Any]:
        return self._rows[row]

    def metadata(self) -> Iterator[dict[str, Any]]:
        for row in self._rows:
            yield row["metadata"]


def memory_store(records: Sequence[ChunkRecord], embedder: EmbedderInfo | None = None
                 ) -> EmbeddedStore:
    """An embedded store of `records` (rows in the given order), in memory.

    Raises:
        InvalidInputError: no record, two records of one id, or vectors of two lengths.

    >>> store = memory_store([ChunkRecord(id="a#chunk-0", vector=(1.0, 0.0), content="x")])
    >>> store.dimension
    2
    """
    if not records:
        raise InvalidInputError("records", [], "an in-memory store needs at least one record")
    ids = [r.id for r in records]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise InvalidInputError("id", repeated[0], "appears twice; chunk ids must be unique")
    if len({len(r.vector) for r in records}) > 1:
        raise InvalidInputError("vector", len(records[0].vector), "records of one store must "
                                "have vectors of one length")
    vectors, _ = unit_rows([r.vector for r in records])  # ChunkRecord vectors have directions
    lexical = LexicalIndex.held(indexed([r.content for r in records]), len(records))
    held = MemoryRecords(records)
    keys = {key for record in records for key in record.metadata}
    return EmbeddedStore(vectors, held, lexical, embedder, version=held.name,
                         metadata_keys=sorted(keys))


def memory_port_factory(records: Sequence[ChunkRecord], embedder: EmbedderInfo | None = None
                        ) -> PortFactory:
    """A picklable factory of `memory_store(records)`: what `EvidenceTransform` takes."""
    return partial(memory_store, tuple(records), embedder)
