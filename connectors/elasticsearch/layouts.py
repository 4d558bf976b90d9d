"""Index layouts: where rag-evidence, LangChain, LlamaIndex and Haystack keep a chunk's vector,
text and metadata, how each is read back into a hit, and how a chunk is written in each.

A layout only says where values are. The identity rules (stages/identity.py) are the same for
every layout: they read `docId`/`doc_id` and `chunkIndex`/`chunk_index` from the metadata that
`hit_metadata` returns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from core.chunk_identity import CHUNK_INDEX_KEYS, DOC_ID, DOC_ID_KEYS, SOURCE, SOURCE_KEYS

LayoutName = Literal["rag-evidence", "langchain", "llamaindex", "haystack"]
LAYOUT_NAMES: tuple[LayoutName, ...] = ("rag-evidence", "langchain", "llamaindex", "haystack")


@dataclass(frozen=True)
class LayoutFields:
    """The field settings a layout fills in; each one set explicitly overrides it."""

    vector_field: str
    content_field: str
    metadata_field: str | None
    filter_fields: tuple[str, ...]


PRESETS: dict[LayoutName, LayoutFields] = {
    "rag-evidence": LayoutFields("embedding", "content", "metadata", (DOC_ID, SOURCE)),
    # langchain-elasticsearch's ElasticsearchStore (DenseVectorStrategy)
    "langchain": LayoutFields("vector", "text", "metadata", (DOC_ID, SOURCE)),
    # llama-index-vector-stores-elasticsearch's ElasticsearchStore
    "llamaindex": LayoutFields("embedding", "content", "metadata", (DOC_ID_KEYS[1], SOURCE)),
    # elasticsearch-haystack's ElasticsearchDocumentStore: `meta` flattened to the top level
    "haystack": LayoutFields("embedding", "content", None, (DOC_ID, SOURCE)),
}

LLAMA_NODE_CONTENT = "_node_content"
LLAMA_NODE_TYPE = "_node_type"
LLAMA_DOC_ID_KEYS = ("doc_id", "document_id", "ref_doc_id")
LLAMA_ABSENT = "None"
"""LlamaIndex stores this string as the document id of a node without a source document."""

CATALOG_FIELD = "rag_evidence"
"""Top-level object of every chunk rag-evidence writes: `fingerprint` (what its vector was
computed from) and `doc` (its document), read back by an incremental `index`; never searched."""
CATALOG_MAPPING = {"type": "object", "enabled": False}
VERSION_FIELD = "rag_evidence_version"
"""Top-level field of every chunk `index` writes: the store version that wrote it (see
`store_version`); searched by range, never returned."""
VERSION_MAPPING = {"type": "long"}

HAYSTACK_ID = "id"
HAYSTACK_OWN_FIELDS = ("id", "sparse_embedding", "blob", "score")
"""Top-level fields of a Haystack document that are not its metadata."""


def source_filter(layout: LayoutName, vector_field: str, content_field: str,
                  metadata_field: str | None) -> dict[str, list[str]]:
    """The `_source` filter of a search: the content and metadata, never the vector (nor
    LlamaIndex's copy of the whole node)."""
    if metadata_field is None:
        excludes = [vector_field, CATALOG_FIELD, VERSION_FIELD]
        if layout == "haystack":
            excludes += [f for f in HAYSTACK_OWN_FIELDS if f != vector_field]
        return {"excludes": excludes}
    fetched = {"includes": [content_field, metadata_field]}
    if layout == "llamaindex":
        fetched["excludes"] = [f"{metadata_field}.{LLAMA_NODE_CONTENT}"]
    return fetched


def identity_source_filter(layout: LayoutName, content_field: str,
                           metadata_field: str | None) -> dict[str, list[str]]:
    """The `_source` filter of a search that needs only the content and the identity (where
    `hit_metadata` reads it): never the rest of the metadata, nor the vector."""
    keys = [*DOC_ID_KEYS, *CHUNK_INDEX_KEYS, *SOURCE_KEYS]
    if layout == "llamaindex":
        keys += LLAMA_DOC_ID_KEYS[1:]
    prefix = "" if metadata_field is None else f"{metadata_field}."
    return {"includes": [content_field, *(prefix + key for key in keys)]}


def hit_metadata(layout: LayoutName, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A hit's metadata, with the identity values where stages/identity.py reads them.

    LlamaIndex: the source document's id (`doc_id`, else `ref_doc_id`, else `document_id`)
    becomes `doc_id`; the string "None" there means no document; the node's bookkeeping
    (`_node_content`, `_node_type`) is dropped.
    """
    if layout != "llamaindex":
        return dict(metadata)
    kept = {k: v for k, v in metadata.items()
            if k not in (LLAMA_NODE_CONTENT, LLAMA_NODE_TYPE)
            and not (k in LLAMA_DOC_ID_KEYS and v == LLAMA_ABSENT)}
    if "doc_id" not in kept:
        for key in LLAMA_DOC_ID_KEYS[1:]:
            if key in kept:
                kept["doc_id"] = kept[key]
                break
    return kept


def chunk_source(layout: LayoutName, chunk_id: str, vector: list[float], content: str,
                 metadata: Mapping[str, Any], vector_field: str, content_field: str,
                 metadata_field: str | None, catalog: Mapping[str, str] | None = None
                 ) -> dict[str, Any]:
    """The `_source` of one chunk written in `layout`, readable by that framework's store, with
    rag-evidence's `catalog` entry (see CATALOG_FIELD) when given."""
    meta = dict(metadata)
    if layout == "llamaindex":
        meta |= _llama_node_fields(chunk_id, meta)
    source: dict[str, Any] = {vector_field: vector, content_field: content}
    if catalog is not None:
        source[CATALOG_FIELD] = dict(catalog)
    if layout == "haystack":
        source[HAYSTACK_ID] = chunk_id
    if metadata_field is None:
        return meta | source
    return source | {metadata_field: meta}


def extra_mapping(layout: LayoutName) -> dict[str, Any]:
    """Mapped fields a layout adds to the metadata (or, for Haystack, top-level) object."""
    if layout == "llamaindex":
        return {key: {"type": "keyword"} for key in LLAMA_DOC_ID_KEYS} | {
            LLAMA_NODE_CONTENT: {"type": "text", "index": False},
            LLAMA_NODE_TYPE: {"type": "keyword"}}
    if layout == "haystack":
        return {HAYSTACK_ID: {"type": "keyword"}}
    return {}


def _llama_node_fields(chunk_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What LlamaIndex's `metadata_dict_to_node` needs to rebuild the node, its source
    document taken from `docId`/`doc_id`."""
    doc_id = next((metadata[k] for k in DOC_ID_KEYS if k in metadata), None)
    doc = str(doc_id) if doc_id is not None else LLAMA_ABSENT
    relationships: dict[str, Any] = {} if doc_id is None else {"1": {
        "node_id": doc, "node_type": "4", "metadata": {}, "hash": None,
        "class_name": "RelatedNodeInfo"}}
    node: dict[str, Any] = {"id_": chunk_id, "embedding": None, "metadata": dict(metadata),
            "excluded_embed_metadata_keys": [], "excluded_llm_metadata_keys": [],
            "relationships": relationships, "metadata_template": "{key}: {value}",
            "metadata_separator": "\n", "text": "", "mimetype": "text/plain",
            "start_char_idx": None, "end_char_idx": None,
            "text_template": "{metadata_str}\n\n{content}", "class_name": "TextNode"}
    return {key: doc for key in LLAMA_DOC_ID_KEYS} | {
        LLAMA_NODE_CONTENT: json.dumps(node, ensure_ascii=False), LLAMA_NODE_TYPE: "TextNode"}
