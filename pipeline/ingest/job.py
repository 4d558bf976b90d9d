"""The one ingestion job, for every backend: read -> (chunk -> embed) -> write, on Beam."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
from apache_beam.transforms.error_handling import CollectingErrorHandler, ErrorHandler

from connectors.chunk_record import ChunkRecord
from connectors.chunk_writer_port import ChunkTarget
from connectors.embedder_port import EmbedderFactory, EmbedderInfo
from connectors.errors import InvalidInputError
from pipeline.config.backends import (
    chunk_target_for,
    embedder_factory_for,
    embedder_info,
    embedder_tag,
)
from pipeline.config.beam_options import pipeline_options
from pipeline.config.settings import Settings
from pipeline.ingest.documents import document_paths
from pipeline.ingest.sources import first_dimension, parse_chunk_line
from pipeline.ingest.transforms import (
    FAILED,
    ChunkDocuments,
    EmbedChunks,
    Failure,
    ParseChunkLines,
    WriteChunks,
    internal_failures,
)
from pipeline.io.line_blocks import ReadNumberedLines, read_numbered_lines
from pipeline.io.local_paths import check_distinct, check_input_file, check_output_file
from pipeline.io.single_file_sink import TextLines, WriteToSingleFile
from stages import counters
from stages.shared_embedder import SharedEmbedder

Records = tuple[beam.PCollection[ChunkRecord], list[beam.PCollection[Failure]]]
"""The records to write, and the failures of the steps that made them."""


@dataclass(frozen=True)
class IndexSummary:
    indexed: int
    failed: int
    created: bool
    embedder: EmbedderInfo | None
    note: str | None = None


def run_index(settings: Settings, *, chunks: str | None = None, docs: str | None = None,
              failures_path: str | None = None, beam_args: Sequence[str] = (),
              target: ChunkTarget | None = None,
              embedder_factory: EmbedderFactory | None = None,
              follow_symlinks: bool = False) -> IndexSummary:
    """Indexes chunk records (`chunks`) or a folder of documents (`docs`) into the configured
    store, on whatever runner `beam_args` name, then commits; a failed job commits nothing.

    Chunks that fail (a bad line, a text that cannot be embedded, a write the store refused)
    are counted, logged, written to `failures_path` when given, and the rest is committed.
    """
    options = pipeline_options(beam_args)
    if chunks is not None:
        check_input_file("--chunks", chunks)
    if failures_path is not None:
        check_output_file("--failures", failures_path)
    check_distinct({"--chunks": chunks, "--failures": failures_path})
    target = target or chunk_target_for(settings)
    paths = [str(p) for p in document_paths(docs)] if docs is not None else []
    embedder = None
    if docs is not None:  # the model's files say what it is: no need to load it here
        embedder = embedder_factory().info if embedder_factory else embedder_info(settings.embedder)
    embedder_factory = embedder_factory or embedder_factory_for(settings)
    dimension = embedder.dimension if embedder is not None else first_dimension(chunks or "")
    created = target.prepare(dimension, embedder)
    try:
        pipeline, errors = beam.Pipeline(options=options), CollectingErrorHandler()
        if docs is not None:
            records, failed = _document_records(
                pipeline, settings, str(Path(docs)), paths,
                SharedEmbedder(embedder_factory, embedder_tag(settings)), errors, follow_symlinks)
        else:
            records, failed = _chunk_file_records(pipeline, str(chunks), dimension, errors)
        written = records | "Write" >> WriteChunks(
            target, settings.search.elasticsearch.bulk_chunk_size).with_error_handler(errors)
        errors.close()
        internal = errors.output() | "InternalFailures" >> beam.FlatMap(internal_failures, chunks)
        if failures_path:
            _write_failures((*failed, written, internal), failures_path)
        result = pipeline.run()
        result.wait_until_finish()
        totals = counters.totals(result)
        note = target.commit()
    except InvalidInputError as error:
        target.abort()
        if chunks is not None and error.field == "id":
            raise InvalidInputError("id", error.value, "appears twice, at " + ", ".join(
                _lines_with_id(chunks, str(error.value)))) from None
        raise
    except BaseException:
        target.abort()
        raise
    return IndexSummary(totals.get(counters.CHUNKS_INDEXED, 0),
                        totals.get(counters.CHUNK_INDEX_FAILURES, 0), created, embedder, note)


def _lines_with_id(chunks: str, record_id: str) -> list[str]:
    """`file:line` of each chunk line whose id is `record_id` (to explain a duplicate)."""
    found = []
    for number, line in read_numbered_lines(chunks):
        try:
            if parse_chunk_line(chunks, number, line).id == record_id:
                found.append(f"{chunks}:{number}")
        except InvalidInputError:
            continue
    return found


def _document_records(pipeline: beam.Pipeline, settings: Settings, root: str, paths: list[str],
                      embedder: SharedEmbedder, errors: ErrorHandler, follow_symlinks: bool
                      ) -> Records:
    """Documents -> chunks -> Embed, in batches of `embedder.batch-size`."""
    max_chars, batch = settings.chunking.max_chars, settings.embedder.batch_size
    chunked = (pipeline
               | "Documents" >> beam.Create(paths)
               | "Chunk" >> beam.ParDo(ChunkDocuments(root, max_chars, follow_symlinks)
                                       ).with_outputs(FAILED, main="chunks")
               .with_exception_handling(error_handler=errors))
    embedded = (chunked.chunks
                | "Batch" >> beam.BatchElements(min_batch_size=batch, max_batch_size=batch)
                | "Embed" >> beam.ParDo(EmbedChunks(embedder)).with_outputs(
                    FAILED, main="records").with_exception_handling(error_handler=errors))
    return embedded.records, [chunked[FAILED], embedded[FAILED]]


def _chunk_file_records(pipeline: beam.Pipeline, path: str, dimension: int,
                        errors: ErrorHandler) -> Records:
    """Chunk-record lines -> parsed records of `dimension`."""
    parsed = (pipeline
              | "Lines" >> ReadNumberedLines(path)
              | "Parse" >> beam.ParDo(ParseChunkLines(path, dimension)).with_outputs(
                  FAILED, main="records").with_exception_handling(error_handler=errors))
    return parsed.records, [parsed[FAILED]]


def _write_failures(failures: tuple[beam.PCollection[Failure], ...], path: str) -> None:
    (failures
     | "AllFailures" >> beam.Flatten()
     | "FailureJson" >> beam.MapTuple(lambda where, why: json.dumps({"id": where, "error": why}))
     | "WriteFailures" >> WriteToSingleFile(path, TextLines()))
