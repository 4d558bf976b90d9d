"""A failed read never deletes: a chunk line, a document or the rest of a file that could not be
read keeps what the store holds of it, on both backends; a document read whole and emptied is a
document with no chunks."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from core.errors import RebuildIncompleteError
from pipeline.cli.main import main
from pipeline.ingest.job import run_index
from tests.builders import chunk_records, unit_vectors
from tests.index_backends import Backend, backend, write_docs

__all__ = ["backend"]  # the fixture, imported

DOCS = {"a.md": ["Alpha opens files and folders on a disk.",
                 "Alpha reads lines from a text file there."],
        "b.md": ["Bravo parses json documents into dicts."],
        "c.md": ["Charlie counts the words of each sentence."]}


def _chunk_lines(vectors: np.ndarray) -> list[str]:
    return [r.model_dump_json() for r in chunk_records(vectors, chunks_per_doc=2)]


def _indexed(backend: Backend, tmp_path: Path, count: int) -> tuple[list[str], Path]:
    """The lines of `count` chunks (two a document), written to a file and indexed."""
    lines = _chunk_lines(unit_vectors(count, dim=32))
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("\n".join(lines) + "\n")
    run_index(backend.settings(), chunks=str(chunks))
    return lines, chunks


def _cut_gzip(lines: list[str], path: Path, fraction: float) -> Path:
    packed = gzip.compress(("\n".join(lines) + "\n").encode())
    path.write_bytes(packed[: int(len(packed) * fraction)])
    return path


def test_a_chunk_line_that_fails_keeps_its_stored_chunk(backend: Backend, tmp_path: Path
                                                        ) -> None:
    lines, chunks = _indexed(backend, tmp_path, 6)
    before = backend.snapshot()
    broken = json.loads(lines[1])  # doc0#chunk-1: its document is in the input
    broken["vector"][3] = None
    chunks.write_text("\n".join([*lines[:1], json.dumps(broken), *lines[2:]]) + "\n")
    summary = run_index(backend.settings(), chunks=str(chunks))
    assert (summary.failed, summary.deleted, summary.kept_after_failure) == (1, 0, 1)
    assert backend.snapshot() == before


def test_a_line_without_a_readable_id_keeps_every_stale_chunk(backend: Backend,
                                                              tmp_path: Path) -> None:
    lines, chunks = _indexed(backend, tmp_path, 6)
    chunks.write_text("\n".join([*lines[:2], "{not json", *lines[4:]]) + "\n")
    summary = run_index(backend.settings(), chunks=str(chunks), cleanup="full")
    assert (summary.failed, summary.deleted, summary.kept_after_failure) == (1, 0, 2)
    assert len(backend.snapshot()) == 6


def test_a_truncated_gzip_deletes_nothing_it_could_have_held(backend: Backend,
                                                             tmp_path: Path) -> None:
    lines, _ = _indexed(backend, tmp_path, 60)
    cut = _cut_gzip(lines, tmp_path / "cut.jsonl.gz", 2 / 3)
    summary = run_index(backend.settings(), chunks=str(cut), cleanup="full")
    assert summary.deleted == 0 and summary.failed >= 1
    assert summary.kept_after_failure == 60 - summary.unchanged
    assert len(backend.snapshot()) == 60


def test_a_document_that_no_longer_reads_keeps_its_chunks_under_full_cleanup(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    run_index(backend.settings(), docs=str(docs))
    before = backend.snapshot()
    (docs / "a.md").write_bytes(b"Alpha \xff\xfe is no longer UTF-8 text.")
    summary = run_index(backend.settings(), docs=str(docs), cleanup="full")
    assert (summary.failed, summary.deleted, summary.kept_after_failure) == (1, 0, 2)
    assert backend.snapshot() == before


def test_an_emptied_document_loses_its_chunks_under_the_default_cleanup(
        backend: Backend, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    run_index(backend.settings(), docs=str(docs))
    (docs / "a.md").write_text("")
    summary = run_index(backend.settings(), docs=str(docs))
    assert (summary.deleted, summary.failed, summary.kept_after_failure) == (2, 0, 0)
    assert sorted(backend.snapshot()) == ["b.md#chunk-0", "c.md#chunk-0"]


@pytest.mark.parametrize("flag", ["--failures", "--summary"])
def test_an_output_inside_the_documents_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    code = main(["index", "--set", f"search.embedded.path={tmp_path / 'store'}",
                 "--docs", str(docs), flag, str(docs / "night.md")])
    assert code == 2 and f"is inside --docs {str(docs)!r}" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_a_folder_that_cannot_be_listed_stops_the_index_before_anything_is_deleted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    docs = write_docs(tmp_path / "docs", DOCS)
    (docs / "sub").mkdir()
    (docs / "sub" / "d.md").write_text("Delta lives in a folder of its own, listed once.")
    store = ["--set", f"search.embedded.path={tmp_path / 'store'}"]
    assert main(["index", *store, "--docs", str(docs)]) == 0
    listing = os.scandir

    def denied(path: object = ".") -> object:  # as a folder without read permission
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return listing(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", denied)
    capsys.readouterr()
    assert main(["index", *store, "--docs", str(docs), "--cleanup", "full"]) == 2
    monkeypatch.undo()
    assert "cannot be listed (Permission denied)" in capsys.readouterr().err
    assert main(["index", *store, "--docs", str(docs)]) == 0
    assert "0 deleted" in capsys.readouterr().out


def test_a_rebuild_whose_input_did_not_read_whole_commits_nothing(tmp_path: Path) -> None:
    backend = Backend([f"search.embedded.path={tmp_path / 'store'}"])
    lines, _ = _indexed(backend, tmp_path, 60)
    before = backend.snapshot()
    cut = _cut_gzip(lines, tmp_path / "cut.jsonl.gz", 1 / 2)
    with pytest.raises(RebuildIncompleteError, match="committed only whole"):
        run_index(backend.settings(), chunks=str(cut), rebuild=True)
    assert backend.snapshot() == before
