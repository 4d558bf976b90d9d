"""Creates the chunk index with its mapping, or checks that an existing one fits."""

from __future__ import annotations

import logging
from typing import Any

from elasticsearch import Elasticsearch

from connectors.elasticsearch.client import (
    META_KEY,
    check_reachable,
    index_mappings,
    recorded_embedder,
    vector_mapping,
)
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_check import field_mapping
from connectors.elasticsearch.layouts import (
    CATALOG_FIELD,
    CATALOG_MAPPING,
    VERSION_FIELD,
    VERSION_MAPPING,
    extra_mapping,
)
from connectors.elasticsearch.retry import call_with_retries
from connectors.embedder_port import EmbedderInfo
from core.chunk_identity import CHUNK_INDEX, DOC_ID, SOURCE
from core.errors import ConfigError, DimensionMismatchError, EmbedderChangedError
from core.stemmer import UNSTEMMED, StemmerName

_log = logging.getLogger(__name__)

IDENTITY_FIELDS = {DOC_ID: {"type": "keyword"}, CHUNK_INDEX: {"type": "integer"},
                   SOURCE: {"type": "keyword"}}


def chunk_mapping(config: ElasticsearchConfig, dimension: int,
                  embedder: EmbedderInfo | None = None) -> dict[str, Any]:
    """dense_vector (cosine), content as text, doc id and filter fields as keyword, chunk index
    as integer (and the layout's own fields), under the metadata object or at the top level;
    `_meta` records the embedder."""
    vector: dict[str, Any] = {"type": "dense_vector", "dims": dimension, "index": True,
                              "similarity": "cosine"}
    if config.index_options:
        vector["index_options"] = dict(config.index_options)
    metadata = ({f: {"type": "keyword"} for f in config.filter_fields} | IDENTITY_FIELDS
                | extra_mapping(config.layout))
    properties: dict[str, Any] = {config.vector_field: vector,
                                  config.content_field: content_mapping(config.stemmer),
                                  CATALOG_FIELD: CATALOG_MAPPING,
                                  VERSION_FIELD: VERSION_MAPPING}
    if config.metadata_field is None:
        properties |= metadata
    else:
        properties[config.metadata_field] = {"type": "object", "properties": metadata}
    mapping: dict[str, Any] = {"properties": properties}
    if embedder is not None:
        mapping["_meta"] = _meta(embedder)
    return mapping


def content_mapping(stemmer: StemmerName) -> dict[str, Any]:
    """The content field: text, analysed in `stemmer`'s language (Elasticsearch's language
    analyzer of that name), or by the `standard` analyzer for `none`."""
    return {"type": "text"} if stemmer == UNSTEMMED else {"type": "text", "analyzer": stemmer}


def ensure_index(client: Elasticsearch, config: ElasticsearchConfig, dimension: int,
                 embedder: EmbedderInfo | None = None, rebuild: bool = False) -> bool:
    """Creates the index when missing (returns True); an existing one must fit, and gets the
    catalog field mapped when it lacks it. With `rebuild`, an index recording another embedder
    is taken over: `_meta` records `embedder` from now on.

    Raises:
        DimensionMismatchError: the existing vector field has other dims (a mapping cannot
            change: a rebuild for another dimension needs another index).
        ConfigError: the existing field is not a cosine dense_vector.
        EmbedderChangedError: the index records another embedder than `embedder`, and
            `rebuild` is not set.
    """
    check_reachable(client, config)
    mappings = index_mappings(client, config)
    if mappings is None:
        mappings = chunk_mapping(config, dimension, embedder)
        call_with_retries(lambda: client.indices.create(index=config.index, mappings=mappings),
                          config.retry, f"creating index {config.index!r}", config.hosts)
        return True
    existing = vector_mapping(mappings, config)
    if existing.get("type") != "dense_vector" or existing.get("similarity", "cosine") != "cosine":
        raise ConfigError(
            "search.elasticsearch.vector-field", config.vector_field,
            f"index {config.index!r} maps it as {existing.get('type')!r} with similarity "
            f"{existing.get('similarity')!r}; rag-evidence needs a cosine dense_vector "
            "(it never re-maps an existing index)")
    if int(existing.get("dims", 0)) != dimension:
        raise DimensionMismatchError(f"vectors for index {config.index!r}", dimension,
                                     int(existing.get("dims", 0)))
    recorded = recorded_embedder(mappings)
    changes: dict[str, Any] = {}
    if recorded is not None and not recorded.same_as(embedder):
        if not rebuild:
            raise EmbedderChangedError(f"index {config.index!r}",
                                       EmbedderChangedError.described(recorded),
                                       EmbedderChangedError.described(embedder))
        changes["meta"] = _meta(embedder, mappings)
    elif recorded is not None and recorded.weights is None and embedder and embedder.weights:
        changes["meta"] = _meta(embedder, mappings)  # recorded before weights: record them
    _warn_on_another_analyzer(mappings, config)
    if CATALOG_FIELD not in mappings.get("properties", {}):
        changes["properties"] = {CATALOG_FIELD: CATALOG_MAPPING}
    if changes:
        call_with_retries(lambda: client.indices.put_mapping(index=config.index, **changes),
                          config.retry, f"updating the mapping of {config.index!r}",
                          config.hosts)
    return False


def _warn_on_another_analyzer(mappings: dict[str, Any], config: ElasticsearchConfig) -> None:
    """An existing content field keeps its analyzer (a mapping cannot change): say so when it
    is not the configured stemmer's."""
    content = field_mapping(mappings, config.content_field) or {}
    analyzer = content.get("analyzer", "standard")
    wanted = content_mapping(config.stemmer).get("analyzer", "standard")
    if content.get("type") == "text" and analyzer != wanted:
        _log.warning("search.elasticsearch.stemmer=%s wants the %r analyzer, but index %r "
                     "analyses %s with %r, which an existing index cannot change: lexical "
                     "recall keeps %r until the index is created again (delete it and run "
                     "`index`), or set stemmer to match", config.stemmer, wanted, config.index,
                     config.content_field, analyzer, analyzer)


def _meta(embedder: EmbedderInfo | None, mappings: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    """`_meta` recording `embedder`; the rest of an existing index's (`mappings`) kept, since
    a mapping update replaces `_meta` whole (its store versions among it)."""
    meta = dict((mappings or {}).get("_meta") or {})
    meta[META_KEY] = {**dict(meta.get(META_KEY) or {}),
                      "embedder": embedder.to_dict() if embedder else None}
    return meta
