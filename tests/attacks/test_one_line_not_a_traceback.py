"""Mistakes that once printed a traceback are one line naming what to fix."""

from __future__ import annotations

import json
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
from core.errors import ConfigError, InvalidInputError, SearchUnavailableError
from pipeline.config.loader import load_settings
from pipeline.eval.qrels import read_qrels
from tests.fault_proxy import FaultProxy

DIM = 8


def test_a_config_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_bytes("rag:\n  return-n: 3 # é\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_settings(config)


def test_a_credentials_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    secrets = tmp_path / "es.env"
    secrets.write_bytes("PASSWORD=caf\xe9\n".encode("latin-1"))
    config = ElasticsearchConfig(hosts=("http://h:9200",), index="i",
                                 credentials_file=str(secrets))
    with pytest.raises(ConfigError, match="credentials-file.*is not UTF-8 text"):
        open_client(config, {})


def test_qrels_with_an_infinite_relevance_name_the_line(tmp_path: Path) -> None:
    qrels = tmp_path / "q.jsonl"
    qrels.write_text(json.dumps({"query_id": "q", "id": "a", "relevance": 1e999}) + "\n")
    with pytest.raises(InvalidInputError, match=r"q\.jsonl:1"):
        read_qrels(qrels)


@pytest.mark.live_es
@pytest.mark.parametrize("answer", ["html200", "error200", "short200"])
def test_a_server_that_is_not_elasticsearch_is_retried_then_a_plain_failure(
        es_url: str, es_chunks: tuple[ElasticsearchConfig, np.ndarray], answer: str) -> None:
    es_index, vectors = es_chunks[0].index, es_chunks[1][:4]
    with FaultProxy(es_url, [answer] * 2) as proxy:
        proxied = ElasticsearchConfig(hosts=(proxy.url,), index=es_index,
                                      retry=RetryPolicy(2, 0.0, 0.0))
        events: Counter[str] = Counter()
        port = ElasticsearchPort(open_client(proxied, {}), proxied, IndexFacts(DIM),
                                 rng=random.Random(0), on_event=lambda n, v: events.update({n: v}))
        outcomes = port.search([SearchRequest(vector=tuple(v.tolist()), k=2) for v in vectors])
        port.close()
    assert all(isinstance(o, SearchUnavailableError) for o in outcomes)
    assert "failed after 2 attempts" in str(outcomes[0])
    assert events["backend_retries"] == 1


@pytest.mark.live_es
def test_a_server_that_is_not_elasticsearch_fails_at_start_up_in_plain_words(
        es_url: str, es_index: str) -> None:
    with FaultProxy(es_url, ["pass"] + ["html200"] * 10) as proxy:
        config = ElasticsearchConfig(hosts=(proxy.url,), index=es_index,
                                     retry=RetryPolicy(2, 0.0, 0.0))
        with pytest.raises(SearchUnavailableError, match="mapping request"):
            ElasticsearchPort.open(config, environ={})
