"""A file's SHA-256, read in blocks: what manifests and packaged files are checked by."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of the file at `path`."""
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1024 * 1024):
            sha.update(block)
    return sha.hexdigest()
