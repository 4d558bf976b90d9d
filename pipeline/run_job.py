"""Runs the evidence job once and returns its summary."""

from __future__ import annotations

import time
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from pipeline.backends import port_factory_for
from pipeline.build import build_pipeline
from pipeline.settings import Settings
from pipeline.summary import RunSummary, summarize


def run_job(settings: Settings, *, queries_path: str, out_path: str, dead_letter_path: str,
            beam_args: Sequence[str] = (), port_factory: PortFactory | None = None,
            embedder_factory: EmbedderFactory | None = None) -> RunSummary:
    """Checks the backend, then builds, runs and waits for the job.

    `beam_args` are Beam pipeline options. The port is opened once here first, so a missing
    store, an unreachable cluster or a wrong index fails fast, before any worker starts.
    """
    port_factory = port_factory or port_factory_for(settings)
    port_factory().close()
    options = PipelineOptions(list(beam_args))
    started = time.monotonic()
    pipeline = beam.Pipeline(options=options)
    build_pipeline(pipeline, settings, queries_path=queries_path, out_path=out_path,
                   dead_letter_path=dead_letter_path, port_factory=port_factory,
                   embedder_factory=embedder_factory)
    result = pipeline.run()
    result.wait_until_finish()
    return summarize(result, time.monotonic() - started)
