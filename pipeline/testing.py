"""Helpers for DirectRunner unit tests of pipelines that use `EvidenceTransform`: an in-memory
search port, a deterministic embedder, and builders of chunk records and queries.

>>> from pipeline.testing import chunk_records, memory_port_factory, queries
>>> records = chunk_records({"guide.md": ["Open a file with open().", "Close it."]})
>>> [r.id for r in records]
['guide.md#chunk-0', 'guide.md#chunk-1']
>>> queries([{"id": "q1", "text": "open a file"}])[0].id
'q1'

Pytest fixtures over these live in `pipeline.pytest_plugin`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from connectors.chunk_record import ChunkRecord
from connectors.embedded.memory import memory_port_factory, memory_store
from connectors.embedder_port import EmbedderFactory
from connectors.embedders.hashing import HashingEmbedder
from core.chunk_identity import chunk_key, identity_metadata
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from stages.models import ChunkHits, Query, QueryHits, RecalledHit

DIMENSION = 64
"""The dimension of the test helpers' vectors (small, so tests stay fast)."""

__all__ = ["DIMENSION", "chunk_records", "deterministic_embedder", "memory_port_factory",
           "memory_store", "queries", "query_hits", "test_settings"]


def deterministic_embedder(dimension: int = DIMENSION) -> EmbedderFactory:
    """A factory of the hashing embedder: the same text gives the same vector anywhere, and
    texts that share words are near. Picklable, as `EvidenceTransform` needs."""
    return partial(HashingEmbedder, dimension)


def chunk_records(documents: Mapping[str, Sequence[str]], dimension: int = DIMENSION,
                  metadata: Mapping[str, Mapping[str, Any]] | None = None) -> list[ChunkRecord]:
    """Chunk records of `documents` ({doc id: chunk texts in order}), embedded by the
    deterministic embedder, with the identity metadata `index` writes (`docId`, `chunkIndex`,
    `source`) plus `metadata[doc id]`.

    Raises:
        InvalidInputError: a chunk text has no word to embed.
    """
    embedder = HashingEmbedder(dimension)
    records = []
    for doc_id, texts in documents.items():
        if not texts:
            continue
        vectors = embedder.embed(list(texts), "document")
        for index, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            extra = dict((metadata or {}).get(doc_id, {}))
            records.append(ChunkRecord(id=chunk_key(doc_id, index),
                                       vector=tuple(float(x) for x in vector), content=text,
                                       metadata=identity_metadata(doc_id, index) | extra))
    return records


def queries(rows: Iterable[Mapping[str, Any]]) -> list[Query]:
    """Queries from dicts as a query JSONL line holds them (`id`, `text` or `vector`,
    `vectors`, `filters`).

    Raises:
        pydantic.ValidationError: a row that is no query, naming the field.
    """
    return [Query.model_validate(dict(row)) for row in rows]


def test_settings(*overrides: str, dimension: int = DIMENSION) -> Settings:
    """Default settings with the deterministic embedder's dimension and `overrides`
    (`"rag.return-n=3"`, as `--set` takes them).

    Raises:
        ConfigError: an override that is not a valid setting.
    """
    return load_settings(overrides=[f"embedder.dim={dimension}", *overrides])


test_settings.__test__ = False  # type: ignore[attr-defined]  # not a test, whatever pytest thinks


def query_hits(query_id: str, hits: Sequence[RecalledHit]) -> QueryHits:
    """One query's hits as Recall emits them (columns, in recall order), from hits given one
    by one: what `IdentityNormalize` takes (`stages.identity.candidates_of`)."""
    found = ChunkHits(*(list(column) for column in zip(*(h.hit for h in hits), strict=True))
                      ) if hits else ChunkHits([], [], [], [], [])
    return QueryHits(query_id, found, [h.reason for h in hits], [h.rank for h in hits])
