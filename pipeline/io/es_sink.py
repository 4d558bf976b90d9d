"""The `es://` evidence sink: each query's result as one Elasticsearch document."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

import apache_beam as beam

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.events import EventHook
from stages.models import DeadLetter, QueryResult
from stages.support import counters
from stages.support.dead_letters import DEAD_LETTER
from stages.support.internal_errors import HandlesErrors
from stages.support.owning_dofn import OwningDoFn
from stages.support.per_query import GuardedDoFn

if TYPE_CHECKING:
    from connectors.elasticsearch.writer import ElasticsearchWriter

_log = logging.getLogger(__name__)


def _open_writer(config: ElasticsearchConfig, on_event: EventHook) -> ElasticsearchWriter:
    """The writer, its client imported only now: a run writing elsewhere is spared its
    import."""
    from connectors.elasticsearch.writer import ElasticsearchWriter

    return ElasticsearchWriter.open(config, on_event=on_event)


class _WriteEvidenceDoFn(OwningDoFn["ElasticsearchWriter"], GuardedDoFn):
    """Owns an Elasticsearch writer from `setup` to `teardown`; what it raises fails the
    whole batch."""

    output_type = DeadLetter

    def __init__(self, config: ElasticsearchConfig, index: str) -> None:
        super().__init__(partial(_open_writer, config, counters.count))
        self._index = index

    def answers(self, batch: Sequence[QueryResult]) -> Iterator[DeadLetter]:
        documents = [(r.query_id, r.model_dump(mode="json")) for r in batch]
        report = self.owned().write_documents(self._index, documents)
        counters.count(counters.RESULTS, report.indexed)
        failed = dict(report.failures)
        for result in batch:
            if result.query_id in failed:
                yield DeadLetter(stage="write", query_id=result.query_id,
                                 error=f"evidence not written: {failed[result.query_id]}",
                                 input=result.model_dump(mode="json"))


class WriteEvidenceToElasticsearch(HandlesErrors, beam.PTransform[beam.PCollection[QueryResult],
                                                   beam.PCollection[DeadLetter]]):
    """Writes each result as one document, `_id` = query id (re-runs overwrite); failed writes
    come out as dead letters."""

    def __init__(self, config: ElasticsearchConfig, index: str, batch_size: int = 200) -> None:
        super().__init__()
        self._config = config
        self._index = index
        self._batch_size = batch_size

    def expand(self, results: beam.PCollection[QueryResult]) -> beam.PCollection[DeadLetter]:
        batches = results | "Batch" >> beam.BatchElements(max_batch_size=self._batch_size)
        return self._guarded_step(batches, "Bulk", _WriteEvidenceDoFn(self._config, self._index)
                               )[DEAD_LETTER]

