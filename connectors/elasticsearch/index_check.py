"""The start-up checks of an index against its live mapping: each mistake that would give wrong
answers without an error fails here, naming the host, index, field and what was found."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import Elasticsearch

from connectors.elasticsearch.client import (
    check_reachable,
    index_mappings,
    recorded_embedder,
)
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.layouts import CATALOG_FIELD, LLAMA_DOC_ID_KEYS, VERSION_FIELD
from connectors.elasticsearch.score_scale import DEFAULT_SIMILARITY, SIMILARITIES
from connectors.embedder_port import EmbedderInfo
from core.chunk_identity import CHUNK_INDEX_KEYS, DOC_ID_KEYS
from core.errors import ConfigError, DimensionMismatchError, StoreNotFoundError

_log = logging.getLogger(__name__)
_warned: set[str] = set()

QUANTIZED_KINDS = ("int8", "int4", "bbq")
"""The `index_options` types (before `_hnsw` or `_flat`) that score quantized vectors."""
CONTENT_TYPES = ("text", "match_only_text", "keyword")
UNFILTERABLE_TYPES = ("text", "match_only_text", "object", "nested", "dense_vector",
                      "sparse_vector", "rank_features", "flattened")


@dataclass(frozen=True)
class IndexFacts:
    """What a search needs to know of the index, read from its mapping once at start-up."""

    dimension: int
    similarity: str = DEFAULT_SIMILARITY
    embedder: EmbedderInfo | None = None
    filter_paths: dict[str, str] = field(default_factory=dict)
    """Each filter field's path in the index: through a `keyword` sub-field where the field
    itself is analysed text."""
    warnings: tuple[str, ...] = ()
    metadata_keys: frozenset[str] = frozenset()
    """The metadata keys the mapping holds (dotted below the first level): those that some
    stored chunk carries, as dynamic mapping adds them, or the index's creator mapped them."""
    quantized: bool = False
    """The vector field scores quantized vectors (`int8_hnsw`, `bbq_flat`, ...): a score is
    not the one its stored float vector gives."""


def check_index(client: Elasticsearch, config: ElasticsearchConfig,
                dimension: int | None = None) -> IndexFacts:
    """Checks the index's vector field (of `dimension`, when given), content field, filter
    fields and identity fields; logs each warning once per process.

    Raises:
        StoreNotFoundError: the index or its vector field is missing.
        DimensionMismatchError: the vector field's dims differ from `dimension`.
        ConfigError: a field is of a kind the search cannot use (named, with what was found).
    """
    check_reachable(client, config)
    mappings = index_mappings(client, config)
    if mappings is None:
        raise StoreNotFoundError(
            f"search.elasticsearch.index={config.index!r}: no such {_where(config)}")
    facts = read_mapping(mappings, config, dimension)
    log_warnings(facts)
    return facts


def log_warnings(facts: IndexFacts) -> None:
    """Logs each of the facts' warnings, once per process (each worker opens the index)."""
    for warning in facts.warnings:
        if warning not in _warned:
            _warned.add(warning)
            _log.warning("%s", warning)


def read_mapping(mappings: Mapping[str, Any], config: ElasticsearchConfig,
                 dimension: int | None = None) -> IndexFacts:
    """`check_index` on a mapping already read (raises the same errors)."""
    dims, similarity = _vector_field(mappings, config, dimension)
    _check_content_field(mappings, config)
    paths, warnings = {}, []
    for name in config.filter_fields:
        paths[name], warning = _filter_path(mappings, config, name)
        warnings += [warning] if warning else []
    warnings += _identity_warnings(mappings, config)
    options = (field_mapping(mappings, config.vector_field) or {}).get("index_options") or {}
    quantized = str(options.get("type", "")).split("_")[0] in QUANTIZED_KINDS
    return IndexFacts(dims, similarity, recorded_embedder(dict(mappings)), paths, tuple(warnings),
                      _metadata_keys(mappings, config), quantized)


def field_mapping(mappings: Mapping[str, Any], path: str) -> dict[str, Any] | None:
    """The mapping of the field at dotted `path` (through object properties), or None."""
    node: Mapping[str, Any] = mappings
    for part in path.split("."):
        child = (node.get("properties") or {}).get(part)
        if child is None:
            return None
        node = child
    return dict(node)


def _type(node: Mapping[str, Any]) -> str:
    return str(node.get("type") or ("object" if "properties" in node else "unknown"))


def _where(config: ElasticsearchConfig) -> str:
    return f"index {config.index!r} on {list(config.hosts)!r}"


