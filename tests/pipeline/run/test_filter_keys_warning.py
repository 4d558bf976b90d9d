"""A filter that can match nothing says so at start-up, on both backends (issue 34): the store
knows its chunks' metadata keys."""

from __future__ import annotations

import json
import logging
from functools import partial
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.embedded.layout import MANIFEST_FILE, Manifest
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import current_version
from connectors.embedded.writer import write_store
from connectors.search_port import PortFactory
from pipeline.io.query_source import query_source
from pipeline.run.preflight import preflight
from tests.builders import chunk_records, unit_vectors

RECORDS = chunk_records(unit_vectors(6, dim=4), chunks_per_doc=2)
STORED_KEYS = ["chunkIndex", "docId", "parity", "source"]


def _embedded(tmp_path: Path) -> PortFactory:
    write_store(tmp_path / "store", RECORDS)
    return partial(EmbeddedStore.open, tmp_path / "store")


def _elasticsearch(request: pytest.FixtureRequest) -> PortFactory:
    client: Elasticsearch = request.getfixturevalue("es_client")
    config = ElasticsearchConfig(hosts=(request.getfixturevalue("es_url"),),
                                 index=request.getfixturevalue("es_index"))
    ensure_index(client, config, 4)
    write_chunks(client, config, RECORDS, refresh=True)
    return partial(ElasticsearchPort.open, config)


@pytest.fixture(params=["embedded", pytest.param("elasticsearch", marks=pytest.mark.live_es)])
def port_factory(request: pytest.FixtureRequest, tmp_path: Path) -> PortFactory:
    return _embedded(tmp_path) if request.param == "embedded" else _elasticsearch(request)


def _warnings(port_factory: PortFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture,
              *filters: dict) -> str:
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "vector": [1, 0, 0, 0],
                                           "filters": f}) + "\n"
                               for i, f in enumerate(filters, start=1)))
    with caplog.at_level(logging.WARNING, logger="pipeline.run.preflight"):
        preflight(port_factory, None, query_source(str(queries)))
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "pipeline.run.preflight")


def test_a_filter_key_no_chunk_carries_is_warned_of_with_the_keys_there_are(
        port_factory: PortFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    said = _warnings(port_factory, tmp_path, caplog, {"docId": "doc0"}, {"lang": "en"},
                     {"lang": "de"})
    assert "filter key 'lang' (first on line 2)" in said and said.count("'lang'") == 1
    assert all(key in said for key in STORED_KEYS) and "'docId'" not in said


def test_a_misspelt_filter_key_gets_a_did_you_mean(
        port_factory: PortFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    said = _warnings(port_factory, tmp_path, caplog, {"docid": "doc0"})
    assert "filter key 'docid'" in said and "did you mean 'docId'?" in said


def test_filters_on_stored_keys_say_nothing(
        port_factory: PortFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert _warnings(port_factory, tmp_path, caplog, {"docId": "doc0", "parity": 1}, {}) == ""


def test_the_embedded_store_records_its_metadata_keys(tmp_path: Path) -> None:
    _embedded(tmp_path)
    assert Manifest.read(current_version(tmp_path / "store")).metadata_keys == tuple(STORED_KEYS)


def test_a_store_that_does_not_record_its_keys_warns_of_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    factory = _embedded(tmp_path)
    manifest = current_version(tmp_path / "store") / MANIFEST_FILE
    data = json.loads(manifest.read_text())
    del data["metadata_keys"]
    manifest.write_text(json.dumps(data))
    assert _warnings(factory, tmp_path, caplog, {"lang": "en"}) == ""
