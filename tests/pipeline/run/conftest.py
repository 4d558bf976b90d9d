"""The store a night's test runs on: the embedded store, or an Elasticsearch index."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.store_version import DELETIONS_SUFFIX


@pytest.fixture
def es_section(es_url: str, es_client: Elasticsearch) -> Iterator[str]:
    """The `search:` section of a config (YAML, its first line included) of a fresh index of
    the session's server declaring the `parity` filter (it and its deletion records removed
    after the test)."""
    index = f"nights-{uuid.uuid4().hex[:10]}"
    yield (f"search:\n  backend: elasticsearch\n  elasticsearch:\n    hosts: [{es_url}]\n"
           f"    index: {index}\n    filter-fields: [docId, source, parity]\n")
    es_client.options(ignore_status=404).indices.delete(
        index=f"{index},{index}{DELETIONS_SUFFIX}")


@pytest.fixture(params=["embedded", pytest.param("elasticsearch", marks=pytest.mark.live_es)])
def store_section(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The `search:` section of a config of a fresh store: an embedded store in `tmp_path`,
    or an index (`es_section`)."""
    if request.param == "embedded":
        return f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
    section: str = request.getfixturevalue("es_section")
    return section
