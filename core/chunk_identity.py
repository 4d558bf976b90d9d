"""A chunk's identity: the metadata keys it is read from, how they are resolved (which key wins,
what is a valid chunk index), and how its evidence key is spelled.

Every other module imports these names; none spells a key or the key format itself.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

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


DOC_ID_CONFLICT, CHUNK_INDEX_CONFLICT, INVALID_CHUNK_INDEX = 1, 2, 4
"""Flags of what resolving an identity ran into: camelCase and snake_case keys that disagree
(the camelCase one wins), a chunk index that is present but no valid index."""

_DIGITS = re.compile(r"[0-9]+")
_MAX_INDEX = 2**63
_MAX_INDEX_DIGITS = 19
_SNAKE_KEYS = frozenset((DOC_ID_KEYS[1], CHUNK_INDEX_KEYS[1]))
T = TypeVar("T")


class Identity(NamedTuple):
    """What a chunk's metadata says of its identity: its document id and chunk index (None
    when absent or invalid), the source it names (None when it names none), and `flags`."""

    doc_id: str | None
    chunk_index: int | None
    source: str | None
    flags: int = 0


def resolve_identity(metadata: Mapping[str, Any]) -> Identity:
    """The identity of a chunk with `metadata` (docs/steps.md, "Identity rules")."""
    doc_id, chunk_index = metadata.get(DOC_ID), metadata.get(CHUNK_INDEX)
    if (type(doc_id) is str and type(chunk_index) is int and 0 <= chunk_index < _MAX_INDEX
            and doc_id.strip() and _SNAKE_KEYS.isdisjoint(metadata)):
        return Identity(doc_id, chunk_index, _source(metadata))  # as `index` writes it
    return resolve_any_identity(metadata)


def resolve_any_identity(metadata: Mapping[str, Any]) -> Identity:
    """`resolve_identity` without its shortcut for metadata spelled as `index` writes it."""
    doc_id, doc_conflict = _resolve(metadata, DOC_ID_KEYS, _as_doc_id)
    chunk_index, index_conflict = _resolve(metadata, CHUNK_INDEX_KEYS, _as_index)
    invalid = chunk_index is None and any(k in metadata for k in CHUNK_INDEX_KEYS)
    flags = ((DOC_ID_CONFLICT if doc_conflict else 0) | (CHUNK_INDEX_CONFLICT if index_conflict
             else 0) | (INVALID_CHUNK_INDEX if invalid else 0))
    return Identity(doc_id, chunk_index, _source(metadata), flags)


def document_of(chunk_id: str, metadata: Mapping[str, Any]) -> str:
    """The document a stored chunk belongs to, for incremental cleanup: its `docId`/`doc_id`,
    else the chunk's own id (a chunk of no known document is a document of its own)."""
    return resolve_identity(metadata).doc_id or chunk_id


def _resolve(metadata: Mapping[str, Any], keys: tuple[str, ...],
             parse: Callable[[Any], T | None]) -> tuple[T | None, bool]:
    """The first key's parsed value if present (camelCase), else the next one's; and whether
    both are present with different parsed values."""
    parsed = [parse(metadata[name]) for name in keys if name in metadata]
    if not parsed:
        return None, False
    return parsed[0], len(parsed) == 2 and parsed[0] != parsed[1]


def _as_doc_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and abs(value) >= _MAX_INDEX:
        return None  # a number this size is no document id (and str() may refuse it)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _as_index(value: Any) -> int | None:
    """A chunk index: a whole number from 0 to 2**63 - 1, as an int, float or digit string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) and value.is_integer() else None
    elif isinstance(value, str):
        value = int(value) if _DIGITS.fullmatch(value) and len(value) <= _MAX_INDEX_DIGITS else None
    if isinstance(value, int) and 0 <= value < _MAX_INDEX:
        return value
    return None


def _source(metadata: Mapping[str, Any]) -> str | None:
    for field in SOURCE_KEYS:
        value = metadata.get(field)
        if isinstance(value, str) and value.strip():
            return value
    return None
