"""Runs the evidence job once and returns its summary."""

from __future__ import annotations

import time
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from connectors.embedder_port import EmbedderFactory
from connectors.errors import DimensionMismatchError
from connectors.search_port import PortFactory
from pipeline.backends import embedder_factory_for, port_factory_for
from pipeline.build import build_pipeline
from pipeline.settings import Settings
from pipeline.summary import RunSummary, summarize


def run_job(settings: Settings, *, queries_path: str, out_path: str, dead_letter_path: str,
            beam_args: Sequence[str] = (), port_factory: PortFactory | None = None,
            embedder_factory: EmbedderFactory | None = None) -> RunSummary:
    """Checks the backend, then builds, runs and waits for the job.

    `beam_args` are Beam pipeline options. The port is opened once here first, so a missing
    store, an unreachable cluster, a wrong index, or a store whose dimension is not the
    embedder's fails fast, before any worker starts.
    """
    port_factory = port_factory or port_factory_for(settings)
    embedder_factory = embedder_factory or embedder_factory_for(settings)
    check_backend(port_factory, embedder_factory)
    options = PipelineOptions(list(beam_args))
    started = time.monotonic()
    pipeline = beam.Pipeline(options=options)
    build_pipeline(pipeline, settings, queries_path=queries_path, out_path=out_path,
                   dead_letter_path=dead_letter_path, port_factory=port_factory,
                   embedder_factory=embedder_factory)
    result = pipeline.run()
    result.wait_until_finish()
    return summarize(result, time.monotonic() - started)


def check_backend(port_factory: PortFactory, embedder_factory: EmbedderFactory) -> None:
    """Opens the port once and checks its dimension against the embedder's.

    Raises:
        KnowledgeSearchError: the store or cluster cannot be opened.
        DimensionMismatchError: the embedder's vectors would not fit the store.
    """
    port = port_factory()
    try:
        dimension = embedder_factory().dimension
        if port.dimension != dimension:
            raise DimensionMismatchError("embedder.dim", dimension, port.dimension)
    finally:
        port.close()
