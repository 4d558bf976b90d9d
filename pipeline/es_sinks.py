"""Beam writers into Elasticsearch: chunks for a re-index job, and precomputed evidence."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import apache_beam as beam
from apache_beam import pvalue

from connectors.chunk_record import ChunkRecord
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.writer import ElasticsearchWriter
from stages import counters
from stages.models import DeadLetter, QueryResult

FAILED = "failed"
INDEXED = "chunks_indexed"
INDEX_FAILURES = "chunk_index_failures"
_log = logging.getLogger(__name__)


class _WriterDoFn(beam.DoFn):
    """Owns an Elasticsearch writer: opened in `setup`, closed in `teardown`, never pickled."""

    def __init__(self, config: ElasticsearchConfig) -> None:
        self._config = config
        self._writer: ElasticsearchWriter | None = None

    def setup(self) -> None:
        self._writer = ElasticsearchWriter.open(self._config)

    @property
    def writer(self) -> ElasticsearchWriter:
        if self._writer is None:
            self.setup()
        assert self._writer is not None
        return self._writer

    def teardown(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_writer": None}


class _WriteChunksDoFn(_WriterDoFn):
    def process(self, batch: Sequence[ChunkRecord]) -> Iterator[pvalue.TaggedOutput]:
        report = self.writer.write_chunks(batch)
        counters.count(INDEXED, report.indexed)
        counters.count(INDEX_FAILURES, len(report.failures))
        for doc_id, reason in report.failures:
            _log.warning("chunk %s was not indexed: %s", doc_id, reason)
            yield pvalue.TaggedOutput(FAILED, (doc_id, reason))


class WriteChunksToElasticsearch(beam.PTransform[beam.PCollection[ChunkRecord],
                                                 beam.PCollection[tuple[str, str]]]):
    """Bulk-indexes chunk records (`_id` = record id); outputs (id, reason) of each failure."""

    def __init__(self, config: ElasticsearchConfig) -> None:
        super().__init__()
        self._config = config

    def expand(self, records: beam.PCollection[ChunkRecord]) -> beam.PCollection[tuple[str, str]]:
        size = self._config.bulk_chunk_size
        return (records
                | "Batch" >> beam.BatchElements(min_batch_size=size, max_batch_size=size)
                | "Bulk" >> beam.ParDo(_WriteChunksDoFn(self._config)).with_outputs(
                    FAILED, main="done"))[FAILED]


class _WriteEvidenceDoFn(_WriterDoFn):
    def __init__(self, config: ElasticsearchConfig, index: str) -> None:
        super().__init__(config)
        self._index = index

    def process(self, batch: Sequence[QueryResult]) -> Iterator[DeadLetter]:
        documents = [(r.query_id, r.model_dump(mode="json")) for r in batch]
        report = self.writer.write_documents(self._index, documents)
        counters.count(counters.RESULTS, report.indexed)
        failed = dict(report.failures)
        for result in batch:
            if result.query_id in failed:
                counters.count(counters.DEAD_LETTERS)
                yield DeadLetter(stage="write", query_id=result.query_id,
                                 error=f"evidence not written: {failed[result.query_id]}",
                                 input=result.model_dump(mode="json"))


class WriteEvidenceToElasticsearch(beam.PTransform[beam.PCollection[QueryResult],
                                                   beam.PCollection[DeadLetter]]):
    """Writes each result as one document, `_id` = query id (re-runs overwrite); failed writes
    come out as dead letters."""

    def __init__(self, config: ElasticsearchConfig, index: str, batch_size: int = 200) -> None:
        super().__init__()
        self._config = config
        self._index = index
        self._batch_size = batch_size

    def expand(self, results: beam.PCollection[QueryResult]) -> beam.PCollection[DeadLetter]:
        return (results
                | "Batch" >> beam.BatchElements(max_batch_size=self._batch_size)
                | "Bulk" >> beam.ParDo(_WriteEvidenceDoFn(self._config, self._index))
                .with_output_types(DeadLetter))

