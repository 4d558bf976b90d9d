"""An Elasticsearch index as an ingestion target (the `ChunkTarget` of connectors/)."""

from __future__ import annotations

from collections.abc import Sequence

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.writer import ElasticsearchWriter
from connectors.embedder_port import EmbedderInfo
from connectors.events import EventHook, ignore_event


class ElasticsearchChunkWriter:
    """A worker's bulk writer: `_id` = the chunk id (the evidence key), so re-runs update."""

    def __init__(self, config: ElasticsearchConfig, on_event: EventHook = ignore_event) -> None:
        self._writer = ElasticsearchWriter.open(config, on_event=on_event)

    def write(self, records: Sequence[ChunkRecord]) -> WriteReport:
        return self._writer.write_chunks(records)

    def close(self) -> None:
        self._writer.close()


class ElasticsearchTarget:
    """Creates the index (mapping and `_meta` with the embedder) when missing, or checks an
    existing one; writes are visible after `commit` refreshes it. Elasticsearch has no
    transactions: what a failed job wrote stays, and a re-run overwrites it by id."""

    def __init__(self, config: ElasticsearchConfig, on_event: EventHook = ignore_event) -> None:
        self._config = config
        self._on_event = on_event

    def prepare(self, dimension: int, embedder: EmbedderInfo | None) -> bool:
        writer = ElasticsearchWriter.open(self._config)
        try:
            return writer.ensure_chunk_index(dimension, embedder)
        finally:
            writer.close()

    def open_writer(self) -> ElasticsearchChunkWriter:
        return ElasticsearchChunkWriter(self._config, self._on_event)

    def commit(self) -> None:
        writer = ElasticsearchWriter.open(self._config)
        try:
            writer.refresh()
        finally:
            writer.close()

    def abort(self) -> None:
        return None
