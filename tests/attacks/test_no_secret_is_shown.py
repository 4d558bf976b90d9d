"""A configured secret appears in no message, log or dead letter."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from connectors.elasticsearch.client import open_client
from connectors.elasticsearch.config import ElasticsearchConfig, RetryPolicy
from connectors.elasticsearch.index_check import IndexFacts
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.search_port import SearchRequest
from core.errors import ConfigError, SearchRejectedError
from pipeline.config.loader import load_settings
from tests.fault_proxy import FaultProxy

SECRET = "pa/ss?w#rd-42"
DIM = 8


@pytest.mark.parametrize("host", [f"http://elastic:{SECRET}@es:9200",
                                  f"https://u:{SECRET}@es", f"es:{SECRET}@h"])
def test_a_password_in_a_host_url_is_refused_and_never_shown(host: str) -> None:
    with pytest.raises(ConfigError, match="must not hold credentials") as raised:
        load_settings(overrides=[f"search.elasticsearch.hosts=[{host!r}]"])
    assert SECRET not in str(raised.value) and "pa/ss" not in str(raised.value)


@pytest.mark.parametrize("key", ["search.elasticsearch.pasword", "search.elasticsearch.api-key"])
def test_an_unknown_key_never_echoes_its_value(key: str) -> None:
    with pytest.raises(ConfigError, match="unknown key") as raised:
        load_settings(overrides=[f"{key}={SECRET}"])
    assert SECRET not in str(raised.value) and raised.value.value is None


def test_a_non_ascii_api_key_is_one_clear_error_that_hides_it(tmp_path: Path) -> None:
    config = ElasticsearchConfig(hosts=("http://h:9200",), index="i")
    with pytest.raises(ConfigError, match="outside ASCII") as raised:
        open_client(config, {"RAG_EVIDENCE_ES_API_KEY": "ключ-секрет"})
    assert "ключ" not in str(raised.value)


@pytest.mark.live_es
def test_server_text_that_quotes_the_credentials_is_redacted(
        es_url: str, es_chunks: tuple[ElasticsearchConfig, np.ndarray]) -> None:
    config, vectors = es_chunks
    es_index = config.index
    api_key = "c2VjcmV0LWtleS00Mg=="
    with FaultProxy(es_url, ["echo-auth"]) as proxy:
        proxied = ElasticsearchConfig(hosts=(proxy.url,), index=es_index,
                                      retry=RetryPolicy(1, 0.0, 0.0))
        events: Counter[str] = Counter()
        port = ElasticsearchPort(open_client(proxied, {"RAG_EVIDENCE_ES_API_KEY": api_key}),
                                 proxied, IndexFacts(DIM), rng=random.Random(0),
                                 on_event=lambda n, v: events.update({n: v}))
        (outcome,) = port.search([SearchRequest(vector=tuple(vectors[0].tolist()), k=2)])
        port.close()
        assert proxy.authorizations == [f"ApiKey {api_key}"]
    assert isinstance(outcome, SearchRejectedError)
    assert "bad header Authorization: ApiKey ***" in str(outcome)
    assert api_key not in str(outcome)
