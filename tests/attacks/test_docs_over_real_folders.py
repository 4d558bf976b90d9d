"""`--docs` over real folders. Whatever an entry named like
a document turns out to be, it fails alone, by path; the job neither crashes nor hangs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.config.loader import load_settings
from pipeline.ingest.job import run_index


def _index(tmp_path: Path, docs: Path, follow: bool = False) -> tuple[int, dict[str, str]]:
    """Chunks in the store after indexing `docs`, and the failures by file name."""
    settings = load_settings(overrides=[f"search.embedded.path={tmp_path / 'store'}",
                                        "embedder.dim=32"])
    failures = tmp_path / "failures.jsonl"
    summary = run_index(settings, docs=str(docs), failures_path=str(failures),
                        follow_symlinks=follow)
    found = [json.loads(x) for x in failures.read_text().splitlines()]
    return summary.indexed + summary.unchanged, {Path(f["id"]).name: f["error"] for f in found}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.md").write_text("Reading and writing files.")
    return root


@pytest.mark.parametrize(("make", "reason"), [
    (lambda p: p.mkdir(), "is a folder named like a document"),
    (lambda p: os.mkfifo(p), "is not a regular file"),
    (lambda p: p.symlink_to(p.parent / "missing.md"), "is a symbolic link to nothing"),
    (lambda p: p.write_bytes(b"text\x00\x01\x02binary"), "is binary"),
    (lambda p: p.write_bytes("caf\xe9 au lait".encode("latin-1")),
     "is not UTF-8 text (byte 0xe9 at position 3)"),
])
def test_an_entry_that_is_no_document_fails_alone_by_path(
        tmp_path: Path, docs: Path, make, reason: str) -> None:  # type: ignore[no-untyped-def]
    make(docs / "bad.md")
    indexed, failures = _index(tmp_path, docs)
    assert indexed == 1
    assert list(failures) == ["bad.md"] and reason in failures["bad.md"]
    assert str(docs / "bad.md") in failures["bad.md"]


def test_a_link_that_leads_outside_the_folder_is_followed_only_when_asked(
        tmp_path: Path, docs: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("Outside words.")
    (docs / "link.md").symlink_to(outside)
    indexed, failures = _index(tmp_path, docs)
    assert indexed == 1 and "leads outside --docs" in failures["link.md"]
    indexed, failures = _index(tmp_path, docs, follow=True)
    assert (indexed, failures) == (2, {})


def test_a_linked_folder_is_not_entered(tmp_path: Path, docs: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "other.md").write_text("Other words.")
    (docs / "sub").symlink_to(elsewhere, target_is_directory=True)
    assert _index(tmp_path, docs) == (1, {})
