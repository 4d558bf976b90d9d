"""`rag-evidence index` as a scheduled job runs it: its flags, its printed summary and
`--summary FILE`, which say the same counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.cli.main import main


def _docs(root: Path, names: list[str]) -> Path:
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    for name in names:
        (root / name).write_text(f"The document {name} holds a sentence about {name}.")
    return root


def _index(tmp_path: Path, docs: Path, *flags: str) -> int:
    return main(["index", "--docs", str(docs), "--set", f"search.embedded.path={tmp_path}/s",
                 "--set", "embedder.dim=16", *flags])


def test_the_summary_file_and_the_printed_line_say_the_same_counts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _docs(tmp_path / "docs", ["a.md", "b.md", "c.md"])
    assert _index(tmp_path, docs) == 0
    capsys.readouterr()
    summary = tmp_path / "summary.json"
    assert _index(tmp_path, _docs(docs, ["a.md", "b.md", "d.md"]), "--cleanup", "full",
                  "--summary", str(summary)) == 0
    counts = json.loads(summary.read_text())
    assert {k: counts[k] for k in ("added", "updated", "unchanged", "deleted", "failed",
                                   "texts_embedded")} == {
        "added": 1, "updated": 0, "unchanged": 2, "deleted": 1, "failed": 0, "texts_embedded": 1}
    assert (counts["store"], counts["cleanup"], counts["rebuild"]) == (f"{tmp_path}/s", "full",
                                                                      False)
    assert counts["seconds"] > 0 and counts["embedder"]["kind"] == "hashing"
    printed = capsys.readouterr().out
    assert re.search(r"indexed into .*/s \(hashing \(16 dims\)\): 1 added, 0 updated, "
                     r"2 unchanged, 1 deleted, 0 failed; 1 texts embedded; [\d.]+ s", printed)


def test_another_embedder_is_a_one_line_error_and_rebuild_replaces_everything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _docs(tmp_path / "docs", ["a.md", "b.md"])
    assert _index(tmp_path, docs) == 0
    capsys.readouterr()
    assert _index(tmp_path, docs, "--set", "embedder.dim=24") == 2
    error = capsys.readouterr().err
    assert error.startswith("rag-evidence: error: the embedded store") and "--rebuild" in error
    assert _index(tmp_path, docs, "--set", "embedder.dim=24", "--rebuild") == 0
    assert "0 added, 2 updated, 0 unchanged, 0 deleted" in capsys.readouterr().out


def test_an_unknown_cleanup_mode_is_refused_by_the_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _index(tmp_path, tmp_path, "--cleanup", "some")
    assert "invalid choice: 'some'" in capsys.readouterr().err
