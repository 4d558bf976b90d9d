"""A file's SHA-256, read in blocks: what manifests and packaged files are checked by.

A run hashes large files it already knows it will check (PREV's snapshot and state) and files
it has just written (tonight's): `digests_ahead` hashes such files on threads of their own,
beside the work that comes before their check, and `file_sha256` then takes the digest made
ahead, as long as the file is the one that was hashed (same inode, size and modification
time)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path

_Identity = tuple[int, int, int, int]
_ahead: ContextVar[dict[str, tuple[_Identity, Future[str]]] | None] = ContextVar(
    "digests_ahead", default=None)
_THREADS = 2


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of the file at `path`."""
    ahead = _ahead.get()
    if ahead:
        found = ahead.get(os.path.realpath(path))
        if found is not None and found[0] == _identity(path):
            return found[1].result()
    return _sha256(path)


@contextlib.contextmanager
def digests_ahead(paths: Iterable[str | Path]) -> Iterator[None]:
    """Within the block, the SHA-256 of each of `paths` that is a file is computed on a
    thread of its own, started now (hashlib lets other threads run while it hashes); a
    digest nobody asked for is not waited for at the block's end."""
    files = {os.path.realpath(p): p for p in paths if os.path.isfile(p)}
    if not files:
        yield
        return
    pool = ThreadPoolExecutor(max_workers=min(_THREADS, len(files)),
                              thread_name_prefix="digest")
    ahead = dict(_ahead.get() or {})
    ahead.update({real: (_identity(path), pool.submit(_sha256, path))
                  for real, path in files.items()})
    token = _ahead.set(ahead)
    try:
        yield
    finally:
        _ahead.reset(token)
        pool.shutdown(wait=False, cancel_futures=True)


def _identity(path: str | Path) -> _Identity:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _sha256(path: str | Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1024 * 1024):
            sha.update(block)
    return sha.hexdigest()
