"""The embedded store as a backend: a folder of versions on this machine (`search.embedded`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from connectors.chunk_writer_port import ChunkTarget
from connectors.embedded.changes import ChunkTableMark
from connectors.embedded.chunk_table import ChunkTable
from connectors.embedded.layout import LEXICAL_DIR, MANIFEST_FILE, Manifest
from connectors.embedded.lexical import LexicalIndex
from connectors.embedded.lexical_bound import TonightsStatistics
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import VersionLease, current_version
from connectors.embedded.writer import EmbeddedStoreTarget
from connectors.search_port import PortFactory
from connectors.store_changes import StoreMark
from core.errors import ConfigError, RagEvidenceError
from core.folder_paths import folder_path_problem
from pipeline.config.settings import Settings
from stages.support import counters


def port_factory(settings: Settings) -> PortFactory:
    embedded = settings.search.embedded
    return partial(EmbeddedStore.open, embedded.path, embedded.index, embedded.hnsw,
                   counters.count)


@contextlib.contextmanager
def pinned_port_factory(settings: Settings) -> Iterator[tuple[PortFactory, Path | None]]:
    """Bound to the store's current version, held (see `VersionLease`) until the block ends."""
    embedded = settings.search.embedded
    lease = VersionLease.take(Path(embedded.path))
    try:
        yield partial(EmbeddedStore.open, str(lease.folder), embedded.index,
                      embedded.hnsw, counters.count), lease.folder
    finally:
        lease.release()


def chunk_target(settings: Settings) -> ChunkTarget:
    """The store `index` writes.

    Raises:
        ConfigError: `search.embedded.path` is a file, a dangling link, or under a file.
    """
    embedded = settings.search.embedded
    problem = folder_path_problem(embedded.path)
    if problem:
        raise ConfigError("search.embedded.path", embedded.path, f"{problem}; the store is a "
                          "folder")
    return EmbeddedStoreTarget(embedded.path, embedded.index, embedded.hnsw, embedded.stemmer)


def display_name(settings: Settings) -> str:
    return settings.search.embedded.path


identity = display_name


def described(settings: Settings, version: Path | None) -> dict[str, Any]:
    """The store as a run's manifest records it: its path, the version read and that
    version's manifest with its hash."""
    path = settings.search.embedded.path
    folder = version or current_version(Path(path))
    manifest = folder / MANIFEST_FILE
    described: dict[str, Any] = {"backend": "embedded", "path": path, "version": folder.name}
    if manifest.is_file():
        text = manifest.read_bytes()
        described |= {"manifest": json.loads(text),
                      "manifest_sha256": hashlib.sha256(text).hexdigest()}
    return described


def store_mark(settings: Settings, version: Path | None) -> StoreMark | str:
    """The version's chunk table, which the next run compares with its own."""
    if version is None:
        return "the run reads a port given in code, with no store version to tell changes by"
    return ChunkTableMark(version.name, ChunkTable.of_version(version))


def lexical_statistics(settings: Settings, version: Path | None,
                       texts: Callable[[], Iterable[str]]) -> TonightsStatistics | str:
    """The BM25 statistics the version's lexical index records, or why it has none."""
    found = None if version is None else _version_statistics(version)
    if found is None:
        return (f"rag.recall.mode={settings.rag.recall.mode}: the store's lexical index "
                "records no BM25 statistics (no chunk has a word, or it was built before "
                "they were recorded: the next `index` records them)")
    return found


@functools.lru_cache(maxsize=4)
def _version_statistics(version: Path) -> TonightsStatistics | None:
    """Read once per version (a version folder never changes: a run asks twice)."""
    try:
        manifest = Manifest.read(version)
    except RagEvidenceError:
        return None
    if not manifest.lexical:
        return None
    found = LexicalIndex(version / LEXICAL_DIR, manifest.count, manifest.stemmer).statistics()
    return None if found is None else TonightsStatistics(found, manifest.stemmer)
