"""A folder a command refills is its own when it holds its marker and, beside its files, only
what its killed writers leave, named as each writer names it; anything else is a user's."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import InvalidInputError
from pipeline.io.owned_folders import check_owned_folder, claim_folder

LEFTOVERS = ["out.jsonl.tmp-4242", "out.jsonl.parts-host-4242-0123abcd", ".out.jsonl.lock",
             ".store.staging-host-4242-0123abcd", ".store.new-host-4242-0123abcd"]


def test_a_folder_with_its_marker_files_and_their_leftovers_is_ours(tmp_path: Path) -> None:
    (tmp_path / ".mine").touch()
    for name in ["out.jsonl", "store", *LEFTOVERS]:
        (tmp_path / name).mkdir() if "." not in name.lstrip(".") else (tmp_path / name).touch()
    check_owned_folder("--dir", str(tmp_path), ".mine", ["out.jsonl", "store"])


@pytest.mark.parametrize("foreign", ["notes.txt", "out.jsonl.bak", ".notes", "out.jsonl.tmp-x"])
def test_anything_else_is_a_users_and_refused(tmp_path: Path, foreign: str) -> None:
    (tmp_path / ".mine").touch()
    (tmp_path / foreign).write_text("mine")
    with pytest.raises(InvalidInputError, match=f"did not write.*{foreign}"):
        check_owned_folder("--dir", str(tmp_path), ".mine", ["out.jsonl", "store"])


def test_claiming_removes_only_the_named_files_and_their_leftovers(tmp_path: Path) -> None:
    for name in ["queries.parquet", "keep.txt", "queries.parquet.tmp-7"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "queries.parquet.parts-h-7-0123abcd").mkdir()
    claim_folder(tmp_path, "state.json", ["queries.parquet"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "state.json"]
