from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from tests.builders import chunk_records, unit_vectors
from tests.pipeline.cli_runs import index_store


@pytest.fixture(scope="module")
def store_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The config of a small indexed embedded store (see `index_store`)."""
    return index_store(tmp_path_factory.mktemp("e2e"))


@pytest.fixture
def es_chunks(es_url: str, es_client: Elasticsearch, es_index: str
              ) -> tuple[ElasticsearchConfig, np.ndarray]:
    """A fresh index on the test server holding chunks of 12 unit vectors (8 dims)."""
    config = ElasticsearchConfig(hosts=(es_url,), index=es_index, index_options={"type": "flat"})
    vectors = unit_vectors(12, dim=8)
    ensure_index(es_client, config, 8)
    write_chunks(es_client, config, chunk_records(vectors), refresh=True)
    return config, vectors
