"""The one ingestion job, for every backend, on Beam: read -> (chunk) -> fingerprint -> plan
against the store's catalog -> (embed) -> write the new and changed chunks, delete the stale."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import apache_beam as beam
from apache_beam.transforms.error_handling import CollectingErrorHandler, ErrorHandler

from connectors.chunk_writer_port import ChunkTarget
from connectors.embedder_port import EmbedderFactory, EmbedderInfo
from core.errors import InvalidInputError, RebuildIncompleteError
from pipeline.config.backends import (
    chunk_target_for,
    embedder_factory_for,
    embedder_info,
    embedder_tag,
)
from pipeline.config.beam_options import job_pipeline, pipeline_options
from pipeline.config.heap import run_to_completion
from pipeline.config.settings import Settings
from pipeline.ingest.documents import document_paths
from pipeline.ingest.index_summary import IndexSummary
from pipeline.ingest.kept import EVERYTHING, Kept
from pipeline.ingest.plan import (
    Cleanup,
    Pending,
    PlanChunks,
    Planned,
    pending_document_chunk,
    pending_record,
)
from pipeline.ingest.sources import duplicated_id, first_dimension, lines_with_id
from pipeline.ingest.transforms import (
    KEPT,
    NOT_INDEXED,
    READ,
    ChunkDocuments,
    DeleteChunks,
    EmbedChunks,
    Failure,
    ParseChunkLines,
    ToWrite,
    WriteChunks,
    internal_failures,
    record_to_write,
)
from pipeline.io.line_blocks import ReadNumberedLines
from pipeline.io.local_paths import check_job_files
from pipeline.io.single_file_sink import TextLines, WriteToSingleFile
from stages.support import counters
from stages.support.internal_errors import NamedErrorHandler, guarded_step
from stages.support.shared_embedder import SharedEmbedder


class Inputs(NamedTuple):
    """The input chunks, fingerprinted; the failures of the steps that made them; what those
    failures could have held (never deleted); the documents read whole (None: those of the
    chunks)."""

    pending: beam.PCollection[Pending]
    failed: list[beam.PCollection[Failure]]
    kept: beam.PCollection[Kept]
    documents: beam.PCollection[str] | None = None


def run_index(settings: Settings, *, chunks: str | None = None, docs: str | None = None,
              failures_path: str | None = None, beam_args: Sequence[str] = (),
              target: ChunkTarget | None = None,
              embedder_factory: EmbedderFactory | None = None,
              follow_symlinks: bool = False, cleanup: Cleanup = "incremental",
              rebuild: bool = False, summary_path: str | None = None,
              config_path: str | None = None) -> IndexSummary:
    """Brings the configured store to chunk records (`chunks`) or a folder of documents
    (`docs`), on whatever runner `beam_args` name, then commits; a failed job commits nothing.

    Only new and changed chunks are embedded and written; `cleanup` says which stale chunks
    are deleted (see `plan.CLEANUP_MODES`); `rebuild` re-embeds and rewrites everything (the
    only way to change the store's embedder). Chunks that fail (a bad line, a text that cannot
    be embedded, a write the store refused) are counted, logged, written to `failures_path`
    when given, and the rest is committed. `summary_path` (written by the caller) and
    `config_path` are checked with the job's own files before anything starts.

    Raises:
        EmbedderChangedError: the store holds chunks of another embedder, without `rebuild`.
        RebuildIncompleteError: with `rebuild`, some chunks failed (nothing is committed).
        InvalidInputError: two input lines share an id (nothing is written).
    """
    started = time.monotonic()
    options = pipeline_options(beam_args)
    check_job_files([("--chunks", chunks), ("--config", config_path)],
                    [("--failures", failures_path), ("--summary", summary_path)],
                    input_folders={"--docs": docs})
    target = target or chunk_target_for(settings)
    paths = [str(p) for p in document_paths(docs)] if docs is not None else []
    embedder = None
    if docs is not None:  # the model's files say what it is: no need to load it here
        embedder = embedder_factory().info if embedder_factory else embedder_info(settings.embedder)
    embedder_factory = embedder_factory or embedder_factory_for(settings)
    dimension = embedder.dimension if embedder is not None else first_dimension(chunks or "")
    created = target.prepare(dimension, embedder, rebuild)
    try:
        pipeline, errors = job_pipeline(options), CollectingErrorHandler()
        read_errors = NamedErrorHandler("Read")
        if docs is not None:
            assert embedder is not None
            inputs = _document_chunks(pipeline, settings, str(Path(docs)), paths, embedder,
                                      read_errors, follow_symlinks)
        else:
            inputs = _chunk_file_records(pipeline, str(chunks), dimension, read_errors)
        read_errors.close()
        unexpected = read_errors.output()
        failed = [*inputs.failed, unexpected | "ReadFailures" >> beam.FlatMap(
            internal_failures, chunks)]
        kept = ((inputs.kept, unexpected | "KeepEverything" >> beam.Map(lambda _: EVERYTHING))
                | "ReadKept" >> beam.Flatten())
        catalog = (pipeline
                   | "Store" >> beam.Create([target])
                   | "Catalog" >> beam.FlatMap(lambda store: store.catalog())
                   | "SpreadCatalog" >> beam.Reshuffle())
        plan = inputs.pending | "Plan" >> PlanChunks(catalog, cleanup, kept, rebuild,
                                                     inputs.documents)
        if docs is not None:
            to_write, embed_failed = _embedded(plan.writes, settings, embedder_factory, errors)
            failed.append(embed_failed)
        else:
            to_write = plan.writes | "Records" >> beam.Map(record_to_write)
        batch = settings.search.write_batch_size
        written = to_write | "Write" >> WriteChunks(target, batch).with_error_handler(errors)
        deleted = plan.deletes | "Delete" >> DeleteChunks(target, batch).with_error_handler(errors)
        errors.close()
        internal = errors.output() | "InternalFailures" >> beam.FlatMap(internal_failures, chunks)
        if failures_path:
            _write_failures((*failed, written, deleted, internal), failures_path)
        result = run_to_completion(pipeline, settings.job.max_wall_time)
        totals = counters.totals(result)
        if totals.get(counters.DUPLICATE_IDS):  # the plan wrote and deleted nothing
            raise InvalidInputError("id", duplicated_id(chunks), "appears twice")
        if rebuild and totals.get(counters.CHUNK_INDEX_FAILURES):
            raise RebuildIncompleteError(totals[counters.CHUNK_INDEX_FAILURES])
        note = target.commit()
    except InvalidInputError as error:
        target.abort()
        if chunks is not None and error.field == "id":
            raise InvalidInputError("id", error.value, "appears twice, at " + ", ".join(
                lines_with_id(chunks, str(error.value))) + "; nothing was written") from None
        raise
    except BaseException:
        target.abort()
        raise
    return IndexSummary.of(totals, time.monotonic() - started, created, embedder, note)


def _document_chunks(pipeline: beam.Pipeline, settings: Settings, root: str,
                     paths: list[str], embedder: EmbedderInfo, errors: ErrorHandler,
                     follow_symlinks: bool) -> Inputs:
    """Documents -> chunks, fingerprinted as `embedder` will embed them."""
    chunking = ChunkDocuments(root, settings.chunking.max_chars, settings.chunking.overlap,
                              follow_symlinks)
    named = [os.fsencode(path) for path in paths]  # bytes: a name need not be UTF-8
    chunked = guarded_step(pipeline | "Documents" >> beam.Create(named), "Chunk", chunking,
                           errors, main="chunks", tags=(NOT_INDEXED, KEPT, READ))
    pending = chunked.chunks | "Fingerprint" >> beam.Map(pending_document_chunk, embedder)
    return Inputs(pending, [chunked[NOT_INDEXED]], chunked[KEPT], chunked[READ])


def _embedded(writes: beam.PCollection[Planned], settings: Settings,
              embedder_factory: EmbedderFactory, errors: ErrorHandler
              ) -> tuple[beam.PCollection[ToWrite], beam.PCollection[Failure]]:
    """The chunks to write, embedded in batches of `embedder.batch-size` by the shared model."""
    batch = settings.embedder.batch_size
    embedder = SharedEmbedder(embedder_factory, embedder_tag(settings), settings.embedder.model)
    to_embed = beam.pvalue.AsSingleton(writes | "CountToEmbed" >> beam.combiners.Count.Globally())
    batches = writes | "Batch" >> beam.BatchElements(min_batch_size=batch, max_batch_size=batch)
    embedded = guarded_step(batches, "Embed", EmbedChunks(embedder), errors, to_embed,
                            main="records", tags=(NOT_INDEXED,))
    return embedded.records, embedded[NOT_INDEXED]


def _chunk_file_records(pipeline: beam.Pipeline, path: str, dimension: int,
                        errors: ErrorHandler) -> Inputs:
    """Chunk-record lines -> parsed records of `dimension`, fingerprinted with their vectors."""
    parsed = guarded_step(pipeline | "Lines" >> ReadNumberedLines(path), "Parse",
                          ParseChunkLines(path, dimension), errors, main="records",
                          tags=(NOT_INDEXED, KEPT))
    pending = parsed.records | "Fingerprint" >> beam.Map(pending_record)
    return Inputs(pending, [parsed[NOT_INDEXED]], parsed[KEPT])


def _write_failures(failures: tuple[beam.PCollection[Failure], ...], path: str) -> None:
    (failures
     | "AllFailures" >> beam.Flatten()
     | "FailureJson" >> beam.MapTuple(lambda where, why: json.dumps({"id": where, "error": why}))
     | "WriteFailures" >> WriteToSingleFile(path, TextLines()))
