"""The one place that wires a run: read queries, build evidence, write results and dead letters."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.transforms.error_handling import CollectingErrorHandler, ErrorHandler

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from core.errors import RagEvidenceError
from pipeline.config.backends import embedder_factory_for, port_factory_for
from pipeline.config.settings import Settings
from pipeline.io.json_lines import to_json_line
from pipeline.io.result_sink import ResultFile, ResultParts, result_of_raw
from pipeline.io.run_io import RunIO
from pipeline.io.single_file_sink import TextLines, WriteToSingleFile
from pipeline.run import shard_continuation as shard
from pipeline.run.changed_only import KeepChanged, counted_new
from pipeline.run.continuation_plan import ContinuationPlan, continued_audit_rate
from pipeline.run.continued_queries import (
    COMPARE,
    FULL,
    GONE,
    SplitContinued,
    counted_in_full,
)
from pipeline.run.evidence_transform import ContinueFrom, EvidenceTransform
from pipeline.run.query_parse import ParseQueries
from pipeline.run.query_shards import ShardedQueryIds, repeated_of
from pipeline.run.repeated_ids import RepeatedQueryIds
from pipeline.run.shard_continuation import ContinueShards
from pipeline.run.state_shards import WriteStateShards
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
    ids, split, by_shard, previous = None, None, None, None
    parts = None if plan.keeps is None else plan.keeps.parts
    if plan.shards is None:
        repeated_ids = (pipeline
                        | "ReadQueriesForIds" >> io.queries.read_ids()
                        | "RepeatedIds" >> RepeatedQueryIds())
    else:
        # the ids pass digests whole records: tomorrow tells unchanged queries by them
        ids = (pipeline
               | "ReadQueriesForIds" >> io.queries.read_digests()
               | "ShardedIds" >> ShardedQueryIds(plan.shards, parts))
        if plan.continues is None:
            repeated_ids = (ids.every_shard("Repeated")
                            | "RepeatedIds" >> beam.FlatMap(repeated_of))
    snapshot_parts = None if io.snapshot is None else io.snapshot.parts()
    if plan.continues is not None:
        assert ids is not None
        changes = plan.continues.changes
        raised = None if plan.continues.lexical is None else plan.continues.lexical.raised
        by_shard = ids.every_shard("Continue") | "ContinueShards" >> ContinueShards(
            port_factory or port_factory_for(settings), plan.continues.folder.queries,
            removed=changes.removed, entered=changes.entered,
            retrieve_k=settings.rag.retrieve_k, max_sub_queries=settings.rag.max_sub_queries,
            batch_size=settings.search.batch_size, kept_dir=parts, snapshot=snapshot_parts,
            audit_rate=continued_audit_rate(settings), mode=settings.rag.recall.mode,
            raised=raised)
        repeated_ids = by_shard[shard.REPEATED]
        wanted = ((by_shard[shard.PARSE], ids.no_id)
                  | "LinesToParse" >> beam.Flatten()
                  | "AsKeys" >> beam.Map(lambda line: (line, None)))
        records = pipeline | "ReadQueries" >> io.queries.read(wanted)
    else:
        records = pipeline | "ReadQueries" >> io.queries.read()
    parsed = records | "Parse" >> ParseQueries(repeated_ids).with_error_handler(errors)
    queries, continues = parsed.queries, None
    compare_with = _compared_in_state(plan, io)
    if io.previous is not None and plan.continues is None:
        if compare_with is None and not plan.previous_empty:
            previous = pipeline | "ReadPrevious" >> io.previous.read_transform()
        queries = queries | "AnsweredInFull" >> beam.Map(counted_in_full, plan.full_counter)
    elif by_shard is not None and plan.continues is not None:
        split = queries | "SplitContinued" >> SplitContinued(
            by_shard[shard.JOIN], gone=compare_with is None)
        queries = split[FULL]
        changes = plan.continues.changes
        continues = ContinueFrom(split.continued, changes.removed, changes.entered,
                                 by_shard.hits, by_shard[shard.RECALL], raised)
    evidence = queries | "Evidence" >> EvidenceTransform(
        settings,
        port_factory=port_factory or port_factory_for(settings),
        embedder_factory=embedder_factory or embedder_factory_for(settings),
        embedder_refusal=embedder_refusal,
        keeps_state=plan.keeps is not None,
        continues=continues,
    ).with_error_handler(errors)
    total = io.queries.count() if io.queries.counts_cheaply or sys.stderr.isatty() else None
    results = evidence.results | "Progress" >> LogProgress("queries answered", total)
    # the moved queries' results stay apart from the others' up to each sink: a merge of the
    # two would hold them all on the local runner
    moved = () if evidence.moved is None else (evidence.moved,)
    kept = None
    if plan.keeps is not None and ids is not None:
        assert plan.shards is not None and parts is not None
        kept = ids.every_shard("Keep") | "KeepState" >> WriteStateShards(
            plan.keeps.queries, parts, plan.shards, evidence.states, (results, *moved),
            evidence.unchanged, None if by_shard is None else by_shard[shard.KEPT],
            None if by_shard is None else by_shard[shard.STATES], compare_with)
    if io.snapshot is not None:
        results | "Snapshot" >> _WriteCopy(io.snapshot, errors, evidence.unchanged,
                                           snapshot_parts,
                                           None if by_shard is None else by_shard[shard.WRITTEN],
                                           moved)
    if moved and (kept is None or kept.changed is None):
        results = (results, *moved) | "AllResults" >> beam.Flatten()
    if io.previous is not None:
        if kept is not None and kept.changed is not None and kept.gone is not None:
            # compared shard by shard with PREV's state, where the results were kept
            results = kept.changed
            gone_since = [] if by_shard is None else [by_shard[shard.GONE]]
            gone = (kept.gone, *gone_since) | "AllGone" >> beam.Flatten()
        elif plan.previous_empty and previous is None:
            # a first night: nothing to compare with, every result is new
            results = results | "AllNew" >> beam.Map(counted_new)
            gone = pipeline | "NoneGone" >> beam.Create([])
        elif split is not None and evidence.previous is not None and by_shard is not None:
            # the continued queries' results that stood were counted and need no comparing
            location = io.previous.location
            compared_with = ((split[COMPARE], evidence.previous, by_shard[shard.PREVIOUS])
                             | "ComparedWith" >> beam.Flatten()
                             | "ParsePrevious" >> beam.Map(result_of_raw, location))
            changed = results | "KeepChanged" >> KeepChanged(compared_with)
            gone = ((changed.gone, split[GONE], by_shard[shard.GONE])
                    | "AllGone" >> beam.Flatten())
            results = changed.results
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


def _compared_in_state(plan: ContinuationPlan, io: RunIO) -> str | None:
    """Where a run compares its results with PREV's as it keeps its state (see
    `WriteStateShards`): PREV's state file when it continues from it; None when it compares
    them by a join, or has nothing to compare with (an empty PREV)."""
    if plan.keeps is None or io.previous is None or plan.continues is None:
        return None
    return plan.continues.folder.queries


class _WriteCopy(beam.PTransform[beam.PCollection[QueryResult], None]):
    """Every result into `sink` as well, uncounted (`--snapshot`), with the previous results
    that stood (`records`, raw), if any, the parts other steps wrote (`written`, with
    `parts`) and `more` results of steps apart."""

    def __init__(self, sink: ResultFile, errors: ErrorHandler,
                 records: beam.PCollection[RawResult] | None = None,
                 parts: ResultParts | None = None,
                 written: beam.PCollection[str] | None = None,
                 more: Sequence[beam.PCollection[QueryResult]] = ()) -> None:
        super().__init__()
        self._sink, self._errors, self._records = sink, errors, records
        self._parts, self._written, self._more = parts, written, more

    def expand(self, results: beam.PCollection[QueryResult]) -> None:
        self._sink.write(results, self._errors, counted=False, records=self._records,
                         parts=self._parts, written=self._written, more=self._more)
