"""`index` writes what it is configured to, or nothing: two lines of one id are refused before
anything is written on both backends, and a store of another index kind is built again even
when no chunk changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.embedded.layout import Manifest
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import current_version
from core.errors import InvalidInputError
from pipeline.ingest.job import run_index
from tests.builders import chunk_records, unit_vectors
from tests.index_backends import Backend, backend

__all__ = ["backend"]  # the fixture, imported


def test_two_lines_of_one_id_are_refused_and_nothing_is_written(backend: Backend,
                                                                tmp_path: Path) -> None:
    records = chunk_records(unit_vectors(6, dim=32), chunks_per_doc=2)
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n" for r in records[:4]))
    run_index(backend.settings(), chunks=str(chunks))
    before = backend.snapshot()
    edited = records[1].model_copy(update={"content": "the second line of doc0#chunk-1"})
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in [*records[:2], edited, *records[4:]]))
    with pytest.raises(InvalidInputError, match=rf"doc0#chunk-1.*appears twice, at "
                                                rf"{chunks}:2, {chunks}:3; nothing was written"):
        run_index(backend.settings(), chunks=str(chunks), cleanup="full")
    assert backend.snapshot() == before


def test_an_index_configured_for_hnsw_builds_it_though_no_chunk_changed(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    backend = Backend([f"search.embedded.path={store}"])
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in chunk_records(unit_vectors(40, dim=32))))
    run_index(backend.settings(), chunks=str(chunks))
    summary = run_index(backend.settings("search.embedded.index=hnsw"), chunks=str(chunks))
    assert summary.unchanged == 40 and "nothing changed" not in (summary.note or "")
    assert Manifest.read(current_version(store)).index == "hnsw"
    assert len(EmbeddedStore.open(store, "hnsw")) == 40
    again = run_index(backend.settings("search.embedded.index=hnsw"), chunks=str(chunks))
    assert "nothing changed" in (again.note or "")
