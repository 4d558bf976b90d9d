"""The one place that wires a run: read queries, build evidence, write results and dead letters."""

from __future__ import annotations

import json
import sys

import apache_beam as beam
from apache_beam.transforms.error_handling import CollectingErrorHandler, ErrorHandler

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from core.errors import RagEvidenceError
from pipeline.config.backends import embedder_factory_for, port_factory_for
from pipeline.config.settings import Settings
from pipeline.io.json_lines import to_json_line
from pipeline.io.result_sink import ResultFile, result_of_raw
from pipeline.io.run_io import RunIO
from pipeline.io.single_file_sink import TextLines, WriteToSingleFile
from pipeline.run.changed_only import KeepChanged
from pipeline.run.continuation_plan import ContinuationPlan
from pipeline.run.continued_queries import (
    COMPARE,
    FULL,
    GONE,
    SplitContinued,
    counted_in_full,
)
from pipeline.run.evidence_transform import ContinueFrom, EvidenceTransform
from pipeline.run.query_parse import ParseQueries
from pipeline.run.repeated_ids import RepeatedQueryIds
from pipeline.run.state_files import ReadState, WriteState
from stages.models import QueryResult, RawResult
from stages.support.internal_errors import InternalDeadLetters
from stages.support.progress import LogProgress


def build_pipeline(
    pipeline: beam.Pipeline,
    settings: Settings,
    io: RunIO,
    *,
    port_factory: PortFactory | None = None,
    embedder_factory: EmbedderFactory | None = None,
    embedder_refusal: RagEvidenceError | None = None,
    plan: ContinuationPlan | None = None,
) -> None:
    """Adds the whole job to `pipeline`; collaborators default to the configured production ones.

    The queries are read twice: once for their ids alone (a side input of the ids that repeat),
    once to answer them, so that the answering pass streams instead of waiting for every id.
    `embedder_refusal`, when set, dead-letters every query whose text would need embedding
    (see `preflight`). `plan` says whether the run keeps state for the next and continues
    from PREV's (see `continuation_plan`).
    """
    plan = plan or ContinuationPlan()
    errors = CollectingErrorHandler()
    repeated_ids = (pipeline
                    | "ReadQueriesForIds" >> io.queries.read_ids()
                    | "RepeatedIds" >> RepeatedQueryIds())
    parsed = (pipeline
              | "ReadQueries" >> io.queries.read()
              | "Parse" >> ParseQueries(repeated_ids).with_error_handler(errors))
    queries, continues, split, previous = parsed.queries, None, None, None
    if io.previous is not None and plan.continues is None:
        previous = pipeline | "ReadPrevious" >> io.previous.read_transform()
        queries = queries | "AnsweredInFull" >> beam.Map(counted_in_full, plan.full_counter)
    elif io.previous is not None and plan.continues is not None:
        raw_previous = pipeline | "ReadPrevious" >> io.previous.read_raw_transform()
        states = pipeline | "ReadState" >> ReadState(plan.continues.folder)
        split = queries | "SplitContinued" >> SplitContinued(states, raw_previous)
        queries = split[FULL]
        changes = plan.continues.changes
        continues = ContinueFrom(split.continued, changes.removed, changes.entered)
    evidence = queries | "Evidence" >> EvidenceTransform(
        settings,
        port_factory=port_factory or port_factory_for(settings),
        embedder_factory=embedder_factory or embedder_factory_for(settings),
        embedder_refusal=embedder_refusal,
        keeps_state=plan.keeps is not None,
        continues=continues,
    ).with_error_handler(errors)
    if plan.keeps is not None and evidence.state is not None:
        evidence.state | "KeepState" >> WriteState(plan.keeps)
    total = io.queries.count() if io.queries.counts_cheaply or sys.stderr.isatty() else None
    results = evidence.results | "Progress" >> LogProgress("queries answered", total)
    if io.snapshot is not None:
        results | "Snapshot" >> _WriteCopy(io.snapshot, errors, evidence.unchanged)
    if io.previous is not None:
        if split is not None and evidence.previous is not None:
            # the continued queries' results that stood were counted and need no comparing
            location = io.previous.location
            compared_with = ((split[COMPARE], evidence.previous)
                             | "ComparedWith" >> beam.Flatten()
                             | "ParsePrevious" >> beam.Map(result_of_raw, location))
            changed = results | "KeepChanged" >> KeepChanged(compared_with)
            gone = (changed.gone, split[GONE]) | "AllGone" >> beam.Flatten()
        else:
            assert previous is not None
            changed = results | "KeepChanged" >> KeepChanged(previous)
            gone = changed.gone
        results = changed.results
        (gone
         | "GoneJson" >> beam.Map(lambda query_id: json.dumps({"query_id": query_id}))
         | "WriteGone" >> WriteToSingleFile(io.gone, TextLines()))
    dead_letters = [parsed.dead_letter, evidence.dead_letters]
    failed_writes = io.results.write(results, errors)
    if failed_writes is not None:
        dead_letters.append(failed_writes)
    errors.close()
    dead_letters.append(errors.output() | "InternalErrors" >> InternalDeadLetters())
    (tuple(dead_letters)
     | "AllDeadLetters" >> beam.Flatten()
     | "DeadLetterJson" >> beam.Map(to_json_line).with_output_types(str)
     | "WriteDeadLetters" >> WriteToSingleFile(io.dead_letters, TextLines()))


class _WriteCopy(beam.PTransform[beam.PCollection[QueryResult], None]):
    """Every result into `sink` as well, uncounted (`--snapshot`), with the previous results
    that stood (`records`, raw), if any."""

    def __init__(self, sink: ResultFile, errors: ErrorHandler,
                 records: beam.PCollection[RawResult] | None = None) -> None:
        super().__init__()
        self._sink, self._errors, self._records = sink, errors, records

    def expand(self, results: beam.PCollection[QueryResult]) -> None:
        self._sink.write(results, self._errors, counted=False, records=self._records)
