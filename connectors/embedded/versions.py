"""Versions of an embedded store: each commit is a new folder that is never changed again, and
the `CURRENT` file names the one that new readers open.

    store/CURRENT                  "000007-3fa2b1c9": the current version
    store/versions/000007-3fa2b1c9/  manifest.json, vectors.npy, records.jsonl, ...
    store/versions/000006-90ab12cd/  an older version, kept while a reader holds it

A reader holds its version by a shared `flock` on the version's manifest, from `open` until it
closes (or its process ends: the kernel drops the lock, so no lease is ever left stale). A
commit writes a new version, replaces `CURRENT` atomically (write beside, rename), then removes
each older version whose manifest it can lock exclusively, i.e. that no reader holds. A store
written before versions (its files at the top) reads as one version, and is converted by its
next commit. Model: LMDB's and Lucene's commit points.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import BinaryIO

from connectors.embedded.layout import MANIFEST_FILE, STORE_FILES, Manifest
from connectors.ownership import owned_suffix, remove_stale
from core.errors import StoreNotFoundError

CURRENT_FILE = "CURRENT"
VERSIONS_DIR = "versions"
_NAME = re.compile(r"(?P<sequence>\d{6,})-[0-9a-f]{8}")
_TRASH = ".trash-"
_ATTEMPTS = 8


def current_version(root: Path) -> Path:
    """The folder of the store's current version: the one `CURRENT` names; `root` itself for
    a store written before versions, or for a version folder named directly.

    Raises:
        StoreNotFoundError: `CURRENT` does not name a version.
    """
    try:
        name = (root / CURRENT_FILE).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return root
    if not _NAME.fullmatch(name):
        raise StoreNotFoundError(f"search.embedded.path={str(root)!r}: {CURRENT_FILE} names "
                                 f"{name[:80]!r}, which is no version of the store")
    return root / VERSIONS_DIR / name


class VersionLease:
    """A reader's hold on one version of a store; `release` it when done. While it is held, no
    commit removes the version, whatever it commits meanwhile.

    Usage::

        lease = VersionLease.take(Path("data/store"))
        lease.folder.name
    '000007-3fa2b1c9'
    """

    def __init__(self, folder: Path, handle: BinaryIO) -> None:
        self.folder = folder
        self._handle = handle

    @classmethod
    def take(cls, root: Path) -> VersionLease:
        """Holds the current version of the store at `root` (or the version folder `root`).

        Raises:
            StoreNotFoundError: no store there, or its current version kept being replaced
                and removed while this reader tried to open it.
        """
        for _ in range(_ATTEMPTS):
            folder = current_version(root)
            manifest = folder / MANIFEST_FILE
            try:
                handle = open(manifest, "rb")  # noqa: SIM115 (held until release)
            except (FileNotFoundError, NotADirectoryError):
                if folder == root:
                    Manifest.read(root)  # raises, naming the path
                continue  # removed between reading CURRENT and opening: read CURRENT again
            fcntl.flock(handle, fcntl.LOCK_SH)
            if _same_file(handle, manifest):
                return cls(folder, handle)
            handle.close()  # a commit removed it while this reader waited for the lock
        raise StoreNotFoundError(f"search.embedded.path={str(root)!r}: its current version "
                                 f"changed {_ATTEMPTS} times while opening it")

    def release(self) -> None:
        self._handle.close()


def _same_file(handle: BinaryIO, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def publish(root: Path, built: Path) -> Path:
    """Moves the complete version folder `built` into the store at `root` as its newest
    version and points `CURRENT` at it; a store in the layout before versions is converted
    (its top-level files removed once `CURRENT` names the new version). Returns the folder."""
    versions = root / VERSIONS_DIR
    versions.mkdir(parents=True, exist_ok=True)
    folder = versions / f"{_next_sequence(versions):06d}-{uuid.uuid4().hex[:8]}"
    built.rename(folder)
    pointer = root / f".{CURRENT_FILE}.{owned_suffix()}"
    with open(pointer, "w", encoding="utf-8") as handle:
        handle.write(folder.name + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(pointer, root / CURRENT_FILE)
    _remove_top_level_store(root)
    return folder


def _next_sequence(versions: Path) -> int:
    found = [int(m["sequence"]) for p in versions.iterdir() if (m := _NAME.fullmatch(p.name))]
    return max(found, default=0) + 1


def _remove_top_level_store(root: Path) -> None:
    """Removes the files of the layout before versions (manifest first: the top is then no
    store), now that `CURRENT` names a version."""
    for name in (MANIFEST_FILE, *STORE_FILES):
        path = root / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def collect(root: Path) -> list[str]:
    """Removes the versions of the store at `root` other than the current one that no reader
    holds; returns their names. A version a reader holds stays, for a later commit to remove."""
    versions = root / VERSIONS_DIR
    if not versions.is_dir():
        return []
    remove_stale(versions, _TRASH)
    current = current_version(root).name
    removed = []
    for folder in sorted(versions.iterdir()):
        if folder.name == current or not _NAME.fullmatch(folder.name):
            continue
        trash = versions / f"{_TRASH}{owned_suffix()}"
        try:
            with open(folder / MANIFEST_FILE, "rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                folder.rename(trash)  # a reader that waits for its lock then finds it gone
        except BlockingIOError:
            continue  # a reader holds it
        except FileNotFoundError:
            folder.rename(trash)  # no manifest: never a complete version
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(folder.name)
    return removed
