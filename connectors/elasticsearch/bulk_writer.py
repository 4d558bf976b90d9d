"""Bulk writes and deletes: idempotent `_id`s, `helpers.streaming_bulk` for the requests
(chunked by count and bytes, a result per item), the adapter's one retry loop around it,
failures by id."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch
from elasticsearch.helpers import streaming_bulk

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import WriteReport
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.failures import describe_body, is_retryable_status, not_an_answer
from connectors.elasticsearch.layouts import VERSION_FIELD, chunk_source
from connectors.elasticsearch.retry import call_with_retries, outcome_of, retry_each
from connectors.embedder_port import EmbedderInfo
from connectors.events import EventHook, ignore_event
from connectors.retry import Done, ItemOutcome, Reject, Retry
from core.chunk_fingerprint import chunk_fingerprint
from core.chunk_identity import document_of
from core.vectors import unit

Document = tuple[str, Mapping[str, Any] | None]
"""(id, source) to index; (id, None) to delete."""
REASON_CHARS = 300
"""How much of a failure's reason a failed item keeps."""


def chunk_document(record: ChunkRecord, config: ElasticsearchConfig,
                   embedder: EmbedderInfo | None = None, version: int | None = None
                   ) -> dict[str, Any]:
    """The `_source` of a chunk in the configured layout (and field names), with its catalog
    entry: its document and the fingerprint of what its vector was computed from (by
    `embedder`, or given in a chunk file when None), and the store version that writes it
    (`store_version.VERSION_FIELD`), when given."""
    fingerprint = chunk_fingerprint(record.content, record.metadata, embedder,
                                    None if embedder else record.vector)
    catalog = {"fingerprint": fingerprint, "doc": document_of(record.id, record.metadata)}
    source = chunk_source(config.layout, record.id, unit(record.vector).tolist(),
                          record.content, record.metadata, config.vector_field,
                          config.content_field, config.metadata_field, catalog)
    if version is not None:
        source[VERSION_FIELD] = version
    return source


def write_documents(client: Elasticsearch, config: ElasticsearchConfig, index: str,
                    documents: Iterable[Document], refresh: bool = False, *,
                    on_event: EventHook = ignore_event,
                    sleep: Callable[[float], None] = time.sleep) -> WriteReport:
    """Indexes (id, source) pairs, and deletes (id, None) ones, `bulk-chunk-size` per `_bulk`
    request (fewer when they would pass the helper's request size); deleting an id the index
    does not hold succeeds.

    A request that fails with a connection error, a timeout or a retryable status, and each
    item answered 429/502/503/504, is retried with the adapter's backoff up to
    `retry.max_attempts`; what still fails is reported per id (never raised).
    """
    report, rng = WriteReport(), random.Random()
    iterator = iter(documents)
    while batch := list(itertools.islice(iterator, config.bulk_chunk_size)):
        written = retry_each(range(len(batch)), lambda group: _bulk(client, index, batch, group,
                                                                     config.bulk_chunk_size),
                             config.retry, what=f"writing to index {index!r}",
                             hosts=config.hosts, on_event=on_event, sleep=sleep, rng=rng)
        for i, outcome in sorted(written.items()):
            if isinstance(outcome, Exception):
                report.failures.append((batch[i][0], str(outcome)[:REASON_CHARS]))
            else:
                report.indexed += 1
    if refresh:
        call_with_retries(lambda: client.indices.refresh(index=index), config.retry,
                          f"refreshing index {index!r}", config.hosts, on_event=on_event)
    return report


def write_chunks(client: Elasticsearch, config: ElasticsearchConfig,
                 records: Iterable[ChunkRecord], refresh: bool = False, *,
                 embedder: EmbedderInfo | None = None, version: int | None = None,
                 on_event: EventHook = ignore_event) -> WriteReport:
    """Indexes chunk records with `_id` = the record id (the evidence key), so re-runs update;
    each carries `version` when given (see `chunk_document`)."""
    documents = ((r.id, chunk_document(r, config, embedder, version)) for r in records)
    return write_documents(client, config, config.index, documents, refresh, on_event=on_event)


def delete_chunks(client: Elasticsearch, config: ElasticsearchConfig, ids: Iterable[str], *,
                  on_event: EventHook = ignore_event) -> WriteReport:
    """Deletes chunks by `_id`, in bulk."""
    return write_documents(client, config, config.index, ((i, None) for i in ids),
                           on_event=on_event)


def _bulk(client: Elasticsearch, index: str, batch: Sequence[Document], group: list[int],
          chunk_size: int) -> dict[int, ItemOutcome[None]]:
    """One pass of `streaming_bulk` over `group` (its own retries off: ours are the loop)."""
    outcomes: dict[int, ItemOutcome[None]] = {}
    results = streaming_bulk(client, _actions(index, batch, group), chunk_size=chunk_size,
                             raise_on_error=False, raise_on_exception=False, max_retries=0)
    try:
        for i, (ok, item) in zip(group, results, strict=False):
            outcomes[i] = Done(None) if ok else _item_outcome(item)
    except (TransportError, ApiError) as error:  # what the helper does not turn into items
        outcomes |= {i: outcome_of(error) for i in group if i not in outcomes}
    except (KeyError, TypeError, AttributeError):  # an answer that is not `_bulk`'s
        outcomes |= {i: Retry(not_an_answer("_bulk", "a body without items"))
                     for i in group if i not in outcomes}
    return outcomes


def _actions(index: str, batch: Sequence[Document], group: list[int]
             ) -> Iterator[dict[str, Any]]:
    for i in group:
        doc_id, source = batch[i]
        if source is None:
            yield {"_op_type": "delete", "_index": index, "_id": doc_id}
        else:
            yield {"_op_type": "index", "_index": index, "_id": doc_id, "_source": source}


def _item_outcome(item: Mapping[str, Any]) -> ItemOutcome[None]:
    operation, answer = next(iter(item.items()), ("", {}))
    result = dict(answer)
    if operation == "delete" and result.get("result") == "not_found":
        return Done(None)  # already gone
    error = result.get("exception")
    if isinstance(error, (TransportError, ApiError)):
        return outcome_of(error)
    status = int(result.get("status") or 0)
    reason = describe_body(status, result)[:REASON_CHARS]
    return Retry(reason) if is_retryable_status(status, result) else Reject(reason)
