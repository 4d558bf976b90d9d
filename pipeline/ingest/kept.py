"""What a failed read could have held, and so must not be deleted: a read that fails never
deletes. A chunk line that fails keeps the chunk it names (when its id can be read), a document
that fails keeps its chunks, and an input whose rest could not be read (a truncated file, a line
without a readable id, a folder that cannot be listed) keeps everything."""

from __future__ import annotations

from typing import NamedTuple

from core.input_limits import loads
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
    """Every `Kept` of a job, folded into sets (see `fold`), and how many ids the input
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


class FoldedOnce:
    """A step's view of the kept markers (a side input list, small: it grows with the
    failures, not the input), folded into a KeptSet once per list it is handed, not once per
    element."""

    def __init__(self) -> None:
        self._markers: list[Kept] | None = None
        self._folded = NOTHING_KEPT

    def __call__(self, markers: list[Kept]) -> KeptSet:
        if markers is not self._markers:
            self._markers, self._folded = markers, fold(markers)
        return self._folded

    def __getstate__(self) -> dict[str, object]:
        return {"_markers": None, "_folded": NOTHING_KEPT}


def fold(markers: list[Kept]) -> KeptSet:
    """Kept markers -> one KeptSet."""
    chunks: set[str] = set()
    docs: set[str] = set()
    everything, duplicated = False, 0
    for kept in markers:
        if kept.duplicate:
            duplicated += 1
        elif kept.chunk is None and kept.doc is None:
            everything = True
        else:
            chunks.update(() if kept.chunk is None else (kept.chunk,))
            docs.update(() if kept.doc is None else (kept.doc,))
    return KeptSet(everything, frozenset(chunks), frozenset(docs), duplicated)
