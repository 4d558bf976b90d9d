"""Builds a new version of an embedded store: the base version's rows that were neither
rewritten nor deleted (their vectors copied, never recomputed), and the staged parts' rows, in
natural id order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from connectors.embedded.chunk_table import ChunkTable
from connectors.embedded.layout import (
    CHUNKS_FILE,
    HNSW_FILE,
    LEXICAL_DIR,
    OFFSETS_FILE,
    RECORDS_FILE,
    VECTORS_FILE,
    Manifest,
    mapped_array,
)
from connectors.embedded.lexical import build_lexical_index
from connectors.embedded.parts import StagedParts
from connectors.embedded.records_file import RecordFile, write_records
from connectors.embedded.vector_search import HnswGraph, HnswParams, recall_against_exact
from core.errors import InvalidInputError

_DIGITS = re.compile(r"(\d+)")
_COPY_ROWS = 65_536


@dataclass(frozen=True)
class BaseVersion:
    """The version a commit builds on, mapped."""

    vectors: np.ndarray
    records: RecordFile
    table: ChunkTable

    @classmethod
    def open(cls, folder: Path) -> BaseVersion:
        return cls(mapped_array(folder / VECTORS_FILE),
                   RecordFile.open(folder / RECORDS_FILE, folder / OFFSETS_FILE),
                   ChunkTable.of_version(folder))


@dataclass(frozen=True)
class _Rows:
    """The new version's rows: for each, whether it comes from the parts (else the base), and
    its row there; in natural id order."""

    from_parts: np.ndarray
    row: np.ndarray
    table: ChunkTable


def build_version(built: Path, base: BaseVersion | None, parts: StagedParts,
                  manifest: Manifest, hnsw: HnswParams, store: str = "") -> str | None:
    """Writes every file of the new version of `store` into `built`; returns a line on the
    HNSW index's recall, when one is built.

    Raises:
        InvalidInputError: two written chunks share an id, or the version would hold no chunk.
    """
    rows = _merge(base, parts)
    if len(rows.row) == 0:
        raise InvalidInputError("index", store,
                                "no chunk to index; the store there is left as it was")
    count = len(rows.row)
    vectors = np.lib.format.open_memmap(built / VECTORS_FILE, mode="w+", dtype=np.float32,
                                        shape=(count, manifest.dimension))
    _copy_vectors(vectors, rows, base, parts)
    lines = (parts.line(int(r)) if p else base.records.line(int(r))  # type: ignore[union-attr]
             for p, r in zip(rows.from_parts, rows.row, strict=True))
    offsets = write_records(built / RECORDS_FILE, lines)
    np.save(built / OFFSETS_FILE, offsets)
    rows.table.write(built / CHUNKS_FILE)
    records = RecordFile(built / RECORDS_FILE, offsets)
    contents: list[str] = []
    keys: set[str] = set()
    for row in range(count):
        record = records.record(row)
        contents.append(record["content"])
        keys.update(record.get("metadata") or ())
    lexical = build_lexical_index(contents, built / LEXICAL_DIR, manifest.stemmer)
    note = None
    if manifest.index == "hnsw":
        graph = HnswGraph.build(vectors, hnsw, built / HNSW_FILE)
        recall, sample = recall_against_exact(graph, vectors)
        note = (f"hnsw index (m={hnsw.m}, ef-construction={hnsw.ef_construction}, "
                f"ef-search={_ef(hnsw)}): recall@20 {recall:.3f} against exact search on "
                f"{sample} perturbed stored rows, which lie next to the data: your queries may "
                "do worse (`run` audits recall on its own queries, see "
                "search.embedded.hnsw.audit-rate)")
    Manifest(manifest.dimension, count, manifest.embedder, lexical, manifest.index,
             manifest.stemmer, tuple(sorted(keys))).write(built)
    return note


def _merge(base: BaseVersion | None, parts: StagedParts) -> _Rows:
    """The base's rows that no part rewrites and no list deletes, then the parts' rows."""
    written = parts.table
    _check_unique(written.ids)
    replaced = set(written.ids) | parts.deleted
    kept = np.asarray([] if base is None else [
        row for row, chunk_id in enumerate(base.table.ids) if chunk_id not in replaced],
        dtype=np.int64)
    from_parts = np.concatenate([np.zeros(len(kept), bool), np.ones(len(written), bool)])
    row = np.concatenate([kept, np.arange(len(written), dtype=np.int64)])
    table = ChunkTable.concatenated([base.table.take(kept.tolist()) if base else ChunkTable.empty(),
                                     written])
    order = sorted(range(len(table)), key=lambda i: _natural(table.ids[i]))
    return _Rows(from_parts[order], row[order], table.take(order))


def _copy_vectors(vectors: np.memmap, rows: _Rows, base: BaseVersion | None,
                  parts: StagedParts) -> None:
    """Fills the mapped `vectors` block by block: base rows copied, parts' rows placed."""
    if base is not None:
        at = np.flatnonzero(~rows.from_parts)
        for start in range(0, len(at), _COPY_ROWS):
            block = at[start:start + _COPY_ROWS]
            vectors[block] = base.vectors[rows.row[block]]
    at = np.flatnonzero(rows.from_parts)
    position = np.empty(len(at), dtype=np.int64)
    position[rows.row[at]] = at
    start = 0
    for block in parts.vectors:
        vectors[position[start:start + len(block)]] = block
        start += len(block)
    vectors.flush()


def _check_unique(ids: list[str]) -> None:
    seen: set[str] = set()
    for chunk_id in ids:
        if chunk_id in seen:
            raise InvalidInputError("id", chunk_id, "appears twice; chunk ids must be unique")
        seen.add(chunk_id)


def _natural(chunk_id: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in _DIGITS.split(chunk_id)]


def _ef(hnsw: HnswParams) -> str:
    """The ef the build's recall was measured at, as the settings name it."""
    return f"auto, measured at {hnsw.first_ef}" if hnsw.ef_search == "auto" else str(
        hnsw.ef_search)
