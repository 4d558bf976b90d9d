"""Runs the evidence job once and returns its summary."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import apache_beam as beam

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from pipeline.backends import embedder_factory_for, port_factory_for
from pipeline.beam_options import pipeline_options
from pipeline.build import ES_SCHEME, build_pipeline
from pipeline.output_counts import output_counts
from pipeline.preflight import preflight
from pipeline.settings import Settings
from pipeline.summary import RunSummary, summarize

_log = logging.getLogger(__name__)


def run_job(settings: Settings, *, queries_path: str, out_path: str, dead_letter_path: str,
            beam_args: Sequence[str] = (), port_factory: PortFactory | None = None,
            embedder_factory: EmbedderFactory | None = None) -> RunSummary:
    """Checks the backend and embedder (see `preflight`), then builds, runs and waits.

    `beam_args` are Beam pipeline options.
    """
    port_factory = port_factory or port_factory_for(settings)
    embedder_factory = embedder_factory or embedder_factory_for(settings)
    options = pipeline_options(beam_args)
    _log.info("run: %s -> %s, backend %s, %s recall, embedder %s", queries_path, out_path,
              settings.search.backend, settings.rag.recall.mode, settings.embedder.kind)
    embeds = settings.rag.recall.mode != "lexical"
    refusal = preflight(port_factory, embedder_factory if embeds else None, queries_path)
    started = time.monotonic()
    pipeline = beam.Pipeline(options=options)
    build_pipeline(pipeline, settings, queries_path=queries_path, out_path=out_path,
                   dead_letter_path=dead_letter_path, port_factory=port_factory,
                   embedder_factory=embedder_factory, embedder_refusal=refusal)
    result = pipeline.run()
    result.wait_until_finish()
    return summarize(result, time.monotonic() - started, lambda: output_counts(
        queries_path, None if out_path.startswith(ES_SCHEME) else out_path, dead_letter_path))
