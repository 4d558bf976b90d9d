"""Opens the official Elasticsearch client with our settings, and checks the target index."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import orjson
from elasticsearch import Elasticsearch, NotFoundError
from elasticsearch.serializer import NdjsonSerializer, OrjsonSerializer

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.credentials import read_credentials
from connectors.elasticsearch.failures import not_an_answer
from connectors.elasticsearch.retry import call_with_retries
from connectors.embedder_port import EmbedderInfo
from core.errors import KnowledgeSearchError, SearchUnavailableError, redact


class _OrjsonNdjsonSerializer(NdjsonSerializer):
    """`_msearch` bodies and answers through orjson, which writes vectors (and numpy arrays)
    natively; the figure is in docs/benchmarks.md."""

    def json_dumps(self, data: Any) -> bytes:
        return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)

    def json_loads(self, data: bytes) -> Any:
        return orjson.loads(data)


def open_client(config: ElasticsearchConfig, environ: Mapping[str, str] | None = None,
                fast_json: bool = False) -> Elasticsearch:
    """A client with its own retries off (ours live in the adapter) and the configured TLS;
    `fast_json` for a search client: requests and answers through orjson (which writes NaN as
    null, so never for writes of user data)."""
    options: dict[str, Any] = dict(read_credentials(config, environ or os.environ))
    if config.ca_certs:
        options["ca_certs"] = config.ca_certs
    if fast_json:
        options["serializers"] = {OrjsonSerializer.mimetype: OrjsonSerializer(),
                                  NdjsonSerializer.mimetype: _OrjsonNdjsonSerializer()}
    return Elasticsearch(
        list(config.hosts),
        request_timeout=config.request_timeout,
        verify_certs=config.verify_certs,
        max_retries=0,
        retry_on_timeout=False,
        **options,
    )


def check_reachable(client: Elasticsearch, config: ElasticsearchConfig) -> None:
    """Raises SearchUnavailableError naming the hosts when the cluster does not answer (after
    the retry policy's attempts)."""
    try:
        call_with_retries(client.info, config.retry, "the info request", config.hosts)
    except KnowledgeSearchError as error:
        raise SearchUnavailableError(
            f"search.elasticsearch.hosts={list(config.hosts)!r}: cannot reach Elasticsearch "
            f"({error})") from None


META_KEY = "rag_evidence"


def index_mappings(client: Elasticsearch, config: ElasticsearchConfig) -> dict[str, Any] | None:
    """The index's `mappings` object, or None when the index does not exist."""
    try:
        response = call_with_retries(lambda: client.indices.get_mapping(index=config.index),
                                     config.retry, f"the mapping request of {config.index!r}",
                                     config.hosts)
    except NotFoundError:
        return None
    body = response.body
    if not isinstance(body, dict) or not all(isinstance(m, dict) for m in body.values()):
        raise SearchUnavailableError(redact(
            f"the mapping request of {config.index!r} on {list(config.hosts)}: "
            f"{not_an_answer('the mapping request', body)}"))
    for index_mapping in body.values():
        return dict(index_mapping.get("mappings") or {})
    return {}


def index_settings(client: Elasticsearch, config: ElasticsearchConfig) -> list[dict[str, Any]]:
    """The `index` settings (uuid, shards, ...) of each index `config.index` names: one,
    unless it is an alias of several."""
    response = call_with_retries(lambda: client.indices.get_settings(index=config.index),
                                 config.retry, f"the settings of {config.index!r}",
                                 config.hosts)
    body = response.body
    try:
        return [dict(found["settings"]["index"]) for found in body.values()]
    except (AttributeError, KeyError, TypeError):
        raise SearchUnavailableError(redact(
            f"the settings request of {config.index!r} on {list(config.hosts)}: "
            f"{not_an_answer('the settings request', body)}")) from None


def vector_mapping(mappings: dict[str, Any], config: ElasticsearchConfig) -> dict[str, Any]:
    """The mapping of the vector field ({} when the index has no such field)."""
    return dict(mappings.get("properties", {}).get(config.vector_field) or {})


def recorded_embedder(mappings: dict[str, Any]) -> EmbedderInfo | None:
    """The embedder recorded in the index's `_meta` by `rag-evidence index`, if any."""
    recorded = (mappings.get("_meta") or {}).get(META_KEY, {}).get("embedder")
    return EmbedderInfo.from_dict(recorded) if isinstance(recorded, dict) else None
