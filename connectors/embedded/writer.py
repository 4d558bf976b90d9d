"""Writes an embedded store from many workers: parts in a staging folder, then one commit that
builds a new version beside the current one and points the store at it (see `versions`)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import StoredChunk
from connectors.embedded.build import BaseVersion, build_version
from connectors.embedded.chunk_table import ChunkTable
from connectors.embedded.layout import MANIFEST_FILE, IndexKind, Manifest
from connectors.embedded.parts import EmbeddedPartWriter, StagedParts
from connectors.embedded.vector_search import DEFAULT_HNSW, HnswParams
from connectors.embedded.version_parts import opened_parts
from connectors.embedded.versions import collect, current_version, publish
from connectors.embedder_port import EmbedderInfo
from connectors.ownership import lock_of, owned_suffix, release, remove_stale, take
from core.errors import (
    DimensionMismatchError,
    EmbedderChangedError,
    InvalidInputError,
    StoreNotFoundError,
)
from core.stemmer import DEFAULT_STEMMER, StemmerName

_STAGING, _BUILDING = ".staging-", ".new-"
"""Work folders beside the store, named after their owner (see `connectors.ownership`)."""


class EmbeddedStoreTarget:
    """The embedded store at `path` as an ingestion target (see `ChunkTarget`).

    A commit builds a new version from the current one: its chunks that were neither rewritten
    nor deleted keep their vectors (copied), and the written ones are added; rows are in
    natural id order (`doc#chunk-2` before `doc#chunk-10`), whatever order the workers wrote
    them in. A job that wrote and deleted nothing commits nothing, unless the current version
    is of another index kind than `index` or its lexical index of another `stemmer` (it is
    then built again as configured). `index: hnsw` also builds an HNSW graph (`hnsw`
    parameters) and measures its recall against exact search.
    """

    def __init__(self, path: str | Path, index: IndexKind = "flat",
                 hnsw: HnswParams = DEFAULT_HNSW, stemmer: StemmerName = DEFAULT_STEMMER) -> None:
        self._path = Path(path)
        self._staging = self._path.parent / f".{self._path.name}{_STAGING}{owned_suffix()}"
        self._dimension = 0
        self._embedder: EmbedderInfo | None = None
        self._index, self._hnsw, self._stemmer = index, hnsw, stemmer
        self._base: Path | None = None
        self._base_manifest: Manifest | None = None
        """The current version's manifest, read by `prepare` (None for a new store or a
        rebuild)."""
        self._rebuild = False

    def prepare(self, dimension: int, embedder: EmbedderInfo | None,
                rebuild: bool = False) -> bool:
        """Takes the store's lock (a second `index` of it is refused, naming the holder),
        removes what killed jobs left beside it and the versions no reader holds, checks that
        the store's chunks are of `embedder` (unless `rebuild`), and makes the staging folder.
        """
        self._path.parent.mkdir(parents=True, exist_ok=True)
        take(self._lock, f"the embedded store {str(self._path)!r}")
        try:
            for work in (_STAGING, _BUILDING):
                remove_stale(self._path.parent, f".{self._path.name}{work}")
            collect(self._path)
            base = current_version(self._path)
            self._base = base if (base / MANIFEST_FILE).is_file() else None
            self._base_manifest = None
            if self._base is not None and not rebuild:
                manifest = self._base_manifest = Manifest.read(self._base)
                self._check_fits(manifest, dimension, embedder)
                opened_parts(self._base, manifest)  # a damaged version stops here, in one line
            self._staging.mkdir(parents=True)
        except BaseException:
            release(self._lock)
            raise
        self._dimension, self._embedder, self._rebuild = dimension, embedder, rebuild
        return self._base is None

    def catalog(self) -> Iterator[StoredChunk]:
        """The chunks of the version `prepare` found (none for a new store; none for a
        rebuild of a damaged one, whose new version holds only the input)."""
        if self._base is None:
            return
        try:
            table = ChunkTable.of_version(self._base)
        except StoreNotFoundError:
            if self._rebuild:
                return
            raise
        yield from table.stored()

    def open_writer(self) -> EmbeddedPartWriter:
        return EmbeddedPartWriter(self._staging, self._dimension, self._embedder)

    def commit(self) -> str | None:
        """Builds the new version from the current one and the parts, and makes it current;
        the current one is kept on any error. Returns a line to report, if any.

        Raises:
            InvalidInputError: two chunks share an id, or the store would hold no chunk.
        """
        try:
            parts = StagedParts(self._staging)
            if self._base is not None and not (
                    parts.table.ids or parts.deleted) and self._built_as_configured():
                return f"nothing changed: the store keeps version {self._base.name}"
            built = self._path.parent / f".{self._path.name}{_BUILDING}{owned_suffix()}"
            built.mkdir()
            try:
                base = None if self._rebuild or self._base is None else BaseVersion.open(
                    self._base)
                note = build_version(built, base, parts, Manifest(
                    self._dimension, 0, self._embedder, index=self._index,
                    stemmer=self._stemmer), self._hnsw, str(self._path))
                note = "; ".join(filter(None, [self._restemmed(), note])) or None
                publish(self._path, built)
            except BaseException:
                shutil.rmtree(built, ignore_errors=True)
                raise
            collect(self._path)
        finally:
            self.abort()
        return note

    def abort(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)
        release(self._lock)

    def _restemmed(self) -> str | None:
        """What to say when the lexical index is built in another language than the store's."""
        if self._base_manifest is None:
            return None
        was = self._base_manifest.stemmer
        return (f"the lexical index was built again with stemmer {self._stemmer} (the store's "
                f"was {was})" if was != self._stemmer else None)

    def _built_as_configured(self) -> bool:
        manifest = self._base_manifest
        return manifest is not None and (manifest.index, manifest.stemmer) == (self._index,
                                                                                self._stemmer)

    @property
    def _lock(self) -> Path:
        """Beside the real store (links resolved): one lock whatever path names it."""
        return lock_of(self._path)

    def _check_fits(self, manifest: Manifest, dimension: int,
                    embedder: EmbedderInfo | None) -> None:
        where = f"the embedded store {str(self._path)!r}"
        if not (manifest.embedder.same_as(embedder) if manifest.embedder else embedder is None):
            raise EmbedderChangedError(where, EmbedderChangedError.described(manifest.embedder),
                                       EmbedderChangedError.described(embedder))
        if manifest.dimension != dimension:
            raise DimensionMismatchError(f"vectors for {where} (index with --rebuild to replace "
                                         "them all)", dimension, manifest.dimension)


