"""ElasticsearchWriter: the write side (index creation, bulk writes, refresh) behind one object,
so that nothing outside connectors/ touches the client."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from elasticsearch import Elasticsearch

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import StoredChunk, WriteReport
from connectors.elasticsearch.bulk_writer import delete_chunks, write_chunks, write_documents
from connectors.elasticsearch.catalog import stored_chunks
from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.retry import call_with_retries
from connectors.elasticsearch.store_version import begin_write, commit_write, record_deletions
from connectors.embedder_port import EmbedderInfo
from connectors.events import EventHook, ignore_event


class ElasticsearchWriter:
    """Owns one client for writes; `close` it when done (DoFns: in `teardown`).

    Usage::

        writer = ElasticsearchWriter.open(config)
        writer.ensure_chunk_index(384)
        report = writer.write_chunks(records)
    """

    def __init__(self, client: Elasticsearch, config: ElasticsearchConfig,
                 on_event: EventHook = ignore_event) -> None:
        self._client = client
        self._config = config
        self._on_event = on_event

    @classmethod
    def open(cls, config: ElasticsearchConfig, environ: Mapping[str, str] | None = None,
             on_event: EventHook = ignore_event) -> ElasticsearchWriter:
        return cls(open_client(config, environ), config, on_event)

    def ensure_chunk_index(self, dimension: int, embedder: EmbedderInfo | None = None,
                           rebuild: bool = False) -> bool:
        """Creates the chunk index when missing (True); an existing one must fit (see
        `index_admin.ensure_index`)."""
        return ensure_index(self._client, self._config, dimension, embedder, rebuild)

    def write_chunks(self, records: Iterable[ChunkRecord], refresh: bool = False,
                     embedder: EmbedderInfo | None = None, version: int | None = None
                     ) -> WriteReport:
        return write_chunks(self._client, self._config, records, refresh, embedder=embedder,
                            version=version, on_event=self._on_event)

    def delete_chunks(self, ids: Iterable[str], version: int | None = None) -> WriteReport:
        """Deletes chunks by id; with `version`, each is recorded as deleted by it first (see
        `store_version`), and one whose record failed is not deleted (a failure)."""
        ids = list(ids)
        if version is None:
            return delete_chunks(self._client, self._config, ids, on_event=self._on_event)
        recorded = record_deletions(self._client, self._config, ids, version,
                                    on_event=self._on_event)
        unrecorded = {i for i, _ in recorded.failures}
        report = delete_chunks(self._client, self._config,
                               [i for i in ids if i not in unrecorded], on_event=self._on_event)
        report.failures[:0] = recorded.failures
        return report

    def begin_version(self) -> int:
        """Records that this writer's `index` writes the next store version; returns it."""
        return begin_write(self._client, self._config)

    def commit_version(self, version: int) -> None:
        """Records `version` as committed (see `store_version.commit_write`)."""
        commit_write(self._client, self._config, version)

    def stored_chunks(self) -> Iterator[StoredChunk]:
        """Every chunk the index holds (see `catalog.stored_chunks`)."""
        return stored_chunks(self._client, self._config, on_event=self._on_event)

    def write_documents(self, index: str,
                        documents: Iterable[tuple[str, Mapping[str, Any]]]) -> WriteReport:
        return write_documents(self._client, self._config, index, documents,
                               on_event=self._on_event)

    def refresh(self, index: str | None = None) -> None:
        target = index or self._config.index
        call_with_retries(lambda: self._client.indices.refresh(index=target), self._config.retry,
                          f"refreshing index {target!r}", self._config.hosts,
                          on_event=self._on_event)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ElasticsearchWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