def _vector_field(mappings: Mapping[str, Any], config: ElasticsearchConfig,
                  dimension: int | None) -> tuple[int, str]:
    key, where = "search.elasticsearch.vector-field", _where(config)
    node = field_mapping(mappings, config.vector_field) or {}
    if node.get("type") != "dense_vector":
        raise StoreNotFoundError(
            f"{key}={config.vector_field!r}: {where} has no dense_vector field of that name "
            f"(found {node.get('type')!r}; dense_vector fields: "
            f"{_fields_of_type(mappings, ('dense_vector',))})")
    if node.get("index") is False or node.get("element_type") == "bit":
        raise ConfigError(key, config.vector_field,
                          f"{where} maps it with index={node.get('index')!r}, element_type="
                          f"{node.get('element_type')!r}: kNN search needs an indexed float or "
                          "byte vector")
    similarity = str(node.get("similarity") or DEFAULT_SIMILARITY)
    if similarity not in SIMILARITIES:
        raise ConfigError(key, config.vector_field,
                          f"{where} maps it with similarity {similarity!r}, whose score "
                          f"rag-evidence cannot put on its scale; known: {list(SIMILARITIES)}")
    dims = int(node.get("dims", 0))
    if dimension is not None and dims != dimension:
        raise DimensionMismatchError(f"embedder vectors for {where}", dimension, dims)
    return dims, similarity


def _check_content_field(mappings: Mapping[str, Any], config: ElasticsearchConfig) -> None:
    node = field_mapping(mappings, config.content_field)
    if node is None or _type(node) not in CONTENT_TYPES:
        found = "no such field" if node is None else f"a {_type(node)!r} field"
        raise ConfigError(
            "search.elasticsearch.content-field", config.content_field,
            f"{_where(config)} has {found}; the content must be a text or keyword field "
            f"(its text fields: {_fields_of_type(mappings, ('text', 'match_only_text'))}); "
            "a wrong name would give every block empty content")


def _filter_path(mappings: Mapping[str, Any], config: ElasticsearchConfig,
                 name: str) -> tuple[str, str | None]:
    """Where a term filter on `name` must look, and a warning when the field is unmapped."""
    path = config.field_path(name)
    node = field_mapping(mappings, path)
    if node is None:
        return path, (f"search.elasticsearch.filter-fields: {name!r} ({path}) is not in the "
                      f"mapping of {_where(config)}; filters on it match nothing")
    kind = _type(node)
    if kind in ("text", "match_only_text"):
        for sub_name, sub in (node.get("fields") or {}).items():
            if sub.get("type") == "keyword":
                return f"{path}.{sub_name}", None
    if kind in UNFILTERABLE_TYPES:
        raise ConfigError(
            "search.elasticsearch.filter-fields", name,
            f"{_where(config)} maps {path!r} as {kind!r} with no keyword sub-field: an exact "
            "filter on it would match nothing; map it as keyword (or add a keyword sub-field), "
            "or remove it from filter-fields")
    return path, None


def _identity_warnings(mappings: Mapping[str, Any], config: ElasticsearchConfig) -> list[str]:
    doc_keys = DOC_ID_KEYS + (LLAMA_DOC_ID_KEYS if config.layout == "llamaindex" else ())
    missing = []
    if not any(field_mapping(mappings, config.field_path(k)) for k in doc_keys):
        missing.append(("document id", doc_keys, "per-document caps count each chunk alone"))
    if not any(field_mapping(mappings, config.field_path(k)) for k in CHUNK_INDEX_KEYS):
        missing.append(("chunk index", CHUNK_INDEX_KEYS, "evidence keys fall back to "
                        "`vector:{_id}`"))
    where = "the top level" if config.metadata_field is None else repr(config.metadata_field)
    return [f"{_where(config)} (layout {config.layout}) maps no {what} under {where} "
            f"(looked for {list(keys)}): {consequence}" for what, keys, consequence in missing]


def _metadata_keys(mappings: Mapping[str, Any], config: ElasticsearchConfig) -> frozenset[str]:
    if config.metadata_field is None:
        top = {k: v for k, v in (mappings.get("properties") or {}).items()
               if k not in (config.vector_field, config.content_field, CATALOG_FIELD,
                            VERSION_FIELD)}
        return frozenset(_paths({"properties": top}))
    return frozenset(_paths(field_mapping(mappings, config.metadata_field) or {}))


def _paths(node: Mapping[str, Any], prefix: str = "") -> list[str]:
    found = []
    for name, child in (node.get("properties") or {}).items():
        found.append(prefix + name)
        found += _paths(child, f"{prefix}{name}.")
    return found


def _fields_of_type(mappings: Mapping[str, Any], types: tuple[str, ...],
                    prefix: str = "") -> list[str]:
    found = []
    for name, node in (mappings.get("properties") or {}).items():
        if _type(node) in types:
            found.append(prefix + name)
        if "properties" in node:
            found += _fields_of_type(node, types, f"{prefix}{name}.")
    return found
