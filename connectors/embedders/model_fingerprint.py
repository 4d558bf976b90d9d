"""A model's identity by content: what it computes with, not what its folder is called."""

from __future__ import annotations

import hashlib
from pathlib import Path

FINGERPRINT_CHARS = 16
_NOT_MODEL = ("readme", "license", ".")
"""Files that describe a model but take no part in what it computes (by name start)."""


def model_fingerprint(directory: Path) -> str:
    """SHA-256 (first 64 bits, hex) of every file under `directory` that a model is loaded from
    (weights, configuration, tokenizer; not its README, licence or hidden files), each named by
    its path relative to `directory`, in path order: two folders of one name holding other
    weights or settings differ, one model copied elsewhere does not."""
    files = sorted(path for path in directory.rglob("*") if path.is_file() and not any(
        part.lower().startswith(_NOT_MODEL) for part in path.relative_to(directory).parts))
    seen = tuple((str(p), status.st_size, status.st_mtime_ns)
                 for p, status in ((p, p.stat()) for p in files))
    if seen not in _FINGERPRINTS:
        _FINGERPRINTS[seen] = _fingerprint(directory, files)
    return _FINGERPRINTS[seen]


_FINGERPRINTS: dict[tuple[tuple[str, int, int], ...], str] = {}
"""Fingerprints this process has computed, by each file's path, size and modification time:
a model described several times in a run is read once, and a file changed since is read
again."""


def _fingerprint(directory: Path, files: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in files:
        name = path.relative_to(directory).as_posix().encode("utf-8", "surrogateescape")
        sha.update(len(name).to_bytes(8, "little") + name)
        sha.update(path.stat().st_size.to_bytes(8, "little"))
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                sha.update(block)
    return sha.hexdigest()[:FINGERPRINT_CHARS]
