"""An Elasticsearch index as an ingestion target (the `ChunkTarget` of connectors/)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import StoredChunk, WriteReport
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.writer import ElasticsearchWriter
from connectors.embedder_port import EmbedderInfo
from connectors.events import EventHook, ignore_event


class ElasticsearchChunkWriter:
    """A worker's bulk writer: `_id` = the chunk id (the evidence key), so re-runs update; each
    chunk carries its catalog entry (document and fingerprint, by `embedder`) and the store
    `version` that writes it, and each deletion is recorded under that version first (see
    `store_version`)."""

    def __init__(self, config: ElasticsearchConfig, embedder: EmbedderInfo | None,
                 version: int | None, on_event: EventHook = ignore_event) -> None:
        self._writer = ElasticsearchWriter.open(config, on_event=on_event)
        self._embedder = embedder
        self._version = version

    def write(self, records: Sequence[ChunkRecord]) -> WriteReport:
        return self._writer.write_chunks(records, embedder=self._embedder,
                                         version=self._version)

    def delete(self, ids: Sequence[str]) -> WriteReport:
        return self._writer.delete_chunks(ids, self._version)

    def close(self) -> None:
        self._writer.close()


class ElasticsearchTarget:
    """Creates the index (mapping and `_meta` with the embedder) when missing, or checks an
    existing one, and begins its next store version (see `store_version`); writes are visible
    after `commit` refreshes it, and the version is then committed. Elasticsearch has no
    transactions: what a failed job wrote or deleted stays so, and readers see each write once
    the index refreshes; a re-run brings the index to the input."""

    def __init__(self, config: ElasticsearchConfig, on_event: EventHook = ignore_event) -> None:
        self._config = config
        self._on_event = on_event
        self._embedder: EmbedderInfo | None = None
        self._version: int | None = None

    def prepare(self, dimension: int, embedder: EmbedderInfo | None,
                rebuild: bool = False) -> bool:
        self._embedder = embedder
        with ElasticsearchWriter.open(self._config) as writer:
            created = writer.ensure_chunk_index(dimension, embedder, rebuild)
            self._version = writer.begin_version()
            return created

    def catalog(self) -> Iterator[StoredChunk]:
        with ElasticsearchWriter.open(self._config, on_event=self._on_event) as writer:
            yield from writer.stored_chunks()

    def open_writer(self) -> ElasticsearchChunkWriter:
        return ElasticsearchChunkWriter(self._config, self._embedder, self._version,
                                        self._on_event)

    def commit(self) -> None:
        with ElasticsearchWriter.open(self._config) as writer:
            writer.refresh()
            if self._version is not None:
                writer.commit_version(self._version)

    def abort(self) -> None:
        return None
