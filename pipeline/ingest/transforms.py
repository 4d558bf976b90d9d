"""The ingestion steps: parse chunk lines, embed document chunks, write and delete through a
ChunkTarget."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import TypeVar, cast

import apache_beam as beam
from apache_beam import pvalue

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import ChunkTarget, ChunkWriter
from core.chunk_identity import chunk_key
from core.errors import (
    DimensionMismatchError,
    DocumentError,
    InputLineError,
    RagEvidenceError,
    redact,
)
from pipeline.ingest.documents import (
    DocumentChunk,
    chunks_of,
    document_id,
    is_utf8,
    shown_name,
)
from pipeline.ingest.kept import Kept, kept_of_line
from pipeline.ingest.plan import Pending, Planned
from pipeline.ingest.sources import parse_chunk_line
from pipeline.io.records import NumberedLine
from stages.embed import embed_texts
from stages.support import counters
from stages.support.internal_errors import FailedElement, HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import GuardedDoFn
from stages.support.progress import Progress
from stages.support.shared_embedder import SharedEmbedder

NOT_INDEXED = "not_indexed"
"""The chunks that could not be indexed, as (where, why): the job's `--failures`."""
KEPT = "kept"
"""What a failed read could have held (see `pipeline.ingest.kept`)."""
READ = "read"
"""The documents read whole, with or without chunks."""
Failure = tuple[str, str]
"""(chunk id or file:line, reason)."""
T = TypeVar("T")
ToWrite = tuple[ChunkRecord, bool]
"""A chunk record to write, and whether it replaces one the store holds."""
_log = logging.getLogger(__name__)


def _failed(where: str, reason: str) -> pvalue.TaggedOutput:
    counters.count(counters.CHUNK_INDEX_FAILURES)
    _log.warning("chunk %s was not indexed: %s", where, reason)
    return pvalue.TaggedOutput(NOT_INDEXED, (where, reason))


def internal_failures(failed: FailedElement, chunks_path: str | None = None
                      ) -> Iterator[Failure]:
    """What a step raised unexpectedly, as the failure of each chunk (or document, or chunk
    line of `chunks_path`) in the element that raised: the job goes on without them."""
    element, (_, message, _) = failed
    counters.count(counters.INTERNAL_ERRORS)
    for where in _places(element, chunks_path):
        yield _failed(where, redact(f"unexpected error: {message}")).value


def _places(element: object, chunks_path: str | None) -> Iterator[str]:
    if isinstance(element, list):
        for item in element:
            yield from _places(item, chunks_path)
    elif isinstance(element, ChunkRecord | Pending):
        yield element.id
    elif isinstance(element, Planned):
        yield element.pending.id
    elif isinstance(element, tuple) and len(element) == 2 and isinstance(element[0],
                                                                         ChunkRecord):
        yield element[0].id  # a record to write
    elif isinstance(element, DocumentChunk):
        yield chunk_key(element.doc_id, element.chunk_index)
    elif isinstance(element, tuple) and len(element) == 2:  # a numbered chunk line
        yield f"{chunks_path}:{element[0]}"
    elif isinstance(element, bytes):  # a document path
        yield shown_name(os.fsdecode(element))
    else:
        yield str(element)


class ParseChunkLines(GuardedDoFn):
    """(line number, text) -> ChunkRecord, or a failure naming `file:line`: a line that is no
    chunk record, or whose vector is not of the store's `dimension`; what a failed line could
    have held is tagged `kept`."""

    def __init__(self, path: str, dimension: int) -> None:
        self._path = path
        self._dimension = dimension

    def answers(self, line: NumberedLine) -> Iterator[ChunkRecord | pvalue.TaggedOutput]:
        where = f"{self._path}:{line[0]}"
        try:
            record = parse_chunk_line(self._path, *line)
        except InputLineError as error:
            yield _failed(where, error.problem)
            yield pvalue.TaggedOutput(KEPT, kept_of_line(line[1]))
            return
        if len(record.vector) != self._dimension:
            mismatch = DimensionMismatchError(f"vector of {record.id!r}", len(record.vector),
                                              self._dimension)
            yield _failed(where, str(mismatch))
            yield pvalue.TaggedOutput(KEPT, Kept(chunk=record.id))
            return
        yield record


