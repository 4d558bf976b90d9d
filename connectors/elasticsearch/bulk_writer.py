"""Bulk writes: idempotent `_id`s, the one retry policy for requests and items, failures by id."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.layouts import chunk_source
from connectors.elasticsearch.retry import (
    backoff_seconds,
    call_with_retries,
    describe,
    describe_body,
    is_retryable_exception,
    is_retryable_status,
)
from connectors.errors import redact

Document = tuple[str, Mapping[str, Any]]


def chunk_document(record: ChunkRecord, config: ElasticsearchConfig) -> dict[str, Any]:
    """The `_source` of a chunk in the configured layout (and field names)."""
    return chunk_source(config.layout, record.id, list(record.vector), record.content,
                        record.metadata, config.vector_field, config.content_field,
                        config.metadata_field)


def write_documents(client: Elasticsearch, config: ElasticsearchConfig, index: str,
                    documents: Iterable[Document], refresh: bool = False,
                    sleep: Callable[[float], None] = time.sleep) -> WriteReport:
    """Indexes (id, source) pairs, `bulk-chunk-size` per `_bulk` request.

    A request that fails with a connection error, a timeout or a retryable status, and each
    item answered 429/502/503/504, is retried with the adapter's backoff up to
    `retry.max_attempts`; what still fails is reported per id (never raised).
    """
    report = WriteReport()
    rng = random.Random()
    iterator = iter(documents)
    while batch := list(itertools.islice(iterator, config.bulk_chunk_size)):
        _write_batch(client, config, index, batch, report, sleep, rng)
    if refresh:
        call_with_retries(lambda: client.indices.refresh(index=index), config.retry,
                          f"refreshing index {index!r}", config.hosts)
    return report


def write_chunks(client: Elasticsearch, config: ElasticsearchConfig,
                 records: Iterable[ChunkRecord], refresh: bool = False) -> WriteReport:
    """Indexes chunk records with `_id` = the record id (the evidence key), so re-runs update."""
    documents = ((r.id, chunk_document(r, config)) for r in records)
    return write_documents(client, config, config.index, documents, refresh)


def _write_batch(client: Elasticsearch, config: ElasticsearchConfig, index: str,
                 batch: list[Document], report: WriteReport,
                 sleep: Callable[[float], None], rng: random.Random) -> None:
    pending, last_error = batch, ""
    for attempt in range(1, config.retry.max_attempts + 1):
        if attempt > 1:
            sleep(backoff_seconds(config.retry, attempt - 1, rng))
        operations: list[Mapping[str, Any]] = []
        for doc_id, source in pending:
            operations += [{"index": {"_index": index, "_id": doc_id}}, source]
        try:
            items = client.bulk(operations=operations).body["items"]
        except (TransportError, ApiError) as error:
            last_error = describe(error)
            if is_retryable_exception(error):
                continue
            break
        retry = []
        for document, item in zip(pending, items, strict=True):
            result = item.get("index", {})
            status = int(result.get("status", 200))
            if "error" not in result and status < 300:
                report.indexed += 1
            elif is_retryable_status(status, result):
                retry.append(document)
                last_error = describe_body(status, result)
            else:
                report.failures.append((document[0], describe_body(status, result)[:300]))
        pending = retry
        if not pending:
            return
    reason = redact(f"not written to {list(config.hosts)}: {last_error}")[:300]
    report.failures.extend((doc_id, reason) for doc_id, _ in pending)
