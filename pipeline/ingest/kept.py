"""What a failed read could have held, and so must not be deleted: a read that fails never
deletes. A chunk line that fails keeps the chunk it names (when its id can be read), a document
that fails keeps its chunks, and an input whose rest could not be read (a truncated file, a line
without a readable id, a folder that cannot be listed) keeps everything."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam

from connectors.input_limits import loads
from pipeline.io.line_blocks import decode_line
from pipeline.io.records import Unreadable


class Kept(NamedTuple):
    """Stored chunks a failed read protects: one chunk, one document's chunks, or (both None)
    every chunk of the store. A `duplicate` is an id that the input holds twice: the job then
    writes and deletes nothing."""

    chunk: str | None = None
    doc: str | None = None
    duplicate: bool = False


EVERYTHING = Kept()


class KeptSet(NamedTuple):
    """Every `Kept` of a job, folded into sets (see `KeptFold`), and how many ids the input
    holds twice."""

    everything: bool = False
    chunks: frozenset[str] = frozenset()
    docs: frozenset[str] = frozenset()
    duplicated: int = 0

    def keeps(self, doc: str, chunk_id: str) -> bool:
        """Whether the stored chunk `chunk_id` of document `doc` must not be deleted."""
        return self.everything or chunk_id in self.chunks or doc in self.docs


def kept_of_line(line: bytes | Unreadable) -> Kept:
    """What a chunk line that failed may name: its chunk when the line is a JSON object with a
    string id, else everything (the line, or the rest of the file, could have held any id)."""
    if not isinstance(line, bytes):
        return EVERYTHING
    try:
        data = loads(decode_line(line))
    except ValueError:
        return EVERYTHING
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return EVERYTHING
    return Kept(chunk=data["id"])


NOTHING_KEPT = KeptSet()


class KeptFold(beam.CombineFn):
    """Kept markers -> one KeptSet (small: it grows with the failures, not the input)."""

    def create_accumulator(self) -> KeptSet:
        return KeptSet()

    def add_input(self, folded: KeptSet, kept: Kept) -> KeptSet:
        if kept.duplicate:
            return folded._replace(duplicated=folded.duplicated + 1)
        if kept.chunk is None and kept.doc is None:
            return folded._replace(everything=True)
        if kept.chunk is not None:
            folded = folded._replace(chunks=folded.chunks | {kept.chunk})
        if kept.doc is not None:
            folded = folded._replace(docs=folded.docs | {kept.doc})
        return folded

    def merge_accumulators(self, folds: Iterable[KeptSet]) -> KeptSet:
        merged = KeptSet()
        for fold in folds:
            merged = KeptSet(merged.everything or fold.everything, merged.chunks | fold.chunks,
                             merged.docs | fold.docs, merged.duplicated + fold.duplicated)
        return merged

    def extract_output(self, folded: KeptSet) -> KeptSet:
        return folded
