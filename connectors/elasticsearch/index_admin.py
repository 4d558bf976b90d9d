"""Creates the chunk index with its mapping, or checks that an existing one fits."""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from connectors.elasticsearch.client import check_reachable, vector_mapping
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.errors import ConfigError, DimensionMismatchError

IDENTITY_FIELDS = {"docId": {"type": "keyword"}, "chunkIndex": {"type": "integer"},
                   "source": {"type": "keyword"}}


def chunk_mapping(config: ElasticsearchConfig, dimension: int) -> dict[str, Any]:
    """dense_vector (cosine), content as text, doc id and filter fields as keyword, chunk index
    as integer, under the metadata object or at the top level."""
    vector: dict[str, Any] = {"type": "dense_vector", "dims": dimension, "index": True,
                              "similarity": "cosine"}
    if config.index_options:
        vector["index_options"] = dict(config.index_options)
    metadata = {f: {"type": "keyword"} for f in config.filter_fields} | IDENTITY_FIELDS
    properties: dict[str, Any] = {config.vector_field: vector,
                                  config.content_field: {"type": "text"}}
    if config.metadata_field is None:
        properties |= metadata
    else:
        properties[config.metadata_field] = {"type": "object", "properties": metadata}
    return {"properties": properties}


def ensure_index(client: Elasticsearch, config: ElasticsearchConfig, dimension: int) -> bool:
    """Creates the index when missing (returns True); an existing one must match.

    Raises:
        DimensionMismatchError: the existing vector field has other dims.
        ConfigError: the existing field is not a cosine dense_vector.
    """
    check_reachable(client, config)
    existing = vector_mapping(client, config)
    if existing is None:
        client.indices.create(index=config.index, mappings=chunk_mapping(config, dimension))
        return True
    if existing.get("type") != "dense_vector" or existing.get("similarity", "cosine") != "cosine":
        raise ConfigError(
            "search.elasticsearch.vector-field", config.vector_field,
            f"index {config.index!r} maps it as {existing.get('type')!r} with similarity "
            f"{existing.get('similarity')!r}; rag-evidence needs a cosine dense_vector "
            "(it never re-maps an existing index)")
    if int(existing.get("dims", 0)) != dimension:
        raise DimensionMismatchError(f"vectors for index {config.index!r}", dimension,
                                     int(existing.get("dims", 0)))
    return False
