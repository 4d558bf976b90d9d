"""Digests made ahead are the file's as it is when asked for: a file written, replaced or
changed after it was hashed ahead is hashed again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.file_digest import digests_ahead, file_sha256

_EDITS = st.sampled_from(["none", "rewrite", "replace", "append", "remove"])


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@settings(max_examples=40, deadline=None)
@given(first=st.binary(max_size=3000), second=st.binary(max_size=3000), edit=_EDITS)
def test_a_digest_made_ahead_is_the_files_own(tmp_path_factory: object, first: bytes,
                                               second: bytes, edit: str) -> None:
    folder: Path = tmp_path_factory.mktemp("digests")  # type: ignore[attr-defined]
    path = folder / "file"
    path.write_bytes(first)
    with digests_ahead([path, folder / "missing", folder]):
        expected = first
        if edit == "rewrite":  # the same inode, maybe the same size and time
            path.write_bytes(second)
            os.utime(path, ns=(0, 0))
            expected = second
        elif edit == "replace":
            (folder / "new").write_bytes(second)
            os.replace(folder / "new", path)
            expected = second
        elif edit == "append":
            with open(path, "ab") as handle:
                handle.write(second)
            expected = first + second
        elif edit == "remove":
            path.unlink()
        if edit == "remove":
            assert not path.exists()
        else:
            assert file_sha256(path) == _sha(expected)
    if edit != "remove":
        assert file_sha256(path) == _sha(expected)


def test_outside_the_block_nothing_is_taken_from_it(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"one")
    with digests_ahead([path]):
        assert file_sha256(path) == _sha(b"one")
    path.write_bytes(b"two")
    os.utime(path, ns=(0, 0))
    assert file_sha256(path) == _sha(b"two")
