"""Runs the evidence job once and returns its summary."""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from core.file_digest import digests_ahead
from pipeline.config.backends import (
    backend_of,
    embedder_factory_for,
    embedder_info,
    pinned_port_factory,
)
from pipeline.config.beam_options import (
    job_pipeline,
    pipeline_options,
    runner_name,
)
from pipeline.config.heap import run_to_completion
from pipeline.config.settings import Settings
from pipeline.io.local_paths import is_local
from pipeline.io.run_io import RunIO
from pipeline.run.build import build_pipeline
from pipeline.run.chain import candidate_chain, step_counters
from pipeline.run.continuation_plan import ContinuationPlan, plan_continuation
from pipeline.run.manifest import remove_manifests, run_manifest, write_manifests
from pipeline.run.preflight import preflight
from pipeline.run.previous_check import check_finished_run
from pipeline.run.state_files import StateFolder
from pipeline.run.summary import RunSummary, summarize
from stages.support import counters

_log = logging.getLogger(__name__)


def run_job(settings: Settings, *, queries_path: str, out_path: str,
            dead_letter_path: str | None = None, beam_args: Sequence[str] = (),
            port_factory: PortFactory | None = None,
            embedder_factory: EmbedderFactory | None = None,
            previous_path: str | None = None, snapshot_path: str | None = None
            ) -> RunSummary:
    """`run` with its paths: `out_path` a JSONL or Parquet file, or `es://INDEX`; dead letters
    beside the results unless `dead_letter_path` says; with `previous_path`, only changed
    evidence is written (and every result to `snapshot_path`). `beam_args` are Beam pipeline
    options."""
    io = RunIO.parse(queries_path, out_path, dead_letter_path, settings.search.elasticsearch,
                     previous_path, snapshot_path)
    return run(settings, io, beam_args=beam_args, port_factory=port_factory,
               embedder_factory=embedder_factory)


def run(settings: Settings, io: RunIO, *, beam_args: Sequence[str] = (),
        port_factory: PortFactory | None = None,
        embedder_factory: EmbedderFactory | None = None) -> RunSummary:
    """Checks the files (see `RunIO.check`), the backend and the embedder (see `preflight`),
    then builds, runs and waits. The run reads the embedded store's version that is current
    when it starts, from start to end."""
    io.check()
    if io.snapshot is not None:
        StateFolder.of_snapshot(io.snapshot.location).check()
    with digests_ahead(_previous_files(io)):
        previous = None if io.previous is None else check_finished_run(
            "--previous", io.previous.location)
        if port_factory is not None:
            return _run(settings, io, beam_args, port_factory, embedder_factory, None,
                        previous, from_code=True)
        with pinned_port_factory(settings) as (pinned, version):
            return _run(settings, io, beam_args, pinned, embedder_factory, version, previous)


def _previous_files(io: RunIO) -> list[str]:
    """PREV's files that the run checks against PREV's manifest (and names in its own)."""
    if io.previous is None or not is_local(io.previous.location):
        return []
    return [io.previous.location, *StateFolder.of_snapshot(io.previous.location).files()]


def _written_files(io: RunIO, plan: ContinuationPlan) -> list[str]:
    """The files the run wrote that its manifest names with their SHA-256."""
    files = [p for p in (io.results.location, io.dead_letters,
                         io.snapshot.location if io.snapshot else None)
             if p is not None and is_local(p)]
    return files + (plan.keeps.files() if plan.keeps is not None else [])


def _run(settings: Settings, io: RunIO, beam_args: Sequence[str], port_factory: PortFactory,
         embedder_factory: EmbedderFactory | None, version: Path | None,
         previous: dict[str, Any] | None, from_code: bool = False) -> RunSummary:
    describe = None if embedder_factory else partial(embedder_info, settings.embedder)
    embedder_factory = embedder_factory or embedder_factory_for(settings)
    options = pipeline_options(beam_args)
    _log.info("run: %s -> %s, backend %s, %s recall, embedder %s", io.queries.path,
              io.results.location, settings.search.backend, settings.rag.recall.mode,
              settings.embedder.kind)
    embeds = settings.rag.recall.mode != "lexical"
    refusal = preflight(port_factory, embedder_factory if embeds else None, io.queries, describe,
                        backend_of(settings).noun)
    with io.held():
        remove_manifests(io.manifests)
        started, began = time.monotonic(), _now()
        runner = runner_name(options)  # before the run: a portable runner clears it
        plan = plan_continuation(settings, io, version, previous, from_code)
        plan.start(settings)
        pipeline = job_pipeline(options)
        build_pipeline(pipeline, settings, io, port_factory=port_factory,
                       embedder_factory=embedder_factory, embedder_refusal=refusal, plan=plan)
        result = run_to_completion(pipeline, settings.job.max_wall_time)
        summary = summarize(result, time.monotonic() - started, io.counts,
                            backend_of(settings).counters
                            + step_counters(candidate_chain(settings.rag)),
                            compared=io.previous is not None)
        if plan.continues is not None:
            summary.counts[counters.DELTA_CHUNKS] = plan.continues.changes.chunks
        if plan.refused is not None and not plan.first_night:
            summary = dataclasses.replace(summary, answered_in_full=plan.refused)
        _warn_on_low_recall(summary, settings)
        with digests_ahead(_written_files(io, plan)):
            manifest = run_manifest(settings, io, summary, options, began, _now(), version,
                                    runner)
            manifest |= _continuation(plan, io)
        write_manifests(io.manifests, manifest)
        return summary


def _continuation(plan: ContinuationPlan, io: RunIO) -> dict[str, Any]:
    """What the manifest says of the state this run kept and what it continued from."""
    described: dict[str, Any] = {}
    if plan.keeps is not None:
        described["state"] = plan.keeps.described()
        if plan.mark is not None:  # the store version the state tells changes from
            described["state"]["store_version"] = plan.mark.name
    if io.previous is not None:
        described["continuation"] = plan.described()
    return described


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _warn_on_low_recall(summary: RunSummary, settings: Settings) -> None:
    hnsw, recall = settings.search.embedded.hnsw, summary.hnsw_recall
    if recall is not None and recall < hnsw.audit_floor:
        _log.warning("the HNSW search's recall@k on this run's audited queries is %.3f, below "
                     "search.embedded.hnsw.audit-floor=%s: raise search.embedded.hnsw.ef-search "
                     "(or set it to auto), or use search.embedded.index: flat", recall,
                     hnsw.audit_floor)
