"""A chunk's identity: the metadata keys it is read from, and how its evidence key is spelled.

Every other module imports these names; none spells a key or the key format itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

DOC_ID = "docId"
CHUNK_INDEX = "chunkIndex"
SOURCE = "source"
"""The keys rag-evidence writes (`index`), and the first ones it reads."""

DOC_ID_KEYS = (DOC_ID, "doc_id")
CHUNK_INDEX_KEYS = (CHUNK_INDEX, "chunk_index")
SOURCE_KEYS = (SOURCE, "path")
"""Where a hit's identity is read, in order: camelCase wins over snake_case."""

CHUNK_MARK = "#chunk-"
VECTOR_PREFIX = "vector:"
CONTENT_PREFIX = "content:"


def chunk_key(doc_id: str, chunk_index: int) -> str:
    """The chunk-scoped evidence key `{doc_id}#chunk-{chunk_index}`."""
    return f"{doc_id}{CHUNK_MARK}{chunk_index}"


def evidence_key(doc_id: str | None, chunk_index: int | None, hit_id: str | None,
                 source: str, content: str) -> str:
    """`{doc_id}#chunk-{chunk_index}`, else `vector:{id}`, else a content hash key."""
    if doc_id is not None and chunk_index is not None:
        return chunk_key(doc_id, chunk_index)
    if hit_id:
        return f"{VECTOR_PREFIX}{hit_id}"
    digest = hashlib.sha256((source + content).encode("utf-8")).hexdigest()
    return f"{CONTENT_PREFIX}{digest[:16]}"


def is_evidence_key(value: str) -> bool:
    """Whether `value` is spelled as an evidence key (rather than a document id)."""
    return CHUNK_MARK in value or value.startswith((VECTOR_PREFIX, CONTENT_PREFIX))


def identity_metadata(doc_id: str, chunk_index: int) -> dict[str, str | int]:
    """The identity metadata `index` writes for a chunk of a document (its source: the doc id)."""
    return {DOC_ID: doc_id, CHUNK_INDEX: chunk_index, SOURCE: doc_id}


def document_of(chunk_id: str, metadata: Mapping[str, Any]) -> str:
    """The document a stored chunk belongs to, for incremental cleanup: its `docId`/`doc_id`
    (a string or a number), else the chunk's own id (a chunk of no known document is a
    document of its own)."""
    for key in DOC_ID_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return chunk_id