def write_store(path: str | Path, records: Iterable[ChunkRecord],
                embedder: EmbedderInfo | None = None, index: IndexKind = "flat",
                hnsw: HnswParams = DEFAULT_HNSW, batch_size: int = 4096) -> int:
    """Writes `records` as the new version of the store at `path` (all of it: nothing of an
    earlier version is kept) and returns the count. Records are written in batches as they
    come, never all held at once.

    Raises:
        InvalidInputError: two records share an id, a vector is unusable, or there are none
            (the store at `path` is then left as it was).
        DimensionMismatchError: their vector lengths differ.
    """
    stream = iter(records)
    first = next(stream, None)
    dimension = len(first.vector) if first is not None else 0
    target = EmbeddedStoreTarget(path, index, hnsw)
    target.prepare(dimension, embedder, rebuild=True)
    indexed = 0
    try:
        writer = target.open_writer()
        batch = [first] if first is not None else []
        for record in stream:
            batch.append(record)
            if len(batch) == batch_size:
                indexed += _write_batch(writer, batch, dimension)
                batch = []
        indexed += _write_batch(writer, batch, dimension)
    except BaseException:
        target.abort()
        raise
    target.commit()
    return indexed


def _write_batch(writer: EmbeddedPartWriter, batch: list[ChunkRecord], dimension: int) -> int:
    for record in batch:
        if len(record.vector) != dimension:
            raise DimensionMismatchError(f"vector of {record.id!r}", len(record.vector), dimension)
    report = writer.write(batch)
    if report.failures:
        raise InvalidInputError(f"vector of {report.failures[0][0]!r}", "...",
                                report.failures[0][1])
    return report.indexed
