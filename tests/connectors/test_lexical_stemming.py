"""Lexical recall stems words (issue 34): "tomato" finds "tomatoes" on every backend, in the
language the store was built with, which the store records and queries are analysed with."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from connectors.chunk_record import ChunkRecord
from connectors.elasticsearch.bulk_writer import write_chunks
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.index_admin import ensure_index
from connectors.elasticsearch.port import ElasticsearchPort
from connectors.embedded.layout import MANIFEST_FILE, Manifest
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import current_version
from connectors.embedded.writer import EmbeddedStoreTarget, write_store
from connectors.search_port import KnowledgeSearchPort, SearchRequest
from core.stemmer import StemmerName
from pipeline.testing import memory_port_factory

RECORDS = [
    ChunkRecord(id="garden#chunk-0", vector=(1.0, 0.0), content="Growing tomatoes in pots",
                metadata={"docId": "garden", "chunkIndex": 0}),
    ChunkRecord(id="kitchen#chunk-0", vector=(0.0, 1.0), content="Baking bread at home",
                metadata={"docId": "kitchen", "chunkIndex": 0, "lang": "en"}),
]


def _ids(port: KnowledgeSearchPort, text: str) -> list[str | None]:
    (hits,) = port.search([SearchRequest(text=text, k=5)])
    assert isinstance(hits, list)
    return [hit.id for hit in hits]


def _embedded(tmp_path: Path, stemmer: StemmerName) -> KnowledgeSearchPort:
    target = EmbeddedStoreTarget(tmp_path / "store", stemmer=stemmer)
    target.prepare(2, None)
    target.open_writer().write(RECORDS)
    target.commit()
    return EmbeddedStore.open(tmp_path / "store")


def _elasticsearch(request: pytest.FixtureRequest, stemmer: StemmerName) -> KnowledgeSearchPort:
    es_client: Elasticsearch = request.getfixturevalue("es_client")
    config = ElasticsearchConfig(hosts=(request.getfixturevalue("es_url"),),
                                 index=request.getfixturevalue("es_index"), stemmer=stemmer)
    ensure_index(es_client, config, 2)
    write_chunks(es_client, config, RECORDS, refresh=True)
    return ElasticsearchPort.open(config)


@pytest.mark.parametrize("backend", ["embedded", pytest.param("elasticsearch",
                                                              marks=pytest.mark.live_es)])
@pytest.mark.parametrize("query", ["tomato", "grow tomato", "baked breads"])
def test_the_default_stemmer_matches_other_forms_of_a_word(
        backend: str, query: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    port = (_embedded(tmp_path, "english") if backend == "embedded"
            else _elasticsearch(request, "english"))
    try:
        expected = "kitchen#chunk-0" if "bread" in query else "garden#chunk-0"
        assert _ids(port, query) == [expected]
    finally:
        port.close()


@pytest.mark.parametrize("backend", ["embedded", pytest.param("elasticsearch",
                                                              marks=pytest.mark.live_es)])
def test_stemmer_none_matches_only_the_words_as_written(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    port = (_embedded(tmp_path, "none") if backend == "embedded"
            else _elasticsearch(request, "none"))
    try:
        assert _ids(port, "tomato") == []
        assert _ids(port, "tomatoes") == ["garden#chunk-0"]
    finally:
        port.close()


def test_the_in_memory_store_stems_as_the_default_does() -> None:
    port = memory_port_factory(RECORDS)()
    assert _ids(port, "tomato") == ["garden#chunk-0"]


def test_the_store_records_its_stemmer_and_queries_are_analysed_with_it(tmp_path: Path) -> None:
    _embedded(tmp_path, "none").close()
    assert Manifest.read(current_version(tmp_path / "store")).stemmer == "none"
    # whatever a later config says, a run reads the store as it was built
    port = EmbeddedStore.open(tmp_path / "store")
    assert _ids(port, "tomato") == []
    port.close()


def test_a_changed_stemmer_rebuilds_the_lexical_index_on_a_night_with_no_change(
        tmp_path: Path) -> None:
    _embedded(tmp_path, "none").close()
    before = current_version(tmp_path / "store")
    target = EmbeddedStoreTarget(tmp_path / "store", stemmer="english")
    target.prepare(2, None)
    note = target.commit()
    after = current_version(tmp_path / "store")
    assert after != before and note == ("the lexical index was built again with stemmer "
                                        "english (the store's was none)")
    assert Manifest.read(after).stemmer == "english"
    port = EmbeddedStore.open(tmp_path / "store")
    assert _ids(port, "tomato") == ["garden#chunk-0"] and len(port) == 2  # type: ignore[arg-type]
    port.close()
    again = EmbeddedStoreTarget(tmp_path / "store", stemmer="english")
    again.prepare(2, None)
    assert (again.commit() or "").startswith("nothing changed")


def test_a_store_from_before_stemming_reads_as_unstemmed(tmp_path: Path) -> None:
    write_store(tmp_path / "store", RECORDS)
    manifest = current_version(tmp_path / "store") / MANIFEST_FILE
    data = json.loads(manifest.read_text())
    del data["stemmer"], data["metadata_keys"]
    manifest.write_text(json.dumps(data))
    read = Manifest.read(current_version(tmp_path / "store"))
    assert (read.stemmer, read.metadata_keys) == ("none", None)


def test_a_manifest_naming_an_unknown_stemmer_is_refused_by_name(tmp_path: Path) -> None:
    write_store(tmp_path / "store", RECORDS)
    manifest = current_version(tmp_path / "store") / MANIFEST_FILE
    manifest.write_text(manifest.read_text().replace('"english"', '"klingon"'))
    with pytest.raises(Exception, match="klingon"):
        Manifest.read(current_version(tmp_path / "store"))


@pytest.mark.live_es
def test_an_existing_index_with_another_analyzer_is_kept_with_a_warning(
        request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture) -> None:
    _elasticsearch(request, "none").close()
    es_client: Elasticsearch = request.getfixturevalue("es_client")
    config = ElasticsearchConfig(hosts=(request.getfixturevalue("es_url"),),
                                 index=request.getfixturevalue("es_index"))
    with caplog.at_level(logging.WARNING):
        assert ensure_index(es_client, config, 2) is False
    assert "stemmer=english" in caplog.text and "'standard'" in caplog.text
