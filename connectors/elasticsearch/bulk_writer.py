"""Bulk writes with streaming_bulk: idempotent `_id`s, per-item retries, failures by id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from elasticsearch import Elasticsearch
from elasticsearch.helpers import streaming_bulk

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.elasticsearch.config import ElasticsearchConfig


def chunk_document(record: ChunkRecord, config: ElasticsearchConfig) -> dict[str, Any]:
    """The `_source` of a chunk in the configured layout."""
    source: dict[str, Any] = {config.vector_field: list(record.vector),
                              config.content_field: record.content}
    if config.metadata_field is None:
        return dict(record.metadata) | source
    return source | {config.metadata_field: dict(record.metadata)}


def write_documents(client: Elasticsearch, config: ElasticsearchConfig, index: str,
                    documents: Iterable[tuple[str, Mapping[str, Any]]],
                    refresh: bool = False) -> WriteReport:
    """Indexes (id, source) pairs; a 429 item is retried by streaming_bulk with backoff."""
    actions = ({"_op_type": "index", "_index": index, "_id": doc_id, "_source": source}
               for doc_id, source in documents)
    report = WriteReport()
    for ok, item in streaming_bulk(
            client, actions, chunk_size=config.bulk_chunk_size, raise_on_error=False,
            raise_on_exception=False, max_retries=config.retry.max_attempts - 1,
            initial_backoff=config.retry.initial_backoff, max_backoff=config.retry.max_backoff):
        result = item.get("index", {})
        if ok:
            report.indexed += 1
        else:
            report.failures.append((str(result.get("_id")), str(result.get("error"))[:300]))
    if refresh:
        client.indices.refresh(index=index)
    return report


def write_chunks(client: Elasticsearch, config: ElasticsearchConfig,
                 records: Iterable[ChunkRecord], refresh: bool = False) -> WriteReport:
    """Indexes chunk records with `_id` = the record id (the evidence key), so re-runs update."""
    documents = ((r.id, chunk_document(r, config)) for r in records)
    return write_documents(client, config, config.index, documents, refresh)
