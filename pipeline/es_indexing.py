"""The re-index job as a Beam pipeline: documents or chunk records -> Elasticsearch bulk writes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.options.pipeline_options import PipelineOptions

from connectors.chunk_record import ChunkRecord
from connectors.elasticsearch.writer import ElasticsearchWriter
from connectors.embedder_port import EmbedderFactory, EmbedderPort
from connectors.errors import InvalidInputError
from pipeline.backends import embedder_factory_for
from pipeline.es_sinks import INDEX_FAILURES, INDEXED, WriteChunksToElasticsearch
from pipeline.indexing import chunks_of, document_paths, embed_batch, parse_chunk_line
from pipeline.query_lines import read_numbered_lines
from pipeline.settings import Settings
from pipeline.summary import counter_totals
from stages import counters

BAD_LINE = "bad_line"


@dataclass(frozen=True)
class IndexSummary:
    indexed: int
    failed: int
    created_index: bool


class _EmbedDoFn(beam.DoFn):
    def __init__(self, embedder_factory: EmbedderFactory) -> None:
        self._factory = embedder_factory
        self._embedder: EmbedderPort | None = None

    def setup(self) -> None:
        self._embedder = self._factory()

    def process(self, batch: Sequence[tuple[str, int, str]]) -> Iterator[ChunkRecord]:
        assert self._embedder is not None
        yield from embed_batch(batch, self._embedder)


class _ParseChunkDoFn(beam.DoFn):
    def __init__(self, path: str) -> None:
        self._path = path

    def process(self, line: tuple[int, str]) -> Iterator[ChunkRecord | pvalue.TaggedOutput]:
        try:
            yield parse_chunk_line(self._path, *line)
        except InvalidInputError as error:
            counters.count(INDEX_FAILURES)
            yield pvalue.TaggedOutput(BAD_LINE, (f"{self._path}:{line[0]}", str(error)))


def _failure_json(failure: tuple[str, str]) -> str:
    return json.dumps({"id": failure[0], "error": failure[1]})


def run_es_index(settings: Settings, *, chunks: str | None = None, docs: str | None = None,
                 failures_path: str | None = None, beam_args: Sequence[str] = ()
                 ) -> IndexSummary:
    """Creates the index when missing, then bulk-indexes on whatever runner `beam_args` name."""
    config = settings.search.elasticsearch.adapter_config()
    dimension = settings.embedder.dim if docs is not None else _first_dimension(chunks or "")
    writer = ElasticsearchWriter.open(config)
    try:
        created = writer.ensure_chunk_index(dimension)
    finally:
        writer.close()
    pipeline = beam.Pipeline(options=PipelineOptions(list(beam_args)))
    failures = []
    if docs is not None:
        root = str(Path(docs))
        records = (pipeline
                   | "Documents" >> beam.Create([str(p) for p in document_paths(root)])
                   | "Chunk" >> beam.FlatMap(lambda p: chunks_of(root, p,
                                                                 settings.chunking.max_chars))
                   | "Batch" >> beam.BatchElements(min_batch_size=64, max_batch_size=256)
                   | "Embed" >> beam.ParDo(_EmbedDoFn(embedder_factory_for(settings))))
    else:
        parsed = (pipeline
                  | "ChunkFile" >> beam.Create([chunks])
                  | "Lines" >> beam.FlatMap(read_numbered_lines)
                  | "Parse" >> beam.ParDo(_ParseChunkDoFn(str(chunks))).with_outputs(
                      BAD_LINE, main="records"))
        records, bad_lines = parsed.records, parsed[BAD_LINE]
        failures.append(bad_lines)
    failures.append(records | "Write" >> WriteChunksToElasticsearch(config))
    if failures_path:
        (tuple(failures) | "AllFailures" >> beam.Flatten()
         | "FailureJson" >> beam.Map(_failure_json)
         | "WriteFailures" >> beam.io.WriteToText(failures_path, shard_name_template=""))
    result = pipeline.run()
    result.wait_until_finish()
    writer = ElasticsearchWriter.open(config)
    try:
        writer.refresh()
    finally:
        writer.close()
    totals = counter_totals(result)
    return IndexSummary(totals.get(INDEXED, 0), totals.get(INDEX_FAILURES, 0), created)


def _first_dimension(chunks: str) -> int:
    for number, line in read_numbered_lines(chunks):
        return len(parse_chunk_line(chunks, number, line).vector)
    raise InvalidInputError("--chunks", chunks, "holds no chunk records")
