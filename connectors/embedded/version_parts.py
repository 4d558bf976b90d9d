"""A store version's parts, opened and checked against its manifest, so that a version cut or
overwritten on disk is one line naming what disagrees, before anything reads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from connectors.embedded.chunk_table import ChunkColumns
from connectors.embedded.layout import (
    CHUNKS_FILE,
    OFFSETS_FILE,
    RECORDS_FILE,
    VECTORS_FILE,
    Manifest,
    mapped_array,
)
from connectors.embedded.records_file import RecordFile
from core.errors import StoreNotFoundError


def opened_parts(root: Path, manifest: Manifest
                 ) -> tuple[np.ndarray, RecordFile, ChunkColumns | None]:
    """The version's vectors, records and chunk table (None: a version from before it),
    memory-mapped.

    Raises:
        StoreNotFoundError: a part is missing or damaged, or its size disagrees with the
            manifest's.
    """
    vectors = mapped_array(root / VECTORS_FILE)
    records = RecordFile.open(root / RECORDS_FILE, root / OFFSETS_FILE)
    found = (vectors.shape[0] if vectors.ndim == 2 else -1, len(records),
             vectors.shape[1] if vectors.ndim == 2 else -1)
    if found != (manifest.count, manifest.count, manifest.dimension):
        raise disagree(root, f"manifest says {manifest.count} rows of {manifest.dimension} "
                             f"dims, {VECTORS_FILE} holds {found[0]} rows of {found[2]} dims, "
                             f"{RECORDS_FILE} {found[1]} records")
    problem = records.problem()
    if problem is not None:
        raise disagree(root, f"{RECORDS_FILE}: {problem}")
    identities = ChunkColumns.of_version(root)
    if identities is not None and len(identities) != manifest.count:
        raise disagree(root, f"{CHUNKS_FILE} holds {len(identities)} rows, the manifest says "
                             f"{manifest.count}")
    return vectors, records, identities


def disagree(root: Path, what: str) -> StoreNotFoundError:
    return StoreNotFoundError(f"search.embedded.path={str(root)!r}: the store's files disagree: "
                              f"{what}; rebuild it with `rag-evidence index --rebuild`")
