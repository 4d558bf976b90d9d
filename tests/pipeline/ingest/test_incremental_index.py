"""Incremental `index` on both backends: the store itself says what it holds (each chunk's
fingerprint), only new and changed chunks are embedded and written, stale ones are deleted by
the cleanup mode, and another embedder is refused unless `--rebuild`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from connectors.embedded.chunk_table import ChunkTable
from connectors.embedded.versions import current_version
from connectors.embedder_port import EmbedderInfo, Purpose
from connectors.embedders.hashing import HashingEmbedder
from core.errors import EmbedderChangedError
from pipeline.ingest.index_summary import IndexSummary
from pipeline.ingest.job import run_index
from tests.builders import FailingEmbedder, chunk_records, unit_vectors
from tests.index_backends import Backend, backend, write_docs

__all__ = ["backend"]  # the fixture, imported

DOCS = {"a.md": ["Alpha opens files and folders on a disk.",
                 "Alpha reads lines from a text file there."],
        "b.md": ["Bravo parses json documents into dicts.",
                 "Bravo writes json documents from dicts.",
                 "Bravo sorts the keys of every json object."],
        "c.md": ["Charlie counts the words of each sentence."]}


def _index(backend: Backend, docs: Path, *extra: str, **options: Any) -> IndexSummary:
    return run_index(backend.settings(*extra), docs=str(docs), **options)


def _counts(summary: IndexSummary) -> tuple[int, int, int, int, int, int]:
    return (summary.added, summary.updated, summary.unchanged, summary.deleted,
            summary.failed, summary.texts_embedded)


def test_a_second_index_of_unchanged_documents_embeds_and_writes_nothing(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    assert _counts(_index(backend, docs)) == (6, 0, 0, 0, 0, 6)
    before = backend.snapshot()
    assert _counts(_index(backend, docs)) == (0, 0, 6, 0, 0, 0)
    assert backend.snapshot() == before


def test_only_changed_and_new_chunks_are_embedded_and_the_rest_keep_their_vectors(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    before = backend.snapshot()
    changed = {**DOCS, "b.md": [DOCS["b.md"][0], "Bravo writes yaml documents from dicts.",
                                DOCS["b.md"][2], "Bravo merges two maps into a single one."]}
    summary = _index(backend, write_docs(docs, changed))
    assert _counts(summary) == (1, 1, 5, 0, 0, 2)
    after = backend.snapshot()
    assert after["b.md#chunk-1"][0] == "Bravo writes yaml documents from dicts."
    assert after["b.md#chunk-3"][0] == "Bravo merges two maps into a single one."
    for unchanged in ("a.md#chunk-0", "a.md#chunk-1", "b.md#chunk-0", "b.md#chunk-2",
                      "c.md#chunk-0"):
        assert after[unchanged] == before[unchanged]


def test_incremental_cleanup_deletes_stale_chunks_of_input_documents_only(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    shrunk = {"a.md": DOCS["a.md"], "b.md": DOCS["b.md"][:1]}  # c.md absent from the input
    assert _counts(_index(backend, write_docs(docs, shrunk))) == (0, 0, 3, 2, 0, 0)
    assert sorted(backend.snapshot()) == ["a.md#chunk-0", "a.md#chunk-1", "b.md#chunk-0",
                                          "c.md#chunk-0"]


def test_full_cleanup_also_deletes_the_documents_absent_from_the_input(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    shrunk = {"a.md": DOCS["a.md"], "b.md": DOCS["b.md"][:1]}
    assert _counts(_index(backend, write_docs(docs, shrunk), cleanup="full")) == (
        0, 0, 3, 3, 0, 0)
    assert sorted(backend.snapshot()) == ["a.md#chunk-0", "a.md#chunk-1", "b.md#chunk-0"]


def test_cleanup_none_only_adds_and_updates(backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    changed = {"a.md": ["Alpha opens folders and files on a disk."],
               "d.md": ["Delta deletes nothing at all, ever again."]}
    assert _counts(_index(backend, write_docs(docs, changed), cleanup="none")) == (
        1, 1, 0, 0, 0, 2)
    snapshot = backend.snapshot()
    assert len(snapshot) == 7
    assert snapshot["a.md#chunk-0"][0] == "Alpha opens folders and files on a disk."
    assert snapshot["a.md#chunk-1"][0] == DOCS["a.md"][1]  # stale, kept by `none`


def chunk_file(path: Path, vectors: np.ndarray, contents: Sequence[str] = ()) -> Path:
    records = chunk_records(vectors, chunks_per_doc=2)
    for i, content in enumerate(contents):
        records[i] = records[i].model_copy(update={"content": content})
    path.write_text("".join(r.model_dump_json() + "\n" for r in records))
    return path


def test_chunk_records_carry_their_vectors_and_unchanged_ones_are_not_rewritten(
        backend: Backend, tmp_path: Path) -> None:
    vectors = unit_vectors(6, dim=32)
    chunks = chunk_file(tmp_path / "chunks.jsonl", vectors)
    settings = backend.settings()
    assert _counts(run_index(settings, chunks=str(chunks))) == (6, 0, 0, 0, 0, 0)
    before = backend.snapshot()
    vectors[4] = unit_vectors(1, dim=32, seed=99)[0]  # a new vector for doc2#chunk-0
    chunk_file(chunks, vectors, contents=["content 0 edited"])
    assert _counts(run_index(settings, chunks=str(chunks))) == (0, 2, 4, 0, 0, 0)
    after = backend.snapshot()
    assert after["doc0#chunk-0"][0] == "content 0 edited"
    assert np.allclose(after["doc2#chunk-0"][1], vectors[4], atol=1e-6)
    assert all(after[k] == before[k] for k in before if k not in ("doc0#chunk-0",
                                                                   "doc2#chunk-0"))


class _PrefixedEmbedder(HashingEmbedder):
    """The hashing embedder with a document prefix: another embedder, of the same dimension."""

    @property
    def info(self) -> EmbedderInfo:
        return replace(super().info, document_prefix="passage: ")

    def embed(self, texts: Sequence[str], purpose: Purpose = "query") -> np.ndarray:
        return super().embed([f"passage {t}" for t in texts], purpose)


def test_another_embedder_is_refused_naming_both_and_rebuild_re_embeds_everything(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    before = backend.snapshot()
    prefixed = partial(_PrefixedEmbedder, 32)
    with pytest.raises(EmbedderChangedError, match=r"holds chunks embedded with hashing "
                       r"\(32 dims\), but this index brings chunks embedded with hashing "
                       r"\(32 dims, prefixes ''/'passage: '\).*--rebuild"):
        _index(backend, docs, embedder_factory=prefixed)
    assert backend.snapshot() == before
    summary = _index(backend, docs, embedder_factory=prefixed, rebuild=True)
    assert (summary.updated, summary.texts_embedded, summary.failed) == (6, 6, 0)
    assert backend.snapshot()["a.md#chunk-0"][1] != before["a.md#chunk-0"][1]
    assert _index(backend, docs, embedder_factory=prefixed).unchanged == 6


def test_a_chunk_that_fails_to_embed_keeps_its_previous_version(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    before = backend.snapshot()
    changed = {**DOCS, "c.md": ["Charlie goes boom in the middle of a line."]}
    summary = _index(backend, write_docs(docs, changed), "embedder.batch-size=1",
                     embedder_factory=partial(FailingEmbedder, 32))
    assert (summary.failed, summary.updated, summary.unchanged) == (1, 0, 5)
    assert backend.snapshot() == before


def test_nothing_changed_commits_no_new_version(tmp_path: Path) -> None:
    store = tmp_path / "store"
    backend = Backend([f"search.embedded.path={store}"])
    docs = write_docs(tmp_path / "docs", DOCS)
    _index(backend, docs)
    version = current_version(store)
    summary = _index(backend, docs)
    assert summary.note == f"nothing changed: the store keeps version {version.name}"
    assert current_version(store) == version


def test_each_stored_chunk_records_its_document_and_fingerprint(tmp_path: Path) -> None:
    store = tmp_path / "store"
    backend = Backend([f"search.embedded.path={store}"])
    _index(backend, write_docs(tmp_path / "docs", DOCS))
    table = ChunkTable.of_version(current_version(store))
    assert table.docs == ["a.md", "a.md", "b.md", "b.md", "b.md", "c.md"]
    assert len(set(table.fingerprints)) == 6 and all(
        f is not None and len(f) == 32 for f in table.fingerprints)
