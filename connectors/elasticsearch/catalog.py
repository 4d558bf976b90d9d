"""What an index holds, read from the index itself: each chunk's id and catalog entry, by a
point in time and `search_after` pages, never the vectors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from elasticsearch import Elasticsearch

from connectors.chunk_writer_port import StoredChunk
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.failures import not_an_answer
from connectors.elasticsearch.layouts import CATALOG_FIELD
from connectors.elasticsearch.retry import call_with_retries
from connectors.events import EventHook, ignore_event
from core.errors import KnowledgeSearchError, SearchUnavailableError

PAGE_SIZE = 1000
KEEP_ALIVE = "5m"


def stored_chunks(client: Elasticsearch, config: ElasticsearchConfig, *,
                  page_size: int = PAGE_SIZE, on_event: EventHook = ignore_event
                  ) -> Iterator[StoredChunk]:
    """Every chunk of `config.index` as of one point in time. A chunk without a catalog entry
    (written by another tool) is its own document, with no fingerprint.

    Raises:
        KnowledgeSearchError: a page could not be read (after the retry policy's attempts).
    """
    for hit in every_hit(client, config, config.index, {"source": [CATALOG_FIELD]},
                         page_size=page_size, on_event=on_event):
        yield _stored(hit)


def every_hit(client: Elasticsearch, config: ElasticsearchConfig, index: str,
              body: dict[str, Any], *, page_size: int = PAGE_SIZE,
              on_event: EventHook = ignore_event) -> Iterator[dict[str, Any]]:
    """Every hit of a search of `index` (`body`: the `search` keywords of its query and
    source), as of one point in time, `page_size` at a time (`search_after`).

    Raises:
        KnowledgeSearchError: a page could not be read (after the retry policy's attempts).
    """
    def request(what: str, call: Any) -> Any:
        return call_with_retries(call, config.retry, f"{what} of index {index!r}",
                                 config.hosts, on_event=on_event)

    opened = request("opening a point in time", lambda: client.open_point_in_time(
        index=index, keep_alive=KEEP_ALIVE))
    pit = str(opened["id"])
    try:
        after: list[Any] | None = None
        while True:
            page_body: dict[str, Any] = {**body, "size": page_size, "sort": ["_shard_doc"],
                                         "pit": {"id": pit, "keep_alive": KEEP_ALIVE},
                                         "track_total_hits": False}
            if after is not None:
                page_body["search_after"] = after
            page = request("listing the chunks",
                           lambda page_body=page_body: client.search(**page_body))
            hits = _hits(page.body)
            if not hits:
                return
            yield from hits
            after, pit = hits[-1]["sort"], str(page.body.get("pit_id") or pit)
    finally:
        with contextlib.suppress(KnowledgeSearchError):
            request("closing a point in time", lambda: client.close_point_in_time(id=pit))


def _hits(body: Any) -> list[dict[str, Any]]:
    try:
        hits = body["hits"]["hits"]
        if all(isinstance(h, dict) and "_id" in h and "sort" in h for h in hits):
            return list(hits)
    except (KeyError, TypeError):
        pass
    raise SearchUnavailableError(not_an_answer("a point-in-time search", body))


def _stored(hit: dict[str, Any]) -> StoredChunk:
    entry = (hit.get("_source") or {}).get(CATALOG_FIELD)
    entry = entry if isinstance(entry, dict) else {}
    doc, fingerprint = entry.get("doc"), entry.get("fingerprint")
    return StoredChunk(str(hit["_id"]), doc if isinstance(doc, str) and doc else str(hit["_id"]),
                       fingerprint if isinstance(fingerprint, str) else None)
