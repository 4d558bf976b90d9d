"""What an `index` does with each chunk, by comparing its input with what the store holds: write
the new and changed ones, leave the unchanged ones, delete the stale ones (by the cleanup mode).

Two keyed joins, the Beam way, so that neither side is ever held whole in one place: by chunk
id (input against store: new, changed, unchanged, or stored only), then, for incremental
cleanup, the stored-only chunks by document against the documents the input read whole. A stale
chunk that a failed read could have held is never deleted (see `kept`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal, NamedTuple

import apache_beam as beam
from apache_beam import pvalue

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import StoredChunk
from connectors.embedder_port import EmbedderInfo
from core.chunk_fingerprint import chunk_fingerprint
from core.chunk_identity import chunk_key, document_of
from pipeline.ingest.documents import DocumentChunk
from pipeline.ingest.kept import NOTHING_KEPT, FoldedOnce, Kept, KeptSet
from stages.support import counters

Cleanup = Literal["none", "incremental", "full"]
CLEANUP_MODES: tuple[Cleanup, ...] = ("none", "incremental", "full")
"""LangChain's indexing modes: `none` only adds and updates; `incremental` also deletes the
stale chunks of every document in the input; `full` also deletes the documents absent from it."""

_STORED_ONLY = "stored_only"


class Pending(NamedTuple):
    """An input chunk before it is embedded: its id, document, fingerprint, and what it is
    made from (a document's chunk, or a chunk record carrying its vector)."""

    id: str
    doc: str
    fingerprint: str
    chunk: DocumentChunk | ChunkRecord


class Planned(NamedTuple):
    """An input chunk to write, and whether it replaces one the store holds."""

    pending: Pending
    replaces: bool


def pending_document_chunk(chunk: DocumentChunk, embedder: EmbedderInfo) -> Pending:
    """A document's chunk, fingerprinted as it will be embedded (see `chunk_fingerprint`)."""
    return Pending(chunk_key(chunk.doc_id, chunk.chunk_index), chunk.doc_id,
                   chunk_fingerprint(chunk.text, chunk.metadata, embedder), chunk)


def pending_record(record: ChunkRecord) -> Pending:
    """A chunk record, fingerprinted with its own vector."""
    return Pending(record.id, document_of(record.id, record.metadata),
                   chunk_fingerprint(record.content, record.metadata, None, record.vector),
                   record)


def classify(chunk_id: str, pending: Iterable[Pending], stored: Iterable[StoredChunk],
             rebuild: bool = False, kept: KeptSet = NOTHING_KEPT
             ) -> Iterator[Planned | pvalue.TaggedOutput]:
    """One chunk id's input against the store: write it when new or changed (or with
    `rebuild`), count it when unchanged; a chunk the store holds and the input does not is
    tagged `stored_only` as (its document, its id). When ids appear more than once in the
    input (`kept.duplicated`), nothing is written or deleted, on any backend: each such id is
    counted and the job refuses to commit."""
    inputs, held = list(pending), list(stored)
    if kept.duplicated:
        if len(inputs) > 1:
            counters.count(counters.DUPLICATE_IDS)
        return
    if not inputs:
        yield pvalue.TaggedOutput(_STORED_ONLY, (held[0].doc, chunk_id))
        return
    if (len(inputs) == 1 and held and held[0].fingerprint == inputs[0].fingerprint
            and not rebuild):
        counters.count(counters.CHUNKS_UNCHANGED)
        return
    yield Planned(inputs[0], bool(held))


def _duplicated(joined: tuple[str, dict[str, list[Pending]]]) -> Iterator[Kept]:
    if len(joined[1]["input"]) > 1:
        yield Kept(chunk=joined[0], duplicate=True)


def stale_of_present_documents(doc: str, joined: dict[str, list[object]]
                               ) -> Iterator[tuple[str, str]]:
    """The stored-only chunks (document, id) of document `doc`, when the input read that
    document whole (a document emptied of chunks is one too)."""
    if joined["input"]:
        yield from ((doc, str(chunk_id)) for chunk_id in joined["stored_only"])


def unless_kept(doc: str, chunk_id: str, kept: KeptSet = NOTHING_KEPT) -> Iterator[str]:
    """The id of a stale chunk to delete, unless a failed read could have held it (counted
    as kept after a failure)."""
    if kept.keeps(doc, chunk_id):
        counters.count(counters.KEPT_AFTER_FAILURE)
    else:
        yield chunk_id


_NONE: list[Kept] = []


class _Classify(beam.DoFn):
    """`classify`, seeing the kept markers as one KeptSet."""

    def __init__(self, rebuild: bool) -> None:
        self._rebuild, self._kept = rebuild, FoldedOnce()

    def process(self, joined: tuple[str, dict[str, list[Any]]], markers: list[Kept] = _NONE
                ) -> Iterator[Planned | pvalue.TaggedOutput]:
        chunk_id, sides = joined
        yield from classify(chunk_id, sides["input"], sides["stored"], self._rebuild,
                            self._kept(markers))


class _UnlessKept(beam.DoFn):
    """`unless_kept`, seeing the kept markers as one KeptSet."""

    def __init__(self) -> None:
        self._kept = FoldedOnce()

    def process(self, stale: tuple[str, str], markers: list[Kept]) -> Iterator[str]:
        yield from unless_kept(*stale, self._kept(markers))


class PlanOutputs(NamedTuple):
    writes: beam.PCollection[Planned]
    deletes: beam.PCollection[str]


class PlanChunks(beam.PTransform[beam.PCollection[Pending], PlanOutputs]):
    """Pending input chunks + the store's catalog -> the chunks to write and the ids to delete
    (see `classify` and `CLEANUP_MODES`; `rebuild` rewrites every input chunk and cleans up as
    `full`). `kept` is what failed reads could have held: never deleted. `documents` are the
    documents read whole (default: those of the pending chunks); given, the input's ids are
    unique by construction (a document's path and a chunk's place in it), so no id is looked
    for twice and the plan needs no pass over every id before its first write.

    Usage::

        plan = pending | PlanChunks(catalog, "incremental", kept)
    """

    def __init__(self, catalog: beam.PCollection[StoredChunk], cleanup: Cleanup,
                 kept: beam.PCollection[Kept], rebuild: bool = False,
                 documents: beam.PCollection[str] | None = None) -> None:
        super().__init__()
        self._catalog, self._cleanup, self._rebuild = catalog, cleanup, rebuild
        self._kept, self._documents = kept, documents

    def expand(self, pending: beam.PCollection[Pending]) -> PlanOutputs:
        by_id = ({"input": pending | "InputById" >> beam.Map(lambda p: (p.id, p)),
                  "stored": self._catalog | "StoredById" >> beam.Map(lambda s: (s.id, s))}
                 | "JoinById" >> beam.CoGroupByKey())
        if self._documents is None:
            kept = beam.pvalue.AsList(
                (self._kept, by_id | "DuplicatedIds" >> beam.FlatMap(_duplicated))
                | "AllKept" >> beam.Flatten())
            classified = beam.ParDo(_Classify(self._rebuild), kept)
        else:
            kept = beam.pvalue.AsList(self._kept)
            classified = beam.ParDo(_Classify(self._rebuild))
        joined = by_id | "Classify" >> classified.with_outputs(_STORED_ONLY, main="writes")
        stored_only = joined[_STORED_ONLY]
        cleanup = "full" if self._rebuild else self._cleanup
        if cleanup == "none":
            return PlanOutputs(joined.writes, stored_only | "KeepStale" >> beam.FlatMap(
                lambda _: ()).with_output_types(str))
        stale = stored_only
        if cleanup == "incremental":
            documents = self._documents or pending | "InputDocs" >> beam.Map(lambda p: p.doc)
            stale = ({"input": documents | "DocsRead" >> beam.Map(lambda doc: (doc, None)),
                      "stored_only": stored_only}
                     | "JoinByDocument" >> beam.CoGroupByKey()
                     | "StaleOfInputDocs" >> beam.FlatMapTuple(stale_of_present_documents))
        deletes = stale | "UnlessKept" >> beam.ParDo(_UnlessKept(), kept).with_output_types(str)
        return PlanOutputs(joined.writes, deletes)