class ChunkDocuments(GuardedDoFn):
    """Document path -> its chunks and its id tagged `read`, or a failure naming the path (see
    `read_document`) and its id tagged `kept`."""

    def __init__(self, root: str, max_chars: int, overlap: int = 0,
                 follow_symlinks: bool = False) -> None:
        self._root, self._follow = root, follow_symlinks
        self._max_chars, self._overlap = max_chars, overlap

    def answers(self, named: bytes) -> Iterator[DocumentChunk | pvalue.TaggedOutput]:
        path = os.fsdecode(named)  # a file name is bytes: any of them reaches this step
        doc = document_id(self._root, path)
        if not is_utf8(doc):
            yield _failed(shown_name(path), "its file name is not UTF-8 text, which a "
                          "document id must be: rename the file")
            return
        try:
            chunks = chunks_of(self._root, path, self._max_chars, self._overlap, self._follow,
                               doc)
        except DocumentError as error:
            yield _failed(path, str(error))
            yield pvalue.TaggedOutput(KEPT, Kept(doc=doc))
            return
        yield from chunks
        yield pvalue.TaggedOutput(READ, doc)


class EmbedChunks(GuardedDoFn):
    """A batch of planned document chunks -> chunk records with evidence-key ids and identity
    metadata, embedded with the shared model (document prefix) in one call."""

    def __init__(self, embedder: SharedEmbedder) -> None:
        self._embedder = embedder
        self._progress: Progress | None = None

    def answers(self, batch: Sequence[Planned], to_embed: int = 0
                ) -> Iterator[ToWrite | pvalue.TaggedOutput]:
        chunks = [cast(DocumentChunk, planned.pending.chunk) for planned in batch]
        try:
            vectors = embed_texts(self._embedder.acquire(), [c.text for c in chunks],
                                  "document")
        except RagEvidenceError as error:
            vectors = [error] * len(batch)
        if self._progress is None:
            self._progress = Progress("texts embedded", total=to_embed or None)
        self._progress.add(len(batch))
        for planned, chunk, vector in zip(batch, chunks, vectors, strict=True):
            if isinstance(vector, RagEvidenceError):
                yield _failed(planned.pending.id, str(vector))
                continue
            yield (ChunkRecord(id=planned.pending.id, vector=vector, content=chunk.text,
                               metadata=chunk.metadata), planned.replaces)


    def teardown(self) -> None:
        if self._progress is not None:
            self._progress.close()

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_progress": None}


def record_to_write(planned: Planned) -> ToWrite:
    """A planned chunk record (it carries its vector: nothing to embed)."""
    return cast(ChunkRecord, planned.pending.chunk), planned.replaces


class _WriterDoFn(OwningDoFn[ChunkWriter], GuardedDoFn):
    """Owns a ChunkWriter from `setup` to `teardown`."""

    def __init__(self, target: ChunkTarget) -> None:
        super().__init__(target.open_writer)


class _Write(_WriterDoFn):
    def answers(self, batch: Sequence[ToWrite]) -> Iterator[pvalue.TaggedOutput]:
        report = self.owned().write([record for record, _ in batch])
        failed = {chunk_id for chunk_id, _ in report.failures}
        for record, replaces in batch:
            if record.id not in failed:
                counters.count(counters.CHUNKS_UPDATED if replaces else counters.CHUNKS_ADDED)
        for chunk_id, reason in report.failures:
            yield _failed(chunk_id, reason)


class _Delete(_WriterDoFn):
    def answers(self, batch: Sequence[str]) -> Iterator[pvalue.TaggedOutput]:
        report = self.owned().delete(batch)
        counters.count(counters.CHUNKS_DELETED, report.indexed)
        for chunk_id, reason in report.failures:
            yield _failed(chunk_id, f"was not deleted: {reason}")


class _ThroughWriters(HandlesErrors,
                      beam.PTransform[beam.PCollection[T], beam.PCollection[Failure]]):
    """Hands batches of `batch_size` items to the target's writers through `step`; outputs
    (id, reason) of each item that failed."""

    def __init__(self, step: _WriterDoFn, batch_size: int) -> None:
        super().__init__()
        self._step, self._batch_size = step, batch_size

    def expand(self, items: beam.PCollection[T]) -> beam.PCollection[Failure]:
        batches = items | "Batch" >> beam.BatchElements(min_batch_size=self._batch_size,
                                                         max_batch_size=self._batch_size)
        return self._guarded_step(batches, "Write", self._step, main="written",
                                  tags=(NOT_INDEXED,))[NOT_INDEXED]


class WriteChunks(_ThroughWriters[ToWrite]):
    """Writes chunk records, `batch_size` per call, counting the chunks added and updated.

    Usage::

        failures = records | WriteChunks(EmbeddedStoreTarget("data/store"))
    """

    def __init__(self, target: ChunkTarget, batch_size: int = 500) -> None:
        super().__init__(_Write(target), batch_size)


class DeleteChunks(_ThroughWriters[str]):
    """Deletes chunks by id, `batch_size` per call, counting them.

    Usage::

        failures = stale_ids | DeleteChunks(EmbeddedStoreTarget("data/store"))
    """

    def __init__(self, target: ChunkTarget, batch_size: int = 500) -> None:
        super().__init__(_Delete(target), batch_size)
