"""An Elasticsearch index as a backend (`search.elasticsearch`).

The adapters are imported by the functions that return them: the client is slow to import
(with aiohttp and httpx), which every other job (the embedded default among them) is spared."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from connectors.chunk_writer_port import ChunkTarget
from connectors.embedded.lexical_bound import TonightsStatistics
from connectors.search_port import PortFactory
from connectors.store_changes import StoreMark
from core.errors import redact
from pipeline.config.settings import Settings
from stages.support import counters


def port_factory(settings: Settings) -> PortFactory:
    from connectors.elasticsearch.port import ElasticsearchPort

    return partial(ElasticsearchPort.open, settings.search.elasticsearch, counters.count)


@contextlib.contextmanager
def pinned_port_factory(settings: Settings) -> Iterator[tuple[PortFactory, Path | None]]:
    """An index has no versions to pin: readers see each write once it refreshes."""
    yield port_factory(settings), None


def chunk_target(settings: Settings) -> ChunkTarget:
    from connectors.elasticsearch.target import ElasticsearchTarget

    return ElasticsearchTarget(settings.search.elasticsearch, counters.count)


def display_name(settings: Settings) -> str:
    return f"Elasticsearch index {settings.search.elasticsearch.index}"


def identity(settings: Settings) -> str:
    es = settings.search.elasticsearch
    return f"{es.hosts}/{es.index}"


def described(settings: Settings, version: Path | None) -> dict[str, Any]:
    """The index as a run's manifest records it (hosts redacted; no secret is in settings)."""
    es = settings.search.elasticsearch
    return {"backend": "elasticsearch", "hosts": [redact(h) for h in es.hosts],
            "index": es.index, "embedder": settings.embedder.model_dump(by_alias=True)}


def store_mark(settings: Settings, version: Path | None) -> StoreMark | str:
    """The index's committed store version (see `store_version`)."""
    from connectors.elasticsearch.store_version import IndexMark

    return IndexMark.read(settings.search.elasticsearch)


def lexical_statistics(settings: Settings, version: Path | None,
                       texts: Callable[[], Iterable[str]]) -> TonightsStatistics | str:
    """The index's statistics for the words of `texts` (every standing query's text, read
    here), as the index analyses them; or why they cannot bound a night (several shards, each
    scoring with its own)."""
    from connectors.elasticsearch.client import open_client
    from connectors.elasticsearch.term_statistics import shard_count, term_statistics

    config = settings.search.elasticsearch
    client = open_client(config)
    try:
        shards = shard_count(client, config)
        if shards != 1:
            return (f"rag.recall.mode={settings.rag.recall.mode}: index {config.index!r} has "
                    f"{shards} shards, each scoring BM25 with its own statistics, which one "
                    "night's cannot bound: only dense nights on it continue")
        found = term_statistics(client, config, texts())
    finally:
        client.close()
    return TonightsStatistics(found.statistics, config.stemmer, found.terms)
